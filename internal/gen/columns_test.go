package gen

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// TestScalarPageSize: the same rows as the default writer, with the id
// and text columns cut into more, smaller pages than input_ids.
func TestScalarPageSize(t *testing.T) {
	base := Config{Files: 1, RowsPerFile: 3000, RowGroupRows: 1400, PageSize: 32 << 10, Seed: 3, MeanTokens: 40, PageIndex: true, Dictionary: true, PageVersion: 2}
	a, b := base, base
	a.Dir, b.Dir = t.TempDir(), t.TempDir()
	b.ScalarPageSize = 2048
	ra, err := Run(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := Run(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) (rows []string, pages [3]int) {
		r, err := file.OpenParquetFile(p, false)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for g := 0; g < r.NumRowGroups(); g++ {
			for c := 0; c < 3; c++ {
				pr, err := r.RowGroup(g).GetColumnPageReader(c)
				if err != nil {
					t.Fatal(err)
				}
				for pr.Next() {
					if pr.Page().Type() != 2 { // not a dictionary page
						pages[c]++
					}
				}
			}
		}
		fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := fr.ReadTable(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer tbl.Release()
		for i := 0; i < int(tbl.NumCols()); i++ {
			for _, ch := range tbl.Column(i).Data().Chunks() {
				for j := 0; j < ch.Len(); j++ {
					rows = append(rows, ch.ValueStr(j))
				}
			}
		}
		return rows, pages
	}
	va, pa := read(ra.Files[0])
	vb, pb := read(rb.Files[0])
	if len(va) != len(vb) || len(va) != 3*3000 {
		t.Fatalf("%d and %d values", len(va), len(vb))
	}
	for i := range va {
		if va[i] != vb[i] {
			t.Fatalf("value %d: %.60s, want %.60s", i, vb[i], va[i])
		}
	}
	if pb[0] <= pa[0] || pb[2] <= pa[2] || pb[1] != pa[1] {
		t.Fatalf("pages per column: %v with ScalarPageSize, %v without", pb, pa)
	}
	t.Logf("pages (id, input_ids, text): %v default, %v with 2 KiB scalar pages (%s)", pa, pb, filepath.Base(rb.Files[0]))
}
