// Package index is pagefeed's global page index over a set of Parquet files.
//
// Build reads each file's footer and, per projected column chunk, either its
// OffsetIndex or (without one) its page headers, with batched reads through a
// BatchReader. The result numbers the pages of every projected column
// globally, [0, NumPages(k)), in file order, then row group order, then page
// order, and maps a global page number to its location with a layered binary
// search (file, then column chunk, then page: YOUMU's lookup) in O(log n)
// with no allocation.
//
// Memory: pages are kept as a struct of arrays, 12 bytes each (offset within
// the chunk, size, first row within the chunk); files and chunks keep prefix
// sums separately. A column chunk must be smaller than 4 GiB and hold fewer
// than 2^32-1 rows (ErrUnsupported otherwise).
//
// Reads go through the caller's engine.BatchReader (Options.Reader): the
// engine package owns every byte-range read, and Build never starts an
// engine; without a reader it reads with an engine.PreadReader.
// All footers are read in one batch, then all offset indexes (nearby ones
// of a file coalesced), then header-walk rounds that read every walked
// chunk's next headers at once.
//
// Row counts: every page's rows (those that start in it) are known: from
// its chunk's offset index; else, walking the headers, from a V2 page's
// num_rows or a V1 page's num_values (columns without repetition); else
// (V1 pages of repeated columns, which may split rows) from the page's
// repetition levels, decoded once and kept in the sidecar (Stats.
// CountedPages; Loc.StartsMidRow and EndsMidRow say where rows cross
// pages). Header counts that do not add up to the row group's rows are
// not trusted: the pages are counted instead. A chunk whose pages do not
// decode, or whose counted rows still fall short, is corrupt: it is
// indexed with a notice, the missing rows given to its first bad page so
// that reading that page fails (the loader's SkipBadPages may skip it);
// pages that start more rows than their row group fail Build. An offset index that does not parse or contradicts
// itself is ignored for its chunk, whose headers are walked instead
// (FromBadOffsetIndex, Stats.OffsetIndexIgnored, a notice per file).
//
// An Index is immutable after Build and safe for concurrent use.
//
// Build persists the index in a sidecar file keyed by every file's path,
// size, modification time and footer hash and by the projection, with a
// CRC-32C; a sidecar that is stale, corrupt or of another version is
// rebuilt and rewritten, never trusted, and Options.Logf says why. It is
// read only as a regular file (no symbolic link, FIFO or device) of a size
// the dataset could need, and kept next to the dataset, or in the user's
// cache directory when the dataset's directory is not writable.
//
// Columns are logical: a leaf is named by its path of field names with
// the groups that only wrap a list's elements or a map's entries left out
// (input_ids for input_ids.list.element, input_ids.list.item, a two-level
// or a bare repeated list alike; attrs.key for a map's keys), after the
// Parquet format's LIST and MAP backward-compatibility rules; a projected
// name is a logical path, a field above some, or any file's leaf path
// (Index.Lookup). A footer whose LIST or MAP group does not hold one is
// corrupt. Files may declare the projected columns differently (wrapper
// names, REQUIRED or OPTIONAL, logical annotations, field order;
// dictionary or plain and V1 or V2 pages are per page anyway): the index
// keeps one descriptor per distinct declaration and gives each chunk its
// own file's (ChunkInfo.Descr). Files whose columns cannot be delivered
// together (another physical type or fixed length; another nesting: a
// list in one, a scalar in another) fail Build with an error naming both
// files and both logical types.
package index

import (
	"time"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Source tells where a column chunk's page locations came from.
type Source uint8

const (
	FromOffsetIndex Source = iota // the chunk's OffsetIndex
	FromHeaderWalk                // walking its page headers (it has no offset index)
	// FromBadOffsetIndex: walking its page headers, because its offset
	// index does not parse or contradicts itself (locations overlapping,
	// out of order or outside the chunk; first rows not rising from 0
	// within the row group), and is not trusted.
	FromBadOffsetIndex
)

func (s Source) String() string {
	switch s {
	case FromHeaderWalk:
		return "header_walk"
	case FromBadOffsetIndex:
		return "header_walk_bad_offset_index"
	}
	return "offset_index"
}

// count adds a chunk located from s to the stats.
func (st *Stats) count(s Source) {
	switch s {
	case FromOffsetIndex:
		st.OffsetIndex++
	case FromBadOffsetIndex:
		st.OffsetIndexIgnored++
		st.HeaderWalk++
	default:
		st.HeaderWalk++
	}
}

// FileInfo describes one indexed file.
type FileInfo struct {
	Path         string
	Size         int64
	ModTime      time.Time
	NumRows      int64
	NumRowGroups int
	FirstRow     int64 // global row number of the file's first row
	FirstChunk   int   // global chunk number of its first row group
	// FooterHash is the hash of the file's footer that the sidecar's
	// staleness check compares (FNV-1a 64 of its bytes): with Size, a
	// content identity that survives a copy or a move, unlike Path and
	// ModTime.
	FooterHash uint64
}

// ColumnInfo describes one projected column (a leaf of the schema).
//
// Files may differ in how they declare a column (REQUIRED or OPTIONAL,
// logical annotations, the leaf's position among other columns, the names
// of a list's or map's wrapper groups): Descr, Leaf and Type are the first
// file's. Decode a chunk with its own file's descriptor, ChunkInfo.Descr
// or Index.Descr(k, file): another file's levels and values are laid out
// by its own schema.
type ColumnInfo struct {
	// Path is the column's logical path, the same in every file:
	// "input_ids" for a list<int32> whatever its files call its element
	// ("input_ids.list.element", "input_ids.list.item", ...), "meta.lang"
	// for a struct's field, "attrs.key" and "attrs.value" for a map.
	Path  string
	Type  string         // logical type in the first file, e.g. "list<int32>"
	Descr *schema.Column // arrow-go's descriptor in the first file
	Leaf  int            // leaf index in the first file's schema
}

// Loc is the location of one page.
//
// FirstRow and NumRows count the rows that start in the page, as an offset
// index does. Pages begin on row boundaries except V1 pages of repeated
// columns written without an offset index, which may split a row: such a
// page StartsMidRow (its first levels finish the row the page before
// began; they are not among its NumRows, and a page inside one long row
// has NumRows 0 and the FirstRow of the next row to start), and the page
// before it EndsMidRow (its last row is whole only with the levels of the
// pages after it: decode it with them, codec.Decoder.DecodeSpan).
type Loc struct {
	File     int   // file number, for File
	RowGroup int   // row group within the file
	Chunk    int   // global chunk number, for Chunk
	Offset   int64 // of the page header in the file
	Size     int32 // header and compressed body
	FirstRow int64 // row within the file of the first row that starts in the page
	NumRows  int32 // rows that start in this page
	// StartsMidRow: the page's first levels continue a row that an earlier
	// page of the chunk began. Never set on a chunk's first page.
	StartsMidRow bool
	// EndsMidRow: the page's last row goes on in the next page of the
	// chunk (which StartsMidRow).
	EndsMidRow bool
}

// ChunkInfo describes one column chunk of a projected column. Chunk numbers
// are global row-group numbers and are shared by all projected columns.
type ChunkInfo struct {
	File       int
	RowGroup   int
	Codec      compress.Compression
	DictOffset int64 // dictionary page (header and body); 0 if none
	DictSize   int32 // 0 if none
	FirstPage  int   // global number of its first page
	NumPages   int
	FirstRow   int64 // global row number
	NumRows    int64
	Source     Source
	// Descr is the column's descriptor in this chunk's file, to decode
	// the chunk with (files of one dataset may declare a column
	// differently; see ColumnInfo).
	Descr *schema.Column
}

// Stats summarises an Index and how it was built.
type Stats struct {
	Files        int
	RowGroups    int // also the column chunks per projected column
	ColumnChunks int // RowGroups × projected columns
	Pages        int64
	Rows         int64
	OffsetIndex  int // column chunks located from their OffsetIndex
	HeaderWalk   int // column chunks located by walking page headers
	// OffsetIndexIgnored counts the chunks among HeaderWalk whose offset
	// index was there but ignored (FromBadOffsetIndex).
	OffsetIndexIgnored int
	// CountedPages counts the pages whose row counts this build took from
	// their repetition levels (V1 pages of repeated columns without a
	// trusted offset index), and CountedBytes the bytes it read again for
	// them (pages the header walk's reads already held cost none). A
	// sidecar keeps the counts: 0 on a hit.
	CountedPages  int64
	CountedBytes  int64
	ResidentBytes int64
	BuildTime     time.Duration
	// Sidecar is "hit" (loaded), "written" (none was there; built and
	// written), "rebuilt" (one was there but stale or corrupt; rebuilt and
	// rewritten) or "miss" (built, no sidecar written: NoSidecar, or the
	// write failed and Logf says why).
	Sidecar     string
	SidecarPath string
	// Reused counts the files taken unchanged from a stale sidecar
	// ("rebuilt"): only the others were read again.
	Reused int
	// Schemas counts the distinct declarations of the projected columns
	// among the files (1 when every file declares them alike).
	Schemas int
}

// rgInfo is one row group of one file: a global chunk number.
type rgInfo struct {
	file        int32
	rg          int32
	firstRow    int64 // global
	numRows     int64
	fileRowBase int64 // first row within its file
}

// chunkMeta is per (column, chunk) data.
type chunkMeta struct {
	base     int64 // page offsets are relative to it
	dictOff  int64
	dictSize int32
	codec    compress.Compression
	source   Source
}

// schemaSet is one distinct declaration of the projected columns: the
// descriptors of the first file that declares them so, shared by every
// file that declares them alike, so that decoders keep one plan per
// declaration rather than one per file.
type schemaSet struct {
	descr  []*schema.Column // per projected column
	leaves []int            // leaf index in that file's schema
	shapes []string         // nesting (logicalLeaf.shape)
	types  []string         // logical types, for messages
}

type column struct {
	info      ColumnInfo
	filePage  []int64 // len files+1: prefix sums of pages per file
	chunkPage []int64 // len chunks+1: prefix sums of pages per chunk
	chunks    []chunkMeta
	// pages, struct of arrays
	off  []uint32 // relative to chunks[c].base
	size []uint32
	row  []uint32 // first row (that starts in the page) within the chunk
	// mid has bit g set where page g StartsMidRow; nil when no page does
	// (every page of most files begins a row).
	mid []uint64
}

// midRow reports whether page g starts inside a row.
func (c *column) midRow(g int64) bool {
	return c.mid != nil && c.mid[g>>6]&(1<<(g&63)) != 0
}

// setMid marks page g as starting inside a row.
func (c *column) setMid(g int) {
	if c.mid == nil {
		c.mid = make([]uint64, (len(c.off)+63)/64)
	}
	c.mid[g>>6] |= 1 << (g & 63)
}

// Index is the global page index. Immutable and safe for concurrent use.
type Index struct {
	files   []FileInfo
	fileRG  []int32 // len files+1: file f's chunks are [fileRG[f], fileRG[f+1])
	rgs     []rgInfo
	cols    []column
	fileSch []int32     // per file: its entry in schemas
	schemas []schemaSet // distinct declarations, first file's first
	footSum []uint64    // per file: hash of its footer (sidecar staleness)
	footLen []uint32    // per file: its footer's length (sidecar loads)
	columns []string    // the projection as requested (sidecar key)
	walk    bool        // built with Options.HeaderWalk (sidecar key)
	stats   Stats
}

// NumFiles returns the number of indexed files.
func (ix *Index) NumFiles() int { return len(ix.files) }

// File returns file i's description.
func (ix *Index) File(i int) FileInfo {
	f := ix.files[i]
	if i < len(ix.footSum) {
		f.FooterHash = ix.footSum[i]
	}
	return f
}

// NumColumns returns the number of projected columns.
func (ix *Index) NumColumns() int { return len(ix.cols) }

// Column returns projected column k.
func (ix *Index) Column(k int) ColumnInfo { return ix.cols[k].info }

// Descr returns projected column k's descriptor in file f's schema: the one
// to decode f's chunks with.
func (ix *Index) Descr(k, f int) *schema.Column { return ix.schemas[ix.fileSch[f]].descr[k] }

// Leaf returns projected column k's leaf index in file f's schema.
func (ix *Index) Leaf(k, f int) int { return ix.schemas[ix.fileSch[f]].leaves[k] }

// Lookup returns the projected columns that name means, in index order:
// those whose logical path (ColumnInfo.Path) is name or lies under it
// (name followed by a dot), or whose leaf path in some file's schema
// (Descr.Path, e.g. "input_ids.list.item") is or lies under it. None when
// nothing matches.
func (ix *Index) Lookup(name string) []int {
	var out []int
	for k := range ix.cols {
		hit := matchesColumn(name, ix.cols[k].info.Path, "")
		for _, s := range ix.schemas {
			hit = hit || matchesColumn(name, "", s.descr[k].Path())
		}
		if hit {
			out = append(out, k)
		}
	}
	return out
}

// NumChunks returns the number of column chunks per projected column (the
// number of row groups of all files).
func (ix *Index) NumChunks() int { return len(ix.rgs) }

// NumRows returns the total number of rows.
func (ix *Index) NumRows() int64 { return ix.stats.Rows }

// NumPages returns the number of data pages of projected column k.
func (ix *Index) NumPages(k int) int {
	c := &ix.cols[k]
	return int(c.chunkPage[len(c.chunkPage)-1])
}

// Chunk describes chunk c of projected column k.
func (ix *Index) Chunk(k, c int) ChunkInfo {
	col := &ix.cols[k]
	m := &col.chunks[c]
	rg := &ix.rgs[c]
	return ChunkInfo{
		File:       int(rg.file),
		RowGroup:   int(rg.rg),
		Codec:      m.codec,
		DictOffset: m.dictOff,
		DictSize:   m.dictSize,
		FirstPage:  int(col.chunkPage[c]),
		NumPages:   int(col.chunkPage[c+1] - col.chunkPage[c]),
		FirstRow:   rg.firstRow,
		NumRows:    rg.numRows,
		Source:     m.source,
		Descr:      ix.descr(k, int(rg.file)),
	}
}

// descr is Descr, or nil before the descriptors are attached (a sidecar
// just decoded).
func (ix *Index) descr(k, f int) *schema.Column {
	if f >= len(ix.fileSch) || int(ix.fileSch[f]) >= len(ix.schemas) {
		return nil
	}
	return ix.schemas[ix.fileSch[f]].descr[k]
}

// upper returns the largest i in [lo, hi) with a[i] <= v, given a sorted
// and a[lo] <= v.
func upper(a []int64, lo, hi int, v int64) int {
	for hi-lo > 1 {
		m := int(uint(lo+hi) >> 1)
		if a[m] <= v {
			lo = m
		} else {
			hi = m
		}
	}
	return lo
}

// Locate returns the location of global page g of projected column k. It
// panics, like a slice index, when k or g is out of range. It does not
// allocate.
func (ix *Index) Locate(k int, g int) Loc {
	col := &ix.cols[k]
	gg := int64(g)
	if g < 0 || gg >= col.chunkPage[len(col.chunkPage)-1] {
		panic("index: page number out of range")
	}
	f := upper(col.filePage, 0, len(ix.files), gg)
	c := upper(col.chunkPage, int(ix.fileRG[f]), int(ix.fileRG[f+1]), gg)
	rg := &ix.rgs[c]
	r := int64(col.row[g])
	end := rg.numRows
	next := gg+1 < col.chunkPage[c+1]
	if next {
		end = int64(col.row[g+1])
	}
	return Loc{
		File:         f,
		RowGroup:     int(rg.rg),
		Chunk:        c,
		Offset:       col.chunks[c].base + int64(col.off[g]),
		Size:         int32(col.size[g]),
		FirstRow:     rg.fileRowBase + r,
		NumRows:      int32(end - r),
		StartsMidRow: col.midRow(gg),
		EndsMidRow:   next && col.midRow(gg+1),
	}
}

// ResidentBytes returns the memory the index holds, in bytes.
func (ix *Index) ResidentBytes() int64 {
	n := int64(len(ix.files))*(8*8+4+8+4) + int64(len(ix.fileRG))*4 + int64(len(ix.rgs))*40
	for _, s := range ix.schemas {
		n += int64(len(s.descr)) * 16 // the descriptors' trees are arrow-go's
	}
	for i := range ix.cols {
		c := &ix.cols[i]
		n += int64(len(c.filePage)+len(c.chunkPage))*8 + int64(len(c.chunks))*32
		n += int64(len(c.off)+len(c.size)+len(c.row))*4 + int64(len(c.mid))*8
	}
	for _, f := range ix.files {
		n += int64(len(f.Path))
	}
	return n
}

// Stats reports counts and how the index was built.
func (ix *Index) Stats() Stats { return ix.stats }

// PageRows returns the rows that start in each page of projected column
// k (Loc.NumRows of every page), in one pass.
func (ix *Index) PageRows(k int) []int32 {
	col := &ix.cols[k]
	out := make([]int32, col.chunkPage[len(col.chunkPage)-1])
	for c := range ix.rgs {
		lo, hi := col.chunkPage[c], col.chunkPage[c+1]
		for g := lo; g < hi; g++ {
			end := ix.rgs[c].numRows
			if g+1 < hi {
				end = int64(col.row[g+1])
			}
			out[g] = int32(end - int64(col.row[g]))
		}
	}
	return out
}

// SplitsRows reports whether any page of projected column k starts inside
// a row (Loc.StartsMidRow): whether a reader of whole rows must ever
// decode a page together with the next.
func (ix *Index) SplitsRows(k int) bool { return ix.cols[k].mid != nil }

// PageSizes returns the size (header and body) of each page of projected
// column k, in one pass.
func (ix *Index) PageSizes(k int) []uint32 { return append([]uint32(nil), ix.cols[k].size...) }
