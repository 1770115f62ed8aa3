package codec

import (
	"encoding/binary"
	"math"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// levelRange is the part of the level and value scratch that makes a page's
// rows: levels [s, e) and dense values [vs, ve).
type levelRange struct {
	s, e, vs, ve int
}

// dataHold is one allocation for an array.Data and the slices it keeps.
type dataHold struct {
	data     array.Data
	bufs     [3]*memory.Buffer
	children [1]arrow.ArrayData
}

// newData is array.NewData (offset 0, at most one child) with the Data and
// its slices in one allocation: a page's arrays cost one fewer each.
func newData(dt arrow.DataType, length int, bufs []*memory.Buffer, child arrow.ArrayData, nulls int) *array.Data {
	h := new(dataHold)
	n := copy(h.bufs[:], bufs)
	var children []arrow.ArrayData
	if child != nil {
		h.children[0] = child
		children = h.children[:]
	}
	h.data.Reset(dt, length, h.bufs[:n], children, nulls, 0)
	h.data.Retain() // Reset leaves the count at zero
	return &h.data
}

func newBuf(mem memory.Allocator, n int) *memory.Buffer {
	b := memory.NewResizableBuffer(mem)
	b.Resize(n)
	return b
}

// slotBitmap counts the leaf slots (levels at or above the repeated
// ancestor's definition level) and, when some slot is null, returns their
// validity bitmap.
func slotBitmap(mem memory.Allocator, defs []int16, rad, maxDef int16) (slots, nulls int, bm *memory.Buffer) {
	slots, nulls = countSlots(defs, rad, maxDef)
	if nulls == 0 {
		return slots, 0, nil
	}
	bm = newBuf(mem, int(bitutil.BytesForBits(int64(slots))))
	bits := bm.Bytes()
	clear(bits)
	i := 0
	for _, v := range defs {
		if v >= rad {
			if v >= maxDef {
				bitutil.SetBit(bits, i)
			}
			i++
		}
	}
	return slots, nulls, bm
}

// scatter places dense values into their slots (null slots stay zero).
func scatter[T any](dst, dense []T, defs []int16, rad, maxDef int16, nulls int) {
	if nulls == 0 {
		copy(dst, dense)
		return
	}
	var zero T
	i, j := 0, 0
	for _, v := range defs {
		if v < rad {
			continue
		}
		if v >= maxDef {
			dst[i] = dense[j]
			j++
		} else {
			dst[i] = zero
		}
		i++
	}
}

func fixedData[T any](mem memory.Allocator, dt arrow.DataType, dense []T, defs []int16, rad, maxDef int16) arrow.ArrayData {
	slots, nulls, bm := slotBitmap(mem, defs, rad, maxDef)
	var zero T
	w := int(unsafe.Sizeof(zero))
	vb := newBuf(mem, slots*w)
	var dst []T
	if slots > 0 {
		dst = unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(vb.Bytes()))), slots)
	}
	scatter(dst, dense, defs, rad, maxDef, nulls)
	data := newData(dt, slots, []*memory.Buffer{bm, vb}, nil, nulls)
	vb.Release()
	if bm != nil {
		bm.Release()
	}
	return data
}

func convert[S, T any](dense []S, f func(S) T) []T {
	out := make([]T, len(dense))
	for i, v := range dense {
		out[i] = f(v)
	}
	return out
}

