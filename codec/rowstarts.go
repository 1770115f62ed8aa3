package codec

import (
	"encoding/binary"
	"io"
)

// RowStarts returns how many rows start in the data page in pageBytes
// (header and body as read from disk at file offset off) of chunk c, and
// whether its first level continues a row that an earlier page began.
//
// It is what an index needs where neither the page's header nor an offset
// index says where the page's rows start: V1 pages of repeated columns may
// split rows anywhere. For a repeated column it decompresses the page and
// decodes its repetition levels (a row starts at every level 0); values
// are not decoded, so no dictionary is needed. For a column without
// repetition every level is a row and the header says how many. A V2
// page's levels are read from the page too, rather than its header's
// num_rows, which some writers fill wrongly.
//
// Errors are as DecodePage's: *Error values naming c.Path, c.Column and
// off, wrapping ErrCorrupt, ErrUnsupported (levels not RLE encoded, an
// unknown codec), ErrCRC or ErrPageTooLarge. pageBytes is not retained.
func (d *Decoder) RowStarts(c *Chunk, pageBytes []byte, off int64) (rows int, continues bool, err error) {
	if d.closed {
		return 0, false, c.err("count rows", off, ErrClosed)
	}
	d.startCall()
	if c.Encrypted {
		return 0, false, c.err("count rows", off, kindf(ErrUnsupported, "encrypted column"))
	}
	if c.Descr == nil {
		return 0, false, c.err("count rows", off, kindf(ErrCorrupt, "chunk without a column descriptor"))
	}
	rows, continues, err = d.rowStarts(c, pageBytes)
	if err != nil {
		return 0, false, c.err("count rows", off, err)
	}
	return rows, continues, nil
}

func (d *Decoder) rowStarts(c *Chunk, pageBytes []byte) (rows int, continues bool, err error) {
	defer recoverCorrupt(&err)
	h, n, err := ParsePageHeader(pageBytes)
	if err != nil {
		return 0, false, err
	}
	switch {
	case h.Type == DataPage && h.Data.Set, h.Type == DataPageV2 && h.V2.Set:
	case h.Type == DictionaryPage:
		return 0, false, kindf(ErrCorrupt, "dictionary page where a data page was expected")
	default:
		return 0, false, kindf(ErrCorrupt, "page of type %d is not a data page", int32(h.Type))
	}
	nv := int(h.NumValues())
	if nv < 0 {
		return 0, false, kindf(ErrCorrupt, "negative value count %d", nv)
	}
	if nv > d.opts.MaxPageValues {
		return 0, false, kindf(ErrPageTooLarge, "page claims %d values; limit %d", nv, d.opts.MaxPageValues)
	}
	maxRep := c.Descr.MaxRepetitionLevel()
	if maxRep == 0 || nv == 0 {
		return nv, false, nil
	}
	d.noteNeed(nv, int(h.UncompressedSize))
	body, err := d.checkBody(&h, pageBytes[n:])
	if err != nil {
		return 0, false, err
	}
	page := body
	if h.Type == DataPageV2 {
		// V2 levels are stored uncompressed ahead of the values.
		if rl, dl := int64(h.V2.RepLevelsLen), int64(h.V2.DefLevelsLen); rl < 0 || dl < 0 || rl+dl > int64(len(body)) {
			return 0, false, kindf(ErrCorrupt, "data page v2 level lengths %d+%d exceed the page", h.V2.RepLevelsLen, h.V2.DefLevelsLen)
		}
	} else if page = storedPlain(c, &h, body); page == nil {
		if page, err = d.levelHead(c, &h, body); err != nil {
			return 0, false, err
		}
	}
	repB, _, _, err := levelStreams(&h, page, maxRep, 0)
	if err != nil {
		return 0, false, err
	}
	d.growLevels(nv)
	reps := d.reps[:nv]
	if err := levelsInto(repB, maxRep, reps); err != nil {
		return 0, false, err
	}
	for _, r := range reps {
		if r == 0 {
			rows++
		}
	}
	return rows, nv > 0 && reps[0] != 0, nil
}

// levelHead returns the head of a compressed V1 page that holds its
// repetition levels (their 4-byte length and the levels), decompressing
// no more than that where the codec streams: the levels come first, and
// the values, most of the page, are not needed.
func (d *Decoder) levelHead(c *Chunk, h *PageHeader, body []byte) ([]byte, error) {
	r, err := d.dec.stream(c.Codec, body)
	if err != nil {
		return nil, decompressErr(c.Codec, err)
	}
	if r == nil {
		return d.expandSpan(c, 0, h, body)
	}
	defer d.dec.endStream()
	head := d.spanBytes(0, 4)
	if _, err := io.ReadFull(r, head); err != nil {
		return nil, decompressErr(c.Codec, err)
	}
	n := int64(binary.LittleEndian.Uint32(head))
	if n > int64(h.UncompressedSize)-4 {
		return nil, kindf(ErrCorrupt, "levels of %d bytes overrun the page", n)
	}
	head = d.spanBytes(0, 4+int(n)) // may be a new buffer
	binary.LittleEndian.PutUint32(head, uint32(n))
	if _, err := io.ReadFull(r, head[4:]); err != nil {
		return nil, decompressErr(c.Codec, err)
	}
	return head, nil
}
