package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pagefeed/pagefeed/internal/gen"
)

// TestParquetModeSources: --source PATH:WEIGHT, repeated, reads a
// mixture; the JSON reports each source's rows, epochs, bytes and read
// mode, and the mode chosen over all sources' files. Bad
// sources fail with one line.
func TestParquetModeSources(t *testing.T) {
	dir := t.TempDir()
	for i, n := range []string{"a", "b"} {
		if _, err := gen.Run(context.Background(), gen.Config{Dir: filepath.Join(dir, n), Files: 1, RowsPerFile: 400, PageSize: 4096, PageIndex: true, Seed: uint64(i + 1), MeanTokens: 32}); err != nil {
			t.Fatal(err)
		}
	}
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	var out, errb bytes.Buffer
	if rc := runMain([]string{"--source=" + a + ":3", "--source=" + b + ":1", "--column=id", "--rows=40", "--loops=1", "--output-format=json"}, &out, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	var doc struct {
		Jobs []struct {
			Rows          int64  `json:"rows"`
			IOMode        string `json:"io_mode"`
			IOReason      string `json:"io_mode_reason"`
			DirectFiles   int    `json:"direct_files"`
			BufferedFiles int    `json:"buffered_files"`
			Sources       []struct {
				Name          string `json:"name"`
				Rows          int64  `json:"rows"`
				Epochs        int64  `json:"epochs"`
				IOBytes       int64  `json:"io_bytes"`
				IOMode        string `json:"io_mode"`
				DirectFiles   int    `json:"direct_files"`
				BufferedFiles int    `json:"buffered_files"`
			} `json:"sources"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	j := doc.Jobs[0]
	// The epoch is the sum of the sources (800 rows), 3:1.
	if j.Rows != 800 || len(j.Sources) != 2 || j.Sources[0].Rows != 600 || j.Sources[1].Rows != 200 || j.Sources[0].Name != a ||
		j.Sources[0].IOBytes <= 0 || j.Sources[0].Epochs != 2 || j.Sources[1].Epochs != 1 {
		t.Fatalf("unexpected JSON: %s", out.String())
	}
	// The read mode (auto at the defaults) chosen over both sources'
	// files, and each source's part of it.
	if j.IOMode == "" || j.IOReason == "" || j.DirectFiles+j.BufferedFiles != 2 {
		t.Fatalf("io_mode %q (%d direct, %d buffered files), reason %q: want the choice over both sources' 2 files", j.IOMode, j.DirectFiles, j.BufferedFiles, j.IOReason)
	}
	for _, s := range j.Sources {
		if s.IOMode == "" || s.DirectFiles+s.BufferedFiles != 1 || (j.IOMode != "mixed" && s.IOMode != j.IOMode) {
			t.Fatalf("source %s: io_mode %q, %d direct and %d buffered files; the mixture's %q", s.Name, s.IOMode, s.DirectFiles, s.BufferedFiles, j.IOMode)
		}
	}
	for _, args := range [][]string{
		{"--source=" + a + ":-1"},
		{"--source=" + a, "--parquet=" + b},
		{"--source=" + a, "--source=" + a + ":x", "--loops=1"},
		{"--source=" + a, "--engine=arrowgo", "--loops=1"},
	} {
		var o, e bytes.Buffer
		rc := runMain(args, &o, &e)
		lines := strings.Count(strings.TrimRight(e.String(), "\n"), "\n") + 1
		if rc != 1 || !strings.HasPrefix(e.String(), "pagebench: ") || lines != 1 {
			t.Errorf("%v: rc %d, stderr %q: want one line and exit 1", args, rc, e.String())
		}
	}
}
