package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/pagefeed/pagefeed/codec"
)

func init() {
	register("verify", "decode every page alone, in shuffled order, and compare with pqarrow's whole-column read", runVerify)
}

// verifyResult is one line of `pagefeed verify`.
type verifyResult struct {
	File   string `json:"file"`
	Column string `json:"column"`
	Status string `json:"status"` // OK, MISMATCH, UNSUPPORTED or ERROR
	Row    *int64 `json:"row,omitempty"`
	Reason string `json:"reason,omitempty"`
	Pages  int    `json:"pages"`
	Rows   int64  `json:"rows"`
}

// runVerify: pagefeed verify FILE... [--column NAME]... [--json] [--seed N].
// Exit status 0 only when no column mismatched or failed.
func runVerify(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cols stringList
	fs.Var(&cols, "column", "verify this column (dotted leaf path or top-level name); repeatable; default all")
	asJSON := fs.Bool("json", false, "print one JSON object per file and column")
	seed := fs.Int64("seed", 1, "seed of the page order")
	usage := "usage: pagefeed verify FILE... [--column NAME]... [--json] [--seed N]"
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
	}
	paths, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return fmt.Errorf("no FILE given (%s)", usage)
	}
	bad := 0
	enc := json.NewEncoder(stdout)
	for _, path := range paths {
		for _, r := range verifyFile(path, cols, rand.New(rand.NewSource(*seed))) {
			if r.Status == "MISMATCH" || r.Status == "ERROR" {
				bad++
			}
			if *asJSON {
				if err := enc.Encode(r); err != nil {
					return err
				}
				continue
			}
			line := fmt.Sprintf("%s %s %s", r.File, r.Column, r.Status)
			if r.Row != nil {
				line += fmt.Sprintf(" row %d", *r.Row)
			}
			if r.Reason != "" {
				line += ": " + r.Reason
			}
			if r.Status == "OK" {
				line += fmt.Sprintf(" (%d pages, %d rows)", r.Pages, r.Rows)
			}
			fmt.Fprintln(stdout, line)
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d columns mismatched or failed", bad)
	}
	return nil
}

// errFooterUnsupported marks a footer arrow-go's metadata layer panics on:
// a schema it cannot represent (e.g. a logical type newer than it knows),
// which is a limit of the reader, not a corrupt file.
var errFooterUnsupported = errors.New("arrow-go cannot represent its footer")

// openForVerify opens a file with arrow-go, which panics on some schemas.
func openForVerify(path string) (rdr *file.Reader, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", errFooterUnsupported, r)
		}
	}()
	return file.OpenParquetFile(path, false)
}

func verifyFile(path string, cols []string, rng *rand.Rand) []verifyResult {
	rdr, err := openForVerify(path)
	if errors.Is(err, errFooterUnsupported) {
		return []verifyResult{{File: path, Column: "-", Status: "UNSUPPORTED", Reason: err.Error()}}
	}
	if err != nil {
		return []verifyResult{{File: path, Column: "-", Status: "ERROR", Reason: err.Error()}}
	}
	defer rdr.Close()
	f, err := os.Open(path)
	if err != nil {
		return []verifyResult{{File: path, Column: "-", Status: "ERROR", Reason: err.Error()}}
	}
	defer f.Close()
	md := rdr.MetaData()
	var leaves []int
	for i := 0; i < md.Schema.NumColumns(); i++ {
		p := md.Schema.Column(i).Path()
		if len(cols) == 0 {
			leaves = append(leaves, i)
			continue
		}
		for _, c := range cols {
			if p == c || strings.HasPrefix(p, c+".") {
				leaves = append(leaves, i)
				break
			}
		}
	}
	if len(leaves) == 0 {
		return []verifyResult{{File: path, Column: strings.Join(cols, ","), Status: "ERROR", Reason: "no such column"}}
	}
	fr, ferr := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	dec := codec.NewDecoder(codec.Options{})
	defer dec.Close()
	var out []verifyResult
	for _, col := range leaves {
		r := verifyResult{File: path, Column: md.Schema.Column(col).Path(), Status: "OK"}
		var firstRow int64
		for rg := 0; rg < md.NumRowGroups(); rg++ {
			var ref arrow.Array
			var rerr error
			if ferr != nil {
				rerr = ferr
			} else {
				ref, rerr = verifyReference(fr, rg, col)
			}
			pages, rows, row, err := verifyChunk(dec, f, path, rdr, rg, col, ref, rng)
			if ref != nil {
				ref.Release()
			}
			r.Pages += pages
			r.Rows += rows
			switch {
			case err != nil && errors.Is(err, codec.ErrUnsupported):
				r.Status, r.Reason = "UNSUPPORTED", err.Error()
			case err != nil:
				r.Status, r.Reason = "ERROR", err.Error()
			case row >= 0:
				at := firstRow + row
				r.Status, r.Row = "MISMATCH", &at
			case rerr != nil:
				// our pages decode, but there is nothing to compare with
				r.Status, r.Reason = "UNSUPPORTED", "no reference: pqarrow cannot read it: "+rerr.Error()
			}
			if r.Status != "OK" && r.Status != "UNSUPPORTED" || err != nil || row >= 0 {
				break
			}
			firstRow += md.RowGroup(rg).NumRows()
		}
		out = append(out, r)
	}
	return out
}

