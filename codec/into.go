package codec

import (
	"encoding/binary"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
)

// IntoResult describes a page decoded into a consumer's buffers.
type IntoResult struct {
	// Rows is the number of rows that start in this page.
	Rows int
	// Values is the number of values written, LeadingValues included.
	Values int
	// LeadingLevels counts the levels at the page's head that continue the
	// previous page's last row (as Page.LeadingLevels).
	LeadingLevels int
	// LeadingValues is how many values at the head of the values buffer
	// belong to the previous page's last row: append them to it. The page's
	// own rows start after them.
	LeadingValues int
	// LastRowMayContinue says the last row may go on in the next page (as
	// Page.LastRowMayContinue); its continuation is that page's
	// LeadingValues.
	LastRowMayContinue bool
}

// DecodeInt32Into decodes a data page of an int32 column that is neither
// repeated nor nested straight into dst, without allocating. dst must hold
// the page's value count (PageHeader.NumValues); a shorter dst fails with
// ErrShortBuffer. A page holding nulls, a column of another shape, or an
// encoding whose decoder allocates fails with ErrUnsupported, and the
// caller should use DecodePage. PLAIN and RLE_DICTIONARY pages decode with
// zero allocations once the Decoder is warm.
func (d *Decoder) DecodeInt32Into(c *Chunk, dict *Dictionary, pageBytes []byte, off int64, dst []int32) (IntoResult, error) {
	var res IntoResult
	h, nl, vb, err := d.intoPrologue(c, dict, pageBytes, 0)
	if err != nil {
		return res, c.err("decode", off, err)
	}
	if len(dst) < nl {
		return res, c.err("decode", off, kindf(ErrShortBuffer, "page has %d values, buffer holds %d", nl, len(dst)))
	}
	if err := d.materialize(c, nl); err != nil {
		return res, c.err("decode", off, err)
	}
	maxDef := c.Descr.MaxDefinitionLevel()
	if n := countDefined(d.defs[:nl], maxDef); n != nl {
		return res, c.err("decode", off, kindf(ErrUnsupported, "page holds %d nulls; use DecodePage", nl-n))
	}
	if err := d.valuesInto(&h, dict, vb, nl, dst); err != nil {
		return res, c.err("decode", off, err)
	}
	res.Rows, res.Values = nl, nl
	return res, nil
}

