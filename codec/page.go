package codec

import (
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Page is one decoded data page: the rows that start in it, as an Arrow
// array of the column's top-level field, projected to this leaf (structs
// keep only the field on the way to the leaf; a map becomes a list of
// entry structs holding only the key or the value).
//
// A Page owns its array: Release it when done, or Retain the array to keep
// it past the Page's Release.
type Page struct {
	arr       arrow.Array
	header    PageHeader
	leading   int
	mayCont   bool
	continued int
	levels    int
	aliased   bool
}

// Aliased reports that the page's array references the page bytes given to
// DecodePage or DecodeSpan instead of a copy (Options.AliasInput): they
// must stay unchanged until the Page and every Retain of its array (and of
// anything built on its buffers) are released. The values may then sit at
// any address; Go reads unaligned int32/int64/float views correctly on
// amd64 and arm64, which is what pagefeed runs on. False for every page
// when AliasInput is off.
func (p *Page) Aliased() bool { return p.aliased }

// Array returns the page's rows. It stays valid until Release. A list of
// fixed-width values may keep its offsets and values in one buffer, and its
// values array may have a non-zero offset: read it with ValueOffsets or
// Offsets()[:Len()+1] and Int32Values (or the like), as any Arrow slice.
func (p *Page) Array() arrow.Array { return p.arr }

// Rows returns the number of rows that start in this page (Array().Len()).
func (p *Page) Rows() int { return p.arr.Len() }

// Header returns the page's parsed header.
func (p *Page) Header() PageHeader { return p.header }

// Levels returns the number of levels (values, nulls included) the page
// holds, as its header says.
func (p *Page) Levels() int { return p.levels }

// LeadingLevels returns how many levels at the head of the page continue the
// previous page's last row (repetition level not 0). They are not part of
// Array; the row they belong to is delivered by the page it starts in (see
// DecodeSpan). 0 for pages that start at a row boundary.
func (p *Page) LeadingLevels() int { return p.leading }

// LastRowMayContinue reports that the last row of Array may continue in the
// next page of the chunk and so may be incomplete: the column is repeated,
// the page is a V1 data page (V2 pages end at row boundaries) and the
// following pages given to DecodeSpan, if any, did not show where the row
// ends. A loader that must deliver whole rows decodes the page again with
// DecodeSpan and the next page(s), or drops the last row and takes it from
// the span decode.
func (p *Page) LastRowMayContinue() bool { return p.mayCont }

// Continued returns how many of the pages after the first that DecodeSpan
// was given contributed levels to the last row.
func (p *Page) Continued() int { return p.continued }

// Release frees the page's array. The Page must not be used afterwards.
func (p *Page) Release() {
	if p.arr != nil {
		p.arr.Release()
		*p = Page{}
		pagePool.Put(p)
	}
}

// pagePool recycles Page values: a loader decodes and releases pages at a
// high rate.
var pagePool = sync.Pool{New: func() any { return new(Page) }}

// DecodePage decodes the data page in pageBytes (header and body as read
// from disk at file offset off) of chunk c. dict is the chunk's Dictionary,
// needed when the page is dictionary-encoded (nil otherwise). The rows
// returned are those that start in this page; see LeadingLevels and
// LastRowMayContinue for rows that cross pages.
//
// Errors are *Error values naming c.Path, c.Column and off, wrapping
// ErrCorrupt, ErrUnsupported, ErrCRC or ErrPageTooLarge. pageBytes is not
// retained, unless Options.AliasInput is set and the Page says Aliased.
func (d *Decoder) DecodePage(c *Chunk, dict *Dictionary, pageBytes []byte, off int64) (*Page, error) {
	return d.decode(c, dict, [][]byte{pageBytes}, []int64{off})
}

// DecodeSpan decodes pages[0] like DecodePage and completes its last row
// with the leading continuation levels of pages[1:], the pages that follow
// it in the chunk, in order (offs holds each page's file offset). It stops
// at the first page that starts a new row; later pages are not decoded. The
// result's LastRowMayContinue is false once such a page was seen, so the
// last row is whole. Giving no following pages is the same as DecodePage.
func (d *Decoder) DecodeSpan(c *Chunk, dict *Dictionary, pages [][]byte, offs []int64) (*Page, error) {
	if len(pages) == 0 || len(pages) != len(offs) {
		return nil, c.err("decode", -1, kindf(ErrCorrupt, "DecodeSpan needs one offset per page and at least one page"))
	}
	return d.decode(c, dict, pages, offs)
}

// decode is DecodePage and DecodeSpan. It is one long function because its
// loop over a span's pages carries the level and value cursors and the
// pooled Page from one page to the next, and every error path gives them
// back the same way.
func (d *Decoder) decode(c *Chunk, dict *Dictionary, pages [][]byte, offs []int64) (pg *Page, err error) {
	if d.closed {
		return nil, c.err("decode", offs[0], ErrClosed)
	}
	d.startCall()
	if c.Encrypted {
		return nil, c.err("decode", offs[0], kindf(ErrUnsupported, "encrypted column"))
	}
	if c.Descr == nil {
		return nil, c.err("decode", offs[0], kindf(ErrCorrupt, "chunk without a column descriptor"))
	}
	p, err := d.plan(c)
	if err != nil {
		return nil, c.err("schema", offs[0], err)
	}
	if p.fail != nil {
		return nil, c.err("decode", offs[0], p.fail)
	}
	var st *colState // arrow-go's reader, made when a page needs it
	maxRep := c.Descr.MaxRepetitionLevel()
	maxDef := c.Descr.MaxDefinitionLevel()
	pg = pagePool.Get().(*Page)
	var r levelRange
	lvl, val := 0, 0
	for k := range pages {
		var h PageHeader
		var page []byte
		if k > 0 {
			h, page, err = d.loadBytes(c, dict, k, pages[k])
		} else {
			var body []byte
			if h, body, err = d.parseBody(c, dict, pages[0]); err == nil {
				var fr fastResult
				var done bool
				if fr, page, done, err = d.fastList(c, p, dict, &h, body, pages); done && err == nil {
					pg.arr, pg.header, pg.levels, pg.leading = fr.arr, h, int(h.NumValues()), fr.lead
					pg.mayCont, pg.continued, pg.aliased = fr.mayCont, fr.continued, fr.aliased
					return pg, nil
				}
				if err == nil && page == nil {
					page, err = d.expandSpan(c, 0, &h, body)
				}
			}
		}
		if err == nil {
			var nl, nv int
			var own bool
			nl, nv, own, err = d.ownDecode(c, dict, &h, page, lvl, val)
			if !own && err == nil {
				if st == nil {
					st = d.state(c, dict)
				}
				d.arm(st, k, &h, page)
				nl, nv, err = d.readLevels(st, int(h.NumValues()), lvl, val)
			}
			if err == nil {
				if k == 0 {
					pg.header = h
					pg.levels = nl
					lead := 0
					if maxRep > 0 {
						lead = firstRowStart(d.reps[:nl])
					}
					pg.leading = lead
					r.s, r.vs = lead, countDefined(d.defs[:lead], maxDef)
					lvl, val = nl, nv
					pg.mayCont = maxRep > 0 && h.Type == DataPage && lead < nl
					if len(pages) == 1 || !pg.mayCont {
						break
					}
					continue
				}
				// a following page: take its levels up to its first row start
				j := firstRowStart(d.reps[lvl : lvl+nl])
				val += countDefined(d.defs[lvl:lvl+j], maxDef)
				lvl += j
				pg.continued = k
				if j < nl {
					pg.mayCont = false
					break
				}
				pg.mayCont = h.Type == DataPage
				if !pg.mayCont {
					break
				}
				continue
			}
		}
		if st != nil {
			d.dropState(st)
		}
		*pg = Page{}
		pagePool.Put(pg)
		return nil, c.err("decode", offs[k], err)
	}
	r.e, r.ve = lvl, val
	arr, err := d.build(c, p, r)
	if err != nil {
		*pg = Page{}
		pagePool.Put(pg)
		return nil, c.err("decode", offs[0], err)
	}
	pg.arr = arr
	return pg, nil
}

// firstRowStart returns the index of the first repetition level 0, or
// len(reps) when every level continues an earlier row.
func firstRowStart(reps []int16) int {
	for i, r := range reps {
		if r == 0 {
			return i
		}
	}
	return len(reps)
}

func (d *Decoder) build(c *Chunk, p *plan, r levelRange) (arr arrow.Array, err error) {
	defer recoverCorrupt(&err)
	defs := d.defs[r.s:r.e]
	reps := d.reps[r.s:r.e]
	leaf, err := d.buildLeaf(c.Descr, p.leaf.Field.Type, p.leaf.LevelInfo, defs, r.vs, r.ve)
	if err != nil {
		return nil, err
	}
	data, err := d.nest(p, leaf, defs, reps, c.Descr.MaxRepetitionLevel() > 0)
	if err != nil {
		return nil, err
	}
	arr = array.MakeFromData(data)
	data.Release()
	return arr, nil
}
