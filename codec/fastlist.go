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
}

// fastList decodes a page of a list<fixed-width> column whose every level
// holds a value (no null or empty lists, no null elements: a token column)
// without materializing levels: the offsets are the row starts found in
// the repetition bits, the values are the page's values. Following pages
// (a span) complete the last row the same way. ok is false when a page is
// not of that kind (or fails) and the general route must decode the span;
// page 0 is already loaded (h, page).
func (d *Decoder) fastList(c *Chunk, p *plan, dict *Dictionary, h *PageHeader, page []byte, pages [][]byte) (res fastResult, ok bool, err error) {
	if len(p.path) != 2 || p.path[0].Field.Type.ID() != arrow.LIST || p.path[0].LevelInfo.RepLevel != 1 ||
		c.Descr.MaxRepetitionLevel() != 1 {
		return res, false, nil
	}
	leafType := p.leaf.Field.Type
	pt := c.Descr.PhysicalType()
	switch pt {
	case parquet.Types.Int32:
		switch leafType.ID() {
		case arrow.INT32, arrow.UINT32, arrow.DATE32, arrow.TIME32:
		default:
			return res, false, nil
		}
	case parquet.Types.Int64:
		switch leafType.ID() {
		case arrow.INT64, arrow.UINT64, arrow.TIME64, arrow.TIMESTAMP:
		default:
			return res, false, nil
		}
	case parquet.Types.Float:
		if leafType.ID() != arrow.FLOAT32 {
			return res, false, nil
		}
	case parquet.Types.Double:
		if leafType.ID() != arrow.FLOAT64 {
			return res, false, nil
		}
	default:
		return res, false, nil
	}
	defer recoverCorrupt(&err)
	maxDef := c.Descr.MaxDefinitionLevel()
	// fastPage checks one page is of the kind and returns its repetition
	// stream and values.
	fastPage := func(h *PageHeader, page []byte) (repB, vb []byte, enc parquet.Encoding, ok bool) {
		enc = parquet.Encoding(h.Data.Encoding)
		if h.Type == DataPageV2 {
			enc = parquet.Encoding(h.V2.Encoding)
		}
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
	repB, vb, enc, ok := fastPage(h, page)
	if !ok {
		return res, false, nil
	}
	mem := d.opts.Mem
	nl := int(h.NumValues())
	ob := newBuf(mem, (nl+1)*4)
	offs := arrow.Int32Traits.CastFromBytes(ob.Bytes())
	rows, lead, err := rowStarts(repB, nl, offs)
	if err != nil {
		ob.Release()
		return res, true, err
	}
	if err := d.scratchValues(pt, enc, vb, dict, 0, nl); err != nil {
		ob.Release()
		return res, true, err
	}
	total := nl
	res.lead = lead
	res.mayCont = h.Type == DataPage && lead < nl
	for k := 1; k < len(pages) && res.mayCont; k++ {
		hk, pk, err := d.loadBytes(c, dict, k, pages[k])
		if err != nil {
			ob.Release()
			return res, false, nil
		}
		repK, vbK, encK, ok := fastPage(&hk, pk)
		if !ok {
			ob.Release()
			return res, false, nil
		}
		nk := int(hk.NumValues())
		d.idx = grow(d.idx, nk+1)
		_, j, err := rowStarts(repK, nk, d.idx[:nk+1])
		if err != nil {
			ob.Release()
			return res, false, nil
		}
		// the page's values up to its first row start end our last row
		if err := d.scratchValues(pt, encK, vbK, dict, total, nk); err != nil {
			ob.Release()
			return res, false, nil
		}
		total += j
		res.continued = k
		res.mayCont = j == nk && hk.Type == DataPage
	}
	for r := 0; r < rows; r++ {
		offs[r] -= int32(lead)
	}
	offs[rows] = int32(total - lead)
	ob.Resize((rows + 1) * 4)
	vbuf := d.scratchCopy(pt, lead, total)
	// one allocation for the slices both Data values keep
	hold := new(struct {
		leafBufs, listBufs [2]*memory.Buffer
		children           [1]arrow.ArrayData
	})
	hold.leafBufs[1] = vbuf
	leaf := array.NewData(leafType, total-lead, hold.leafBufs[:], nil, 0, 0)
	vbuf.Release()
	if p.types[0] == nil {
		lf := p.leaf.Field
		p.types[0] = arrow.ListOfField(arrow.Field{Name: lf.Name, Type: leafType, Nullable: lf.Nullable, Metadata: lf.Metadata})
	}
	hold.listBufs[1], hold.children[0] = ob, leaf
	list := array.NewData(p.types[0], rows, hold.listBufs[:], hold.children[:], 0, 0)
	ob.Release()
	leaf.Release()
	res.arr = array.MakeFromData(list)
	list.Release()
	return res, true, nil
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

// scratchCopy returns values [s, e) of the scratch in a new buffer.
func (d *Decoder) scratchCopy(pt parquet.Type, s, e int) *memory.Buffer {
	var src []byte
	switch pt {
	case parquet.Types.Int32:
		src = bytesOf(d.vals.i32[s:e])
	case parquet.Types.Int64:
		src = bytesOf(d.vals.i64[s:e])
	case parquet.Types.Float:
		src = bytesOf(d.vals.f32[s:e])
	default:
		src = bytesOf(d.vals.f64[s:e])
	}
	buf := newBuf(d.opts.Mem, len(src))
	copy(buf.Bytes(), src)
	return buf
}

func bytesOf[T int32 | int64 | float32 | float64](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}
