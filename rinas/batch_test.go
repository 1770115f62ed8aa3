package rinas

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// listValues copies the token ids of a list<int32> array's rows.
func listValues(a arrow.Array) []int32 {
	l := a.(*array.List)
	v := l.ListValues().(*array.Int32).Int32Values()
	off := l.Offsets()
	return slices.Clone(v[off[0]:off[l.Len()]])
}

// TestDetachOutlivesRelease keeps a detached copy of every batch of an
// epoch of uncompressed list pages, which the loader hands over in their
// read slots and scribbles (0xA5) when given back, and checks the copies
// after every batch was released: the same token ids as delivered. A copy
// that shared the read slots (a Retain) shows the scribble or later reads.
func TestDetachOutlivesRelease(t *testing.T) {
	ds := testDataset(t, "v2plain")
	cfg := baseConfig(ds, "input_ids")
	cfg.BatchPages = 4
	cfg.Engine.Scribble = true
	l := openT(t, cfg)
	var kept []*Batch
	var want [][]int32
	for {
		b, err := l.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, b.Detach())
		for _, a := range b.Arrays {
			want = append(want, listValues(a))
		}
		b.Release()
	}
	if l.Stats().ZeroCopyPages == 0 {
		t.Fatal("no page was handed over in its read slot: the test shows nothing")
	}
	i, rows := 0, 0
	for _, d := range kept {
		if &d.Arrays[0] != &d.Columns[0].Arrays[0] || len(d.Pages) == 0 {
			t.Fatalf("detached batch: Arrays do not alias Columns[0], or no Pages")
		}
		for _, a := range d.Arrays {
			if got := listValues(a); !slices.Equal(got, want[i]) {
				t.Fatalf("chunk %d: %d detached ids differ from the %d delivered", i, len(got), len(want[i]))
			}
			rows += a.Len()
			i++
		}
		d.Release()
	}
	if int64(rows) != ds.rows || i != len(want) {
		t.Fatalf("%d rows in %d detached chunks; dataset %d rows, %d chunks delivered", rows, i, ds.rows, len(want))
	}
}

func TestDetachReleasedPanics(t *testing.T) {
	b := &Batch{}
	b.Release()
	defer func() {
		if recover() == nil {
			t.Fatal("Detach of a released batch did not panic")
		}
	}()
	b.Detach()
}

// TestDetachTokens: a detached tokens batch keeps every token array (int32
// and int64 tokens, position ids, segment ends, loss mask) after the
// original is released and its buffer reused.
func TestDetachTokens(t *testing.T) {
	ds := testDataset(t, "v2plain")
	cfg := baseConfig(ds, "input_ids")
	cfg.Output, cfg.SeqLen, cfg.BatchRows, cfg.Tokens64 = OutputTokens, 64, 4, true
	l := openT(t, cfg)
	type arrays struct {
		tok   []int32
		tok64 []int64
		pos   []int32
		cu    []int32
		mask  []uint8
	}
	var kept []*Batch
	var want []arrays
	for {
		b, err := l.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Tokens64) == 0 || len(b.PositionIDs) == 0 || len(b.CuSeqlens) == 0 || len(b.LossMask) == 0 {
			t.Fatalf("tokens batch without its arrays: %d int64 tokens, %d positions, %d segment ends, %d mask", len(b.Tokens64), len(b.PositionIDs), len(b.CuSeqlens), len(b.LossMask))
		}
		kept = append(kept, b.Detach())
		want = append(want, arrays{slices.Clone(b.Tokens), slices.Clone(b.Tokens64), slices.Clone(b.PositionIDs), slices.Clone(b.CuSeqlens), slices.Clone(b.LossMask)})
		b.Release()
	}
	if len(kept) < 3 {
		t.Fatalf("%d batches: too few for a buffer to be reused", len(kept))
	}
	for i, d := range kept {
		w := want[i]
		if !slices.Equal(d.Tokens, w.tok) || !slices.Equal(d.Tokens64, w.tok64) || !slices.Equal(d.PositionIDs, w.pos) ||
			!slices.Equal(d.CuSeqlens, w.cu) || !slices.Equal(d.LossMask, w.mask) {
			t.Fatalf("detached batch %d differs from the batch it was taken from", i)
		}
		d.Release()
	}
}
