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
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/pagefeed/pagefeed/codec"
	"github.com/pagefeed/pagefeed/codec/codectest"
	"github.com/pagefeed/pagefeed/index"
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

func verifyFile(path string, cols []string, rng *rand.Rand) []verifyResult {
	// Only regular files: opening a FIFO would wait for a writer forever.
	if st, err := os.Stat(path); err != nil {
		return []verifyResult{{File: path, Column: "-", Status: "ERROR", Reason: err.Error()}}
	} else if !st.Mode().IsRegular() {
		_, err := index.ExpandPaths([]string{path}, nil) // names the kind: a FIFO, a socket, a device
		if err == nil {
			err = errors.New("a directory: name its files (verify FILE...)")
		}
		return []verifyResult{{File: path, Column: "-", Status: "ERROR", Reason: err.Error()}}
	}
	rdr, err := codectest.Open(path)
	if errors.Is(err, codectest.ErrFooterUnsupported) {
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
				ref, rerr = codectest.Reference(fr, rg, col)
			}
			pages, rows, m, err := verifyChunk(dec, f, path, rdr, rg, col, ref, rng)
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
			case m != nil:
				// a page that fails its own checks has no row to name
				at := firstRow + max(m.Row, 0)
				r.Status, r.Row = "MISMATCH", &at
				if m.Row < 0 {
					r.Reason = m.Msg
				}
			case rerr != nil:
				// our pages decode, but there is nothing to compare with
				r.Status, r.Reason = "UNSUPPORTED", "no reference: pqarrow cannot read it: "+rerr.Error()
			}
			if r.Status != "OK" && r.Status != "UNSUPPORTED" || err != nil || m != nil {
				break
			}
			firstRow += md.RowGroup(rg).NumRows()
		}
		out = append(out, r)
	}
	return out
}

// verifyChunk reads one column chunk and runs codectest.Check on it, its
// pages decoded in an order drawn from rng. It returns the pages and rows
// decoded, and the difference found or nil.
func verifyChunk(dec *codec.Decoder, f io.ReaderAt, path string, rdr *file.Reader, rg, col int, ref arrow.Array, rng *rand.Rand) (pages int, rows int64, m *codectest.Mismatch, err error) {
	cp, err := codectest.ReadChunk(f, path, rdr.MetaData(), rg, col)
	if err != nil {
		return 0, 0, nil, err
	}
	rows, err = codectest.Check(dec, cp, ref, rng.Perm(len(cp.Pages)))
	if errors.As(err, &m) {
		return len(cp.Pages), rows, m, nil
	}
	if err != nil {
		return 0, 0, nil, err
	}
	return len(cp.Pages), rows, nil, nil
}