// buildLeaf makes the leaf array of Arrow type dt from the dense values
// [vs, ve) of the scratch and the definition levels defs. It is one long
// function because it is a switch with a short case per Parquet physical
// type and Arrow type, each building that type's buffers in place.
func (d *Decoder) buildLeaf(descr *schema.Column, dt arrow.DataType, li file.LevelInfo, defs []int16, vs, ve int) (arrow.ArrayData, error) {
	mem := d.opts.Mem
	if ext, ok := dt.(arrow.ExtensionType); ok {
		st, err := d.buildLeaf(descr, ext.StorageType(), li, defs, vs, ve)
		if err != nil {
			return nil, err
		}
		sa := array.MakeFromData(st)
		st.Release()
		ea := array.NewExtensionArrayWithStorage(ext, sa)
		sa.Release()
		data := ea.Data()
		data.Retain()
		ea.Release()
		return data, nil
	}
	rad, maxDef := li.RepeatedAncestorDefLevel, descr.MaxDefinitionLevel()
	if dt.ID() == arrow.NULL {
		slots, _, _ := slotBitmap(mem, defs, rad, math.MaxInt16)
		return array.NewNull(slots).Data(), nil
	}
	v := &d.vals
	switch descr.PhysicalType() {
	case parquet.Types.Boolean:
		dense := v.b[vs:ve]
		slots, nulls, bm := slotBitmap(mem, defs, rad, maxDef)
		vb := newBuf(mem, int(bitutil.BytesForBits(int64(slots))))
		bits := vb.Bytes()
		clear(bits)
		i, j := 0, 0
		for _, l := range defs {
			if l < rad {
				continue
			}
			if l >= maxDef {
				if dense[j] {
					bitutil.SetBit(bits, i)
				}
				j++
			}
			i++
		}
		data := newData(dt, slots, []*memory.Buffer{bm, vb}, nil, nulls)
		vb.Release()
		if bm != nil {
			bm.Release()
		}
		return data, nil
	case parquet.Types.Int32:
		dense := v.i32[vs:ve]
		switch dt.ID() {
		case arrow.INT32, arrow.UINT32, arrow.DATE32, arrow.TIME32:
			return fixedData(mem, dt, dense, defs, rad, maxDef), nil
		case arrow.INT16, arrow.UINT16:
			return fixedData(mem, dt, convert(dense, func(x int32) int16 { return int16(x) }), defs, rad, maxDef), nil
		case arrow.INT8, arrow.UINT8:
			return fixedData(mem, dt, convert(dense, func(x int32) int8 { return int8(x) }), defs, rad, maxDef), nil
		case arrow.DATE64:
			return fixedData(mem, dt, convert(dense, func(x int32) int64 { return int64(x) * 86400000 }), defs, rad, maxDef), nil
		case arrow.DECIMAL128:
			return fixedData(mem, dt, convert(dense, func(x int32) decimal128.Num { return decimal128.FromI64(int64(x)) }), defs, rad, maxDef), nil
		case arrow.DECIMAL256:
			return fixedData(mem, dt, convert(dense, func(x int32) decimal256.Num { return decimal256.FromI64(int64(x)) }), defs, rad, maxDef), nil
		}
	case parquet.Types.Int64:
		dense := v.i64[vs:ve]
		switch dt.ID() {
		case arrow.INT64, arrow.UINT64, arrow.TIME64, arrow.TIMESTAMP:
			return fixedData(mem, dt, dense, defs, rad, maxDef), nil
		case arrow.DECIMAL128:
			return fixedData(mem, dt, convert(dense, decimal128.FromI64), defs, rad, maxDef), nil
		case arrow.DECIMAL256:
			return fixedData(mem, dt, convert(dense, decimal256.FromI64), defs, rad, maxDef), nil
		}
	case parquet.Types.Int96:
		dense := make([]int64, ve-vs)
		for i, x := range v.i96[vs:ve] {
			ts, err := x.ToTimestamp()
			if err != nil {
				if strings.Contains(err.Error(), "range") {
					return nil, wrapKind(ErrUnsupported, err, "")
				}
				return nil, wrapKind(ErrCorrupt, err, "")
			}
			dense[i] = int64(ts)
		}
		return fixedData(mem, dt, dense, defs, rad, maxDef), nil
	case parquet.Types.Float:
		return fixedData(mem, dt, v.f32[vs:ve], defs, rad, maxDef), nil
	case parquet.Types.Double:
		return fixedData(mem, dt, v.f64[vs:ve], defs, rad, maxDef), nil
	case parquet.Types.ByteArray:
		dense := v.ba[vs:ve]
		switch dt.ID() {
		case arrow.BINARY, arrow.STRING:
			return binaryData[int32](mem, dt, dense, defs, rad, maxDef)
		case arrow.LARGE_BINARY, arrow.LARGE_STRING:
			return binaryData[int64](mem, dt, dense, defs, rad, maxDef)
		case arrow.DECIMAL128, arrow.DECIMAL256:
			return decimalBytes(mem, dt, func(i int) []byte { return dense[i] }, len(dense), defs, rad, maxDef)
		}
	case parquet.Types.FixedLenByteArray:
		dense := v.flba[vs:ve]
		switch dt.ID() {
		case arrow.FIXED_SIZE_BINARY, arrow.FLOAT16:
			return flbaData(mem, dt, descr.TypeLength(), dense, defs, rad, maxDef)
		case arrow.DECIMAL128, arrow.DECIMAL256:
			return decimalBytes(mem, dt, func(i int) []byte { return dense[i] }, len(dense), defs, rad, maxDef)
		}
	}
	return nil, kindf(ErrUnsupported, "Arrow type %s from physical type %s", dt, descr.PhysicalType())
}

