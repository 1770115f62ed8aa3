package rinas

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/pagefeed/pagefeed/codec"
)

// rowItem is one row waiting to be delivered: its page, an index into
// rowStream.pages that holds the page's arrays for all its rows
// (rowPage), its row in the page, and for tokens how many of its tokens
// a previous batch already took. It holds no pointer and takes 12
// bytes, so the shuffle buffer's random moves are plain copies within
// a small array.
type rowItem struct {
	pg  int32
	row uint32
	tok uint32
}

func (it *rowItem) setTok(n int) { it.tok = uint32(n) }

// ref is the RowRef of it.
func (r *rowStream) ref(it rowItem) RowRef {
	return RowRef{Page: r.pages[it.pg].page, Row: it.row, Tok: it.tok}
}

// rowStream turns landed units into rows: through the shuffle buffer when
// one is configured, then a FIFO the batches are cut from.
type rowStream struct {
	l    *Loader
	buf  *shuffleBuffer[rowItem]
	out  []rowItem // FIFO, head at out[0]
	rng  splitmix
	perm []int // scratch for row-group shuffles
	// pages are the pages the rows held (in the stream and in the batch
	// records) name, free the indices of pages no row holds (rowmem.go);
	// scratch is push's list of a unit's rows.
	pages   []rowPage
	free    []int32
	scratch []rowItem
	// held is the bytes of the pages the rows held pin; cost the rows'
	// costs (rowmem.go), which maxCost bounds: random rows leave the
	// shuffle buffer early beyond it.
	held, cost, maxCost int64
}

func (r *rowStream) init(l *Loader) {
	r.l = l
	seed := l.cfg.Seed ^ 0x5bd1e995*(l.cfg.Epoch+1) ^ uint64(l.cfg.Rank)<<32
	r.rng = splitmix(seed)
	if l.cfg.BufferRows > 0 {
		r.buf = newShuffleBuffer[rowItem](l.cfg.BufferRows, 0)
	}
}

// push takes in the rows of a landed unit: all of them, or of a unit cut
// at a share's boundary its rows [lo, hi) in the unit's own order (before
// any shuffle, so that which rows a rank keeps does not depend on the
// generator's history).
func (r *rowStream) push(u *unit) {
	rows := r.scratch[:0]
	at := int64(0) // the unit's rows before page k
	for k, p := range u.pages {
		a := p.Array()
		lo, hi := 0, a.Len()
		if u.row >= 0 {
			lo, hi = int(u.row), int(u.row)+1
		}
		at0 := at
		at += int64(hi - lo)
		klo, khi := lo, hi // the rows of this page the unit keeps
		if u.cut {
			klo = lo + int(min(max(u.lo-at0, 0), int64(hi-lo)))
			khi = lo + int(min(max(u.hi-at0, 0), int64(hi-lo)))
		}
		if klo >= khi {
			continue // a pin of no rows would never be released
		}
		var cols []arrow.Array
		if len(r.l.sides) > 0 {
			// each side's rows [lo, hi) of this page (the page takes its
			// own references: u.segs is reused once the unit's batch is
			// recycled)
			cols = u.segs[k]
		}
		pg := r.pin(uint64(u.first+k), a, cols, lo, khi-klo, pageBytes(a, cols), r.l.rowCost(u.first+k, a.Len()))
		for i := klo; i < khi; i++ {
			rows = append(rows, rowItem{pg: pg, row: uint32(i)})
		}
	}
	r.scratch = rows[:0] // rows are copied out below
	if r.l.cfg.Shuffle == ShuffleRowGroup {
		// Reimu: rows of the block shuffled in memory.
		for i := len(rows) - 1; i > 0; i-- {
			j := int(r.rng.next() % uint64(i+1))
			rows[i], rows[j] = rows[j], rows[i]
		}
	}
	if r.buf == nil {
		r.out = append(r.out, rows...)
		return
	}
	r.buf.rng = r.rng
	for _, it := range rows {
		r.buf.push(it)
		// Over its rows or its bytes, random rows leave: the FIFO is
		// delivered before the next unit is taken in.
		for r.buf.over() > 0 || (r.cost > r.maxCost && r.maxCost > 0 && r.buf.len() > 0) {
			r.out = append(r.out, r.buf.pop())
		}
	}
	r.rng = r.buf.rng
}

