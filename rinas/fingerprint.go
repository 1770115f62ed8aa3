package rinas

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"strings"

	"github.com/pagefeed/pagefeed/index"
)

// relPaths returns each file's path relative to the deepest directory
// holding them all, so that a copy of the dataset elsewhere names its
// files the same.
func relPaths(ix *index.Index) []string {
	n := ix.NumFiles()
	abs := make([]string, n)
	for i := range abs {
		p := ix.File(i).Path
		if a, err := filepath.Abs(p); err == nil {
			p = a
		}
		abs[i] = filepath.ToSlash(p)
	}
	root := ""
	for i, p := range abs {
		d := p[:strings.LastIndexByte(p, '/')+1]
		if i == 0 {
			root = d
			continue
		}
		for !strings.HasPrefix(d, root) {
			root = root[:strings.LastIndexByte(root[:len(root)-1], '/')+1]
		}
	}
	for i := range abs {
		abs[i] = abs[i][len(root):]
	}
	return abs
}

// fingerprint returns the dataset's content fingerprint (State.Dataset)
// and the per-file digests (State.Files): each file's relative path, size
// and footer hash, and the column.
func fingerprint(ix *index.Index, column string) (string, string) {
	rel := relPaths(ix)
	h := sha256.New()
	sums := make([]byte, 4*len(rel))
	var b [8]byte
	for i, p := range rel {
		f := ix.File(i)
		fh := fnv.New32a()
		fh.Write([]byte(p))
		binary.LittleEndian.PutUint64(b[:], uint64(f.Size))
		fh.Write(b[:])
		binary.LittleEndian.PutUint64(b[:], f.FooterHash)
		fh.Write(b[:])
		binary.LittleEndian.PutUint32(sums[4*i:], fh.Sum32())
		fmt.Fprintf(h, "%s\x00%d\x00%x\x00", p, f.Size, f.FooterHash)
	}
	fmt.Fprintf(h, "%s", column)
	return hex.EncodeToString(h.Sum(nil)[:12]), base64.StdEncoding.EncodeToString(sums)
}

// datasetMismatch explains a State of another dataset: the first file
// whose digest differs, when the State lists them.
func (l *Loader) datasetMismatch(s *State) error {
	old, err := base64.StdEncoding.DecodeString(s.Files)
	cur, _ := base64.StdEncoding.DecodeString(l.fileSums)
	if err == nil && len(old) > 0 && len(old)%4 == 0 {
		if len(old) != len(cur) {
			return stateErr("dataset", "it was taken on a dataset of %d files, this one has %d", len(old)/4, len(cur)/4)
		}
		for i := 0; i < len(cur); i += 4 {
			if string(old[i:i+4]) != string(cur[i:i+4]) {
				return stateErr("dataset", "%s differs from the file the state was taken on (its size, footer or name relative to the dataset changed)", l.ix.File(i/4).Path)
			}
		}
	}
	return stateErr("dataset", "it was taken on another dataset or column (%s, this is %s)", s.Dataset, l.dataset)
}
