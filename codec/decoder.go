// Package codec decodes single Parquet pages, alone and in any order: it
// parses the Thrift page header, checks the CRC, decompresses with
// per-Decoder state and decodes levels and values with arrow-go into Arrow
// arrays (general path) or straight into a consumer's buffers (int32 and
// list<int32> fast path).
//
// A page is decoded without reading any other part of the file: the caller
// supplies the page's bytes (header and body, as read from disk), a Chunk
// describing its column chunk, and, for dictionary-encoded chunks, the
// chunk's Dictionary, decoded once and kept by the caller.
//
// Rows that cross pages: Parquet V1 pages of repeated columns may start in
// the middle of a row and end in the middle of one. DecodePage never yields
// a partial row at the head (Page.LeadingLevels counts the levels that
// belong to the previous page's last row) and says when its last row may
// continue in the next page (Page.LastRowMayContinue); DecodeSpan decodes a
// page together with the continuation levels of the pages that follow it, so
// every row is delivered exactly once, whole, by the page it starts in.
package codec

import (
	"fmt"
	"hash/crc32"
	"runtime"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Defaults for Options.
const (
	DefaultMaxPageBytes  = 256 << 20
	DefaultMaxPageValues = 1 << 23
	maxColStates         = 16
)

// Options configures a Decoder. The zero value is ready to use; fill
// documents the defaults.
type Options struct {
	// NoCRC skips the page CRC check. By default a page whose header carries
	// a CRC is checked (CRC-32 IEEE over the compressed page body, as the
	// Parquet spec says) and fails with ErrCRC on mismatch.
	NoCRC bool
	// MaxPageBytes caps the compressed and uncompressed sizes a page header
	// may claim; larger pages fail with ErrPageTooLarge before anything is
	// allocated. Default DefaultMaxPageBytes (256 MiB).
	MaxPageBytes int
	// MaxPageValues caps the number of values (levels) a page header may
	// claim, since RLE levels can claim millions of values in a few bytes
	// and the Decoder's scratch grows to the claim (about 12 bytes per
	// value at most). Default DefaultMaxPageValues (8 Mi: a 1 MiB page of
	// bit-packed booleans; an all-null page of a larger row group needs
	// more).
	MaxPageValues int
	// Mem allocates the buffers of returned Arrow arrays. Default
	// DefaultAllocator, a PoolAllocator that reuses the buffers of released
	// arrays (release Pages and arrays to benefit).
	Mem memory.Allocator
	// AliasInput lets DecodePage and DecodeSpan return arrays whose values
	// are the caller's page bytes, not a copy, where that is possible: a
	// list of fixed-width values (int32, int64, float, double), PLAIN,
	// stored uncompressed, every level a value, whose rows all end in that
	// page (nothing taken from following pages). Page.Aliased reports it;
	// the caller must then keep the page bytes unchanged until the Page and
	// every Retain of its array (and of anything built on its buffers) are
	// released. Default false: pageBytes is never retained.
	AliasInput bool
	// MaxStateDictBytes bounds the dictionaries the Decoder keeps alive in
	// its cached column readers (one per recent column and dictionary, at
	// most 16), by the sum of their Dictionary.Bytes; the reader in use
	// is kept whatever its size. For callers that count dictionaries
	// against a memory limit. Default 0: only the count bounds them.
	MaxStateDictBytes int64
}

func (o *Options) fill() {
	if o.MaxPageBytes <= 0 {
		o.MaxPageBytes = DefaultMaxPageBytes
	}
	if o.MaxPageValues <= 0 {
		o.MaxPageValues = DefaultMaxPageValues
	}
	if o.Mem == nil {
		o.Mem = DefaultAllocator
	}
}

// Chunk describes a column chunk: what the decoder needs to know about the
// pages it decodes, from the file's metadata. Build it with NewChunk or by
// hand; a Chunk is read-only once in use and may be shared by goroutines.
type Chunk struct {
	Descr  *schema.Column       // the leaf column; its schema tree gives the nesting
	Codec  compress.Compression // the chunk's compression codec
	Path   string               // file, for errors
	Column string               // dotted column path, for errors
	// Meta is the file's key-value metadata (optional). When it holds a
	// stored Arrow schema, leaf types are restored from it, as pqarrow does.
	Meta metadata.KeyValueMetadata
	// Encrypted marks a chunk whose pages are encrypted; decoding it fails
	// with ErrUnsupported.
	Encrypted bool
}

// ChunkOf describes a column chunk of the file at path from its leaf
// descriptor and compression, as an index entry holds them; every Chunk is
// built here or by NewChunk, which calls it. meta is the file's key-value
// metadata, or nil to decode with the Parquet schema's types alone (what
// the loader does: the index keeps no key-value metadata).
func ChunkOf(descr *schema.Column, comp compress.Compression, path string, meta metadata.KeyValueMetadata) *Chunk {
	return &Chunk{Descr: descr, Codec: comp, Path: path, Column: descr.Path(), Meta: meta}
}

// NewChunk describes column col of row group rg of a file whose footer is
// md; path is only used in errors.
func NewChunk(md *metadata.FileMetaData, path string, rg, col int) (*Chunk, error) {
	if rg < 0 || rg >= md.NumRowGroups() || col < 0 || col >= md.Schema.NumColumns() {
		return nil, &Error{Op: "chunk", Path: path, Off: -1, Err: kindf(ErrCorrupt, "no column chunk %d of row group %d", col, rg)}
	}
	c := ChunkOf(md.Schema.Column(col), compress.Codecs.Uncompressed, path, md.KeyValueMetadata())
	cc, err := md.RowGroup(rg).ColumnChunk(col)
	if err != nil {
		return nil, c.err("chunk", -1, wrapKind(ErrCorrupt, err, "column chunk metadata"))
	}
	c.Codec = cc.Compression()
	if cc.CryptoMetadata() != nil {
		c.Encrypted = true
	}
	return c, nil
}

// Dictionary is a column chunk's decompressed dictionary page. Decode it
// once per chunk with Decoder.Dictionary and pass it to every DecodePage of
// that chunk's pages. It is immutable and may be shared by Decoders on
// different goroutines.
type Dictionary struct {
	chunk     *Chunk
	buf       []byte
	numValues int32
	encoding  parquet.Encoding
}

// NumValues returns the number of dictionary entries.
func (d *Dictionary) NumValues() int { return int(d.numValues) }

// Bytes returns the bytes the dictionary holds (its decompressed page
// body), for callers that bound the dictionaries they cache.
func (d *Dictionary) Bytes() int { return len(d.buf) }

// Decoder decodes pages. One per worker goroutine: it is not safe for
// concurrent use. It owns decompressor state and scratch buffers that are
// reused from page to page; Close releases them.
type Decoder struct {
	opts   Options
	dec    decompressors
	closed bool

	schemas map[*schema.GroupNode]*schemaInfo
	plans   map[*schema.Column]*plan
	states  []*colState
	tick    uint64

	spans []spanBuf // one per page of a span; page 0 is the usual one

	defs, reps []int16
	vals       values
	idx        []int32 // dictionary indices
	offs       []int32 // row starts of a fastList page
	cont       []contPage
	bits       []byte // validity scratch
	repB, defB []byte // level streams of the page intoPrologue loaded

	// What the decode calls of the current trim window needed (see
	// trimScratch): the most levels one call decoded, and the largest
	// page; call* accumulate the call in progress.
	calls                  int
	callLevels, peakLevels int
	peakBytes              int
}

// Scratch trimming: one page with a huge value count grows the scratch
// to fit it, and a long-lived Decoder (one per loader worker) would keep
// that high-water mark for good. Every trimEvery decode calls, a scratch
// buffer over trimFloor bytes and over twice what the window's calls
// needed is dropped; it regrows to what pages need now, so steady decoding
// allocates at most once per window.
const (
	trimEvery = 256
	trimFloor = 256 << 10
)

// noteNeed records that the call in progress decodes a page of levels
// levels and size uncompressed bytes.
func (d *Decoder) noteNeed(levels, size int) {
	d.callLevels += levels
	d.peakBytes = max(d.peakBytes, size)
}

// startCall ends the previous decode call's accounting and, at the end of
// a window, trims the scratch. It runs before a call touches the scratch,
// which no Page or Dictionary references once its call returned.
func (d *Decoder) startCall() {
	d.peakLevels = max(d.peakLevels, d.callLevels)
	d.callLevels = 0
	d.calls++
	if d.calls < trimEvery {
		return
	}
	d.trimScratch()
	d.calls, d.peakLevels, d.peakBytes = 0, 0, 0
}

// trimScratch drops scratch buffers far larger than the window needed.
func (d *Decoder) trimScratch() {
	n := d.peakLevels + 1
	d.defs = trimmed(d.defs, n)
	d.reps = trimmed(d.reps, n)
	d.idx = trimmed(d.idx, n)
	d.offs = trimmed(d.offs, n)
	d.bits = trimmed(d.bits, n/8+1)
	v := &d.vals
	v.b, v.i32, v.i64, v.i96 = trimmed(v.b, n), trimmed(v.i32, n), trimmed(v.i64, n), trimmed(v.i96, n)
	v.f32, v.f64, v.ba, v.flba = trimmed(v.f32, n), trimmed(v.f64, n), trimmed(v.ba, n), trimmed(v.flba, n)
	for k := range d.spans {
		d.spans[k].b = trimmed(d.spans[k].b, d.peakBytes)
	}
}

// trimmed returns nil for a buffer over trimFloor bytes and over twice
// need elements, else s.
func trimmed[T any](s []T, need int) []T {
	var z T
	if c := cap(s); c > 2*need && uintptr(c)*unsafe.Sizeof(z) > trimFloor {
		return nil
	}
	return s
}

// ScratchBytes returns the bytes of scratch the Decoder holds between
// calls (levels, values, decompressed pages): what trimming bounds.
func (d *Decoder) ScratchBytes() int64 {
	n := int64(cap(d.defs)+cap(d.reps))*2 + int64(cap(d.idx)+cap(d.offs))*4 + int64(cap(d.bits))
	v := &d.vals
	n += int64(cap(v.b)) + int64(cap(v.i32)+cap(v.f32))*4 + int64(cap(v.i64)+cap(v.f64))*8 + int64(cap(v.i96))*12
	n += int64(cap(v.ba)+cap(v.flba)) * 24
	for k := range d.spans {
		n += int64(cap(d.spans[k].b))
	}
	return n
}

// spanBuf holds one page's decompressed bytes for as long as values decoded
// from it (byte arrays point into it) are in use.
type spanBuf struct {
	b   []byte
	buf memory.Buffer
}

// NewDecoder returns a Decoder with opts (zero fields take defaults).
func NewDecoder(opts Options) *Decoder {
	opts.fill()
	return &Decoder{
		opts:    opts,
		schemas: map[*schema.GroupNode]*schemaInfo{},
		plans:   map[*schema.Column]*plan{},
	}
}

// Close releases the decompressors; later calls fail with ErrClosed. Arrays
// of Pages already returned stay valid until their Release.
func (d *Decoder) Close() {
	if d.closed {
		return
	}
	d.closed = true
	d.dec.close()
	for _, st := range d.states {
		st.pr.Close()
	}
	d.states = nil
	d.spans = nil
}

// Dictionary decodes the dictionary page in pageBytes (header and body, as
// read from disk at file offset off) of chunk c. The result owns its bytes.
func (d *Decoder) Dictionary(c *Chunk, pageBytes []byte, off int64) (dict *Dictionary, err error) {
	if d.closed {
		return nil, c.err("dictionary", off, ErrClosed)
	}
	if c.Encrypted {
		return nil, c.err("dictionary", off, kindf(ErrUnsupported, "encrypted column"))
	}
	h, n, err := ParsePageHeader(pageBytes)
	if err != nil {
		return nil, c.err("parse header", off, err)
	}
	if h.Type != DictionaryPage || !h.Dict.Set {
		return nil, c.err("dictionary", off, kindf(ErrCorrupt, "page is %v, not a dictionary page", h.Type))
	}
	body, err := d.checkBody(&h, pageBytes[n:])
	if err != nil {
		return nil, c.err("dictionary", off, err)
	}
	if h.Dict.NumValues < 0 || int(h.Dict.NumValues) > d.opts.MaxPageValues {
		return nil, c.err("dictionary", off, kindf(ErrPageTooLarge, "dictionary claims %d values", h.Dict.NumValues))
	}
	if enc := parquet.Encoding(h.Dict.Encoding); enc != parquet.Encodings.Plain && enc != parquet.Encodings.PlainDict {
		kind := ErrUnsupported
		if !knownEncoding(enc) {
			kind = ErrCorrupt
		}
		return nil, c.err("dictionary", off, kindf(kind, "dictionary page encoding %s", encName(enc)))
	}
	buf := make([]byte, h.UncompressedSize)
	if err := d.dec.decompress(c.Codec, buf, body); err != nil {
		return nil, c.err("decompress", off, decompressErr(c.Codec, err))
	}
	dict = &Dictionary{chunk: c, buf: buf, numValues: h.Dict.NumValues, encoding: parquet.Encoding(h.Dict.Encoding)}
	return dict, nil
}

// checkBody bounds the header's sizes, checks the CRC and returns the
// compressed body.
func (d *Decoder) checkBody(h *PageHeader, rest []byte) ([]byte, error) {
	if h.CompressedSize < 0 || h.UncompressedSize < 0 {
		return nil, kindf(ErrCorrupt, "negative page size (compressed %d, uncompressed %d)", h.CompressedSize, h.UncompressedSize)
	}
	if int(h.UncompressedSize) > d.opts.MaxPageBytes || int(h.CompressedSize) > d.opts.MaxPageBytes {
		return nil, kindf(ErrPageTooLarge, "page claims %d bytes uncompressed, %d compressed; limit %d",
			h.UncompressedSize, h.CompressedSize, d.opts.MaxPageBytes)
	}
	if int(h.CompressedSize) > len(rest) {
		return nil, kindf(ErrCorrupt, "page body truncated: header says %d bytes, %d present", h.CompressedSize, len(rest))
	}
	body := rest[:h.CompressedSize]
	if h.HasCRC && !d.opts.NoCRC {
		if got := crc32.ChecksumIEEE(body); got != h.CRC {
			return nil, kindf(ErrCRC, "crc %08x, header says %08x", got, h.CRC)
		}
	}
	return body, nil
}

func decompressErr(codec compress.Compression, err error) error {
	if isKind(err, ErrUnsupported) {
		return err
	}
	return wrapKind(ErrCorrupt, err, codec.String())
}

func isKind(err, kind error) bool {
	ce, ok := err.(*causeError)
	return ok && ce.kind == kind
}

// colState is the arrow-go column reader for one (column, dictionary) pair,
// kept so that a dictionary is decoded into arrow-go's decoder once, not
// once per page.
type colState struct {
	descr *schema.Column
	dict  *Dictionary
	pr    *pageReader
	cr    file.ColumnChunkReader
	used  uint64
}

func (d *Decoder) state(c *Chunk, dict *Dictionary) *colState {
	d.tick++
	var lru *colState
	for _, st := range d.states {
		if st.descr == c.Descr && st.dict == dict {
			st.used = d.tick
			return st
		}
		if lru == nil || st.used < lru.used {
			lru = st
		}
	}
	pr := &pageReader{dict: dict}
	st := &colState{descr: c.Descr, dict: dict, pr: pr, used: d.tick}
	st.cr = file.NewColumnReader(c.Descr, pr, d.opts.Mem, nil)
	if len(d.states) < maxColStates {
		d.states = append(d.states, st)
	} else {
		for i, s := range d.states {
			if s == lru {
				s.pr.Close()
				d.states[i] = st
			}
		}
	}
	if d.opts.MaxStateDictBytes > 0 {
		d.boundStates(st)
	}
	return st
}

// boundStates drops the least recently used column readers but keep until
// the dictionaries the others hold fit MaxStateDictBytes.
func (d *Decoder) boundStates(keep *colState) {
	for {
		var total int64
		var lru *colState
		for _, st := range d.states {
			if st.dict != nil {
				total += int64(st.dict.Bytes())
			}
			if st != keep && st.dict != nil && (lru == nil || st.used < lru.used) {
				lru = st
			}
		}
		if total <= d.opts.MaxStateDictBytes || lru == nil {
			return
		}
		d.dropState(lru)
	}
}

// dropState forgets a column reader whose state an error may have left
// inconsistent.
func (d *Decoder) dropState(st *colState) {
	for i, s := range d.states {
		if s == st {
			s.pr.Close()
			d.states = append(d.states[:i], d.states[i+1:]...)
			return
		}
	}
}

// pageReader is our file.PageReader: it hands arrow-go's column reader the
// one page we armed, then reports the end of the chunk; arming another page
// lets the same column reader (and its dictionary decoder) go on.
type pageReader struct {
	next, cur file.Page
	dict      *Dictionary
}

func (p *pageReader) arm(pg file.Page) {
	if p.next != nil {
		p.next.Release()
	}
	p.next = pg
}

func (p *pageReader) SetMaxPageHeaderSize(int) {}
func (p *pageReader) Page() file.Page          { return p.cur }
func (p *pageReader) Err() error               { return nil }
func (p *pageReader) Next() bool {
	if p.cur != nil {
		p.cur.Release()
		p.cur = nil
	}
	if p.next == nil {
		return false
	}
	p.cur, p.next = p.next, nil
	return true
}
func (p *pageReader) Reset(parquet.BufferedReader, int64, compress.Compression, *file.CryptoContext) {
}
func (p *pageReader) GetDictionaryPage() (*file.DictionaryPage, error) {
	if p.dict == nil {
		return nil, nil
	}
	return file.NewDictionaryPage(memory.NewBufferBytes(p.dict.buf), p.dict.numValues, p.dict.encoding), nil
}
func (p *pageReader) SeekToPageWithRow(int64) error {
	return kindf(ErrUnsupported, "seek within a single page")
}
func (p *pageReader) Close() error {
	if p.cur != nil {
		p.cur.Release()
		p.cur = nil
	}
	if p.next != nil {
		p.next.Release()
		p.next = nil
	}
	return nil
}

// recoverCorrupt turns a panic inside arrow-go into an ErrCorrupt error.
func recoverCorrupt(err *error) {
	if r := recover(); r != nil {
		if re, ok := r.(runtime.Error); ok && strings.Contains(re.Error(), "out of memory") {
			panic(r)
		}
		*err = kindf(ErrCorrupt, "decoder panicked: %v", r)
	}
}

// loadBytes parses and checks the page in pageBytes and decompresses it
// into span buffer k; it returns the header and the uncompressed page
// (levels and values, as on disk for V2 pages).
func (d *Decoder) loadBytes(c *Chunk, dict *Dictionary, k int, pageBytes []byte) (h PageHeader, page []byte, err error) {
	h, body, err := d.parseBody(c, dict, pageBytes)
	if err != nil {
		return h, nil, err
	}
	page, err = d.expandSpan(c, k, &h, body)
	return h, page, err
}

// parseBody parses and checks a data page's header and returns it with the
// page's body as stored (compressed, CRC checked).
func (d *Decoder) parseBody(c *Chunk, dict *Dictionary, pageBytes []byte) (h PageHeader, body []byte, err error) {
	h, n, err := ParsePageHeader(pageBytes)
	if err != nil {
		return h, nil, err
	}
	switch h.Type {
	case DataPage:
		if !h.Data.Set {
			return h, nil, kindf(ErrCorrupt, "data page without data_page_header")
		}
	case DataPageV2:
		if !h.V2.Set {
			return h, nil, kindf(ErrCorrupt, "data page v2 without data_page_header_v2")
		}
	case DictionaryPage:
		return h, nil, kindf(ErrCorrupt, "dictionary page where a data page was expected (decode it with Decoder.Dictionary)")
	case IndexPage:
		return h, nil, kindf(ErrUnsupported, "index page")
	default:
		return h, nil, kindf(ErrCorrupt, "unknown page type %d", int32(h.Type))
	}
	nv := h.NumValues()
	if nv < 0 {
		return h, nil, kindf(ErrCorrupt, "negative value count %d", nv)
	}
	if int(nv) > d.opts.MaxPageValues {
		return h, nil, kindf(ErrPageTooLarge, "page claims %d values; limit %d", nv, d.opts.MaxPageValues)
	}
	d.noteNeed(int(nv), int(h.UncompressedSize))
	body, err = d.checkBody(&h, pageBytes[n:])
	if err != nil {
		return h, nil, err
	}
	enc := parquet.Encoding(h.Data.Encoding)
	if h.Type == DataPageV2 {
		enc = parquet.Encoding(h.V2.Encoding)
	}
	if err := checkEncoding(c, enc, dict); err != nil {
		return h, nil, err
	}
	return h, body, nil
}

// expandSpan expands body into span buffer k and returns the page.
func (d *Decoder) expandSpan(c *Chunk, k int, h *PageHeader, body []byte) ([]byte, error) {
	dst := d.spanBytes(k, int(h.UncompressedSize))
	if err := d.expand(c, h, body, dst); err != nil {
		return nil, err
	}
	return dst, nil
}

// storedPlain returns the page itself when body is it, uncompressed and
// complete (levels and values as expand would give them), else nil.
func storedPlain(c *Chunk, h *PageHeader, body []byte) []byte {
	if len(body) != int(h.UncompressedSize) {
		return nil
	}
	if h.Type == DataPage {
		if c.Codec != compress.Codecs.Uncompressed {
			return nil
		}
		return body
	}
	v2 := &h.V2
	lv := int64(v2.DefLevelsLen) + int64(v2.RepLevelsLen)
	if v2.DefLevelsLen < 0 || v2.RepLevelsLen < 0 || lv > int64(len(body)) || v2.NumNulls < 0 || v2.NumRows < 0 {
		return nil
	}
	if v2.IsCompressed && c.Codec != compress.Codecs.Uncompressed && int(lv) != len(body) {
		return nil
	}
	return body
}

// expand fills dst (len h.UncompressedSize) with the page: body
// decompressed, V2 levels copied.
func (d *Decoder) expand(c *Chunk, h *PageHeader, body, dst []byte) error {
	size := len(dst)
	if h.Type == DataPage {
		if size == 0 && len(body) == 0 {
			// an empty page: nothing to decompress
		} else if err := d.dec.decompress(c.Codec, dst, body); err != nil {
			return decompressErr(c.Codec, err)
		}
		return nil
	}
	v2 := &h.V2
	lv := int64(v2.DefLevelsLen) + int64(v2.RepLevelsLen)
	if v2.DefLevelsLen < 0 || v2.RepLevelsLen < 0 || lv > int64(len(body)) || lv > int64(size) {
		return kindf(ErrCorrupt, "data page v2 level lengths %d+%d exceed the page", v2.RepLevelsLen, v2.DefLevelsLen)
	}
	if v2.NumNulls < 0 || v2.NumRows < 0 {
		return kindf(ErrCorrupt, "data page v2 with negative null or row count")
	}
	copy(dst, body[:lv])
	if int64(size) == lv {
		// No values (all null, or an empty page): writers may leave a
		// zero-byte body that is not a valid stream for the codec, or a
		// valid stream of nothing; there is nothing to decompress either way.
	} else if v2.IsCompressed && c.Codec != compress.Codecs.Uncompressed {
		if err := d.dec.decompress(c.Codec, dst[lv:], body[lv:]); err != nil {
			return decompressErr(c.Codec, err)
		}
	} else if len(body) != size {
		return kindf(ErrCorrupt, "uncompressed data page v2 body is %d bytes, header says %d", len(body), size)
	} else {
		copy(dst[lv:], body[lv:])
	}
	return nil
}

// arm hands the page loaded into span buffer k to st's arrow-go column
// reader.
func (d *Decoder) arm(st *colState, k int, h *PageHeader, page []byte) {
	sb := &d.spans[k]
	sb.buf.Reset(page)
	if h.Type == DataPage {
		st.pr.arm(file.NewDataPageV1WithConfig(&sb.buf, parquet.Encoding(h.Data.DefEncoding), parquet.Encoding(h.Data.RepEncoding),
			file.DataPageConfig{Num: h.Data.NumValues, Encoding: parquet.Encoding(h.Data.Encoding), UncompressedSize: h.UncompressedSize, FirstRowIndex: -1}))
		return
	}
	v2 := &h.V2
	st.pr.arm(file.NewDataPageV2WithConfig(&sb.buf, v2.NumNulls, v2.NumRows, v2.DefLevelsLen, v2.RepLevelsLen, false,
		file.DataPageConfig{Num: v2.NumValues, Encoding: parquet.Encoding(v2.Encoding), UncompressedSize: h.UncompressedSize, FirstRowIndex: -1}))
}

// checkEncoding refuses encodings arrow-go cannot read for this column with
// ErrUnsupported, before arrow-go fails on them less clearly.
func checkEncoding(c *Chunk, enc parquet.Encoding, dict *Dictionary) error {
	switch enc {
	case parquet.Encodings.Plain:
		return nil
	case parquet.Encodings.PlainDict, parquet.Encodings.RLEDict:
		if dict == nil {
			return kindf(ErrCorrupt, "dictionary-encoded page but no dictionary (pass the chunk's Dictionary)")
		}
		if dict.chunk != nil && dict.chunk.Descr != nil && c.Descr != nil && dict.chunk.Descr.Path() != c.Descr.Path() {
			return kindf(ErrCorrupt, "dictionary of column %s used for column %s", dict.chunk.Descr.Path(), c.Descr.Path())
		}
		return nil
	case parquet.Encodings.RLE:
		if c.Descr.PhysicalType() == parquet.Types.Boolean {
			return nil
		}
	case parquet.Encodings.DeltaBinaryPacked:
		switch c.Descr.PhysicalType() {
		case parquet.Types.Int32, parquet.Types.Int64:
			return nil
		}
	case parquet.Encodings.DeltaLengthByteArray:
		if c.Descr.PhysicalType() == parquet.Types.ByteArray {
			return nil
		}
	case parquet.Encodings.DeltaByteArray:
		switch c.Descr.PhysicalType() {
		case parquet.Types.ByteArray, parquet.Types.FixedLenByteArray:
			return nil
		}
	case parquet.Encodings.ByteStreamSplit:
		switch c.Descr.PhysicalType() {
		case parquet.Types.Float, parquet.Types.Double, parquet.Types.Int32, parquet.Types.Int64, parquet.Types.FixedLenByteArray:
			return nil
		}
	}
	if !knownEncoding(enc) {
		return kindf(ErrCorrupt, "encoding %s is not a Parquet encoding", encName(enc))
	}
	return kindf(ErrUnsupported, "encoding %s for %s column", encName(enc), c.Descr.PhysicalType())
}

// knownEncoding reports whether e is an encoding the Parquet format
// defines: any other value is a corrupt header, not an unsupported page.
func knownEncoding(e parquet.Encoding) bool { return e >= 0 && e <= 9 && e != 1 }

func encName(e parquet.Encoding) string {
	if e >= 0 && e <= 9 {
		return e.String()
	}
	return fmt.Sprintf("Encoding(%d)", int32(e))
}

// spanBytes returns size bytes of span buffer k.
func (d *Decoder) spanBytes(k, size int) []byte {
	for len(d.spans) <= k {
		d.spans = append(d.spans, spanBuf{})
	}
	sb := &d.spans[k]
	if cap(sb.b) < size {
		sb.b = make([]byte, size, size+size/4)
	}
	return sb.b[:size]
}