// flush empties the shuffle buffer into the FIFO (an epoch's end).
func (r *rowStream) flush() {
	if r.buf == nil {
		return
	}
	r.buf.rng = r.rng
	for r.buf.len() > 0 {
		r.out = append(r.out, r.buf.pop())
	}
	r.rng = r.buf.rng
}

// pending lists the rows taken in and not delivered: the FIFO, then the
// buffer in its order.
func (r *rowStream) pending() []RowRef {
	n := len(r.out)
	if r.buf != nil {
		n += len(r.buf.items)
	}
	if n == 0 {
		return nil
	}
	// Sized once: a mixture takes each touched source's State for every
	// batch, and growing the list was most of that.
	p := make([]RowRef, 0, n)
	for _, it := range r.out {
		p = append(p, r.ref(it))
	}
	if r.buf != nil {
		for _, it := range r.buf.items {
			p = append(p, r.ref(it))
		}
	}
	return p
}

// drop releases every row held.
func (r *rowStream) drop() {
	for _, it := range r.out {
		r.unpin(it.pg)
	}
	r.out = nil
	if r.buf != nil {
		for _, it := range r.buf.items {
			r.unpin(it.pg)
		}
		clear(r.buf.items)
		r.buf.items = r.buf.items[:0]
	}
}

// restore rebuilds the pending rows of a State by reading their pages
// synchronously. The rows go to the buffer (in order) up to its capacity
// and the rest to the FIFO ahead of them, as pending() listed them; all to
// the FIFO when the buffer had been flushed at the epoch's end.
func (r *rowStream) restore(refs []RowRef, flushed bool) (err error) {
	if len(refs) == 0 {
		return nil
	}
	pages := map[uint64]*codec.Page{}
	sides := map[uint64][]arrow.Array{}
	defer func() {
		for _, p := range pages {
			p.Release()
		}
		for _, cols := range sides {
			for _, a := range cols {
				a.Release()
			}
		}
	}()
	items := make([]rowItem, 0, len(refs))
	defer func() {
		if err != nil {
			for _, it := range items {
				r.unpin(it.pg)
			}
		}
	}()
	pins := map[uint64]int32{}
	for _, ref := range refs {
		p := pages[ref.Page]
		if p == nil {
			if p, err = r.l.readPageSync(int(ref.Page)); err != nil {
				return err
			}
			pages[ref.Page] = p
			if len(r.l.sides) > 0 {
				cols, err := r.l.readSidesSync(int(ref.Page), p.Rows())
				if err != nil {
					return err
				}
				sides[ref.Page] = cols
			}
			if err := r.l.confirmPage(int(ref.Page)); err != nil {
				return err
			}
		}
		a := p.Array()
		if int(ref.Row) >= a.Len() {
			return stateErr("pending", "row %d of page %d, which has %d rows", ref.Row, ref.Page, a.Len())
		}
		if ref.Tok > 0 {
			// Only a list row's tokens can be partly delivered, and at
			// most all of them (its EOS may still be due).
			n := 0
			if la, ok := a.(*array.List); ok && !la.IsNull(int(ref.Row)) {
				lo, hi := la.ValueOffsets(int(ref.Row))
				n = int(hi - lo)
			}
			if int(ref.Tok) > n {
				return stateErr("pending", "row %d of page %d: %d tokens delivered of its %d", ref.Row, ref.Page, ref.Tok, n)
			}
		}
		pg, ok := pins[ref.Page]
		if !ok {
			cols := sides[ref.Page]
			pg = r.pin(ref.Page, a, cols, 0, 0, pageBytes(a, cols), r.l.rowCost(int(ref.Page), a.Len()))
			pins[ref.Page] = pg
		}
		r.pages[pg].rows++
		r.cost += r.pages[pg].rowCost
		items = append(items, rowItem{pg: pg, row: ref.Row, tok: ref.Tok})
	}
	nbuf := 0
	if r.buf != nil && !flushed {
		nbuf = min(len(items), r.buf.cap)
	}
	r.out = append(r.out, items[:len(items)-nbuf]...)
	if nbuf > 0 {
		for _, it := range items[len(items)-nbuf:] {
			r.buf.items = append(r.buf.items, it)
		}
	}
	return nil
}

