package codec

import (
	"errors"
	"fmt"
	"math"
)

// PageType is the type of a Parquet page, as in parquet.thrift.
type PageType int32

// Page types.
const (
	DataPage       PageType = 0
	IndexPage      PageType = 1
	DictionaryPage PageType = 2
	DataPageV2     PageType = 3
)

func (t PageType) String() string {
	switch t {
	case DataPage:
		return "DATA_PAGE"
	case IndexPage:
		return "INDEX_PAGE"
	case DictionaryPage:
		return "DICTIONARY_PAGE"
	case DataPageV2:
		return "DATA_PAGE_V2"
	}
	return "PageType(" + itoa(int64(t)) + ")"
}

// DataPageHeader is parquet.thrift's DataPageHeader (statistics skipped).
type DataPageHeader struct {
	Set         bool // the field was present
	NumValues   int32
	Encoding    int32 // parquet.Encoding value
	DefEncoding int32
	RepEncoding int32
}

// DictionaryPageHeader is parquet.thrift's DictionaryPageHeader.
type DictionaryPageHeader struct {
	Set       bool
	NumValues int32
	Encoding  int32
	IsSorted  bool
	SortedSet bool
}

// DataPageHeaderV2 is parquet.thrift's DataPageHeaderV2 (statistics skipped).
type DataPageHeaderV2 struct {
	Set          bool
	NumValues    int32
	NumNulls     int32
	NumRows      int32
	Encoding     int32
	DefLevelsLen int32
	RepLevelsLen int32
	IsCompressed bool // default true, as the spec says
}

// PageHeader is the part of parquet.thrift's PageHeader that decoding needs.
// It is a plain value: parsing it allocates nothing.
type PageHeader struct {
	Type             PageType
	UncompressedSize int32
	CompressedSize   int32
	CRC              uint32
	HasCRC           bool
	IndexSet         bool // index_page_header present
	Data             DataPageHeader
	Dict             DictionaryPageHeader
	V2               DataPageHeaderV2
}

// NumValues returns the number of values (levels) the page claims, whatever
// its type; 0 for index pages.
func (h *PageHeader) NumValues() int32 {
	switch h.Type {
	case DataPage:
		return h.Data.NumValues
	case DataPageV2:
		return h.V2.NumValues
	case DictionaryPage:
		return h.Dict.NumValues
	}
	return 0
}

// Thrift compact protocol type nibbles.
const (
	ctStop      = 0
	ctTrue      = 1
	ctFalse     = 2
	ctByte      = 3
	ctI16       = 4
	ctI32       = 5
	ctI64       = 6
	ctDouble    = 7
	ctBinary    = 8
	ctList      = 9
	ctSet       = 10
	ctMap       = 11
	ctStruct    = 12
	ctUUID      = 13
	maxSkipDeep = 64 // thrift's DEFAULT_RECURSION_DEPTH
)

// ErrHeaderTruncated is wrapped by ParsePageHeader's error when b ends
// inside the header (or a length in it runs past b): more bytes may make
// it parse. Callers that read headers in pieces retry with more.
var ErrHeaderTruncated = errors.New("page header truncated")

var (
	errHdrVarint   = errors.New("page header varint over 10 bytes")
	errHdrType     = errors.New("page header has unknown thrift type")
	errHdrSize     = errors.New("page header has a bad container or string size")
	errHdrDepth    = errors.New("page header nested too deep")
	errHdrRequired = errors.New("page header misses a required field")
)

// hdr is a cursor over thrift compact bytes. It mirrors the semantics of
// github.com/apache/thrift's TCompactProtocol (FuzzPageHeader checks this).
type hdr struct {
	b   []byte
	pos int
	err error
}

func (r *hdr) byte1() byte {
	if r.pos >= len(r.b) {
		if r.err == nil {
			r.err = ErrHeaderTruncated
		}
		return 0
	}
	c := r.b[r.pos]
	r.pos++
	return c
}

func (r *hdr) uvarint() uint64 {
	var x uint64
	var shift uint
	for i := 0; i < 10; i++ {
		c := r.byte1()
		if r.err != nil {
			return 0
		}
		x |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return x
		}
		shift += 7
	}
	if r.err == nil {
		r.err = errHdrVarint
	}
	return 0
}

func (r *hdr) i32() int32 {
	v := int32(r.uvarint())
	return int32(uint32(v)>>1) ^ -(v & 1)
}

func (r *hdr) skipN(n int) {
	if r.err != nil {
		return
	}
	if n < 0 || n > len(r.b)-r.pos {
		r.err = ErrHeaderTruncated
		r.pos = len(r.b)
		return
	}
	r.pos += n
}

// validType reports whether a compact type nibble is known.
func validType(t byte) bool { return t <= ctUUID }

