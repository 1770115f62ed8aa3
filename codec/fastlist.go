package codec

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
)

// fastResult is what fastList decoded.
type fastResult struct {
	arr       arrow.Array
	lead      int
	continued int
	mayCont   bool
	aliased   bool
}

// fastList decodes a page of a list<fixed-width> column whose every level
// holds a value (no null or empty lists, no null elements: a token column)
// without materializing levels: the offsets are the row starts found in
// the repetition bits, the values are the page's values. Following pages
// (a span) complete the last row the same way. body is page 0 as stored
// (h parsed). done is false when a page is not of that kind and the
// general route must decode the span; page is then page 0 expanded into
// span buffer 0, or nil when it still has to be.
//
// When no following page adds values, the values are not copied twice:
// PLAIN values of a compressed page stay where they were decompressed (a
// buffer from Options.Mem), those of an uncompressed page are the caller's
// bytes (Options.AliasInput) or one copy, dictionary values are decoded
// straight into the array's buffer.
//
// It is one long function because the checks that send a page here and
// its decoding share the parsed header, the plan and the span's cursors,
// and its loops over repetition bits and values are the hot path of token
// columns, where a call per value would cost.
func (d *Decoder) fastList(c *Chunk, p *plan, dict *Dictionary, h *PageHeader, body []byte, pages [][]byte) (res fastResult, page []byte, done bool, err error) {
	if len(p.path) != 2 || p.path[0].Field.Type.ID() != arrow.LIST || p.path[0].LevelInfo.RepLevel != 1 ||
		c.Descr.MaxRepetitionLevel() != 1 {
		return res, nil, false, nil
	}
	leafType := p.leaf.Field.Type
	pt := c.Descr.PhysicalType()
	w := 4
	switch pt {
	case parquet.Types.Int32:
		switch leafType.ID() {
		case arrow.INT32, arrow.UINT32, arrow.DATE32, arrow.TIME32:
		default:
			return res, nil, false, nil
		}
	case parquet.Types.Int64:
		switch leafType.ID() {
		case arrow.INT64, arrow.UINT64, arrow.TIME64, arrow.TIMESTAMP:
		default:
			return res, nil, false, nil
		}
		w = 8
	case parquet.Types.Float:
		if leafType.ID() != arrow.FLOAT32 {
			return res, nil, false, nil
		}
	case parquet.Types.Double:
		if leafType.ID() != arrow.FLOAT64 {
			return res, nil, false, nil
		}
		w = 8
	default:
		return res, nil, false, nil
	}
	defer recoverCorrupt(&err)
	maxDef := c.Descr.MaxDefinitionLevel()
	// fastPage checks one page is of the kind and returns its repetition
	// stream and values.
	fastPage := func(h *PageHeader, page []byte) (repB, vb []byte, enc parquet.Encoding, ok bool) {
		enc = pageEncoding(h)
		switch enc {
		case parquet.Encodings.Plain:
		case parquet.Encodings.RLEDict, parquet.Encodings.PlainDict:
			if dict == nil {
				return nil, nil, enc, false
			}
		default:
			return nil, nil, enc, false
		}
		repB, defB, vb, err := levelStreams(h, page, 1, maxDef)
		nl := int(h.NumValues())
		if err != nil || nl == 0 || !singleRun(defB, nl, maxDef) {
			return nil, nil, enc, false
		}
		return repB, vb, enc, true
	}
	mem := d.opts.Mem
	nl := int(h.NumValues())
	// Page 0's bytes: the caller's when stored uncompressed, else
	// decompressed into a buffer of mem (PLAIN: its values become the
	// array's, with room ahead for the offsets) or into span buffer 0.
	plain := pageEncoding(h) == parquet.Encodings.Plain
	var slab []byte // from mem.Allocate, page 0 at slab[pgAt:]
	pgAt := 0
	// Room ahead of the page for the offsets of maxRows rows: enough for
	// token rows (tens of values each) without doubling the buffer for
	// one-level rows; a page with more rows copies its values instead.
	maxRows := min(nl/16+64, nl)
	if h.Type == DataPageV2 && int(h.V2.NumRows) > maxRows {
		maxRows = min(int(h.V2.NumRows), nl)
	}
	pg0 := storedPlain(c, h, body)
	caller := pg0 != nil
	switch {
	case caller:
	case plain:
		pgAt = ((maxRows+1)*4 + 8 + 7) &^ 7 // offsets, then up to 7 bytes of alignment
		slab = mem.Allocate(pgAt + int(h.UncompressedSize))
		pg0 = slab[pgAt : pgAt+int(h.UncompressedSize)]
		if err := d.expand(c, h, body, pg0); err != nil {
			mem.Free(slab)
			return res, nil, true, err
		}
	default:
		if pg0, err = d.expandSpan(c, 0, h, body); err != nil {
			return res, nil, true, err
		}
	}
	// fallback hands page 0 to the general route.
	fallback := func() []byte {
		switch {
		case slab != nil:
			sp := d.spanBytes(0, len(pg0))
			copy(sp, pg0)
			mem.Free(slab)
			return sp
		case caller:
			return nil
		}
		return pg0
	}
	repB, vb, enc, ok := fastPage(h, pg0)
	if !ok {
		return res, fallback(), false, nil
	}
	d.offs = grow(d.offs, nl+1)
	offs := d.offs[:nl+1]
	rows, lead, err := rowStarts(repB, nl, offs)
	if err == nil && enc == parquet.Encodings.Plain && len(vb) < nl*w {
		err = kindf(ErrCorrupt, "page holds %d bytes of PLAIN values, %d values need %d", len(vb), nl, nl*w)
	}
	if err != nil {
		if slab != nil {
			mem.Free(slab)
		}
		return res, nil, true, err
	}
	res.lead = lead
	res.mayCont = h.Type == DataPage && lead < nl
	if res.mayCont && len(pages) > 1 {
		// the last row may continue into the following pages
		extra, ok := d.continuation(c, dict, &res, pages, fastPage)
		if ok && extra > 0 {
			err = d.fastSpan(p, dict, &res, offs, rows, w, pt, enc, vb)
			if slab != nil {
				mem.Free(slab)
			}
			return res, nil, true, err
		}
		if !ok {
			return res, fallback(), false, nil
		}
	}
	n := nl - lead
	for r := 0; r < rows; r++ {
		offs[r] -= int32(lead)
	}
	offs[rows] = int32(n)
	ob := ((rows+1)*4 + w - 1) &^ (w - 1) // values after the offsets, aligned
	hold := &listHold{mem: mem}
	var buf *memory.Buffer
	leafOff := 0
	switch {
	case slab != nil && rows <= maxRows:
		// values stay where they were decompressed; the buffer starts
		// where the leaf's offset (in values) lands on them
		at := pgAt + len(pg0) - len(vb)
		k := at % w
		hold.base = slab
		buf = memory.NewBufferWithAllocator(slab[k:at+nl*w], hold)
		leafOff = (at-k)/w + lead
	case caller && enc == parquet.Encodings.Plain && d.opts.AliasInput:
		hold.base = mem.Allocate((rows + 1) * 4)
		buf = memory.NewBufferWithAllocator(hold.base, hold)
		hold.view.Reset(vb[lead*w : nl*w])
		res.aliased = true
	default:
		hold.base = mem.Allocate(ob + nl*w)
		buf = memory.NewBufferWithAllocator(hold.base, hold)
		err := d.fixedInto(pt, enc, vb, dict, hold.base[ob:ob+nl*w], nl)
		if slab != nil {
			mem.Free(slab)
		}
		if err != nil {
			buf.Release()
			return res, nil, true, err
		}
		leafOff = ob/w + lead
	}
	copy(buf.Bytes(), arrow.Int32Traits.CastToBytes(offs[:rows+1]))
	leafBuf := buf
	if res.aliased {
		leafBuf = &hold.view
	}
	res.arr = hold.build(d.listType(p), leafType, rows, n, leafOff, buf, leafBuf)
	return res, nil, true, nil
}

// scratchValues decodes n values of a page into the value scratch of
// physical type pt at position at, keeping what is before.
func (d *Decoder) scratchValues(pt parquet.Type, enc parquet.Encoding, vb []byte, dict *Dictionary, at, n int) error {
	switch pt {
	case parquet.Types.Int32:
		d.vals.i32 = grow(d.vals.i32, at+n)
		return fixedValues(d, enc, vb, dict, d.vals.i32[at:at+n])
	case parquet.Types.Int64:
		d.vals.i64 = grow(d.vals.i64, at+n)
		return fixedValues(d, enc, vb, dict, d.vals.i64[at:at+n])
	case parquet.Types.Float:
		d.vals.f32 = grow(d.vals.f32, at+n)
		return fixedValues(d, enc, vb, dict, d.vals.f32[at:at+n])
	default:
		d.vals.f64 = grow(d.vals.f64, at+n)
		return fixedValues(d, enc, vb, dict, d.vals.f64[at:at+n])
	}
}

// contPage is a following page's share of a span's last row.
type contPage struct {
	vb  []byte
	enc parquet.Encoding
	n   int // levels (values) of the page
	j   int // of them continuing the row
}

// continuation reads the pages after page 0 up to the first that starts a
// row (each stays in its span buffer), records their leading values in
// d.cont and returns how many there are. ok is false when a page is not
// of the kind (the general route then decodes the span).
func (d *Decoder) continuation(c *Chunk, dict *Dictionary, res *fastResult, pages [][]byte,
	fastPage func(*PageHeader, []byte) ([]byte, []byte, parquet.Encoding, bool)) (extra int, ok bool) {
	d.cont = d.cont[:0]
	for k := 1; k < len(pages) && res.mayCont; k++ {
		hk, pk, err := d.loadBytes(c, dict, k, pages[k])
		if err != nil {
			return 0, false
		}
		repK, vbK, encK, ok := fastPage(&hk, pk)
		if !ok {
			return 0, false
		}
		nk := int(hk.NumValues())
		d.idx = grow(d.idx, nk+1)
		_, j, err := rowStarts(repK, nk, d.idx[:nk+1])
		if err != nil {
			return 0, false
		}
		// the page's values up to its first row start end our last row
		d.cont = append(d.cont, contPage{vb: vbK, enc: encK, n: nk, j: j})
		extra += j
		res.continued = k
		res.mayCont = j == nk && hk.Type == DataPage
	}
	return extra, true
}

