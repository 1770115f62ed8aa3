package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCatColumns: several columns print one JSON object per row, each
// column's value equal to what cat prints for it alone, row by row, over
// rows that cross V1 pages and row groups of four rows.
func TestCatColumns(t *testing.T) {
	path, tokens, names := writeCatFixture(t)
	code, out, errs := runCmd(t, "cat", path, "--column", "name,tokens")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(tokens) {
		t.Fatalf("%d lines, want %d", len(lines), len(tokens))
	}
	for i, ln := range lines {
		var row map[string]json.RawMessage
		if err := json.Unmarshal([]byte(ln), &row); err != nil {
			t.Fatalf("line %d: %v: %.80s", i, err, ln)
		}
		if len(row) != 2 || string(row["tokens"]) != tokens[i] || string(row["name"]) != names[i] {
			t.Fatalf("line %d: %.120s, want tokens %.40s name %s", i, ln, tokens[i], names[i])
		}
		if !strings.HasPrefix(ln, `{"name":`) {
			t.Fatalf("line %d: keys not in projection order: %.40s", i, ln)
		}
	}
	code, out, _ = runCmd(t, "cat", path, "--column", "tokens.list.element,name", "--limit", "2")
	if code != 0 || strings.Count(out, "\n") != 2 || !strings.HasPrefix(out, `{"tokens.list.element":`) {
		t.Fatalf("limit: exit %d: %q", code, out)
	}
	code, _, errs = runCmd(t, "cat", path, "--column", "name,nope")
	if code == 0 || !strings.Contains(errs, "nope") || !strings.Contains(errs, "tokens") {
		t.Fatalf("unknown column: exit %d: %s", code, errs)
	}
}

// TestIndexColumnsSpans: --column takes a comma list, and the JSON gives
// each column's pages and bytes and the spans a page shuffle would cut.
func TestIndexColumnsSpans(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := runCmd(t, "gen", "--out", dir, "--rows-per-file", "300", "--page-size", "1024", "--mean-tokens", "16", "--quiet"); code != 0 {
		t.Fatalf("gen: %s", errs)
	}
	code, out, errs := runCmd(t, "index", dir, "--column", "id,input_ids", "--column", "text", "--json", "--no-sidecar")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		Columns []struct {
			Path  string
			Pages int
			Bytes int64
		}
		Spans struct {
			Lead         string
			Spans        int
			PagesPerSpan map[string]float64 `json:"pages_per_span"`
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(r.Columns) != 3 || r.Columns[1].Path != "input_ids" {
		t.Fatalf("columns %+v", r.Columns)
	}
	lead := r.Columns[0]
	for _, c := range r.Columns {
		if c.Pages == 0 || c.Bytes == 0 {
			t.Fatalf("column %+v", c)
		}
		if c.Bytes > lead.Bytes {
			lead = c
		}
	}
	if r.Spans.Lead != lead.Path || r.Spans.Spans != lead.Pages || len(r.Spans.PagesPerSpan) != 2 {
		t.Fatalf("spans %+v, lead %+v", r.Spans, lead)
	}
	for p, n := range r.Spans.PagesPerSpan {
		if n < 1 {
			t.Fatalf("%s: %.2f pages per span", p, n)
		}
	}
}