// verifyReference is codec.ReferenceColumn, surviving pqarrow's panics.
func verifyReference(fr *pqarrow.FileReader, rg, col int) (arr arrow.Array, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("pqarrow panicked: %v", r)
		}
	}()
	return codec.ReferenceColumn(fr, rg, col)
}

// verifyChunk decodes every page of a column chunk alone (with the pages
// after it for a row that continues), in shuffled order, and compares the
// rows with ref when there is one. It returns the pages and rows decoded
// and the first differing row in the chunk, or -1.
func verifyChunk(dec *codec.Decoder, f io.ReaderAt, path string, rdr *file.Reader, rg, col int, ref arrow.Array, rng *rand.Rand) (pages int, rows int64, row int64, err error) {
	md := rdr.MetaData()
	chunk, err := codec.NewChunk(md, path, rg, col)
	if err != nil {
		return 0, 0, -1, err
	}
	cc, err := md.RowGroup(rg).ColumnChunk(col)
	if err != nil {
		return 0, 0, -1, err
	}
	off, n := codec.ChunkRange(cc)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, off); err != nil {
		return 0, 0, -1, fmt.Errorf("read column chunk at %d: %w", off, err)
	}
	refs, err := codec.SplitChunk(buf)
	if err != nil {
		return 0, 0, -1, err
	}
	var dict *codec.Dictionary
	var pgs [][]byte
	var offs []int64
	for _, pr := range refs {
		b := buf[pr.Off : pr.Off+int64(pr.Len)]
		if pr.Header.Type == codec.DictionaryPage {
			if dict, err = dec.Dictionary(chunk, b, off+pr.Off); err != nil {
				return 0, 0, -1, err
			}
			continue
		}
		pgs = append(pgs, b)
		offs = append(offs, off+pr.Off)
	}
	decoded := make([]arrow.Array, len(pgs))
	defer func() {
		for _, a := range decoded {
			if a != nil {
				a.Release()
			}
		}
	}()
	for _, i := range rng.Perm(len(pgs)) {
		pg, err := dec.DecodeSpan(chunk, dict, pgs[i:], offs[i:])
		if err != nil {
			return 0, 0, -1, err
		}
		decoded[i] = pg.Array()
		decoded[i].Retain()
		pg.Release()
	}
	var at int64
	for _, a := range decoded {
		n := int64(a.Len())
		if ref != nil {
			if at+n > int64(ref.Len()) {
				return len(pgs), at + n, min(at, int64(ref.Len())), nil
			}
			if d := firstDifference(a, ref, at); d >= 0 {
				return len(pgs), at + n, at + d, nil
			}
		}
		at += n
	}
	if at != md.RowGroup(rg).NumRows() {
		return len(pgs), at, at, nil
	}
	if ref != nil && at != int64(ref.Len()) {
		return len(pgs), at, at, nil
	}
	return len(pgs), at, -1, nil
}

// firstDifference compares a with ref[at:at+len(a)] and returns the first
// differing row of a, or -1.
func firstDifference(a, ref arrow.Array, at int64) int64 {
	want, err := codec.ProjectLike(array.NewSlice(ref, at, at+int64(a.Len())), a.DataType())
	if err != nil {
		return 0
	}
	defer want.Release()
	if codec.Equal(a, want) {
		return -1
	}
	for i := 0; i < a.Len(); i++ {
		x, y := array.NewSlice(a, int64(i), int64(i+1)), array.NewSlice(want, int64(i), int64(i+1))
		eq := codec.Equal(x, y)
		x.Release()
		y.Release()
		if !eq {
			return int64(i)
		}
	}
	return 0
}