func binaryData[O int32 | int64](mem memory.Allocator, dt arrow.DataType, dense []parquet.ByteArray, defs []int16, rad, maxDef int16) (arrow.ArrayData, error) {
	slots, nulls, bm := slotBitmap(mem, defs, rad, maxDef)
	total := 0
	for _, b := range dense {
		total += len(b)
	}
	var zero O
	if int64(total) > int64(^uint64(0)>>(65-8*unsafe.Sizeof(zero))) {
		return nil, kindf(ErrUnsupported, "page has %d bytes of binary values, too many for %s", total, dt)
	}
	ob := newBuf(mem, (slots+1)*int(unsafe.Sizeof(zero)))
	offs := unsafe.Slice((*O)(unsafe.Pointer(unsafe.SliceData(ob.Bytes()))), slots+1)
	db := newBuf(mem, total)
	data := db.Bytes()
	pos, i, j := 0, 0, 0
	offs[0] = 0
	for _, l := range defs {
		if l < rad {
			continue
		}
		if l >= maxDef {
			pos += copy(data[pos:], dense[j])
			j++
		}
		i++
		offs[i] = O(pos)
	}
	if nulls == 0 && rad == 0 && maxDef == 0 {
		// required, unnested: one slot per dense value, filled above
	}
	out := newData(dt, slots, []*memory.Buffer{bm, ob, db}, nil, nulls)
	ob.Release()
	db.Release()
	if bm != nil {
		bm.Release()
	}
	return out, nil
}

func flbaData(mem memory.Allocator, dt arrow.DataType, width int, dense []parquet.FixedLenByteArray, defs []int16, rad, maxDef int16) (arrow.ArrayData, error) {
	slots, nulls, bm := slotBitmap(mem, defs, rad, maxDef)
	vb := newBuf(mem, slots*width)
	data := vb.Bytes()
	clear(data)
	i, j := 0, 0
	for _, l := range defs {
		if l < rad {
			continue
		}
		if l >= maxDef {
			if len(dense[j]) != width {
				vb.Release()
				if bm != nil {
					bm.Release()
				}
				return nil, kindf(ErrCorrupt, "fixed-length value of %d bytes, column says %d", len(dense[j]), width)
			}
			copy(data[i*width:], dense[j])
			j++
		}
		i++
	}
	out := newData(dt, slots, []*memory.Buffer{bm, vb}, nil, nulls)
	vb.Release()
	if bm != nil {
		bm.Release()
	}
	return out, nil
}

// decimalBytes converts big-endian two's complement integers to decimals.
func decimalBytes(mem memory.Allocator, dt arrow.DataType, at func(int) []byte, n int, defs []int16, rad, maxDef int16) (arrow.ArrayData, error) {
	if dt.ID() == arrow.DECIMAL128 {
		dense := make([]decimal128.Num, n)
		for i := range dense {
			b := at(i)
			if len(b) > 16 {
				return nil, kindf(ErrCorrupt, "decimal of %d bytes for decimal128", len(b))
			}
			var w [16]byte
			signExtend(w[:], b)
			dense[i] = decimal128.New(int64(binary.BigEndian.Uint64(w[:8])), binary.BigEndian.Uint64(w[8:]))
		}
		return fixedData(mem, dt, dense, defs, rad, maxDef), nil
	}
	dense := make([]decimal256.Num, n)
	for i := range dense {
		b := at(i)
		if len(b) > 32 {
			return nil, kindf(ErrCorrupt, "decimal of %d bytes for decimal256", len(b))
		}
		var w [32]byte
		signExtend(w[:], b)
		dense[i] = decimal256.New(binary.BigEndian.Uint64(w[24:]), binary.BigEndian.Uint64(w[16:24]),
			binary.BigEndian.Uint64(w[8:16]), binary.BigEndian.Uint64(w[:8]))
	}
	return fixedData(mem, dt, dense, defs, rad, maxDef), nil
}

func signExtend(w, b []byte) {
	fill := byte(0)
	if len(b) > 0 && b[0]&0x80 != 0 {
		fill = 0xff
	}
	pad := len(w) - len(b)
	for i := 0; i < pad; i++ {
		w[i] = fill
	}
	copy(w[pad:], b)
}