// nextRows cuts a batch of BatchRows rows from the row stream, taking in
// landed units as needed. The rows it cuts are recorded in l.work (see
// batchRecord): on an error they go back to the head of the queue.
func (l *Loader) nextRows(ctx context.Context) (b *Batch, err error) {
	if l.share.Force && l.batches >= l.share.Steps {
		// Len's batches are out: the rest of the epoch is dropped.
		if err := l.dropRest(ctx); err != nil {
			return nil, err
		}
	}
	if l.cfg.Output == OutputArrow {
		// Row batches the consumer holds count against MemoryLimit.
		if err := l.outG.wait(ctx); err != nil {
			return nil, err
		}
	}
	want := l.cfg.BatchRows
	if l.want > 0 && l.cfg.Output != OutputTokens {
		want = l.want
	}
	var tb *tokenBuf
	var pk packer
	if l.cfg.Output == OutputTokens {
		select {
		case tb = <-l.tokBufs:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		pk = packer{eos: l.cfg.EOS, pad: l.cfg.Pad, truncate: l.cfg.Truncate}
		pk.reset(tb)
	}
	w := &l.work
	defer func() {
		if err != nil {
			// Nothing delivered, nothing lost: the rows cut so far go
			// back to the head of the queue, as they were.
			if tb != nil {
				l.putTokBuf(tb)
			}
			l.unshift(w)
		}
	}()
	b = &Batch{Epoch: l.epoch, SeqLen: l.cfg.SeqLen}
	full := func() bool {
		if tb != nil {
			return pk.full()
		}
		return len(w.rows) >= want
	}
	if tb == nil {
		b.Refs = make([]RowRef, 0, want)
	}
	for !full() {
		if tb == nil && len(l.rows.out) > 0 {
			// Rows output: take what the batch still wants at once.
			take := l.rows.out[:min(want-len(w.rows), len(l.rows.out))]
			w.rows = append(w.rows, take...)
			for _, it := range take {
				b.Refs = append(b.Refs, l.rows.ref(it))
			}
			l.rows.out = l.rows.out[len(take):]
			continue
		}
		if len(l.rows.out) > 0 {
			it := &l.rows.out[0]
			orig := *it
			if tb != nil {
				done, err := l.packRow(&pk, it)
				if err != nil {
					return nil, err
				}
				if !done {
					// The row continues in the next batch.
					w.tail, w.tailTok = true, int(orig.tok)
					break
				}
			}
			w.rows = append(w.rows, orig)
			b.Refs = append(b.Refs, l.rows.ref(*it))
			l.rows.out = l.rows.out[1:]
			continue
		}
		partial := len(b.Refs) > 0 || (tb != nil && pk.pos > 0)
		stop, err := l.feedRows(ctx, b, partial)
		if err != nil {
			return nil, err
		}
		if stop {
			break
		}
	}
	return l.finishRows(b, tb, &pk, w.rows)
}

// feedRows refills the row stream when it is empty: it pushes the current
// landed unit's next arrival, or takes in the next landed batch of units,
// or at the epoch's end starts the next epoch (b takes its number). It
// reports stop when the batch being cut (partial: it holds rows or tokens
// already) must go out as it is: the epoch's last, short batch, or an
// empty one, all padding, up to Len.
func (l *Loader) feedRows(ctx context.Context, b *Batch, partial bool) (stop bool, err error) {
	if l.cur != nil && l.curNext < l.cur.n {
		u := &l.cur.units[l.takeOrder(l.cur)[l.curNext]]
		l.curNext++
		l.rows.push(u)
		return false, nil
	}
	if l.cur != nil {
		l.cursor.Commit(l.cur.xEnd)
		l.recycle(l.cur)
		l.cur = nil
	}
	if l.atEnd {
		if partial {
			return true, nil // the epoch's last, short batch
		}
		if l.share.Force && l.batches < l.share.Steps {
			return true, nil // an empty batch, all padding, up to Len
		}
		l.atEnd = false
		if err := l.endEpoch(); err != nil {
			return false, err
		}
		b.Epoch = l.epoch
		return false, nil
	}
	fb, err := l.take(ctx)
	if err != nil {
		return false, err
	}
	if fb == nil {
		// The epoch's end: what the buffer holds goes out first.
		l.rows.flush()
		l.atEnd = true
		return false, nil
	}
	l.cur, l.curNext = fb, 0
	return false, nil
}

// finishRows completes b from what nextRows cut: the packed tokens of tb
// (which b then owns), or one array per column concatenated from taken
// (whose references stay with the batch's record until the next batch).
func (l *Loader) finishRows(b *Batch, tb *tokenBuf, pk *packer, taken []rowItem) (*Batch, error) {
	b.Rows = len(b.Refs)
	if tb != nil {
		b.Fill = pk.finish()
		n := tb.size()
		if tb.tokens != nil {
			b.Tokens = tb.tokens[:n]
		} else {
			b.Tokens64 = tb.tokens64[:n]
		}
		b.PositionIDs, b.CuSeqlens, b.LossMask = tb.pos[:n], tb.cu, tb.mask[:n]
		b.free = func() { l.putTokBuf(tb) }
		return b, nil
	}
	if len(taken) > 0 {
		cols, err := l.concatColumns(taken)
		if err != nil {
			return nil, err
		}
		b.setColumns(cols)
		b.free = l.outG.hold(batchBytes(b))
	}
	return b, nil
}

// concatColumns builds one array per projected column of the rows.
func (l *Loader) concatColumns(rows []rowItem) ([]Column, error) {
	lead, err := concatRows(rows, l.rows.pages, -1)
	if err != nil {
		return nil, err
	}
	segs := [][]arrow.Array{make([]arrow.Array, 0, len(l.sides))}
	for s := range l.sides {
		a, err := concatRows(rows, l.rows.pages, s)
		if err != nil {
			lead.Release()
			for _, x := range segs[0] {
				x.Release()
			}
			return nil, err
		}
		segs[0] = append(segs[0], a)
	}
	return l.columnsOf([]arrow.Array{lead}, segs), nil
}

// dropRest drops what is left of the epoch (tokens output past Len's
// last batch): the rows held and every unit not yet taken in, counted in
// Stats.DroppedRows as they go (a wait cut short by ctx leaves the count
// right, and the next call goes on); then it moves to the next epoch.
func (l *Loader) dropRest(ctx context.Context) error {
	count := func(n int64) {
		l.stats.DroppedRows += n
		l.restDropped += n
	}
	count(int64(len(l.rows.out)))
	if l.rows.buf != nil {
		count(int64(len(l.rows.buf.items)))
	}
	l.rows.drop()
	drop := func(fb *fetchBatch, from int) {
		for _, ui := range l.takeOrder(fb)[from:fb.n] {
			for _, p := range fb.units[ui].pages {
				count(int64(p.Rows()))
			}
		}
		l.cursor.Commit(fb.xEnd)
		l.recycle(fb)
	}
	if l.cur != nil {
		drop(l.cur, l.curNext)
		l.cur = nil
	}
	for !l.atEnd {
		fb, err := l.take(ctx)
		if err != nil {
			return err
		}
		if fb == nil {
			break
		}
		drop(fb, 0)
	}
	l.atEnd = false
	if l.restDropped > 0 {
		l.cfg.Logf("epoch %d: %d rows past the epoch's %d batches dropped", l.epoch, l.restDropped, l.share.Steps)
	}
	l.restDropped = 0
	return l.endEpoch()
}

// packRow packs the tokens of one row; it reports whether the whole row
// (and its EOS) went in. A partly packed row keeps its rest in place.
func (l *Loader) packRow(pk *packer, it *rowItem) (bool, error) {
	var n int
	var complete bool
	var err error
	arr, i := l.rows.pages[it.pg].arr, int(it.row)
	switch a := arr.(type) {
	case *array.List:
		if a.IsNull(i) {
			return true, nil
		}
		lo, hi := a.ValueOffsets(i)
		lo += int64(int(it.tok))
		switch v := a.ListValues().(type) {
		case *array.Int32:
			n, complete, err = addTokens(pk, v.Int32Values()[lo:hi])
		case *array.Int64:
			n, complete, err = addTokens(pk, v.Int64Values()[lo:hi])
		case *array.Uint16:
			n, complete, err = addTokens(pk, v.Uint16Values()[lo:hi])
		case *array.Uint32:
			n, complete, err = addTokens(pk, v.Uint32Values()[lo:hi])
		default:
			return false, fmt.Errorf("rinas: tokens output: list values are %s, want int32, int64, uint16 or uint32", a.ListValues().DataType())
		}
	case *array.Int32:
		return packOne(pk, a, i, a.Value)
	case *array.Int64:
		return packOne(pk, a, i, a.Value)
	case *array.Uint16:
		return packOne(pk, a, i, a.Value)
	case *array.Uint32:
		return packOne(pk, a, i, a.Value)
	default:
		return false, fmt.Errorf("rinas: tokens output cannot pack %s", arr.DataType())
	}
	if err != nil {
		loc := l.ix.Locate(l.lead, int(l.rows.pages[it.pg].page))
		return false, fmt.Errorf("rinas: %s: page at offset %d, row %d: %w", l.ix.File(loc.File).Path, loc.Offset, it.row, err)
	}
	it.setTok(int(it.tok) + n)
	return complete, nil
}

// packOne packs the single token of a row of a flat column (no EOS: each
// row is one token of a stream).
func packOne[T int32 | int64 | uint16 | uint32](pk *packer, a arrow.Array, i int, value func(int) T) (bool, error) {
	if a.IsNull(i) {
		return true, nil
	}
	if pk.room() == 0 {
		return false, nil
	}
	v := int64(value(i))
	if pk.buf.tokens64 == nil && (v > math.MaxInt32 || v < math.MinInt32) {
		return false, errTokenRange{v}
	}
	pk.put(v)
	return true, nil
}

// concatRows builds one array of column col of the rows, in order: of
// each row's page's array when col < 0, of its side col otherwise.
// list<int32> (token ids) without nulls is gathered straight into one
// offsets and one values buffer, each sized once; list<int32> with nulls
// and int64 columns are copied into reserved builders; other types go
// through arrow's Concatenate of slices, one per run of consecutive rows
// of one array.
func concatRows(rows []rowItem, pages []rowPage, col int) (arrow.Array, error) {
	at := func(it rowItem) (arrow.Array, int) {
		p := &pages[it.pg]
		if col < 0 {
			return p.arr, int(it.row)
		}
		return p.cols[col], int(it.row) - p.lo
	}
	if col < 0 {
		if a := gatherListInt32(rows, pages); a != nil {
			return a, nil
		}
	}
	mem := memory.DefaultAllocator
	first, _ := at(rows[0])
	switch first.(type) {
	case *array.List:
		if _, ok := first.(*array.List).ListValues().(*array.Int32); ok {
			b := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int32)
			defer b.Release()
			vb := b.ValueBuilder().(*array.Int32Builder)
			total := 0
			for _, it := range rows {
				arr, i := at(it)
				lo, hi := arr.(*array.List).ValueOffsets(i)
				total += int(hi - lo)
			}
			b.Reserve(len(rows))
			vb.Reserve(total)
			for _, it := range rows {
				arr, i := at(it)
				a := arr.(*array.List)
				if a.IsNull(i) {
					b.AppendNull()
					continue
				}
				lo, hi := a.ValueOffsets(i)
				b.Append(true)
				vals := a.ListValues().(*array.Int32)
				if vals.NullN() == 0 {
					vb.AppendValues(vals.Int32Values()[lo:hi], nil)
					continue
				}
				for j := int(lo); j < int(hi); j++ { // null elements stay null
					if vals.IsNull(j) {
						vb.AppendNull()
					} else {
						vb.Append(vals.Value(j))
					}
				}
			}
			return b.NewArray(), nil
		}
	case *array.Int64:
		b := array.NewInt64Builder(mem)
		defer b.Release()
		b.Reserve(len(rows))
		for _, it := range rows {
			arr, i := at(it)
			a := arr.(*array.Int64)
			if a.IsNull(i) {
				b.AppendNull()
			} else {
				b.UnsafeAppend(a.Value(i))
			}
		}
		return b.NewArray(), nil
	}
	var runs []arrow.Array
	defer func() {
		for _, s := range runs {
			s.Release()
		}
	}()
	for k := 0; k < len(rows); {
		arr, i := at(rows[k])
		j := i + 1
		for k++; k < len(rows); k++ {
			next, ni := at(rows[k])
			if next != arr || ni != j {
				break
			}
			j++
		}
		runs = append(runs, array.NewSlice(arr, int64(i), int64(j)))
	}
	return array.Concatenate(runs, mem)
}

