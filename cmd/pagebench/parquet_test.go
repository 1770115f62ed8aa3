package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
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

// TestParquetModeTrainingFlags: --pad-last and --drop-last give every rank
// of a world the same rows (row batches of 7 rows); --deterministic gives
// the same delivery order twice; two policies at once are refused.
func TestParquetModeTrainingFlags(t *testing.T) {
	dir := t.TempDir()
	if _, err := gen.Run(context.Background(), gen.Config{Dir: dir, Files: 2, RowsPerFile: 301, PageSize: 1024, PageIndex: true, PageVersion: 2, Seed: 1, MeanTokens: 16}); err != nil {
		t.Fatal(err)
	}
	glob := filepath.Join(dir, "*.parquet")
	rows := func(extra ...string) int64 {
		var out, errb bytes.Buffer
		args := append([]string{"--parquet=" + glob, "--column=input_ids", "--loops=1", "--output-format=json", "--rows=7", "--keep-cache"}, extra...)
		if rc := runMain(args, &out, &errb); rc != 0 {
			t.Fatalf("%v: rc %d: %s", extra, rc, errb.String())
		}
		var doc struct {
			Jobs []struct {
				Rows int64 `json:"rows"`
			} `json:"jobs"`
		}
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil || len(doc.Jobs) != 1 {
			t.Fatalf("%v: %s", err, out.String())
		}
		return doc.Jobs[0].Rows
	}
	for _, policy := range []string{"--drop-last", "--pad-last"} {
		var per []int64
		for r := 0; r < 3; r++ {
			per = append(per, rows(policy, "--world=3", "--rank="+string(rune('0'+r))))
		}
		if per[0] != per[1] || per[1] != per[2] || per[0]%7 != 0 {
			t.Fatalf("%s: rows per rank %v, want equal multiples of 7", policy, per)
		}
	}
	if all := rows("--keep-uneven", "--world=1"); all != 602 {
		t.Fatalf("--keep-uneven: %d rows, want 602", all)
	}
	dump := func() string {
		p := filepath.Join(t.TempDir(), "order")
		rows("--deterministic", "--dump-order="+p)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if a, b := dump(), dump(); a != b || a == "" {
		t.Fatal("--deterministic: two runs delivered different orders")
	}
	var o, e bytes.Buffer
	if rc := runMain([]string{"--parquet=" + glob, "--drop-last", "--pad-last", "--world=2"}, &o, &e); rc != 1 || !strings.Contains(e.String(), "DropLast") {
		t.Fatalf("--drop-last --pad-last: rc %d, %q", rc, e.String())
	}
}
