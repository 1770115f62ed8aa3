package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/pagefeed/pagefeed/internal/zoo"
)

// seeds writes one tiny file per writer (zoo.WriteSeeds) to
// internal/zoo/testdata/seeds and, from each, seed inputs for the fuzz
// targets that parse what a writer wrote: the whole file (rinas
// FuzzParquetFile, tokens column, page batches and row shuffle), its footer
// (index FuzzFooter), its first offset index (index FuzzOffsetIndex), its
// first column chunk (index FuzzPageHeaderWalk) and first page header
// (codec FuzzPageHeader).
func seeds(logf func(string, ...any)) error {
	src, err := zoo.SourceDir()
	if err != nil {
		return err
	}
	root := filepath.Join(src, "..", "..", "..")
	tmp, err := os.MkdirTemp("", "zoo-seeds-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	paths, err := zoo.WriteSeeds(context.Background(), tmp, logf)
	if err != nil {
		return err
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		w := strings.TrimSuffix(filepath.Base(p), ".parquet")
		if err := write(filepath.Join(root, "internal/zoo/testdata/seeds", w+".parquet"), b); err != nil {
			return err
		}
		name := "zoo-" + w
		// fuzz writes a seed input of target (in package dir pkg).
		fuzz := func(pkg, target, suffix string, args ...any) error {
			s := "go test fuzz v1\n"
			for _, a := range args {
				switch v := a.(type) {
				case []byte:
					s += fmt.Sprintf("[]byte(%q)\n", v)
				case uint8:
					s += fmt.Sprintf("byte(%q)\n", rune(v))
				}
			}
			return write(filepath.Join(root, pkg, "testdata", "fuzz", target, name+suffix), []byte(s))
		}
		// FuzzParquetFile's mode: bit 0 the tokens column, bits 1-2 the
		// mode (2: row shuffle).
		for _, m := range []struct {
			suffix string
			mode   uint8
		}{{"-pages", 1}, {"-rows", 1 | 2<<1}} {
			if err := fuzz("rinas", "FuzzParquetFile", m.suffix, b, m.mode); err != nil {
				return err
			}
		}
		n := len(b)
		flen := int(binary.LittleEndian.Uint32(b[n-8:]))
		if err := fuzz("index", "FuzzFooter", "", b[n-8-flen:n-8]); err != nil {
			return err
		}
		if err := fuzz("index", "FuzzPageHeaderWalk", "", b[4:min(n, 4+8192)]); err != nil {
			return err
		}
		if err := fuzz("codec", "FuzzPageHeader", "", b[4:min(n, 4+256)]); err != nil {
			return err
		}
		if oi := firstOffsetIndex(p, b); oi != nil {
			if err := fuzz("index", "FuzzOffsetIndex", "", oi); err != nil {
				return err
			}
		}
		logf("seeds of %s: %d bytes", w, n)
	}
	return nil
}

// firstOffsetIndex returns the bytes of the first offset index of the
// file, or nil.
func firstOffsetIndex(path string, b []byte) []byte {
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil
	}
	defer r.Close()
	md := r.MetaData()
	for c := 0; c < md.Schema.NumColumns(); c++ {
		cc, err := md.RowGroup(0).ColumnChunk(c)
		if err != nil {
			return nil
		}
		if loc := cc.GetOffsetIndexLocation(); loc != nil && loc.Offset >= 0 && loc.Offset+int64(loc.Length) <= int64(len(b)) {
			return b[loc.Offset : loc.Offset+int64(loc.Length)]
		}
	}
	return nil
}

func write(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
