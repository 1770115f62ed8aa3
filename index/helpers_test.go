package index

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pagefeed/pagefeed/internal/gen"
)

// genDataset writes a small dataset into a temp dir and returns its files.
func genDataset(t testing.TB, c gen.Config) []string {
	t.Helper()
	if c.Dir == "" {
		c.Dir = t.TempDir()
	}
	res, err := gen.Run(context.Background(), c)
	if err != nil {
		t.Fatalf("gen: %v", err)
	}
	return res.Files
}

// build indexes paths without a sidecar, failing the test on error.
func build(t testing.TB, paths []string, opts Options) *Index {
	t.Helper()
	opts.NoSidecar = true
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	ix, err := Build(context.Background(), paths, opts)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return ix
}

// testingData returns the parquet-testing data folder, or skips.
func testingData(t testing.TB) string {
	t.Helper()
	dir := filepath.Join("..", "..", "shared", "parquet-testing", "data")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("parquet-testing data not available: %v", err)
	}
	return dir
}
