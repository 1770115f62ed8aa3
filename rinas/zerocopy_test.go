package rinas

import (
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// TestZeroCopyPagesMatchReference reads an uncompressed dataset, whose
// list pages are handed over in their read slots, holding each batch until
// the next has landed, and compares every
// delivered row with pqarrow's reading of the file.
func TestZeroCopyPagesMatchReference(t *testing.T) {
	ds := testDataset(t, "v2plain")
	ref := make([][][]int32, len(ds.paths))
	for i, p := range ds.paths {
		ref[i] = readListValues(t, p)
	}
	for _, fetch := range []Fetch{Unordered, Ordered} {
		cfg := baseConfig(ds, "input_ids")
		cfg.Fetch, cfg.BatchPages, cfg.Prefetch = fetch, 8, 2
		cfg.Engine.Scribble = true // a slot released early reads 0xA5
		l := openT(t, cfg)
		var held []*Batch
		seen := 0
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			b, err := l.Next(ctx)
			cancel()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, a := range b.Arrays {
				loc := l.ix.Locate(0, int(b.Pages[i]))
				rows := ref[loc.File][loc.FirstRow : loc.FirstRow+int64(loc.NumRows)]
				la := a.(*array.List)
				if la.Len() != len(rows) {
					t.Fatalf("%v: page %d has %d rows, want %d", fetch, b.Pages[i], la.Len(), len(rows))
				}
				vals := la.ListValues().(*array.Int32)
				for r := range rows {
					lo, hi := la.ValueOffsets(r)
					if got := vals.Int32Values()[lo:hi]; !slices.Equal(got, rows[r]) {
						t.Fatalf("%v: page %d row %d: %v, want %v", fetch, b.Pages[i], r, got[:min(4, len(got))], rows[r][:min(4, len(rows[r]))])
					}
				}
				seen += la.Len()
			}
			// Hold the previous batch while the next lands (ordered
			// fetch has two fetch batches): its slots must stay its own.
			held = append(held, b)
			if len(held) > 1 {
				held[0].Release()
				held = held[1:]
			}
		}
		for _, b := range held {
			b.Release()
		}
		if int64(seen) != ds.rows {
			t.Fatalf("%v: %d rows, want %d", fetch, seen, ds.rows)
		}
		zc := l.Stats().ZeroCopyPages
		if fetch == Unordered && zc == 0 {
			t.Fatalf("no page was handed over without a copy")
		}
		if fetch == Ordered && zc != 0 {
			t.Fatalf("ordered fetch reuses its read buffer, yet %d pages alias it", zc)
		}
		t.Logf("%v: %d pages, %d zero-copy", fetch, l.Stats().Pages, zc)
	}
}

// readListValues reads the input_ids column of one file with pqarrow: one
// slice of token ids per row.
func readListValues(t *testing.T, path string) [][]int32 {
	t.Helper()
	var out [][]int32
	withColumn(t, path, "input_ids", func(l *array.List) {
		vals := l.ListValues().(*array.Int32)
		for i := 0; i < l.Len(); i++ {
			lo, hi := l.ValueOffsets(i)
			out = append(out, slices.Clone(vals.Int32Values()[lo:hi]))
		}
	})
	return out
}
