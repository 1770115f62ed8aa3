package rinas

import (
	"context"
	"math"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Memory that rows hold after their fetch batch is recycled (row batches):
// rows waiting in the row stream pin their decoded pages, and the row
// batches a consumer holds are its own arrays. Both count against
// Config.MemoryLimit (sizing.go: memBreakdown.rows and .out).

// rowPage is one decoded page (and the other columns' arrays of its
// span) whose rows the row stream and the batch records still hold. It
// holds one reference to each array for all its rows, so a row costs no
// reference counting of its own: the references and the page's memory go
// when the last of its rows is delivered or dropped. Each row also
// carries a cost, the page's estimated decoded bytes over its rows
// (Loader.rowCost): the shuffle buffer is held within its byte budget by
// these costs, a function of the index alone, so that a resumed State,
// whose pending rows are read again, lets the same rows out at the same
// points as the uninterrupted run. Consumer only.
//
// Pages live in rowStream.pages and rows name them by index (rowItem.pg),
// so that rows hold no pointers: the shuffle buffer moves them as plain
// words, and the collector never scans them.
type rowPage struct {
	page uint64 // its index in the lead column
	arr  arrow.Array
	cols []arrow.Array
	// lo is the row of arr at index 0 of each of cols.
	lo      int
	rows    int32
	bytes   int64
	rowCost int64
	// offs and vals are arr's row offsets and values when it is a
	// list<int32> without nulls (the gather's fast path, concatRows),
	// nil otherwise.
	offs, vals []int32
}

// pin takes a reference to the array a of lead page page and to cols, the other
// columns' arrays of its span (whose index 0 is a's row lo), for rows
// rows of cost rowCost each, and counts bytes, the memory they keep,
// until the last row is unpinned. It returns the page's index in
// r.pages.
func (r *rowStream) pin(page uint64, a arrow.Array, cols []arrow.Array, lo, rows int, bytes, rowCost int64) int32 {
	var pg int32
	if n := len(r.free); n > 0 {
		pg, r.free = r.free[n-1], r.free[:n-1]
	} else {
		r.pages = append(r.pages, rowPage{})
		pg = int32(len(r.pages) - 1)
	}
	p := &r.pages[pg]
	a.Retain()
	for _, c := range cols {
		c.Retain()
	}
	p.page, p.arr, p.cols, p.lo = page, a, append(p.cols[:0], cols...), lo
	p.rows, p.bytes, p.rowCost = int32(rows), bytes, rowCost
	p.offs, p.vals = listInt32(a)
	r.held += bytes
	r.cost += int64(rows) * rowCost
	return pg
}

// unpin drops one row's hold on its page pg: the last one releases the
// page's arrays and its memory.
func (r *rowStream) unpin(pg int32) {
	p := &r.pages[pg]
	p.rows--
	if p.rows < 0 {
		panic("rinas: row pin underflow")
	}
	r.cost -= p.rowCost
	if p.rows > 0 {
		return
	}
	r.held -= p.bytes
	p.arr.Release()
	for _, c := range p.cols {
		c.Release()
	}
	clear(p.cols)
	*p = rowPage{cols: p.cols[:0]}
	r.free = append(r.free, pg)
}

// listInt32 returns a's row offsets (row i's values are
// vals[offs[i]:offs[i+1]]) and values when a is a list<int32> with no
// null row and no null value; nil otherwise.
func listInt32(a arrow.Array) (offs, vals []int32) {
	la, ok := a.(*array.List)
	if !ok || la.Len() == 0 || la.NullN() > 0 {
		return nil, nil
	}
	v, ok := la.ListValues().(*array.Int32)
	if !ok || v.NullN() > 0 {
		return nil, nil
	}
	// Offsets is the whole buffer; a sliced list starts further in.
	off := la.Data().Offset()
	return la.Offsets()[off : off+la.Len()+1], v.Int32Values()
}

// rowCost is what one row of lead page g, which decoded to rows rows,
// costs the shuffle buffer: the page's decoded bytes as the index and the
// sampled ratio estimate them, over its rows, and the other columns' mean
// bytes a row.
func (l *Loader) rowCost(g, rows int) int64 {
	loc := l.ix.Locate(l.lead, g)
	if loc.NumRows >= 0 {
		rows = int(loc.NumRows)
	}
	return int64(math.Ceil(float64(loc.Size)*l.leadRatio/float64(max(rows, 1)) + l.sideRowBytes))
}

// arrayBytes returns the bytes of a's buffers (of the whole arrays they
// slice: what holding a keeps alive).
func arrayBytes(a arrow.Array) int64 {
	if a == nil {
		return 0
	}
	if d, ok := a.Data().(interface{ SizeInBytes() uint64 }); ok {
		return int64(d.SizeInBytes())
	}
	return 0
}

// pageBytes is what rows of a page pin: the page's array and the other
// columns' arrays of its span.
func pageBytes(a arrow.Array, cols []arrow.Array) int64 {
	n := arrayBytes(a)
	for _, c := range cols {
		n += arrayBytes(c)
	}
	return n
}

// outGate bounds the bytes of row batches (arrow output) the consumer
// holds unreleased: Next waits, before it takes anything in, while they
// reach the budget (one batch may take them past it), the rule the token
// buffers and fetch batches set for the other outputs. Release runs on
// any goroutine.
type outGate struct {
	held   atomic.Int64
	budget int64
	wake   chan struct{}
}

func (g *outGate) init(budget int64) {
	g.budget = budget
	g.wake = make(chan struct{}, 1)
}

// wait returns once the held batches are below the budget, or ctx's error.
func (g *outGate) wait(ctx context.Context) error {
	for g.budget > 0 && g.held.Load() >= g.budget {
		select {
		case <-g.wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// hold counts a batch of n bytes as held and returns what its Release
// calls.
func (g *outGate) hold(n int64) func() {
	g.held.Add(n)
	return func() {
		g.held.Add(-n)
		select {
		case g.wake <- struct{}{}:
		default:
		}
	}
}

// batchBytes is the bytes of b's arrays.
func batchBytes(b *Batch) int64 {
	var n int64
	for _, c := range b.Columns {
		for _, a := range c.Arrays {
			n += arrayBytes(a)
		}
	}
	return n
}