// gatherListInt32 builds the list<int32> array of the rows' lead
// values when every row's page is a list<int32> without nulls
// (rowPage.offs), nil otherwise: it sizes the offsets and the values
// once and copies each row's values with one copy, so a row costs no
// builder call, no interface call and no growth.
func gatherListInt32(rows []rowItem, pages []rowPage) arrow.Array {
	total := 0
	for _, it := range rows {
		offs := pages[it.pg].offs
		if offs == nil {
			return nil
		}
		total += int(offs[it.row+1] - offs[it.row])
	}
	if total > math.MaxInt32 {
		return nil // past list's int32 offsets: the builder reports it
	}
	mem := memory.DefaultAllocator
	ob := memory.NewResizableBuffer(mem)
	ob.Resize(arrow.Int32Traits.BytesRequired(len(rows) + 1))
	vb := memory.NewResizableBuffer(mem)
	vb.Resize(arrow.Int32Traits.BytesRequired(total))
	offs := arrow.Int32Traits.CastFromBytes(ob.Bytes())
	vals := arrow.Int32Traits.CastFromBytes(vb.Bytes())
	o := int32(0)
	for k, it := range rows {
		p := &pages[it.pg]
		offs[k] = o
		o += int32(copy(vals[o:], p.vals[p.offs[it.row]:p.offs[it.row+1]]))
	}
	offs[len(rows)] = o
	vd := array.NewData(arrow.PrimitiveTypes.Int32, total, []*memory.Buffer{nil, vb}, nil, 0, 0)
	vb.Release()
	ld := array.NewData(arrow.ListOf(arrow.PrimitiveTypes.Int32), len(rows), []*memory.Buffer{nil, ob}, []arrow.ArrayData{vd}, 0, 0)
	ob.Release()
	vd.Release()
	defer ld.Release()
	return array.NewListData(ld)
}

