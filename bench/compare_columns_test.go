package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestCompareParquetSeveralColumns: with several columns the one-column
// baselines are left out, and the progress says so, before anything runs.
func TestCompareParquetSeveralColumns(t *testing.T) {
	var cases []ParquetCase
	for _, c := range DefaultParquetCases {
		if c.Short == "arrow-go" || c.Short == "mmap" || c.Short == "decode only" {
			cases = append(cases, c)
		}
	}
	if len(cases) != 3 {
		t.Fatalf("%d baseline cases found", len(cases))
	}
	var progress bytes.Buffer
	rows, err := CompareParquet(context.Background(), ParquetCompareConfig{
		Base:     ParquetConfig{Paths: []string{"/nonexistent"}, Column: "id,input_ids"},
		Cases:    cases,
		Runtime:  time.Millisecond,
		Progress: &progress,
	})
	if err != nil || len(rows) != 0 {
		t.Fatalf("rows %v, err %v: want none run", rows, err)
	}
	if n := strings.Count(progress.String(), "left out"); n != 3 {
		t.Fatalf("progress %q: want three cases left out", progress.String())
	}
}
