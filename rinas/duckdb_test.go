package rinas

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/pagefeed/pagefeed/internal/gen"
	"github.com/pagefeed/pagefeed/internal/zoo"
)

// duckDBFile writes a Parquet file with DuckDB (the writer zoo's pinned
// @duckdb/node-api, installed from its lock file if needed), or skips
// where node is not installed.
func duckDBFile(t *testing.T, dir, query string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("short: no DuckDB")
	}
	path := filepath.Join(dir, "duckdb.parquet")
	zoo.RunDuckDB(t, "COPY ("+query+") TO '"+path+"' (FORMAT parquet, ROW_GROUP_SIZE 1000)")
	return path
}

// TestDuckDBAndGenFilesTogether: a pagefeed gen file and a DuckDB file of
// the same column names (DuckDB declares them OPTIONAL, gen REQUIRED) load
// in both orders to exactly what arrow-go reads from each file.
func TestDuckDBAndGenFilesTogether(t *testing.T) {
	dir := t.TempDir()
	duck := duckDBFile(t, dir, "SELECT (i % 3)::BIGINT AS id, [i % 7, 0, i % 5]::INTEGER[] AS input_ids FROM range(0, 3000) t(i)")
	res, err := gen.Run(context.Background(), gen.Config{Dir: dir, Files: 1, RowsPerFile: 2000, PageSize: 2048, RowGroupRows: 700,
		MeanTokens: 16, Codec: "snappy", PageIndex: true, Seed: 3, Prefix: "gen"})
	if err != nil {
		t.Fatal(err)
	}
	genf := res.Files[0]
	for _, col := range []string{"id", "input_ids"} {
		for _, ps := range [][]string{{genf, duck}, {duck, genf}} {
			var want []string
			for _, p := range ps {
				want = append(want, wholeFileValues(t, p, col)...)
			}
			cfg := baseConfig(dataset{paths: ps}, col)
			cfg.Shuffle, cfg.Fetch = ShuffleNone, Ordered
			if d := firstDiff(loadValues(t, cfg), want); d != "" {
				t.Fatalf("%s, files %v: %s", col, ps, d)
			}
		}
	}
}
