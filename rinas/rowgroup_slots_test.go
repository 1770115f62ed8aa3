package rinas

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/pagefeed/pagefeed/internal/gen"
)

// TestRowGroupSlotsCountRequests: a row-group unit of many small pages
// reads them as a few coalesced requests, and the engine's read slots are
// counted by those requests, not by pages: a dataset of large row groups
// opens within a memory limit its page count alone would exceed (slots
// sized for a coalesced run, one per page), and delivers every row once
// with exactly the requests the plan counted.
func TestRowGroupSlotsCountRequests(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rg")
	if _, err := gen.Run(context.Background(), gen.Config{Dir: dir, Files: 2, RowsPerFile: 6000, RowGroupRows: 3000,
		Codec: "none", PageSize: 1024, PageVersion: 1, PageIndex: true, MeanTokens: 48, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	ref := reference(t, paths)
	for _, cols := range [][]string{{"input_ids"}, {"id", "input_ids", "text"}} {
		cfg := multiConfig(paths, cols...)
		cfg.Shuffle, cfg.MemoryLimit = ShuffleRowGroup, 24<<20
		l, err := Open(context.Background(), cfg)
		if err != nil {
			t.Fatalf("%v: %v", cols, err)
		}
		want := int64(0)
		most := 0
		for c := 0; c < l.ix.NumChunks(); c++ {
			n := l.chunkRequests(c, l.coalesce)
			want += int64(n)
			most = max(most, n)
		}
		pages := l.ix.NumPages(l.lead) / l.ix.NumChunks()
		if most*4 > pages {
			t.Fatalf("%v: %d requests for a row group of %d lead pages: coalescing barely helps, the test proves nothing", cols, most, pages)
		}
		checkOnce(t, runAll(t, l, ref, -1), l.Index())
		if st := l.Stats(); st.Reads != want {
			t.Fatalf("%v: %d requests read, the plan counted %d", cols, st.Reads, want)
		}
		l.Close()
	}
}