// field reads a field header. It returns stop=true at the end of a struct.
// For booleans the value lives in the type nibble; bval holds it.
func (r *hdr) field(last *int16) (id int16, typ byte, bval bool, stop bool) {
	c := r.byte1()
	if r.err != nil {
		return 0, 0, false, true
	}
	typ = c & 0x0f
	if typ == ctStop {
		return 0, 0, false, true
	}
	if delta := int16(c >> 4); delta != 0 {
		id = *last + delta
	} else {
		id = int16(r.i32())
		if r.err != nil {
			return 0, 0, false, true
		}
	}
	if !validType(typ) {
		r.err = errHdrType
		return 0, 0, false, true
	}
	*last = id
	if typ == ctTrue || typ == ctFalse {
		return id, ctTrue, typ == ctTrue, false
	}
	return id, typ, false, false
}

// skip skips a value of compact type typ (ctTrue stands for any bool field,
// whose value was in the field header). It is one long function because it
// is a switch with a case per compact type (lists, sets, maps and structs
// recursing), on the path of every page header parsed.
func (r *hdr) skip(typ byte, depth int, inField bool) {
	if r.err != nil {
		return
	}
	if depth <= 0 {
		r.err = errHdrDepth
		return
	}
	switch typ {
	case ctTrue, ctFalse:
		if !inField {
			r.byte1() // bools inside containers take one byte
		}
	case ctByte:
		r.byte1()
	case ctI16, ctI32, ctI64:
		r.uvarint()
	case ctDouble:
		r.skipN(8)
	case ctUUID:
		r.skipN(16)
	case ctBinary:
		n := int32(r.uvarint())
		if r.err != nil {
			return
		}
		if n < 0 || n > 100<<20 {
			r.err = errHdrSize
			return
		}
		r.skipN(int(n))
	case ctStruct:
		var last int16
		for {
			_, t, _, stop := r.field(&last)
			if stop || r.err != nil {
				return
			}
			r.skip(t, depth-1, true)
		}
	case ctList, ctSet:
		c := r.byte1()
		if r.err != nil {
			return
		}
		n := int64((c >> 4) & 0x0f)
		if n == 15 {
			n = int64(int32(r.uvarint()))
			if r.err != nil {
				return
			}
		}
		et := c & 0x0f
		if !validType(et) {
			r.err = errHdrType
			return
		}
		if !r.sizeOK(n, minSize(et)) {
			return
		}
		if et == ctStop && n > 0 {
			r.err = errHdrType
			return
		}
		for i := int64(0); i < n && r.err == nil; i++ {
			r.skip(et, depth-1, false)
		}
	case ctMap:
		n := int64(int32(r.uvarint()))
		if r.err != nil {
			return
		}
		var kv byte
		if n != 0 {
			kv = r.byte1()
			if r.err != nil {
				return
			}
		}
		kt, vt := kv>>4, kv&0x0f
		// thrift maps an unknown nibble to STOP here and fails on the first
		// element; model that by failing only when there are elements.
		ks, vs := minSize(kt), minSize(vt)
		if !validType(kt) {
			ks = 1
		}
		if !validType(vt) {
			vs = 1
		}
		if !r.sizeOK(n, ks+vs) {
			return
		}
		if n > 0 && (!validType(kt) || !validType(vt) || kt == ctStop || vt == ctStop) {
			r.err = errHdrType
			return
		}
		for i := int64(0); i < n && r.err == nil; i++ {
			r.skip(kt, depth-1, false)
			r.skip(vt, depth-1, false)
		}
	default:
		r.err = errHdrType
	}
}

// sizeOK applies thrift's container size checks (negative, int32 overflow,
// 100 MiB message cap) and, beyond thrift, refuses counts that cannot fit in
// the remaining bytes so a forged count cannot make us loop for long.
func (r *hdr) sizeOK(n int64, min int64) bool {
	if n < 0 || n > math.MaxInt32 || n*min > math.MaxInt32 || n*min > 100<<20 {
		r.err = errHdrSize
		return false
	}
	if n*min > int64(len(r.b)-r.pos) {
		r.err = ErrHeaderTruncated
		return false
	}
	return true
}

// minSize is thrift's minimum serialized size of a compact type.
func minSize(t byte) int64 {
	switch t {
	case ctDouble:
		return 8
	case ctUUID:
		return 16
	}
	return 1
}

// ParsePageHeader decodes the Thrift compact PageHeader at the start of b.
// It returns the header and its length in bytes; the page body (of
// h.CompressedSize bytes) follows at b[n:]. It allocates nothing and never
// reads past b. The error wraps ErrCorrupt, and ErrHeaderTruncated when b
// ends inside the header.
func ParsePageHeader(b []byte) (h PageHeader, n int, err error) {
	r := hdr{b: b}
	h.V2.IsCompressed = true
	var last int16
	var seen uint8
	for {
		id, t, bv, stop := r.field(&last)
		if stop {
			break
		}
		switch {
		case id == 1 && t == ctI32:
			h.Type = PageType(r.i32())
			seen |= 1
		case id == 2 && t == ctI32:
			h.UncompressedSize = r.i32()
			seen |= 2
		case id == 3 && t == ctI32:
			h.CompressedSize = r.i32()
			seen |= 4
		case id == 4 && t == ctI32:
			h.CRC = uint32(r.i32())
			h.HasCRC = true
		case id == 5 && t == ctStruct:
			h.Data = DataPageHeader{}
			r.dataHeader(&h.Data)
		case id == 6 && t == ctStruct:
			r.skip(ctStruct, maxSkipDeep, true)
			h.IndexSet = true
		case id == 7 && t == ctStruct:
			h.Dict = DictionaryPageHeader{}
			r.dictHeader(&h.Dict)
		case id == 8 && t == ctStruct:
			h.V2 = DataPageHeaderV2{IsCompressed: true}
			r.v2Header(&h.V2)
		default:
			_ = bv
			r.skip(t, maxSkipDeep, true)
		}
		if r.err != nil {
			break
		}
	}
	if r.err == nil && seen != 7 {
		r.err = errHdrRequired
	}
	if r.err != nil {
		return PageHeader{}, 0, wrapKind(ErrCorrupt, r.err, "")
	}
	return h, r.pos, nil
}

