package rinas

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Column is one projected column's rows in a Batch.
type Column struct {
	// Name is the column's dotted leaf path, as the index names it
	// (e.g. "input_ids.list.element").
	Name string
	// Arrays hold the column's rows in chunks. Chunks are row-aligned
	// across columns: Arrays[i] of every Column of a Batch holds the same
	// rows, in the same order.
	Arrays []arrow.Array
}

// Batch is what Next returns. Its memory belongs to the loader until
// Release, which must be called exactly once (from any goroutine), and
// counts against Config.MemoryLimit until then: a consumer that keeps
// batches unreleased eventually blocks Next (page batches: once it holds
// every fetch batch; tokens: every token buffer; row batches of Arrow
// arrays: once the batches it holds reach their share of the limit).
//
// Nothing of a Batch is valid after Release: its arrays may reference the
// loader's read buffers directly (uncompressed fixed-width pages are not
// copied) and Tokens is the loader's buffer, and both are overwritten by
// later reads. Arrow's Retain on an array of a Batch does not extend it
// past Release. Detach copies a batch into memory of its own.
type Batch struct {
	Epoch uint64
	// Columns holds the rows (arrow output), one entry per projected
	// column in projection order: one chunk per page of the lead column
	// (Config.LeadColumn), in arrival order, when batches are pages; one
	// chunk of BatchRows rows otherwise.
	Columns []Column
	// Arrays is Columns[0].Arrays, the first projected column's chunks
	// (nil when Columns is empty).
	Arrays []arrow.Array
	Rows   int
	// Pages are the global page numbers whose rows the batch holds, in
	// delivery order (page batches: one entry per chunk of Columns; with
	// row batches, the page of each row is in Refs).
	Pages []uint64
	// Refs names each row: row batches, page batches of the row
	// shuffle (whose units are single rows: each chunk of Columns is
	// then one row of the page Pages names), and page batches holding
	// part of a page (a page at the boundary of a rank's share or of a
	// batch: each rank keeps its own rows of it). Nil: every chunk of
	// Columns is the whole page Pages names.
	Refs []RowRef
	// Tokens is the packed [len(Tokens)/SeqLen, SeqLen] matrix (tokens
	// output), in a 4096-byte-aligned, mlock'ed buffer; Fill is the share
	// of it holding document tokens and EOS rather than padding.
	Tokens []int32
	// Tokens64 is the same matrix as int64 (Config.Tokens64; Tokens is
	// then nil).
	Tokens64 []int64
	SeqLen   int
	Fill     float64
	// PositionIDs holds each token's position within its segment, and
	// CuSeqlens the segments' cumulative ends over the flattened matrix
	// from 0 (cu_seqlens for padding-free attention): a segment ends after
	// every EOS, at every row's end and where padding starts, so a row's
	// segments sum to SeqLen and position ids restart at each document.
	// LossMask is 1 for document tokens and EOS, 0 for padding. All three
	// belong to the loader until Release (tokens output).
	PositionIDs []int32
	CuSeqlens   []int32
	LossMask    []uint8
	// SourceRows, for a mixture (Config.Sources), is the rows (tokens
	// output: rows of the token matrix) each source gave, in Sources
	// order. Each source's rows are contiguous chunks of Columns, sources
	// in Sources order.
	SourceRows []int

	released atomic.Bool
	free     func()
}

// setColumns installs the batch's columns and the Arrays alias.
func (b *Batch) setColumns(cols []Column) {
	b.Columns = cols
	b.Arrays = nil
	if len(cols) > 0 {
		b.Arrays = cols[0].Arrays
	}
}

// Release gives the batch's buffers back. Calling it twice panics.
func (b *Batch) Release() {
	if !b.released.CompareAndSwap(false, true) {
		panic("rinas: Batch released twice")
	}
	for _, c := range b.Columns {
		for _, a := range c.Arrays {
			a.Release()
		}
	}
	if b.free != nil {
		b.free()
	}
}

// Detach returns a deep copy of b in Go memory, which stays valid after
// b.Release and needs no Release of its own (calling it once is allowed).
// The copy is the caller's own memory: it does not count against
// Config.MemoryLimit, and holding copies never makes Next wait (holding
// the batches themselves does).
// It copies every array's buffers, the token arrays (Tokens, Tokens64,
// PositionIDs, CuSeqlens, LossMask), Pages and Refs; call it before
// b.Release, which it does not replace. Detaching a released batch panics.
func (b *Batch) Detach() *Batch {
	if b.released.Load() {
		panic("rinas: Detach of a released Batch")
	}
	d := &Batch{Epoch: b.Epoch, Rows: b.Rows, SeqLen: b.SeqLen, Fill: b.Fill,
		Pages: slices.Clone(b.Pages), Refs: slices.Clone(b.Refs), Tokens: slices.Clone(b.Tokens), Tokens64: slices.Clone(b.Tokens64),
		PositionIDs: slices.Clone(b.PositionIDs), CuSeqlens: slices.Clone(b.CuSeqlens), LossMask: slices.Clone(b.LossMask)}
	cols := make([]Column, len(b.Columns))
	for i, c := range b.Columns {
		cols[i] = Column{Name: c.Name, Arrays: make([]arrow.Array, len(c.Arrays))}
		for j, a := range c.Arrays {
			cols[i].Arrays[j] = deepCopy(a)
		}
	}
	d.setColumns(cols)
	return d
}

// deepCopy copies a's buffers (of its slice only) into new Go memory.
func deepCopy(a arrow.Array) arrow.Array {
	c, err := array.Concatenate([]arrow.Array{a}, memory.DefaultAllocator)
	if err != nil {
		// Concatenate fails only on arrays of different types or offsets
		// that overflow, neither possible for one valid array.
		panic(fmt.Sprintf("rinas: copying a %s array: %v", a.DataType(), err))
	}
	return c
}