// fastSpan builds res.arr from page 0 (rows row starts in offs, values vb)
// and the extra values of the following pages in d.cont, gathered in the
// value scratch.
func (d *Decoder) fastSpan(p *plan, dict *Dictionary, res *fastResult, offs []int32, rows, w int, pt parquet.Type,
	enc parquet.Encoding, vb []byte) error {
	nl := len(offs) - 1
	if err := d.scratchValues(pt, enc, vb, dict, 0, nl); err != nil {
		return err
	}
	total := nl
	for _, cp := range d.cont {
		// decode the page's values: dictionary indices run from its start
		if err := d.scratchValues(pt, cp.enc, cp.vb, dict, total, cp.n); err != nil {
			return err
		}
		total += cp.j
	}
	lead := res.lead
	for r := 0; r < rows; r++ {
		offs[r] -= int32(lead)
	}
	offs[rows] = int32(total - lead)
	src := d.scratchBytes(pt, lead, total)
	ob := ((rows+1)*4 + w - 1) &^ (w - 1)
	hold := &listHold{mem: d.opts.Mem}
	hold.base = hold.mem.Allocate(ob + len(src))
	buf := memory.NewBufferWithAllocator(hold.base, hold)
	copy(buf.Bytes(), arrow.Int32Traits.CastToBytes(offs[:rows+1]))
	copy(hold.base[ob:], src)
	res.arr = hold.build(d.listType(p), p.leaf.Field.Type, rows, total-lead, ob/w, buf, buf)
	return nil
}

// scratchBytes returns values [s, e) of the scratch as bytes.
func (d *Decoder) scratchBytes(pt parquet.Type, s, e int) []byte {
	switch pt {
	case parquet.Types.Int32:
		return bytesOf(d.vals.i32[s:e])
	case parquet.Types.Int64:
		return bytesOf(d.vals.i64[s:e])
	case parquet.Types.Float:
		return bytesOf(d.vals.f32[s:e])
	default:
		return bytesOf(d.vals.f64[s:e])
	}
}

