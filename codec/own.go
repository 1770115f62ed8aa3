package codec

import (
	"encoding/binary"
	"unsafe"

	"github.com/apache/arrow-go/v18/parquet"
)

// ownDecode decodes the levels and values of a page itself when the page
// is of the common, simple kind: a fixed-width numeric column, PLAIN or
// dictionary encoded, with RLE levels. That is most of the bytes a training
// loader reads, and doing it here avoids arrow-go's per-page allocations.
// own is false when the page is of another kind (arrow-go decodes it then).
func (d *Decoder) ownDecode(c *Chunk, dict *Dictionary, h *PageHeader, page []byte, lvlOff, valOff int) (nl, nv int, own bool, err error) {
	pt := c.Descr.PhysicalType()
	switch pt {
	case parquet.Types.Int32, parquet.Types.Int64, parquet.Types.Float, parquet.Types.Double:
	default:
		return 0, 0, false, nil
	}
	enc := parquet.Encoding(h.Data.Encoding)
	if h.Type == DataPageV2 {
		enc = parquet.Encoding(h.V2.Encoding)
	}
	switch enc {
	case parquet.Encodings.Plain:
	case parquet.Encodings.RLEDict, parquet.Encodings.PlainDict:
		if dict == nil {
			return 0, 0, false, nil
		}
	default:
		return 0, 0, false, nil
	}
	maxRep, maxDef := c.Descr.MaxRepetitionLevel(), c.Descr.MaxDefinitionLevel()
	if h.Type == DataPage && ((maxRep > 0 && h.Data.RepEncoding != int32(parquet.Encodings.RLE)) ||
		(maxDef > 0 && h.Data.DefEncoding != int32(parquet.Encodings.RLE))) {
		return 0, 0, false, nil
	}
	nl = int(h.NumValues())
	d.growLevels(lvlOff + nl)
	vb, err := decodeLevels(h, page, maxRep, maxDef, d.reps[lvlOff:lvlOff+nl], d.defs[lvlOff:lvlOff+nl])
	if err != nil {
		return 0, 0, true, err
	}
	nv = countDefined(d.defs[lvlOff:lvlOff+nl], maxDef)
	end := valOff + nv
	switch pt {
	case parquet.Types.Int32:
		d.vals.i32 = grow(d.vals.i32, end)
		err = d.fixedValues(enc, vb, dict, d.vals.i32[valOff:end])
	case parquet.Types.Int64:
		d.vals.i64 = grow(d.vals.i64, end)
		err = fixedValues(d, enc, vb, dict, d.vals.i64[valOff:end])
	case parquet.Types.Float:
		d.vals.f32 = grow(d.vals.f32, end)
		err = fixedValues(d, enc, vb, dict, d.vals.f32[valOff:end])
	case parquet.Types.Double:
		d.vals.f64 = grow(d.vals.f64, end)
		err = fixedValues(d, enc, vb, dict, d.vals.f64[valOff:end])
	}
	return nl, nv, true, err
}

// decodeLevels decodes a page's repetition and definition levels (RLE; a
// level whose maximum is 0 is all zeros) and returns the value bytes that
// follow them.
func decodeLevels(h *PageHeader, page []byte, maxRep, maxDef int16, reps, defs []int16) ([]byte, error) {
	repB, defB, vals, err := levelStreams(h, page, maxRep, maxDef)
	if err != nil {
		return nil, err
	}
	if err := levelsInto(repB, maxRep, reps); err != nil {
		return nil, err
	}
	if err := levelsInto(defB, maxDef, defs); err != nil {
		return nil, err
	}
	return vals, nil
}

// levelStreams splits a page into its RLE repetition and definition level
// streams and its value bytes.
func levelStreams(h *PageHeader, page []byte, maxRep, maxDef int16) (repB, defB, vals []byte, err error) {
	if h.Type == DataPageV2 {
		rl, dl := int(h.V2.RepLevelsLen), int(h.V2.DefLevelsLen)
		return page[:rl], page[rl : rl+dl], page[rl+dl:], nil
	}
	var out [2][]byte
	for k, lv := range [2]struct {
		max int16
		enc int32
	}{{maxRep, h.Data.RepEncoding}, {maxDef, h.Data.DefEncoding}} {
		if lv.max == 0 {
			continue
		}
		if lv.enc != int32(parquet.Encodings.RLE) {
			kind := ErrUnsupported
			if !knownEncoding(parquet.Encoding(lv.enc)) {
				kind = ErrCorrupt
			}
			return nil, nil, nil, kindf(kind, "level encoding %s", encName(parquet.Encoding(lv.enc)))
		}
		if len(page) < 4 {
			return nil, nil, nil, kindf(ErrCorrupt, "levels truncated")
		}
		n := int(binary.LittleEndian.Uint32(page))
		if n < 0 || n > len(page)-4 {
			return nil, nil, nil, kindf(ErrCorrupt, "levels of %d bytes overrun the page", n)
		}
		out[k] = page[4 : 4+n]
		page = page[4+n:]
	}
	return out[0], out[1], page, nil
}

// levelsInto decodes RLE levels (all zero when max is 0).
func levelsInto(b []byte, max int16, out []int16) error {
	if max == 0 {
		clear(out)
		return nil
	}
	if err := rleDecode(b, bitWidth(int(max)), len(out), uint32(max), out); err != nil {
		return wrapKind(ErrCorrupt, err, "levels")
	}
	return nil
}

// fixedValues decodes len(dst) PLAIN or dictionary-encoded values. Parquet
// stores them little-endian, as the machines pagefeed runs on (amd64,
// arm64) do, so PLAIN is a copy and a dictionary is a view of its page.
func fixedValues[T int32 | int64 | float32 | float64](d *Decoder, enc parquet.Encoding, b []byte, dict *Dictionary, dst []T) error {
	n := len(dst)
	if n == 0 {
		return nil
	}
	size := int(unsafe.Sizeof(dst[0]))
	if enc == parquet.Encodings.Plain {
		if len(b) < n*size {
			return kindf(ErrCorrupt, "page holds %d bytes of PLAIN values, %d values need %d", len(b), n, n*size)
		}
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), n*size), b)
		return nil
	}
	nd := int(dict.numValues)
	if nd <= 0 || len(dict.buf) < nd*size {
		return kindf(ErrCorrupt, "dictionary of %d bytes for %d values of %d bytes", len(dict.buf), nd, size)
	}
	vals := unsafe.Slice((*T)(unsafe.Pointer(&dict.buf[0])), nd)
	if len(b) < 1 {
		return kindf(ErrCorrupt, "dictionary indices truncated")
	}
	d.idx = grow(d.idx, n)
	idx := d.idx[:n]
	if err := rleDecode(b[1:], int(b[0]), n, uint32(nd-1), idx); err != nil {
		return wrapKind(ErrCorrupt, err, "dictionary indices")
	}
	for i, k := range idx {
		dst[i] = vals[k]
	}
	return nil
}

func (d *Decoder) fixedValues(enc parquet.Encoding, b []byte, dict *Dictionary, dst []int32) error {
	return fixedValues(d, enc, b, dict, dst)
}
