package rinas

import "math"

// defaultBufferPages is the default shuffle buffer's size in pages: it
// holds about the rows of this many pages of mean row count. A batch is
// drawn from the rows of every page in the buffer, so its mix follows
// the pages the buffer spans, not its rows. The pages of one fetch batch
// (BatchPages, 64) land in completion order, often the order of their
// offsets, so a buffer of one batch's rows still leans towards
// neighbouring pages. On the shuffle-quality experiment
// (docs/shuffle-quality.md, 1 KiB pages of ~16 rows, five seeds, two
// runs each) the last-quarter validation loss ends 4% above row
// shuffle's with 64 pages, 1–2% with 128, within 1% with 256; the final
// loss, noisier, up to 8% above it with 128 on three seeds, within 1%
// with 256. The first batch of an epoch waits for these pages to land.
const defaultBufferPages = 256

// bufferRowOverhead is what the bookkeeping of one buffered row is
// counted at: its rowItem in the buffer and once more in the row queue
// or a batch record, and at most its page's rowPage (a page of one
// row). It is a fixed number above that sum (TestBufferRowOverhead), so
// that the default buffer, and the order it gives, do not move with the
// structs' layout.
const bufferRowOverhead = 160

// Shares of Config.MemoryLimit the default buffer may take: at most
// 1/bufferLimitShare of the limit (256 MiB of the default 1 GiB), and at
// most 1/bufferLeftShare of
// what the parts sized before it (read slots, decoded window, token
// buffers, side cache) leave, so that the dictionaries keep the rest.
// The first bound depends on the Config alone, so the buffer (and the
// order it gives) is the same on any machine unless memory is tight.
const (
	bufferLimitShare = 4
	bufferLeftShare  = 2
)

// bufferFacts are the inputs of the shuffle buffer's default: the
// Config's settings and what Open knows of the dataset and the memory,
// each explicit so the policy is a pure function of them.
type bufferFacts struct {
	// Shuffle, BatchRows and BufferRows are the filled Config's
	// (BufferRows: > 0 as set, 0 the default, < 0 off).
	Shuffle    Shuffle
	BatchRows  int
	BufferRows int
	// RowsPerPage is the mean rows per page of the lead column (the
	// dataset's rows over its pages); Rows the dataset's rows: a buffer
	// larger than the dataset buffers nothing more.
	RowsPerPage float64
	Rows        int64
	// RowBytes is what one buffered row costs against MemoryLimit
	// (bufferRowBytes).
	RowBytes int64
	// Limit is Config.MemoryLimit and Need what the parts sized before
	// the buffer take of it.
	Limit, Need int64
	// Share, in (0, 1), is a mixture source's share of every batch's
	// rows; 0 outside a mixture (the whole batch).
	Share float64
}

// bufferRowBytes is the memory one buffered row is counted at: its
// share of the decoded pages the buffer keeps alive, pageBytes being
// the lead column's decoded page and sideMean the other columns' bytes
// per unit in lead pages, plus its bookkeeping.
//
// A buffered row keeps its page's decoded arrays alive, so a page lives
// until its last row leaves. Rows leave a full buffer of B rows at
// random, each with chance 1/B per row out, so the last of a page's R
// rows leaves after about B·H(R) rows out (H the harmonic number), while
// R rows come in per page: a buffer of W pages' rows keeps about W·H(R)
// pages alive, not W (pinFactor).
func bufferRowBytes(pageBytes int, sideMean, rowsPerPage float64) int64 {
	r := max(rowsPerPage, 1)
	page := float64(max(pageBytes, 0)) * (1 + max(sideMean, 0))
	return int64(math.Ceil(page*pinFactor(r)/r)) + bufferRowOverhead
}

// pinFactor is about H(r), the r-th harmonic number (ln r + γ + 1/2r),
// at least 1 and at most r: how many pages' worth of decoded memory a
// full shuffle buffer keeps alive per page of rows it holds, for pages
// of r rows (bufferRowBytes).
func pinFactor(r float64) float64 {
	if r <= 1 {
		return 1
	}
	const euler = 0.5772156649015329
	return min(max(math.Log(r)+euler+1/(2*r), 1), r)
}

// defaultBufferRows resolves Config.BufferRows: a positive value as
// set, a negative one off (0), and 0 by the default policy: page
// shuffle with row batches buffers the rows of defaultBufferPages
// pages of mean row count (a mixture source: its share of them, at least
// one page's), at most the dataset's rows, and within its
// share of MemoryLimit (bufferLimitShare, bufferLeftShare); every other
// shuffle, and page batches, buffer nothing (stream's default is set by
// fill).
//
// Without a buffer a row batch is consecutive rows of one or two pages,
// and a dataset stored in any order (by source, date, length, topic)
// trains on batches far from its mix. Page batches are BatchPages whole
// pages drawn at random, so they mix as many pages as the buffer would;
// row and row-group shuffles mix rows themselves.
func defaultBufferRows(f bufferFacts) int {
	switch {
	case f.BufferRows > 0:
		return f.BufferRows
	case f.BufferRows < 0, f.Shuffle != ShufflePage, f.BatchRows <= 0, f.Rows <= 0:
		return 0
	}
	pages := float64(defaultBufferPages)
	if f.Share > 0 && f.Share < 1 {
		// A mixture source gives its share of each batch: a buffer of
		// that share of the pages mixes its rows of a batch over as many
		// pages per row as one dataset's buffer does, and the sources'
		// buffers together hold what one dataset's would: full-size
		// buffers hold a row as many times longer as there are sources,
		// and the batch gathers it from a page long out of the CPU's
		// caches.
		pages = max(pages*f.Share, 1)
	}
	rows := math.Ceil(pages * max(f.RowsPerPage, 1))
	rows = min(rows, float64(f.Rows))
	budget := min(f.Limit/bufferLimitShare, max(f.Limit-f.Need, 0)/bufferLeftShare)
	rows = min(rows, float64(budget/max(f.RowBytes, bufferRowOverhead)))
	return int(rows)
}

// BufferRows returns the shuffle buffer's capacity in rows (0: none):
// Config.BufferRows, or the one Open chose when it was 0.
func (l *Loader) BufferRows() int { return max(l.cfg.BufferRows, 0) }

// planBuffer resolves the shuffle buffer for planMemory: its capacity
// and the bytes it is counted at (the default's only: a buffer set in
// the Config is sized by its caller). decoded is the decoded page size
// the window counts (0 unknown: the largest stored page stands in);
// need is what the parts sized before it take.
func planBuffer(cfg Config, s indexSummary, decoded int, need int64) (rows int, bytes int64) {
	page := decoded
	if page <= 0 {
		page = s.maxPage
	}
	f := bufferFacts{
		Shuffle: cfg.Shuffle, BatchRows: cfg.BatchRows, BufferRows: cfg.BufferRows,
		RowsPerPage: s.rowsPerPage, Rows: s.rows,
		RowBytes: bufferRowBytes(page, s.sideMean, s.rowsPerPage),
		Limit:    cfg.MemoryLimit, Need: need, Share: cfg.mixShare,
	}
	rows = defaultBufferRows(f)
	if cfg.BufferRows != 0 {
		return rows, 0
	}
	return rows, int64(rows) * f.RowBytes
}