// readPageSync reads and decodes page g on the calling goroutine (resume,
// and rows longer than two pages).
func (l *Loader) readPageSync(g int) (*codec.Page, error) {
	loc := l.ix.Locate(l.lead, g)
	if err := l.prepareChunk(l.lead, loc.Chunk); err != nil {
		return nil, err
	}
	dict, err := l.syncDict(l.lead, loc.Chunk)
	if err != nil {
		return nil, err
	}
	p, err := l.extendSpan(l.syncD, l.lead, loc.Chunk, dict, nil, nil, g, preadFile)
	if err != nil {
		return nil, err
	}
	if err := l.checkPage(l.lead, g, p); err != nil {
		p.Release()
		return nil, err
	}
	return p, nil
}

// syncDict returns the dictionary of chunk c of column k (nil when it has
// none), read synchronously on the consumer when not cached.
func (l *Loader) syncDict(k, c int) (*codec.Dictionary, error) {
	return l.cachedDict(k, c, l.syncD, preadFile)
}

// cachedDict returns the dictionary of chunk c of column k from the
// cache, or reads it with read, decodes it with dec and caches it.
func (l *Loader) cachedDict(k, c int, dec *codec.Decoder, read readFunc) (*codec.Dictionary, error) {
	ci := l.ix.Chunk(k, c)
	if ci.DictSize == 0 {
		return nil, nil
	}
	key := l.key(k, c)
	if d, ok := l.dicts.lookup(key); ok {
		return d, nil
	}
	ch := l.chunks[key]
	b, err := read(ch.Path, ci.DictOffset, int(ci.DictSize))
	if err != nil {
		return nil, err
	}
	d, err := dec.Dictionary(ch, b, ci.DictOffset)
	if err != nil {
		return nil, err
	}
	if err := l.dicts.store(key, d, func() string { return l.chunkName(key) }); err != nil {
		return nil, err
	}
	return d, nil
}