// fixedInto decodes n values of physical type pt into dst (n values'
// bytes).
func (d *Decoder) fixedInto(pt parquet.Type, enc parquet.Encoding, vb []byte, dict *Dictionary, dst []byte, n int) error {
	p := unsafe.Pointer(unsafe.SliceData(dst))
	switch pt {
	case parquet.Types.Int32:
		return fixedValues(d, enc, vb, dict, unsafe.Slice((*int32)(p), n))
	case parquet.Types.Int64:
		return fixedValues(d, enc, vb, dict, unsafe.Slice((*int64)(p), n))
	case parquet.Types.Float:
		return fixedValues(d, enc, vb, dict, unsafe.Slice((*float32)(p), n))
	default:
		return fixedValues(d, enc, vb, dict, unsafe.Slice((*float64)(p), n))
	}
}

// listType is the list type of a fastList plan, made once per plan.
func (d *Decoder) listType(p *plan) arrow.DataType {
	if p.types[0] == nil {
		lf := p.leaf.Field
		p.types[0] = arrow.ListOfField(arrow.Field{Name: lf.Name, Type: lf.Type, Nullable: lf.Nullable, Metadata: lf.Metadata})
	}
	return p.types[0]
}

// listHold is one allocation for the Arrow objects of a fastList page that
// can live in place: both Data values, their buffer and child slices, and
// the view of the caller's bytes when aliased. The page's offsets and
// values share one refcounted Buffer (the leaf Data's offset skips the
// offsets), so the memory from mem goes back to mem exactly once, when the
// last holder of either array, Data or that Buffer releases it, on any
// goroutine. listHold is that Buffer's Allocator: its Free returns base,
// of which the Buffer may hold only a sub-slice. Nothing here is reused
// after release (arrow-go writes to Data and Buffer after their count
// reaches zero), so the garbage collector frees the holder.
type listHold struct {
	list, leaf         array.Data
	listBufs, leafBufs [2]*memory.Buffer
	children           [1]arrow.ArrayData
	view               memory.Buffer // caller's bytes when aliased: not refcounted, not freed
	mem                memory.Allocator
	base               []byte // what mem.Allocate returned
}

// Allocate is not used by the page's Buffer (it is never resized); it
// returns garbage-collected memory.
func (h *listHold) Allocate(n int) []byte { return make([]byte, n) }

// Reallocate copies into garbage-collected memory; base stays owned until
// Free.
func (h *listHold) Reallocate(n int, b []byte) []byte {
	nb := make([]byte, n)
	copy(nb, b)
	return nb
}

// Free returns base to mem; the Buffer's count reached zero.
func (h *listHold) Free([]byte) {
	if h.base != nil {
		h.mem.Free(h.base)
		h.base = nil
	}
}

// build makes the list array: rows lists over offsets at the start of buf,
// n values at leafOff (in values) of leafBuf. It takes over the caller's
// reference to buf.
func (h *listHold) build(listType, leafType arrow.DataType, rows, n, leafOff int, buf, leafBuf *memory.Buffer) arrow.Array {
	h.leafBufs[1] = leafBuf
	h.leaf.Reset(leafType, n, h.leafBufs[:], nil, 0, leafOff)
	h.leaf.Retain() // Reset leaves the count as it was: zero
	h.listBufs[1] = buf
	h.children[0] = &h.leaf
	h.list.Reset(listType, rows, h.listBufs[:], h.children[:], 0, 0)
	h.list.Retain()
	h.leaf.Release() // now held by the list only
	buf.Release()    // held by the Data values only
	arr := array.MakeFromData(&h.list)
	h.list.Release() // held by arr only
	return arr
}

func bytesOf[T int32 | int64 | float32 | float64](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// pageEncoding is the encoding of a data page's values.
func pageEncoding(h *PageHeader) parquet.Encoding {
	if h.Type == DataPageV2 {
		return parquet.Encoding(h.V2.Encoding)
	}
	return parquet.Encoding(h.Data.Encoding)
}
