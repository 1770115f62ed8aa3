package rinas

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pagefeed/pagefeed/internal/gen"
)

// duckDBFile writes a Parquet file with DuckDB (installed from npm as
// @duckdb/node-api into a temp dir), or skips when node, npm or the
// registry is not available.
func duckDBFile(t *testing.T, dir, query string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("short: no npm install")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("no npm")
	}
	mod := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--silent", "--prefix", mod, "@duckdb/node-api")
	if out, err := install.CombinedOutput(); err != nil {
		t.Skipf("npm install @duckdb/node-api: %v: %.300s", err, out)
	}
	path := filepath.Join(dir, "duckdb.parquet")
	script := filepath.Join(mod, "write.mjs")
	src := `import { DuckDBInstance } from '@duckdb/node-api';
const inst = await DuckDBInstance.create(':memory:');
const con = await inst.connect();
await con.run(process.argv[2]);
`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	q := "COPY (" + query + ") TO '" + path + "' (FORMAT parquet, ROW_GROUP_SIZE 1000)"
	if out, err := exec.CommandContext(ctx, "node", script, q).CombinedOutput(); err != nil {
		t.Fatalf("duckdb: %v: %s", err, out)
	}
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