// readFunc reads n bytes at off of path (the slow paths). The slice it
// returns must stay valid after the next call.
type readFunc func(path string, off int64, n int) ([]byte, error)

// slowSpan completes page k of u, whose last row runs past the pages read,
// with synchronous reads of the pages that follow (rows longer than a page).
func (l *Loader) slowSpan(dec *codec.Decoder, u *unit, k int, dict *codec.Dictionary, p *codec.Page, read readFunc) (*codec.Page, error) {
	p.Release()
	l.sa.slow.Add(1)
	var bufs [][]byte
	var offs []int64
	for i := k; i < u.n; i++ {
		// u's pages sit in slots or a shared buffer that the reads reuse.
		bufs, offs = append(bufs, slices.Clone(u.data[i])), append(offs, u.offs[i])
	}
	return l.extendSpan(dec, l.lead, u.chunk, dict, bufs, offs, u.first+u.n, read)
}

// extendSpan reads the pages of chunk c of column k from page next on,
// appending each to bufs, and decodes the span of bufs until its last row
// ends, the chunk ends or 64 pages are held.
func (l *Loader) extendSpan(dec *codec.Decoder, k, c int, dict *codec.Dictionary, bufs [][]byte, offs []int64, next int, read readFunc) (*codec.Page, error) {
	ch := l.chunks[l.key(k, c)]
	end := l.chunkEnd(k, c)
	for g := next; g < end && len(bufs) < 64; g++ {
		loc := l.ix.Locate(k, g)
		b, err := read(ch.Path, loc.Offset, int(loc.Size))
		if err != nil {
			return nil, err
		}
		bufs, offs = append(bufs, b), append(offs, loc.Offset)
		q, err := dec.DecodeSpan(ch, dict, bufs, offs)
		if err != nil {
			return nil, err
		}
		if !q.LastRowMayContinue() || g+1 == end {
			return q, nil
		}
		q.Release()
	}
	first := int64(-1)
	if len(offs) > 0 {
		first = offs[0]
	}
	return nil, fmt.Errorf("rinas: %s: a row of page at offset %d spans more than 64 pages", ch.Path, first)
}
