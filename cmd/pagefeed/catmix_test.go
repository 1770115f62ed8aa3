package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pagefeed/pagefeed/internal/gen"
)

// TestCatSources: cat --source PATH:WEIGHT prints a mixture's rows, one
// epoch: each source's ids in file order (no shuffle), at the weights.
func TestCatSources(t *testing.T) {
	dir := t.TempDir()
	for i, n := range []string{"a", "b"} {
		if _, err := gen.Run(context.Background(), gen.Config{Dir: filepath.Join(dir, n), Files: 1, RowsPerFile: 1000 * (i + 1), PageSize: 4096, PageIndex: true, Seed: uint64(i + 1), MeanTokens: 16}); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	// Weights 1:1 over an epoch of 3,000 rows: 1,500 each, a's 1,000 rows
	// once and half of them again.
	if err := runCat([]string{"--source", filepath.Join(dir, "a") + ":1", "--source", filepath.Join(dir, "b") + ":1", "--column", "id"}, &out, &errb); err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3000 {
		t.Fatalf("%d rows", len(lines))
	}
	if lines[0] != "0" || lines[1] != "1" {
		t.Fatalf("first rows %q", lines[:2])
	}
	for _, args := range [][]string{
		{"--source", filepath.Join(dir, "a") + ":0", "--column", "id"},
		{"--source", filepath.Join(dir, "a"), filepath.Join(dir, "a"), "--column", "id"},
		{"--source", filepath.Join(dir, "a"), "--column", "nope"},
	} {
		if err := runCat(args, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
