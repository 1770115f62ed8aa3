package index

import (
	"encoding/binary"
	"errors"
)

// Parquet page types (parquet.thrift PageType).
const (
	pageData       = 0
	pageIndex      = 1
	pageDictionary = 2
	pageDataV2     = 3
)

// pageHeader is the part of a Thrift PageHeader the index needs.
type pageHeader struct {
	Type           int32
	Compressed     int32 // compressed_page_size: body bytes after the header
	NumValues      int32 // data page (V1/V2) or dictionary page num_values
	NumRows        int32 // V2 only; -1 otherwise
	HeaderLen      int   // bytes of the serialized header
	hasType, hasCS bool
}

// errShort means the buffer ended inside the header: read more and retry.
var errShort = errors.New("page header truncated")

// errHeader is returned for bytes that are not a valid compact-protocol
// PageHeader.
var errHeader = errors.New("malformed page header")

// Thrift compact protocol element types.
const (
	ctStop   = 0
	ctTrue   = 1
	ctFalse  = 2
	ctByte   = 3
	ctI16    = 4
	ctI32    = 5
	ctI64    = 6
	ctDouble = 7
	ctBinary = 8
	ctList   = 9
	ctSet    = 10
	ctMap    = 11
	ctStruct = 12
)

// maxDepth bounds struct nesting while skipping: statistics nest two deep;
// anything far deeper is garbage, and the bound keeps fuzzed input from
// recursing without limit.
const maxDepth = 16

type cdec struct {
	b   []byte
	p   int
	err error
}

func (d *cdec) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *cdec) byte1() byte {
	if d.p >= len(d.b) {
		d.fail(errShort)
		return 0
	}
	c := d.b[d.p]
	d.p++
	return c
}

func (d *cdec) uvarint() uint64 {
	var x uint64
	for s := uint(0); s < 64; s += 7 {
		if d.p >= len(d.b) {
			d.fail(errShort)
			return 0
		}
		c := d.b[d.p]
		d.p++
		x |= uint64(c&0x7f) << s
		if c < 0x80 {
			return x
		}
	}
	d.fail(errHeader)
	return 0
}

func (d *cdec) zigzag() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *cdec) i32() int32 {
	v := d.zigzag()
	if v != int64(int32(v)) {
		d.fail(errHeader)
	}
	return int32(v)
}

func (d *cdec) skipN(n uint64) {
	if n > uint64(len(d.b)-d.p) {
		d.p = len(d.b)
		d.fail(errShort)
		return
	}
	d.p += int(n)
}

// fieldHeader returns the next field's id and type; typ 0 is STOP.
func (d *cdec) fieldHeader(last int16) (id int16, typ byte) {
	c := d.byte1()
	if d.err != nil {
		return 0, 0
	}
	typ = c & 0x0f
	if typ == ctStop {
		return 0, ctStop
	}
	if delta := c >> 4; delta != 0 {
		return last + int16(delta), typ
	}
	v := d.zigzag()
	if v != int64(int16(v)) {
		d.fail(errHeader)
	}
	return int16(v), typ
}

// skip skips one value of type typ.
func (d *cdec) skip(typ byte, depth int) {
	if depth > maxDepth {
		d.fail(errHeader)
		return
	}
	switch typ {
	case ctTrue, ctFalse:
		// the value is in the type nibble (fields) or one byte (lists),
		// handled by the callers
	case ctByte:
		d.byte1()
	case ctI16, ctI32, ctI64:
		d.uvarint()
	case ctDouble:
		d.skipN(8)
	case ctBinary:
		d.skipN(d.uvarint())
	case ctList, ctSet:
		c := d.byte1()
		n := uint64(c >> 4)
		et := c & 0x0f
		if n == 15 {
			n = d.uvarint()
		}
		for i := uint64(0); i < n && d.err == nil; i++ {
			if et == ctTrue || et == ctFalse {
				d.byte1()
			} else {
				d.skip(et, depth+1)
			}
		}
	case ctMap:
		n := d.uvarint()
		if n == 0 {
			return
		}
		kv := d.byte1()
		for i := uint64(0); i < n && d.err == nil; i++ {
			for _, t := range [2]byte{kv >> 4, kv & 0x0f} {
				if t == ctTrue || t == ctFalse {
					d.byte1()
				} else {
					d.skip(t, depth+1)
				}
			}
		}
	case ctStruct:
		var last int16
		for d.err == nil {
			id, t := d.fieldHeader(last)
			if t == ctStop || d.err != nil {
				return
			}
			last = id
			d.skip(t, depth+1)
		}
	default:
		d.fail(errHeader)
	}
}

// subHeader reads a DataPageHeader, DataPageHeaderV2 or DictionaryPageHeader
// for num_values (field 1) and, for V2, num_rows (field 3).
func (d *cdec) subHeader(h *pageHeader, v2 bool) {
	var last int16
	for d.err == nil {
		id, t := d.fieldHeader(last)
		if t == ctStop || d.err != nil {
			return
		}
		last = id
		switch {
		case id == 1 && t == ctI32:
			h.NumValues = d.i32()
		case id == 3 && t == ctI32 && v2:
			h.NumRows = d.i32()
		default:
			d.skip(t, 1)
		}
	}
}

// parsePageHeader decodes the Thrift compact PageHeader at the start of b.
// It returns errShort when b ends inside the header and errHeader when b is
// not a PageHeader. It never panics and does not allocate.
func parsePageHeader(b []byte) (pageHeader, error) {
	h := pageHeader{Type: -1, NumRows: -1, NumValues: -1}
	d := cdec{b: b}
	var last int16
	for d.err == nil {
		id, t := d.fieldHeader(last)
		if d.err != nil {
			break
		}
		if t == ctStop {
			if !h.hasType || !h.hasCS {
				return h, errHeader
			}
			if h.Compressed < 0 {
				return h, errHeader
			}
			h.HeaderLen = d.p
			return h, nil
		}
		last = id
		switch {
		case id == 1 && t == ctI32:
			h.Type, h.hasType = d.i32(), true
		case id == 3 && t == ctI32:
			h.Compressed, h.hasCS = d.i32(), true
		case id == 5 && t == ctStruct:
			d.subHeader(&h, false)
		case id == 7 && t == ctStruct:
			d.subHeader(&h, false)
		case id == 8 && t == ctStruct:
			d.subHeader(&h, true)
		default:
			d.skip(t, 0)
		}
	}
	return h, d.err
}

// le32 reads a little-endian uint32 (helper for footers).
func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }
