package codec

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
)

// fastList decodes a page of a list<fixed-width> column whose every level
// holds a value (no null or empty lists, no null elements: a token column)
// without materializing levels: the offsets are the row starts found in
// the repetition bits, the values are the page's values. ok is false when
// the page is not of that kind and the general route must decode it.
func (d *Decoder) fastList(c *Chunk, p *plan, dict *Dictionary, h *PageHeader, page []byte) (arr arrow.Array, lead int, ok bool, err error) {
	if len(p.path) != 2 || p.path[0].Field.Type.ID() != arrow.LIST || p.path[0].LevelInfo.RepLevel != 1 ||
		c.Descr.MaxRepetitionLevel() != 1 {
		return nil, 0, false, nil
	}
	leafType := p.leaf.Field.Type
	pt := c.Descr.PhysicalType()
	switch pt {
	case parquet.Types.Int32:
		switch leafType.ID() {
		case arrow.INT32, arrow.UINT32, arrow.DATE32, arrow.TIME32:
		default:
			return nil, 0, false, nil
		}
	case parquet.Types.Int64:
		switch leafType.ID() {
		case arrow.INT64, arrow.UINT64, arrow.TIME64, arrow.TIMESTAMP:
		default:
			return nil, 0, false, nil
		}
	case parquet.Types.Float:
		if leafType.ID() != arrow.FLOAT32 {
			return nil, 0, false, nil
		}
	case parquet.Types.Double:
		if leafType.ID() != arrow.FLOAT64 {
			return nil, 0, false, nil
		}
	default:
		return nil, 0, false, nil
	}
	enc := parquet.Encoding(h.Data.Encoding)
	if h.Type == DataPageV2 {
		enc = parquet.Encoding(h.V2.Encoding)
	}
	switch enc {
	case parquet.Encodings.Plain:
	case parquet.Encodings.RLEDict, parquet.Encodings.PlainDict:
		if dict == nil {
			return nil, 0, false, nil
		}
	default:
		return nil, 0, false, nil
	}
	maxDef := c.Descr.MaxDefinitionLevel()
	repB, defB, vb, err := levelStreams(h, page, 1, maxDef)
	nl := int(h.NumValues())
	if err != nil || nl == 0 || !singleRun(defB, nl, maxDef) {
		return nil, 0, false, nil
	}
	defer recoverCorrupt(&err)
	mem := d.opts.Mem
	ob := newBuf(mem, (nl+1)*4)
	offs := arrow.Int32Traits.CastFromBytes(ob.Bytes())
	rows, lead, err := rowStarts(repB, nl, offs)
	if err != nil {
		ob.Release()
		return nil, 0, true, err
	}
	for r := 0; r < rows; r++ {
		offs[r] -= int32(lead)
	}
	offs[rows] = int32(nl - lead)
	ob.Resize((rows + 1) * 4)
	var vbuf *memory.Buffer
	switch pt {
	case parquet.Types.Int32:
		vbuf, err = fastValues[int32](d, enc, vb, dict, nl, lead, &d.vals.i32)
	case parquet.Types.Int64:
		vbuf, err = fastValues[int64](d, enc, vb, dict, nl, lead, &d.vals.i64)
	case parquet.Types.Float:
		vbuf, err = fastValues[float32](d, enc, vb, dict, nl, lead, &d.vals.f32)
	case parquet.Types.Double:
		vbuf, err = fastValues[float64](d, enc, vb, dict, nl, lead, &d.vals.f64)
	}
	if err != nil {
		ob.Release()
		return nil, 0, true, err
	}
	leaf := array.NewData(leafType, nl-lead, []*memory.Buffer{nil, vbuf}, nil, 0, 0)
	vbuf.Release()
	if p.types[0] == nil {
		lf := p.leaf.Field
		p.types[0] = arrow.ListOfField(arrow.Field{Name: lf.Name, Type: leafType, Nullable: lf.Nullable, Metadata: lf.Metadata})
	}
	list := array.NewData(p.types[0], rows, []*memory.Buffer{nil, ob}, []arrow.ArrayData{leaf}, 0, 0)
	ob.Release()
	leaf.Release()
	arr = array.MakeFromData(list)
	list.Release()
	return arr, lead, true, nil
}

// fastValues decodes a page's nl values into scratch and returns the ones
// from lead on in a new buffer.
func fastValues[T int32 | int64 | float32 | float64](d *Decoder, enc parquet.Encoding, vb []byte, dict *Dictionary, nl, lead int, scratch *[]T) (*memory.Buffer, error) {
	*scratch = grow(*scratch, nl)
	vals := (*scratch)[:nl]
	if err := fixedValues(d, enc, vb, dict, vals); err != nil {
		return nil, err
	}
	size := int(unsafe.Sizeof(vals[0]))
	buf := newBuf(d.opts.Mem, (nl-lead)*size)
	if nl > lead {
		copy(buf.Bytes(), unsafe.Slice((*byte)(unsafe.Pointer(&vals[lead])), (nl-lead)*size))
	}
	return buf, nil
}
