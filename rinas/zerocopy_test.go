package rinas

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pagefeed/pagefeed/engine/enginetest"
	"github.com/pagefeed/pagefeed/index"
)

// TestZeroCopyPagesMatchReference reads an uncompressed dataset, whose
// list pages are handed over in their read slots, holding each batch until
// the next has landed, and compares every delivered row with pqarrow's
// reading of the file: with unordered and ordered fetch, and with injected
// short reads, retries and corrupt pages (skipped) on the zero-copy path. Slots are
// scribbled on release, so one given back too early shows as 0xA5 values.
func TestZeroCopyPagesMatchReference(t *testing.T) {
	ds := testDataset(t, "v2plain")
	ref := readRef(t, ds)
	for _, tc := range []struct {
		name   string
		fetch  Fetch
		faults *enginetest.RateFaults
	}{
		{"unordered", Unordered, nil},
		{"ordered", Ordered, nil},
		{"unordered/faults", Unordered, &enginetest.RateFaults{Short: 0.05, EAGAIN: 0.02, EINTR: 0.02, ECANCELED: 0.02, Seed: 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig(ds, "input_ids")
			cfg.Fetch, cfg.BatchPages, cfg.Prefetch = tc.fetch, 8, 2
			cfg.Engine.Scribble = true
			if tc.faults != nil {
				// Corrupt pages, skipped, on the zero-copy path: their
				// slots go back while their neighbours' stay aliased.
				cds := copyDataset(t, ds)
				ix, err := index.Build(context.Background(), cds.paths, index.Options{Columns: []string{"input_ids"}, NoSidecar: true, Logf: t.Logf})
				if err != nil {
					t.Fatal(err)
				}
				ix = corruptPages(t, ix, 3, ix.NumPages(0)/2, ix.NumPages(0)-2)
				cfg.Paths, cfg.SharedIndex = cds.paths, ix
				cfg.Engine.Faults = tc.faults
				cfg.SkipBadPages = true
			}
			l := openT(t, cfg)
			var held []*Batch
			seen := 0
			eachBatch(t, l, func(b *Batch) {
				seen += checkRows(t, l, ref, b, "")
				// Hold the previous batch while the next lands (ordered
				// fetch has two fetch batches): its slots must stay its own.
				held = append(held, b)
				if len(held) > 1 {
					held[0].Release()
					held = held[1:]
				}
			})
			for _, b := range held {
				b.Release()
			}
			lost := 0
			for _, sp := range l.Skipped() {
				lost += int(l.ix.Locate(0, int(sp.Page)).NumRows)
			}
			if int64(seen+lost) != ds.rows {
				t.Fatalf("%d rows delivered + %d skipped, want %d", seen, lost, ds.rows)
			}
			st := l.Stats()
			switch {
			case tc.fetch == Unordered && st.ZeroCopyPages == 0:
				t.Fatalf("no page was handed over without a copy")
			case tc.fetch == Ordered && st.ZeroCopyPages != 0:
				t.Fatalf("ordered fetch reuses its read buffer, yet %d pages alias it", st.ZeroCopyPages)
			case tc.faults != nil && (st.SkippedPages == 0 || tc.faults.Counts().Transient() == 0):
				t.Fatalf("faults %+v, %d skipped: the test did not exercise them", tc.faults.Counts(), st.SkippedPages)
			}
			t.Logf("%d pages, %d zero-copy, %d skipped", st.Pages, st.ZeroCopyPages, st.SkippedPages)
		})
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

// TestZeroCopyBatchOutlivesClose holds zero-copy batches across Close:
// their pages stay in their slots (scribbled only on release) until the
// batches are released, as Close promises.
func TestZeroCopyBatchOutlivesClose(t *testing.T) {
	ds := testDataset(t, "v2plain")
	ref := readRef(t, ds)
	cfg := baseConfig(ds, "input_ids")
	cfg.BatchPages, cfg.Prefetch = 8, 2
	cfg.Engine.Scribble = true
	l, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var held []*Batch
	for range 2 {
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, b)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, b := range held {
		n += checkRows(t, l, ref, b, "after Close, ")
		b.Release()
	}
	if n == 0 || l.Stats().ZeroCopyPages == 0 {
		t.Fatalf("%d rows checked, %d zero-copy pages: nothing was held", n, l.Stats().ZeroCopyPages)
	}
}

// readRef reads the input_ids rows of every file of ds with pqarrow.
func readRef(t *testing.T, ds dataset) [][][]int32 {
	t.Helper()
	ref := make([][][]int32, len(ds.paths))
	for i, p := range ds.paths {
		ref[i] = readListValues(t, p)
	}
	return ref
}

// checkRows compares every row of page batch b (input_ids) with ref, the
// rows of each file, and returns how many rows it checked; what prefixes
// the failure.
func checkRows(t *testing.T, l *Loader, ref [][][]int32, b *Batch, what string) int {
	t.Helper()
	n := 0
	for i, a := range b.Arrays {
		loc := l.ix.Locate(0, int(b.Pages[i]))
		rows := ref[loc.File][loc.FirstRow : loc.FirstRow+int64(loc.NumRows)]
		la := a.(*array.List)
		if la.Len() != len(rows) {
			t.Fatalf("%spage %d has %d rows, want %d", what, b.Pages[i], la.Len(), len(rows))
		}
		vals := la.ListValues().(*array.Int32)
		for r := range rows {
			lo, hi := la.ValueOffsets(r)
			if got := vals.Int32Values()[lo:hi]; !slices.Equal(got, rows[r]) {
				t.Fatalf("%spage %d row %d: %v, want %v", what, b.Pages[i], r, got[:min(4, len(got))], rows[r][:min(4, len(rows[r]))])
			}
		}
		n += len(rows)
	}
	return n
}