// DecodeListInt32Into decodes a data page of a list<int32> column straight
// into values (the page's elements, in order) and offsets (row i holds
// values[offsets[i]:offsets[i+1]]), without allocating. values must hold
// the page's value count and offsets one more than that; shorter buffers
// fail with ErrShortBuffer. Rows that cross pages are reported as in
// IntoResult. Null lists and null elements cannot be represented and fail
// with ErrUnsupported, as do other column shapes and encodings; use
// DecodePage then.
func (d *Decoder) DecodeListInt32Into(c *Chunk, dict *Dictionary, pageBytes []byte, off int64, values, offsets []int32) (IntoResult, error) {
	var res IntoResult
	h, nl, vb, err := d.intoPrologue(c, dict, pageBytes, 1)
	if err != nil {
		return res, c.err("decode", off, err)
	}
	if len(values) < nl || len(offsets) < nl+1 {
		return res, c.err("decode", off, kindf(ErrShortBuffer, "page has %d values; buffers hold %d values, %d offsets", nl, len(values), len(offsets)))
	}
	p := d.plans[c.Descr]
	list := p.path[0].LevelInfo
	maxDef := c.Descr.MaxDefinitionLevel()
	if list.RepLevel == 1 && c.Descr.MaxRepetitionLevel() == 1 && singleRun(d.defB, nl, maxDef) {
		// Every level holds a value (no empty or null lists, no null
		// elements), so the value index is the level index and only the
		// row starts are needed: scan the repetition bits for zeros.
		rows, lead, err := rowStarts(d.repB, nl, offsets[:nl+1])
		if err != nil {
			return res, c.err("decode", off, err)
		}
		offsets[rows] = int32(nl)
		if err := d.valuesInto(&h, dict, vb, nl, values); err != nil {
			return res, c.err("decode", off, err)
		}
		res.Rows, res.Values = rows, nl
		res.LeadingLevels, res.LeadingValues = lead, lead
		res.LastRowMayContinue = lead < nl && h.Type == DataPage
		if rows == 0 {
			offsets[0] = int32(nl)
		}
		return res, nil
	}
	if err := d.materialize(c, nl); err != nil {
		return res, c.err("decode", off, err)
	}
	defs, reps := d.defs[:nl], d.reps[:nl]
	lead := firstRowStart(reps)
	// Every level must be a present value or an empty list: null lists and
	// null elements have no place in the consumer's buffers.
	emptyDef := list.DefLevel - 1
	vi := 0
	for _, def := range defs[:lead] {
		if def == maxDef {
			vi++
		} else if def != emptyDef {
			return res, c.err("decode", off, errNullInto)
		}
	}
	rows := 0
	offs := offsets[:nl+1]
	rs, ds := reps[lead:], defs[lead:]
	ds = ds[:len(rs)]
	// Most levels continue a row with a value: test four at a time.
	repCont, defVal := splat(list.RepLevel), splat(maxDef)
	i := 0
	for ; i+4 <= len(rs); i += 4 {
		if load4(rs[i:]) == repCont && load4(ds[i:]) == defVal {
			vi += 4
			continue
		}
		for j := i; j < i+4; j++ {
			if rs[j] == 0 {
				offs[rows] = int32(vi)
				rows++
			}
			if def := ds[j]; def == maxDef {
				vi++
			} else if def != emptyDef {
				return res, c.err("decode", off, errNullInto)
			}
		}
	}
	for ; i < len(rs); i++ {
		r := rs[i]
		if r == 0 {
			offs[rows] = int32(vi)
			rows++
		}
		if def := ds[i]; def == maxDef {
			vi++
		} else if def != emptyDef {
			return res, c.err("decode", off, errNullInto)
		}
	}
	offsets[rows] = int32(vi)
	if err := d.valuesInto(&h, dict, vb, vi, values); err != nil {
		return res, c.err("decode", off, err)
	}
	res.Rows, res.Values = rows, vi
	res.LeadingLevels = lead
	res.LeadingValues = countDefined(defs[:lead], maxDef)
	res.LastRowMayContinue = lead < nl && h.Type == DataPage
	if rows == 0 {
		offsets[0] = int32(vi)
		res.LeadingValues = vi
	}
	return res, nil
}

// intoPrologue checks the column's shape (depth 0: a flat int32 column;
// depth 1: list<int32>), loads the page and decodes its levels into the
// scratch. It returns the page's level count and its value bytes.
func (d *Decoder) intoPrologue(c *Chunk, dict *Dictionary, pageBytes []byte, depth int) (h PageHeader, nl int, vals []byte, err error) {
	if d.closed {
		return h, 0, nil, ErrClosed
	}
	d.startCall()
	if c.Encrypted {
		return h, 0, nil, kindf(ErrUnsupported, "encrypted column")
	}
	if c.Descr == nil || c.Descr.PhysicalType() != parquet.Types.Int32 {
		return h, 0, nil, kindf(ErrUnsupported, "not an int32 column")
	}
	p, err := d.plan(c)
	if err != nil {
		return h, 0, nil, err
	}
	if p.fail != nil {
		return h, 0, nil, p.fail
	}
	if len(p.path) != depth+1 || p.leaf.Field.Type.ID() != arrow.INT32 ||
		int(c.Descr.MaxRepetitionLevel()) != depth ||
		(depth == 1 && p.path[0].Field.Type.ID() != arrow.LIST) {
		return h, 0, nil, kindf(ErrUnsupported, "column shape %s is not %s", p, map[int]string{0: "int32", 1: "list<int32>"}[depth])
	}
	h, page, err := d.loadBytes(c, dict, 0, pageBytes)
	if err != nil {
		return h, 0, nil, err
	}
	nl = int(h.NumValues())
	maxRep, maxDef := c.Descr.MaxRepetitionLevel(), c.Descr.MaxDefinitionLevel()
	repB, defB, vb, err := levelStreams(&h, page, maxRep, maxDef)
	if err != nil {
		return h, 0, nil, err
	}
	d.repB, d.defB = repB, defB
	return h, nl, vb, nil
}

