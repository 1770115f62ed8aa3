package index

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pagefeed/pagefeed/internal/gen"
)

// sameLocations asserts that two indexes of the same files agree on every
// page's location, and on first rows and row counts where both know them.
func sameLocations(t *testing.T, name string, a, b *Index) {
	t.Helper()
	if a.NumColumns() != b.NumColumns() {
		t.Fatalf("%s: %d vs %d columns", name, a.NumColumns(), b.NumColumns())
	}
	for k := 0; k < a.NumColumns(); k++ {
		col := a.Column(k).Path
		if a.NumPages(k) != b.NumPages(k) {
			t.Errorf("%s column %s: %d pages vs %d", name, col, a.NumPages(k), b.NumPages(k))
			continue
		}
		for g := 0; g < a.NumPages(k); g++ {
			la, lb := a.Locate(k, g), b.Locate(k, g)
			if la.File != lb.File || la.Chunk != lb.Chunk || la.RowGroup != lb.RowGroup || la.Offset != lb.Offset || la.Size != lb.Size {
				t.Errorf("%s column %s page %d: %+v vs %+v", name, col, g, la, lb)
				break
			}
			if la.FirstRow >= 0 && lb.FirstRow >= 0 && la.FirstRow != lb.FirstRow {
				t.Errorf("%s column %s page %d: first row %d vs %d", name, col, g, la.FirstRow, lb.FirstRow)
				break
			}
			if la.NumRows >= 0 && lb.NumRows >= 0 && la.NumRows != lb.NumRows {
				t.Errorf("%s column %s page %d: rows %d vs %d", name, col, g, la.NumRows, lb.NumRows)
				break
			}
		}
		for c := 0; c < a.NumChunks(); c++ {
			ca, cb := a.Chunk(k, c), b.Chunk(k, c)
			ca.Source, cb.Source = 0, 0
			if ca.Descr.String() != cb.Descr.String() {
				t.Errorf("%s column %s chunk %d: descriptor %s vs %s", name, col, c, ca.Descr, cb.Descr)
			}
			ca.Descr, cb.Descr = nil, nil
			if ca != cb {
				t.Errorf("%s column %s chunk %d: %+v vs %+v", name, col, c, ca, cb)
			}
		}
	}
}

// TestOffsetIndexMatchesHeaderWalk builds every file of parquet-testing
// both ways; where a file has offset indexes the two must agree.
func TestOffsetIndexMatchesHeaderWalk(t *testing.T) {
	dir := testingData(t)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	compared := map[string]bool{}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".parquet") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		oi, err := Build(t.Context(), []string{p}, Options{NoSidecar: true, Logf: t.Logf})
		if err != nil {
			t.Logf("skip %s: %v", e.Name(), err)
			continue
		}
		hw, err := Build(t.Context(), []string{p}, Options{NoSidecar: true, HeaderWalk: true, Logf: t.Logf})
		if err != nil {
			t.Errorf("%s: offset index build worked, header walk failed: %v", e.Name(), err)
			continue
		}
		if oi.Stats().OffsetIndex == 0 {
			t.Logf("%s: no offset index, %d pages by header walk", e.Name(), hw.Stats().Pages)
			continue
		}
		compared[e.Name()] = true
		t.Logf("%s: %d chunks from offset indexes, %d pages", e.Name(), oi.Stats().OffsetIndex, oi.Stats().Pages)
		sameLocations(t, e.Name(), oi, hw)
	}
	if !compared["alltypes_tiny_pages.parquet"] {
		t.Error("alltypes_tiny_pages.parquet was not compared")
	}
}

// TestGeneratedOffsetIndexMatchesHeaderWalk does the same over the
// generator's page versions, codecs and dictionary settings.
func TestGeneratedOffsetIndexMatchesHeaderWalk(t *testing.T) {
	for _, c := range []gen.Config{
		{PageVersion: 1, Codec: "zstd"},
		{PageVersion: 2, Codec: "snappy"},
		{PageVersion: 1, Codec: "none", Dictionary: true},
		{PageVersion: 2, Codec: "lz4_raw", Dictionary: true},
	} {
		c.Files, c.RowsPerFile, c.RowGroupRows, c.PageSize, c.MeanTokens, c.PageIndex = 2, 400, 150, 1024, 32, true
		files := genDataset(t, c)
		oi := build(t, files, Options{})
		hw := build(t, files, Options{HeaderWalk: true})
		if oi.Stats().HeaderWalk != 0 || hw.Stats().OffsetIndex != 0 {
			t.Fatalf("sources: %+v / %+v", oi.Stats(), hw.Stats())
		}
		if oi.Stats().Pages < 50 {
			t.Fatalf("only %d pages", oi.Stats().Pages)
		}
		sameLocations(t, c.Codec, oi, hw)
	}
}
