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

func TestParquetModeJSONAndBadInput(t *testing.T) {
	dir := t.TempDir()
	if _, err := gen.Run(context.Background(), gen.Config{Dir: dir, Files: 1, RowsPerFile: 300, PageSize: 4096, PageIndex: true, Seed: 1, MeanTokens: 32}); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	glob := filepath.Join(dir, "*.parquet")
	if rc := runMain([]string{"--parquet=" + glob, "--column=input_ids", "--loops=1", "--output-format=json"}, &out, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	var doc struct {
		Jobs []struct {
			Read struct {
				IOPS float64 `json:"iops"`
			} `json:"read"`
			Rows int64 `json:"rows"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(doc.Jobs) != 1 || doc.Jobs[0].Rows != 300 || doc.Jobs[0].Read.IOPS <= 0 {
		t.Fatalf("unexpected JSON: %s", out.String())
	}
	for _, args := range [][]string{
		{"--parquet=" + filepath.Join(dir, "none*.parquet")},
		{"--parquet=" + glob, "--column=nope", "--loops=1"},
		{"--parquet=" + glob, "--shuffle=sideways"},
		{"--parquet=" + glob, "--runtime=2", "--loops=1"},
		{"--parquet=" + glob, "--direct=2"},
		{"--parquet=" + glob, "--bogus=1"},
		{"--parquet=" + glob, "--iodepth=0"},
	} {
		var o, e bytes.Buffer
		rc := runMain(args, &o, &e)
		lines := strings.Count(strings.TrimRight(e.String(), "\n"), "\n") + 1
		if rc != 1 || !strings.HasPrefix(e.String(), "pagebench: ") || lines != 1 || strings.Contains(e.String(), "goroutine") {
			t.Errorf("%v: rc %d, stderr %q: want one line and exit 1", args, rc, e.String())
		}
	}
}

// TestParquetModeColumns: --column takes several columns; the JSON counts
// the other columns' pages, and coalescing off issues one read per page.
func TestParquetModeColumns(t *testing.T) {
	dir := t.TempDir()
	if _, err := gen.Run(context.Background(), gen.Config{Dir: dir, Files: 1, RowsPerFile: 400, PageSize: 2048, PageIndex: true, Seed: 1, MeanTokens: 32}); err != nil {
		t.Fatal(err)
	}
	glob := filepath.Join(dir, "*.parquet")
	type job struct {
		Pages          int64 `json:"pages"`
		Rows           int64 `json:"rows"`
		Reads          int64 `json:"reads"`
		SidePages      int64 `json:"side_pages"`
		CoalescedPages int64 `json:"coalesced_pages"`
	}
	run := func(extra ...string) job {
		t.Helper()
		var out, errb bytes.Buffer
		args := append([]string{"--parquet=" + glob, "--column=id,input_ids,text", "--loops=1", "--output-format=json"}, extra...)
		if rc := runMain(args, &out, &errb); rc != 0 {
			t.Fatalf("%v: rc %d: %s", args, rc, errb.String())
		}
		var doc struct{ Jobs []job }
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil || len(doc.Jobs) != 1 {
			t.Fatalf("%v: %s", err, out.String())
		}
		return doc.Jobs[0]
	}
	j := run("--lead-column=id", "--coalesce=-1")
	if j.Rows != 400 || j.SidePages == 0 || j.Reads != j.Pages || j.CoalescedPages != 0 {
		t.Fatalf("coalescing off: %+v", j)
	}
	j = run("--lead-column=id")
	if j.Rows != 400 || j.CoalescedPages == 0 || j.Reads >= j.Pages {
		t.Fatalf("coalescing on: %+v", j)
	}
	var o, e bytes.Buffer
	if rc := runMain([]string{"--parquet=" + glob, "--column=id,text", "--engine=arrowgo", "--loops=1"}, &o, &e); rc != 1 || !strings.Contains(e.String(), "several columns") {
		t.Fatalf("arrowgo with several columns: rc %d, %q", rc, e.String())
	}
}