// materialize decodes the levels intoPrologue found into the scratch.
func (d *Decoder) materialize(c *Chunk, nl int) error {
	d.growLevels(nl)
	if err := levelsInto(d.repB, c.Descr.MaxRepetitionLevel(), d.reps[:nl]); err != nil {
		return err
	}
	return levelsInto(d.defB, c.Descr.MaxDefinitionLevel(), d.defs[:nl])
}

// valuesInto decodes n int32 values of a PLAIN or dictionary-encoded page
// into dst.
func (d *Decoder) valuesInto(h *PageHeader, dict *Dictionary, b []byte, n int, dst []int32) error {
	enc := parquet.Encoding(h.Data.Encoding)
	if h.Type == DataPageV2 {
		enc = parquet.Encoding(h.V2.Encoding)
	}
	switch enc {
	case parquet.Encodings.Plain:
	case parquet.Encodings.RLEDict, parquet.Encodings.PlainDict:
		if dict == nil {
			return kindf(ErrCorrupt, "dictionary-encoded page without a dictionary")
		}
	default:
		return kindf(ErrUnsupported, "encoding %s in the consumer-buffer path", encName(enc))
	}
	return fixedValues(d, enc, b, dict, dst[:n])
}

var errNullInto = kindf(ErrUnsupported, "page holds null lists or elements; use DecodePage")

// singleRun reports whether an RLE level stream starts with one run of
// value v covering all n levels.
func singleRun(b []byte, n int, v int16) bool {
	h, k := binary.Uvarint(b)
	if k <= 0 || h&1 != 0 || h>>1 < uint64(n) {
		return false
	}
	bw := bitWidth(int(v))
	vbytes := (bw + 7) / 8
	if len(b) < k+vbytes {
		return false
	}
	var got uint32
	for i := 0; i < vbytes; i++ {
		got |= uint32(b[k+i]) << (8 * i)
	}
	return got == uint32(v)
}

// rowStarts scans n one-bit repetition levels (RLE/bit-packed hybrid) and
// writes the index of every level 0 (a row start) to offs. It returns the
// number of row starts and the index of the first (n when there is none).
func rowStarts(b []byte, n int, offs []int32) (rows, first int, err error) {
	pos, i := 0, 0
	for i < n {
		h, k := binary.Uvarint(b[pos:])
		if k <= 0 {
			return 0, 0, wrapKind(ErrCorrupt, errRLETruncated, "repetition levels")
		}
		pos += k
		if h&1 == 0 {
			if pos >= len(b) {
				return 0, 0, wrapKind(ErrCorrupt, errRLETruncated, "repetition levels")
			}
			v := b[pos]
			pos++
			m := n - i
			if h>>1 < uint64(m) {
				m = int(h >> 1)
			}
			switch v {
			case 0:
				for q := 0; q < m; q++ {
					offs[rows] = int32(i + q)
					rows++
				}
			case 1:
			default:
				return 0, 0, wrapKind(ErrCorrupt, errRLEValue, "repetition levels")
			}
			i += m
			continue
		}
		groups := h >> 1
		if groups > uint64(len(b)) {
			groups = uint64(len(b))
		}
		m := n - i
		if int(groups)*8 < m {
			m = int(groups) * 8
		}
		need := (m + 7) / 8
		if pos+need > len(b) {
			return 0, 0, wrapKind(ErrCorrupt, errRLETruncated, "repetition levels")
		}
		data := b[pos : pos+need]
		for base := 0; base < m; base += 64 {
			var w uint64
			if len(data) >= base/8+8 {
				w = binary.LittleEndian.Uint64(data[base/8:])
			} else {
				for q := 0; base/8+q < len(data); q++ {
					w |= uint64(data[base/8+q]) << (8 * q)
				}
			}
			z := ^w
			if left := m - base; left < 64 {
				z &= 1<<uint(left) - 1
			}
			for z != 0 {
				offs[rows] = int32(i + base + bits.TrailingZeros64(z))
				rows++
				z &= z - 1
			}
		}
		i += m
		if int(groups) > len(b)-pos {
			pos = len(b)
		} else {
			pos += int(groups)
		}
	}
	first = n
	if rows > 0 {
		first = int(offs[0])
	}
	return rows, first, nil
}
