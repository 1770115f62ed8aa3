package rinas

import (
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
)

// Batch is what Next returns. Its memory belongs to the loader until
// Release, which must be called exactly once (from any goroutine); a
// consumer that keeps batches unreleased eventually blocks Next. Arrays
// of page batches may reference the loader's read buffers directly
// (uncompressed fixed-width pages are not copied): a Retain does not keep
// them valid past Release; copy what must outlive the batch.
type Batch struct {
	Epoch uint64
	// Arrays holds the rows (arrow output): one array per page, in arrival
	// order, when batches are pages; one array of BatchRows rows otherwise.
	Arrays []arrow.Array
	Rows   int
	// Pages are the global page numbers whose rows the batch holds, in
	// delivery order (page batches; with row batches, the page of each row
	// is in Refs).
	Pages []uint64
	// Refs names each row (row batches only).
	Refs []RowRef
	// Tokens is the packed [len(Tokens)/SeqLen, SeqLen] matrix (tokens
	// output), in a 4096-byte-aligned, mlock'ed buffer; Fill is the share
	// of it holding document tokens and EOS rather than padding.
	Tokens []int32
	SeqLen int
	Fill   float64

	released atomic.Bool
	free     func()
}

// Release gives the batch's buffers back. Calling it twice panics.
func (b *Batch) Release() {
	if !b.released.CompareAndSwap(false, true) {
		panic("rinas: Batch released twice")
	}
	for _, a := range b.Arrays {
		a.Release()
	}
	if b.free != nil {
		b.free()
	}
}
