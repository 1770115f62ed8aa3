package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIndexCommand(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := runCmd(t, "gen", "--out", dir, "--files", "2", "--rows-per-file", "200", "--page-size", "1024", "--mean-tokens", "16", "--quiet"); code != 0 {
		t.Fatalf("gen: %s", errs)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644)
	var first map[string]any
	for i, want := range []string{"written", "hit"} {
		code, out, errs := runCmd(t, "index", dir, "--column", "input_ids", "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if !strings.Contains(errs, "notes.txt") {
			t.Errorf("no notice for notes.txt: %q", errs)
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %q", err, out)
		}
		for _, k := range []string{"files", "row_groups", "column_chunks", "pages", "rows", "source", "resident_bytes", "bytes_per_page", "build_ms", "sidecar"} {
			if _, ok := r[k]; !ok {
				t.Errorf("JSON lacks %q: %s", k, out)
			}
		}
		if r["sidecar"] != want || r["files"] != 2.0 || r["rows"] != 400.0 || r["column_chunks"] != 2.0 {
			t.Errorf("run %d: %s", i, out)
		}
		src := r["source"].(map[string]any)
		if src["offset_index"] != 2.0 || src["header_walk"] != 0.0 {
			t.Errorf("source %v", src)
		}
		// a handful of pages: per-file and per-chunk data dominate here
		if bpp := r["bytes_per_page"].(float64); bpp < 12 {
			t.Errorf("bytes_per_page %v", bpp)
		}
		if i == 0 {
			first = r
		} else if r["pages"] != first["pages"] {
			t.Errorf("pages %v after sidecar load, %v before", r["pages"], first["pages"])
		}
	}
	// text summary, header walk, no sidecar
	code, out, errs := runCmd(t, "index", "--no-sidecar", "--header-walk", filepath.Join(dir, "part-00000.parquet"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, s := range []string{"files          1", "header walk 3", "sidecar        miss", "input_ids  ", "counted from their levels"} {
		if !strings.Contains(out, s) {
			t.Errorf("summary lacks %q:\n%s", s, out)
		}
	}
}

func TestIndexCommandErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.parquet")
	os.WriteFile(bad, []byte("not parquet at all, sorry"), 0o644)
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"index"}, "no PATH"},
		{[]string{"index", bad, "--no-sidecar"}, "bad.parquet"},
		{[]string{"index", filepath.Join(dir, "none.parquet")}, "none.parquet"},
		{[]string{"index", "../../index/testdata/v1_pageindex_dict.parquet", "--no-sidecar", "--column", "nope"}, "nope"},
		{[]string{"index", bad, "--sidecar", "x", "--no-sidecar"}, "exclude"},
	} {
		code, _, errs := runCmd(t, c.args...)
		if code != 1 || !strings.Contains(errs, c.msg) || strings.Count(strings.TrimSpace(errs), "\n") > 2 {
			t.Errorf("%v: exit %d, stderr %q; want a line naming %q", c.args, code, errs, c.msg)
		}
	}
}