// nest wraps child, the array of path[k+1], in the array of path[k] and so
// on up to the top-level field, computing each level's offsets and
// validity from the levels. It is one long function because the struct and
// list cases of each level share its cursors over the levels, and their
// loops run once per level value, where a call per value would cost.
func (d *Decoder) nest(p *plan, child arrow.ArrayData, defs, reps []int16, hasRep bool) (arrow.ArrayData, error) {
	mem := d.opts.Mem
	n := len(defs)
	for k := len(p.path) - 2; k >= 0; k-- {
		f := p.path[k]
		cf := p.path[k+1]
		info := f.LevelInfo
		// the node's type, projected to this leaf, is the same for every
		// page: build it once per plan
		if p.types[k] == nil {
			childField := arrow.Field{Name: cf.Field.Name, Type: child.DataType(), Nullable: cf.Field.Nullable, Metadata: cf.Field.Metadata}
			switch f.Field.Type.ID() {
			case arrow.STRUCT:
				p.types[k] = arrow.StructOf(childField)
			case arrow.LARGE_LIST:
				p.types[k] = arrow.LargeListOfField(childField)
			default:
				p.types[k] = arrow.ListOfField(childField)
			}
		}
		dt := p.types[k]
		switch f.Field.Type.ID() {
		case arrow.STRUCT:
			bm := newBuf(mem, int(bitutil.BytesForBits(int64(n))))
			out := file.ValidityBitmapInputOutput{ReadUpperBound: int64(n), ValidBits: bm.Bytes()}
			if hasRep {
				if err := file.DefRepLevelsToBitmap(defs, reps, info, &out); err != nil {
					bm.Release()
					child.Release()
					return nil, wrapKind(ErrCorrupt, err, "struct levels")
				}
			} else {
				file.DefLevelsToBitmap(defs, info, &out)
			}
			if int(out.Read) != child.Len() {
				bm.Release()
				child.Release()
				return nil, kindf(ErrCorrupt, "struct %q has %d slots but its child %d", f.Field.Name, out.Read, child.Len())
			}
			var valid *memory.Buffer
			if out.NullCount > 0 {
				valid = bm
			}
			nd := newData(dt, int(out.Read), []*memory.Buffer{valid}, child, int(out.NullCount))
			bm.Release()
			child.Release()
			child = nd
		case arrow.LIST, arrow.MAP, arrow.LARGE_LIST:
			// validity goes to scratch first: most lists have no nulls
			nb := int(bitutil.BytesForBits(int64(n)))
			d.bits = grow(d.bits, nb)
			scratch := d.bits[:nb]
			var ob *memory.Buffer
			var last int64
			var err error
			var lists, nulls int
			if f.Field.Type.ID() == arrow.LARGE_LIST {
				ob = newBuf(mem, (n+1)*8)
				offs := arrow.Int64Traits.CastFromBytes(ob.Bytes())
				lists, nulls, err = listOffsets(defs, reps, info, offs, scratch)
				if err == nil {
					last = offs[lists]
				}
			} else {
				ob = newBuf(mem, (n+1)*4)
				offs := arrow.Int32Traits.CastFromBytes(ob.Bytes())
				lists, nulls, err = listOffsets(defs, reps, info, offs, scratch)
				if err == nil {
					last = int64(offs[lists])
				}
			}
			out := struct{ Read, NullCount int64 }{int64(lists), int64(nulls)}
			if err == nil && last != int64(child.Len()) {
				err = kindf(ErrCorrupt, "list %q ends at %d but its child has %d values", f.Field.Name, last, child.Len())
			}
			if err != nil {
				ob.Release()
				child.Release()
				if isKind(err, ErrCorrupt) {
					return nil, err
				}
				return nil, wrapKind(ErrCorrupt, err, "list levels")
			}
			var valid *memory.Buffer
			if out.NullCount > 0 {
				valid = newBuf(mem, int(bitutil.BytesForBits(out.Read)))
				copy(valid.Bytes(), scratch)
			}
			width := 4
			if f.Field.Type.ID() == arrow.LARGE_LIST {
				width = 8
			}
			ob.Resize(int(out.Read+1) * width)
			nd := newData(dt, int(out.Read), []*memory.Buffer{valid, ob}, child, int(out.NullCount))
			if valid != nil {
				valid.Release()
			}
			ob.Release()
			child.Release()
			child = nd
		default:
			child.Release()
			return nil, kindf(ErrUnsupported, "nested %s field %q", f.Field.Type, f.Field.Name)
		}
	}
	return child, nil
}
