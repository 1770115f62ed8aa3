package rinas

import (
	"context"
	"math"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
)

// Memory that rows hold after their fetch batch is recycled (row batches):
// rows waiting in the row stream pin their decoded pages, and the row
// batches a consumer holds are its own arrays. Both count against
// Config.MemoryLimit (sizing.go: memBreakdown.rows and .out).

// rowPin counts the rows of one decoded page (and the other columns'
// arrays of its span) that the row stream still holds: the page's memory
// stays until the last of them is delivered or dropped. Each row also
// carries a cost, the page's estimated decoded bytes over its rows
// (Loader.rowCost): the shuffle buffer is held within its byte budget by
// these costs, a function of the index alone, so that a resumed State,
// whose pending rows are read again, lets the same rows out at the same
// points as the uninterrupted run. Consumer only.
type rowPin struct {
	rows    int32
	bytes   int64
	held    *int64 // the stream's pinned bytes
	rowCost int64
	cost    *int64 // the stream's rows' costs
}

// pin pins the memory of a page (bytes) for rows rows of cost rowCost
// each.
func (r *rowStream) pin(rows int, bytes, rowCost int64) *rowPin {
	r.held += bytes
	r.cost += int64(rows) * rowCost
	return &rowPin{rows: int32(rows), bytes: bytes, held: &r.held, rowCost: rowCost, cost: &r.cost}
}

// unpin drops one row's hold on its page.
func (p *rowPin) unpin() {
	if p == nil {
		return
	}
	p.rows--
	if p.rows < 0 {
		panic("rinas: row pin underflow")
	}
	*p.cost -= p.rowCost
	if p.rows == 0 {
		*p.held -= p.bytes
	}
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