func (r *hdr) dataHeader(d *DataPageHeader) {
	var last int16
	var seen uint8
	for {
		id, t, _, stop := r.field(&last)
		if stop {
			break
		}
		switch {
		case id == 1 && t == ctI32:
			d.NumValues = r.i32()
			seen |= 1
		case id == 2 && t == ctI32:
			d.Encoding = r.i32()
			seen |= 2
		case id == 3 && t == ctI32:
			d.DefEncoding = r.i32()
			seen |= 4
		case id == 4 && t == ctI32:
			d.RepEncoding = r.i32()
			seen |= 8
		default:
			r.skip(t, maxSkipDeep, true)
		}
		if r.err != nil {
			return
		}
	}
	if r.err == nil && seen != 15 {
		r.err = errHdrRequired
	}
	d.Set = true
}

func (r *hdr) dictHeader(d *DictionaryPageHeader) {
	var last int16
	var seen uint8
	for {
		id, t, bv, stop := r.field(&last)
		if stop {
			break
		}
		switch {
		case id == 1 && t == ctI32:
			d.NumValues = r.i32()
			seen |= 1
		case id == 2 && t == ctI32:
			d.Encoding = r.i32()
			seen |= 2
		case id == 3 && t == ctTrue:
			d.IsSorted, d.SortedSet = bv, true
		default:
			r.skip(t, maxSkipDeep, true)
		}
		if r.err != nil {
			return
		}
	}
	if r.err == nil && seen != 3 {
		r.err = errHdrRequired
	}
	d.Set = true
}

func (r *hdr) v2Header(d *DataPageHeaderV2) {
	var last int16
	var seen uint8
	for {
		id, t, bv, stop := r.field(&last)
		if stop {
			break
		}
		switch {
		case id == 1 && t == ctI32:
			d.NumValues = r.i32()
			seen |= 1
		case id == 2 && t == ctI32:
			d.NumNulls = r.i32()
			seen |= 2
		case id == 3 && t == ctI32:
			d.NumRows = r.i32()
			seen |= 4
		case id == 4 && t == ctI32:
			d.Encoding = r.i32()
			seen |= 8
		case id == 5 && t == ctI32:
			d.DefLevelsLen = r.i32()
			seen |= 16
		case id == 6 && t == ctI32:
			d.RepLevelsLen = r.i32()
			seen |= 32
		case id == 7 && t == ctTrue:
			d.IsCompressed = bv
		default:
			r.skip(t, maxSkipDeep, true)
		}
		if r.err != nil {
			return
		}
	}
	if r.err == nil && seen != 63 {
		r.err = errHdrRequired
	}
	d.Set = true
}

// itoa formats without fmt, for String methods on hot error paths.
func itoa(v int64) string {
	var buf [20]byte
	i := len(buf)
	neg := v < 0
	u := uint64(v)
	if neg {
		u = uint64(-v)
	}
	for {
		i--
		buf[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			break
		}
	}
	if neg {
		i--
		buf[i] = '-'
	}
	return string(buf[i:])
}

// CheckThrift walks the Thrift compact struct at the start of b (a footer,
// an offset index) without decoding it, and fails where a container count
// or string length claims more than the bytes left, or nesting is deeper
// than Thrift's 64. Thrift's own decoder preallocates a container from its
// claimed count before reading it, so a few forged bytes can make it
// allocate hundreds of megabytes; CheckThrift first keeps every claim
// within len(b). It allocates nothing. It returns the struct's length;
// the error says what is wrong and where, for the caller to wrap.
func CheckThrift(b []byte) (n int, err error) {
	r := hdr{b: b}
	r.skip(ctStruct, maxSkipDeep, true)
	var why string
	switch r.err {
	case nil:
		return r.pos, nil
	case ErrHeaderTruncated:
		why = "a count or length claims more than the bytes left, or the struct is cut short"
	case errHdrSize:
		why = "a container or string size beyond Thrift's limits"
	case errHdrDepth:
		why = "nested deeper than 64"
	case errHdrType:
		why = "an unknown Thrift type"
	default:
		why = r.err.Error()
	}
	return 0, fmt.Errorf("codec: thrift struct: %s (at byte %d of %d)", why, r.pos, len(b))
}
