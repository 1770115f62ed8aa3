package rinas

import (
	"fmt"
	"math"
	"strings"

	"github.com/pagefeed/pagefeed/engine"
)

// Sizing follows the dataset. Open gathers the facts below from the index
// (indexSummary) and planSizing, a pure function of them and the Config,
// decides everything Open allocates:
//
//   - A fetch batch holds at most the units one rank's share of an epoch
//     has (a dataset of five pages reads five, not BatchPages), and the
//     read-ahead never exceeds the batches the run has.
//   - Memory is counted part by part: read slots (workers × slots × the
//     largest page as stored), decoded pages of the fetch window (every
//     page counted at the largest decoded size sampled), token buffers,
//     the side cache, the rows taken in and not yet delivered (row
//     batches: the units whose rows wait, and the shuffle buffer), the row
//     batches a consumer holds, and room for the largest dictionary.
//   - What does not fit MemoryLimit shrinks before anything is refused,
//     in this order, each only where its setting was left to Open: the
//     read-ahead (down to one batch in flight), then the batch (BatchPages
//     left 0: fewer pages per fetch batch, so page batches carry fewer
//     pages and Len counts more of them), then the side cache. ErrMemory
//     is left for a configuration whose one batch cannot fit, and names
//     what to raise or lower and to what.
//   - The fetch window holds a file open per unit, so where the dataset
//     has more files than the loader may keep open (half the soft
//     RLIMIT_NOFILE: engine.OpenFileBudget(2), less what the synchronous
//     readers hold), the window's units are bounded by that budget too,
//     shrinking the same way, or ErrConfig. The other half is the
//     application's, the engine's rings' and the index build's (a
//     quarter: engine.OpenFileBudget(4)). Idle files stay open up to
//     maxIdleFiles beyond the window, closed least recently used first.
//
// Rows taken in and not yet delivered (row batches) keep their decoded
// pages alive. The shuffle buffer's accounting is bytes per buffered row
// (bufferRowBytes, bufsize.go: a row's share of its decoded page times
// about H(rows per page) for the pages a few buffered rows still pin, and
// its bookkeeping), for a buffer set in the Config and the default alike;
// the default is sized into what the other parts leave. At run time the
// row stream holds the rows taken in within these bytes, each row costing
// its page's estimated decoded bytes over its rows (rowmem.go): heavier
// rows than the mean make random rows leave the buffer early.

// indexSummary holds the facts the loader's sizing depends on, gathered
// by Open from the index, a few page headers and the process
// (Loader.summarize): everything planSizing needs, so the sizing rules
// are a pure function of the configuration and this summary.
type indexSummary struct {
	// maxPage is the largest page or dictionary of the projection, in
	// bytes as stored; compressed reports whether any chunk of the
	// projection is compressed; maxDict is the largest dictionary page
	// and maxDictFile its file.
	maxPage     int
	compressed  bool
	maxDict     int
	maxDictFile string
	// decodedPage is the largest decoded size among the sampled pages
	// of the lead column (compressed columns only; 0 unknown or not
	// sampled); sidePage the largest page of the other columns as
	// stored, sideDecoded the largest decoded size sampled of theirs, and
	// sideBytes all their pages' bytes decoded (estimated).
	decodedPage int
	sidePage    int
	sideDecoded int
	sideBytes   int64
	// unitMax is the most lead pages one unit reads; sides the number of
	// projected columns other than the lead; sideReads the most pages of
	// them one unit reads, sideMean their mean bytes in lead pages of mean
	// size, maxRun the longest run of one chunk's pages a unit reads in
	// bytes (see Loader.planReads).
	unitMax   int
	unitReqs  int // the most requests one unit issues, coalesced (0: one a page)
	sides     int
	sideReads int
	sideMean  float64
	maxRun    int
	// units is the number of units of an epoch (pages, rows or row groups
	// of the lead column); rowBytes the mean decoded bytes of one row of
	// the projection (0 unknown).
	units    uint64
	rowBytes float64
	// leadRatio is the lead column's sampled decoded bytes over its
	// stored bytes (1 uncompressed); sideRowBytes the other columns'
	// decoded bytes a row (Loader.rowCost).
	leadRatio    float64
	sideRowBytes float64
	// files is the number of files of the dataset; fdBudget how many the
	// loader may keep open (0: no bound).
	files    int
	fdBudget int
	// addrLeft is the address space the process may still map under
	// RLIMIT_AS (ulimit -v), 0 unlimited.
	addrLeft int64
	// orderedSpan is the longest byte range one unit of the lead column
	// spans, or any page or dictionary of the projection if longer
	// (ordered fetch only: the synchronous reader's buffer).
	orderedSpan int
	// procs is GOMAXPROCS; shared reports a Config.SharedEngine and
	// sharedWorkers its workers.
	procs         int
	shared        bool
	sharedWorkers int
	// cpus is the pinning plan's CPU set for this rank (nil: not pinned
	// or Engine.CPUSets given).
	cpus []int
	// rows is the dataset's rows, rowsPerPage their mean per lead page
	// (the default shuffle buffer's size: bufsize.go).
	rows        int64
	rowsPerPage float64
}

// sizing is everything Open allocates, as planSizing decides it.
type sizing struct {
	// engine is the engine's options: what Open starts, or (shared
	// engine) what the memory check counts the slots by.
	engine engine.Options
	// batchPages is the units of a fetch batch (Config.BatchPages, or
	// fewer: the share's units, or what fits); prefetch the read-ahead in
	// batches (Config.Prefetch or the automatic one); coalesce the most
	// bytes one coalesced read spans (0: off).
	batchPages int
	prefetch   int
	coalesce   int
	// unitReads is the most reads one unit makes (lead and other
	// columns); perBatch a batch's; inflight the reads in flight at most;
	// window the units' pages decoded and held at once (the fetch
	// batches'); decodedPage the bytes each lead page counts, sideDecoded
	// each page of another column, unitDecoded a unit's pages.
	unitReads   int
	unitReqs    int // the most requests one unit issues: its reads, coalesced
	perBatch    int
	inflight    int
	window      int
	decodedPage int
	sideDecoded int
	unitDecoded int64
	// fetchBatches is the number of fetch batches; tokenBufs the token
	// buffers (tokens output, else 0).
	fetchBatches int
	tokenBufs    int
	// decoders is the number of worker decoders: one per engine worker.
	// poolPerClass bounds the decoders' page pool per size class in
	// buffers; dictStateBytes the dictionary bytes each decoder's column
	// readers may keep.
	decoders       int
	poolPerClass   int
	dictStateBytes int64
	// directSpan is the synchronous reader's buffer (ordered fetch; 0
	// unordered); syncFiles the files the synchronous readers may hold
	// open; openFiles the file cache's bound.
	directSpan int
	syncFiles  int
	openFiles  int
	// shrunk says what Open lowered to fit MemoryLimit or the open-file
	// budget ("" nothing), for a notice; heapShare the Go heap the loader
	// may take (gomem.go).
	shrunk    string
	heapShare int64
	// pageCache is the row shuffle's page cache (rowcache.go), taken from
	// what the limit leaves, and pageCacheWant what it would hold to keep
	// the dataset's decoded pages; rowShuffle says it is used.
	pageCache, pageCacheWant int64
	rowShuffle               bool
	// bufferRows is the shuffle buffer's capacity (Config.BufferRows
	// resolved: defaultBufferRows).
	bufferRows int
	mem        memBreakdown
}

// memBreakdown is the memory Open sizes against Config.MemoryLimit.
type memBreakdown struct {
	slots   int64 // engine read slots: workers × slots per worker × slot size
	decoded int64 // decoded pages of the fetch window
	tokens  int64 // token buffers (tokens output)
	side    int64 // the side cache (Config.SideCacheBytes, several columns)
	// rows is what rows taken in and not delivered hold (row batches):
	// the pages of the units whose rows wait, and the shuffle buffer
	// (buffer of it); out the row batches the consumer may hold before
	// Next waits for a Release (arrow output with BatchRows).
	rows   int64
	buffer int64
	out    int64
	cache  int64 // the row shuffle's page cache
	// dictMin is the least the dictionaries need (room for the largest
	// one, in the cache and a decoder); dictLeft what the limit leaves
	// them: half the dictionary cache, half the decoders' dictionaries.
	dictMin  int64
	dictLeft int64
	limit    int64
}

// need is what the parts sized up front take.
func (m memBreakdown) need() int64 {
	return satAdd(m.slots, m.decoded, m.tokens, m.side, m.rows, m.out, m.cache)
}

// dictCache is the dictionary cache's byte bound.
func (m memBreakdown) dictCache() int64 { return m.dictLeft / 2 }

// unitOverhead is the bytes a fetch batch's unit takes besides its pages
// and per read (the slices of its reads): see fetch.go's unit.
const unitOverhead = 512

// addrReserve is the address space kept, under RLIMIT_AS, for what the
// Go runtime maps besides the loader's memory (heap arenas come 64 MiB at
// a time, with their metadata) and for thread stacks (8 MiB each where
// threads are made by pthreads): a Go heap that cannot grow ends the
// process, so the loader's memory must leave it room.
const addrReserve = 256 << 20

// addrNeed is the address space the loader's memory takes: its parts,
// with the decoded pages (of the window, rows held and the side cache) at
// the power-of-two size classes the decoders' page pool allocates them in
// (only the bytes written are resident, but the whole class is mapped),
// and the buffers a page being decoded grows through.
func (z *sizing) addrNeed() int64 {
	m := z.mem
	need := satAdd(m.need(), m.dictMin)
	if dp := int64(z.decodedPage); dp > 0 {
		class := int64(1)
		for class < dp && class < 1<<40 {
			class <<= 1
		}
		pages := satAdd(m.decoded, m.rows, m.side, m.cache)
		need = satAdd(need, int64(float64(pages)*float64(class-dp)/float64(dp)))
		// A page being decoded is built in buffers that grow by doubling:
		// up to twice its class more on each worker, until collected.
		need = satAdd(need, satMul(int64(2*max(z.engine.Workers, 1)), class))
	}
	return need
}

// addrFits reports whether the loader's memory fits the address space
// left under RLIMIT_AS (less addrReserve), where that is bounded.
func (z *sizing) addrFits(s indexSummary) bool {
	return s.addrLeft <= 0 || z.addrNeed() <= s.addrLeft-addrReserve
}

// satMul returns a×b, or math.MaxInt64 when that overflows (a, b ≥ 0).
func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// satAdd returns the sum, or math.MaxInt64 when it overflows (all ≥ 0).
func satAdd(xs ...int64) int64 {
	var s int64
	for _, x := range xs {
		if s > math.MaxInt64-x {
			return math.MaxInt64
		}
		s += x
	}
	return s
}

// coalescePlan returns the engine's slot size and the most bytes one
// coalesced read spans (0: off). Units that read several pages of one
// chunk (row groups, other columns) may coalesce them, up to
// Config.CoalesceBytes and coalesceSlotPages pages; a page and its
// continuation coalesce only where both fit a slot sized for one page:
// doubling every slot for them costs more memory than the read it saves
// is worth. A shared engine's slots are sized for pages.
func coalescePlan(cfg Config, s indexSummary) (slotSize, coalesce int) {
	slotSize = cfg.Engine.SlotSize
	several := cfg.Shuffle == ShuffleRowGroup || s.sides > 0
	if slotSize == 0 {
		payload := s.maxPage
		if several && cfg.CoalesceBytes > 0 {
			payload = max(s.maxPage, min(cfg.CoalesceBytes, coalesceSlotPages*s.maxPage, s.maxRun))
		}
		slotSize = payload + 8192 // room for alignment on both ends
	}
	if cfg.CoalesceBytes > 0 {
		coalesce = min(cfg.CoalesceBytes, slotSize-8192)
		if s.shared {
			coalesce = min(cfg.CoalesceBytes, s.maxPage)
		}
	}
	return slotSize, coalesce
}

// shareUnits is the most units one rank takes in an epoch (PadLast
// rounds up).
func shareUnits(s indexSummary, cfg Config) int64 {
	w := uint64(max(cfg.World, 1))
	return int64(min(max((s.units+w-1)/w, 1), math.MaxInt32))
}

// runBatches is the fetch batches of b units the whole run reads (at
// most math.MaxInt32).
func runBatches(s indexSummary, cfg Config, b int) int64 {
	per := (shareUnits(s, cfg) + int64(b) - 1) / int64(b)
	return min(satMul(per, int64(max(cfg.Epochs, 1))), math.MaxInt32)
}

// planSizing sizes the loader: the fetch batch, the engine's workers,
// queue depth and slots, the read-ahead, coalescing, the fetch batches,
// token buffers, decoders and dictionary budgets, all from the dataset's
// summary, shrinking what Open chooses until it fits Config.MemoryLimit
// and the open-file budget (see the rules at the top of this file). It
// reads nothing but its arguments. cfg is filled (Config.fill) and planned
// (row-group shuffle's BatchPages applied).
func planSizing(cfg Config, s indexSummary) (sizing, error) {
	var z sizing
	opts := cfg.Engine
	opts.SlotSize, z.coalesce = coalescePlan(cfg, s)
	z.unitReads = s.unitMax + s.sideReads
	z.unitReqs = z.unitReads
	if s.unitReqs > 0 {
		z.unitReqs = min(s.unitReqs, z.unitReads)
	}
	if opts.Workers == 0 {
		opts.Workers = defaultWorkers(s.compressed, s.procs)
	}
	if opts.Logf == nil {
		opts.Logf = cfg.Logf
	}
	if len(opts.CPUSets) == 0 && s.cpus != nil {
		opts.CPUSets = [][]int{s.cpus}
	}
	// Every page read ahead is decoded ahead and held until its batch is
	// recycled: compressed pages at the largest decoded size sampled,
	// stored ones at their size; pages of the other columns at theirs.
	z.decodedPage, z.sideDecoded = s.maxPage, s.sidePage
	if s.compressed {
		z.decodedPage = max(s.decodedPage, s.maxPage)
		z.sideDecoded = max(s.sideDecoded, s.sidePage)
	}
	z.unitDecoded = satAdd(satMul(int64(s.unitMax), int64(z.decodedPage)), satMul(int64(s.sideReads), int64(z.sideDecoded)))
	bp := int(min(int64(cfg.BatchPages), shareUnits(s, cfg)))
	prefetch := cfg.Prefetch
	if prefetch == 0 {
		// The window counts a batch's pages as lead pages of mean size:
		// other columns' pages are often far smaller.
		mean := int(math.Ceil(float64(bp) * (float64(s.unitMax) + s.sideMean)))
		decoded := 0
		if s.compressed {
			decoded = s.decodedPage
		}
		prefetch = autoPrefetch(mean, opts.SlotSize, decoded, s.compressed)
	}
	// Batches read ahead past the run's last are never filled.
	prefetch = int(min(int64(prefetch), runBatches(s, cfg, bp)-1))

	fits := func(p, b int) bool {
		z.layout(cfg, s, opts, p, b)
		return z.fits(cfg, s)
	}
	var shrunk []string
	if !fits(prefetch, bp) && cfg.Prefetch == 0 {
		for prefetch > 0 && !fits(prefetch, bp) {
			prefetch--
		}
		shrunk = append(shrunk, fmt.Sprintf("prefetch %d", prefetch))
	}
	if !fits(prefetch, bp) && cfg.batchAuto && bp > 1 {
		lo, hi := 1, bp // the largest batch that fits, if any
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if fits(prefetch, mid) {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		bp = lo
		shrunk = append(shrunk, fmt.Sprintf("batches of %d units", bp))
	}
	if !fits(prefetch, bp) {
		return z, z.refuse(cfg, s, opts, prefetch, bp)
	}
	z.shrunk = strings.Join(shrunk, ", ")
	z.layout(cfg, s, opts, prefetch, bp)
	z.planDicts(s)
	z.openFiles = z.fileCacheSize(s)
	// The Go heap's share (see gomem.go): the limit less what is mapped
	// outside the heap, and no more than the address space leaves.
	room := cfg.MemoryLimit
	if s.addrLeft > 0 {
		room = min(room, s.addrLeft-addrReserve)
	}
	z.heapShare = max(room-z.mem.slots-z.mem.tokens, 0)
	return z, nil
}

// layout fills z for the read-ahead prefetch and fetch batches of bp
// units: the engine's depth and slots, the fetch window and the memory
// each part takes (dictionaries aside).
func (z *sizing) layout(cfg Config, s indexSummary, opts engine.Options, prefetch, bp int) {
	z.prefetch, z.batchPages = prefetch, bp
	z.syncFiles = syncFiles(cfg)
	z.rowShuffle = cfg.Shuffle == ShuffleRow && !benchNoPageCache
	z.perBatch = bp * z.unitReads
	z.fetchBatches = prefetch + 1
	// Slots hold requests, a coalesced run in one: a row group of
	// thousands of small pages needs far fewer slots than pages.
	units := bp * z.fetchBatches // in flight at most
	z.inflight = units * z.unitReqs
	z.directSpan = 0
	if cfg.Fetch == Ordered {
		units, z.inflight = 1, z.unitReqs
		z.fetchBatches = int(min(2, runBatches(s, cfg, bp)))
		z.directSpan = s.orderedSpan
	}
	if cfg.Engine.Workers == 0 {
		// A unit's reads all go to one worker (it decodes them), so
		// workers beyond the units in flight would only hold slots.
		opts.Workers = fewWorkers(opts.Workers, units)
	}
	w := max(opts.Workers, 1)
	if opts.QueueDepth == 0 && cfg.IODepth > 0 {
		opts.QueueDepth = (cfg.IODepth + w - 1) / w
	}
	if opts.QueueDepth == 0 {
		opts.QueueDepth = min(256, max(1, (z.inflight+w-1)/w))
	}
	if opts.SlotsPerWorker == 0 {
		// Enough slots for the whole window plus a dictionary's, so
		// units parked for a dictionary never starve the dictionary's
		// read. All of a unit's requests go to one worker, dealt in
		// turn (nextWorker), so a worker holds ceil(units/w) units'
		// requests at most; fewer slots than that would block the
		// producer on a read only its own later submission can free.
		opts.SlotsPerWorker = (units + w - 1) / w * z.unitReqs
		if s.maxDict > 0 {
			opts.SlotsPerWorker++
		}
		opts.SlotsPerWorker = max(opts.QueueDepth, opts.SlotsPerWorker)
	}
	z.engine = opts
	// Pages are decoded as they land and held until their fetch batch is
	// recycled (page batches: released by the consumer).
	z.window = z.perBatch * z.fetchBatches
	m := &z.mem
	*m = memBreakdown{limit: cfg.MemoryLimit}
	m.slots = satMul(satMul(int64(opts.SlotSize), int64(opts.SlotsPerWorker)), int64(opts.Workers))
	if cfg.mixSource {
		m.slots = 0 // a mixture's source: the shared engine's slots are counted once, by the mixture
	}
	// The units' own bookkeeping (reads, completions, pages) counts too:
	// a window of 65,536-unit batches holds millions of them.
	m.decoded = satMul(satAdd(z.unitDecoded, unitOverhead+48*int64(z.unitReads)), int64(bp*z.fetchBatches))
	z.tokenBufs = 0
	if cfg.Output == OutputTokens {
		z.tokenBufs = prefetch + 2
		m.tokens = satMul(tokenBufBytes64(cfg.BatchRows, cfg.SeqLen, cfg.Tokens64), int64(z.tokenBufs))
	}
	// Row shuffle reads the pages of every projected column for each
	// row: the page cache (rowcache.go) holds decoded pages of every
	// column for the rows that share them, up to the dataset's decoded
	// size (at least two of its largest pages of each column), at most
	// half the limit.
	z.pageCache, z.pageCacheWant = 0, 0
	if z.rowShuffle {
		largest := satAdd(int64(z.decodedPage), satMul(int64(s.sides), int64(z.sideDecoded)))
		data := max(satAdd(int64(s.rowBytes*float64(s.units)*1.25), 1<<20), satMul(2, largest))
		z.pageCache, z.pageCacheWant = min(data, m.limit/2), data
		m.cache = z.pageCache
	}
	// Row-group units read whole chunks: no page of another column
	// straddles two of them, so there is nothing for a side cache to
	// hold; row shuffle's page cache holds the other columns' pages.
	if s.sides > 0 && cfg.SideCacheBytes > 0 && cfg.Shuffle != ShuffleRowGroup && z.pageCache == 0 {
		// No more than the other columns' pages hold, decoded.
		m.side = min(cfg.SideCacheBytes, max(s.sideBytes, 1<<20))
		if cfg.sideAuto {
			m.side = min(m.side, m.limit/8)
		}
	}
	// The cache holds what the limit leaves dictionaries, halved: the
	// largest dictionary must fit it (as stored: its decoded size is
	// known once read).
	m.dictMin = 2 * int64(s.maxDict)
	z.bufferRows = 0
	if cfg.BatchRows > 0 {
		// Rows wait in the FIFO a unit at a time: the unit being cut and
		// the one before it pin their pages.
		m.rows = satMul(z.unitDecoded, 2)
		if cfg.Output == OutputArrow && !cfg.mixSource {
			m.out = outBytes(cfg, s) // a mixture's sources: counted once, by the mixture
		}
		// The shuffle buffer: as set, or the default sized into what the
		// rest leave (bufsize.go).
		z.bufferRows, m.buffer = planBuffer(cfg, s, z.decodedPage, satAdd(m.need(), m.dictMin))
		if cfg.BufferRows > 0 {
			m.buffer = satMul(int64(cfg.BufferRows), bufferRowBytes(z.decodedPage, s.sideMean, s.rowsPerPage))
		}
		m.rows = satAdd(m.rows, m.buffer)
	}
}

// fewWorkers is the automatic worker count for inflight reads on at most
// w workers: every worker has its own slots, enough for its share of the
// reads, so a window of a few reads takes the count that wastes fewest
// slots (five reads on two workers would hold six).
func fewWorkers(w, inflight int) int {
	w = min(w, max(inflight, 1))
	if inflight >= 4*w {
		return w
	}
	best := w
	for v := w - 1; v >= 1; v-- {
		if (inflight+v-1)/v*v < (inflight+best-1)/best*best {
			best = v
		}
	}
	return best
}

// fits reports whether the layout fits the memory limit and the
// open-file budget.
func (z *sizing) fits(cfg Config, s indexSummary) bool {
	return satAdd(z.mem.need(), z.mem.dictMin) <= z.mem.limit && z.filesFit(s) && z.addrFits(s)
}

// maxIdleFiles is the most files the file cache keeps open beyond those
// the fetch window's units hold: a dataset of 10,000 files keeps a
// bounded number open whatever RLIMIT_NOFILE allows.
const maxIdleFiles = 256

// syncFiles is what the synchronous readers may hold open besides the
// file cache: a page read on the consumer (resume, header samples), and
// ordered fetch's reader (directReaderFiles).
func syncFiles(cfg Config) int {
	if cfg.Fetch == Ordered {
		return 1 + directReaderFiles
	}
	return 1
}

// filesFit reports whether the fetch window's units, each of which may
// hold a file open, stay within the open-file budget (less the
// synchronous readers') where the dataset has more files than it.
func (z *sizing) filesFit(s indexSummary) bool {
	return s.fdBudget <= 0 || s.files <= z.fdRoom(s) || z.batchPages*z.fetchBatches <= z.fdRoom(s)
}

// fdRoom is the files the file cache may keep open: the budget less the
// synchronous readers'.
func (z *sizing) fdRoom(s indexSummary) int { return s.fdBudget - z.syncFiles }

// fileCacheSize is the file cache's bound: the fetch window's units, or
// maxIdleFiles if more, within the open-file budget.
func (z *sizing) fileCacheSize(s indexSummary) int {
	n := max(maxIdleFiles, z.batchPages*z.fetchBatches)
	if s.fdBudget > 0 {
		n = min(n, z.fdRoom(s))
	}
	return max(n, 1)
}

// outBytes is how many bytes of row batches (arrow output) the consumer
// may hold unreleased before Next waits: four batches of mean rows, at
// least 16 MiB.
func outBytes(cfg Config, s indexSummary) int64 {
	per := int64(math.Ceil(max(s.rowBytes, 1)))
	return max(satMul(4*int64(cfg.BatchRows), per), 16<<20)
}

// planDicts gives what the limit leaves to dictionaries: half to the
// cache, half to the decoders' column readers, which keep the
// dictionaries they decoded alive (shared out per decoder and the two
// synchronous ones).
func (z *sizing) planDicts(s indexSummary) {
	m := &z.mem
	m.dictLeft = m.limit - m.need()
	// One decoder per worker of the engine actually used (a shared
	// engine may have another worker count than Engine.Workers says;
	// the engine makes at least one worker).
	z.decoders = max(z.engine.Workers, 1)
	if s.shared {
		z.decoders = max(s.sharedWorkers, 1)
	}
	z.dictStateBytes = max(m.dictLeft/2/int64(z.decoders+2), 1)
	z.poolPerClass = 4 * z.window
}

// refuse explains a configuration that does not fit even shrunk as far
// as Open may (z laid out for prefetch and bp): every part's size, and
// what to raise or lower and to what.
func (z *sizing) refuse(cfg Config, s indexSummary, opts engine.Options, prefetch, bp int) error {
	z.layout(cfg, s, opts, prefetch, bp)
	m := z.mem
	if !z.filesFit(s) {
		fix := "raise the open-file limit (ulimit -n)"
		if lim := z.fdRoom(s) / z.fetchBatches; lim >= 1 && !cfg.batchAuto {
			fix = fmt.Sprintf("lower BatchPages to %d or less, or %s", lim, fix)
		}
		if cfg.Prefetch > 0 {
			fix = "lower Prefetch, " + fix
		}
		return fmt.Errorf("%w: %d units in flight (%d fetch batches of %d) may each hold one of the dataset's %d files open, and the loader may keep %d open (half the soft RLIMIT_NOFILE, less %d for its synchronous reads): %s",
			ErrConfig, bp*z.fetchBatches, z.fetchBatches, bp, s.files, z.fdRoom(s), z.syncFiles, fix)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d MiB of read slots (%d workers × %d slots × %d bytes for batches of %d units with prefetch %d), %d MiB of decoded pages (%d bytes each, %d pages)",
		m.slots>>20, z.engine.Workers, z.engine.SlotsPerWorker, opts.SlotSize, bp, prefetch, m.decoded>>20, z.decodedPage, z.window)
	if z.sideDecoded > 0 {
		fmt.Fprintf(&b, " (other columns' pages: %d bytes each)", z.sideDecoded)
	}
	fmt.Fprintf(&b, ", %d MiB of token buffers, %d MiB of side cache, %d MiB of page cache, %d MiB of rows taken in (%d MiB of them the shuffle buffer), %d MiB of row batches held and %d MiB for the largest dictionary%s",
		m.tokens>>20, m.side>>20, m.cache>>20, m.rows>>20, m.buffer>>20, m.out>>20, m.dictMin>>20, dictOf(s))
	var fixes []string
	if over := satAdd(m.need(), m.dictMin) - m.limit; over > 0 {
		fmt.Fprintf(&b, ": %d MiB over the limit of %d MiB", (over+1<<20-1)>>20, m.limit>>20)
		fixes = append(fixes, fmt.Sprintf("raise MemoryLimit to %d MiB", z.limitFor(cfg, s, opts, prefetch, bp)>>20))
	}
	if !z.addrFits(s) {
		fmt.Fprintf(&b, ": they map %d MiB, and the address space limit (RLIMIT_AS, ulimit -v) leaves %d MiB, %d MiB of which are kept for the Go runtime",
			z.addrNeed()>>20, s.addrLeft>>20, addrReserve>>20)
		fixes = append(fixes, fmt.Sprintf("raise the address space limit by %d MiB", (z.addrNeed()-(s.addrLeft-addrReserve)+1<<20-1)>>20))
	}
	try := func(edit func(*Config)) bool {
		c := cfg
		edit(&c)
		var y sizing
		y.unitReads, y.unitReqs, y.unitDecoded, y.decodedPage = z.unitReads, z.unitReqs, z.unitDecoded, z.decodedPage
		y.layout(c, s, opts, min(prefetch, max(c.Prefetch, 0)), min(bp, c.BatchPages))
		return y.fits(c, s)
	}
	largest := func(hi int, edit func(*Config, int)) int {
		lo := 0 // the largest v in [1, hi] that fits, 0 none
		for lo < hi {
			mid := lo + (hi-lo+1)/2
			if try(func(c *Config) { edit(c, mid) }) {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		return lo
	}
	if !cfg.batchAuto && bp > 1 {
		if v := largest(bp-1, func(c *Config, v int) { c.BatchPages = v }); v > 0 {
			fixes = append(fixes, fmt.Sprintf("lower BatchPages to %d", v))
		}
	}
	if cfg.Prefetch > 0 && try(func(c *Config) { c.Prefetch = 0 }) {
		v := largest(prefetch, func(c *Config, v int) { c.Prefetch = v })
		fixes = append(fixes, fmt.Sprintf("lower Prefetch to %d", v))
	}
	if cfg.BufferRows > 0 {
		if v := largest(cfg.BufferRows-1, func(c *Config, v int) { c.BufferRows = v }); v > 0 {
			fixes = append(fixes, fmt.Sprintf("lower BufferRows to %d", v))
		}
	}
	if m.side > 0 && try(func(c *Config) { c.SideCacheBytes = -1 }) {
		fixes = append(fixes, "lower SideCacheBytes")
	}
	if cfg.Output == OutputTokens && cfg.BatchRows > 1 {
		if v := largest(cfg.BatchRows-1, func(c *Config, v int) { c.BatchRows = v }); v > 0 {
			fixes = append(fixes, fmt.Sprintf("lower BatchRows to %d", v))
		}
	}
	fmt.Fprintf(&b, "; %s", strings.Join(fixes, ", or "))
	return fmt.Errorf("%w: %s", ErrMemory, b.String())
}

// tokenBufBytes64 is tokenBufBytes without overflow: math.MaxInt64 for
// sizes no buffer could have.
func tokenBufBytes64(rows, seqLen int, wide bool) int64 {
	if rows <= 0 || seqLen <= 0 {
		return 0
	}
	if n := satMul(int64(rows), int64(seqLen)); n > math.MaxInt32 {
		return math.MaxInt64
	}
	return int64(tokenBufBytes(rows, seqLen, wide))
}

// dictOf names the file of the largest dictionary, for errors.
func dictOf(s indexSummary) string {
	if s.maxDict == 0 || s.maxDictFile == "" {
		return ""
	}
	return " (in " + s.maxDictFile + ")"
}

// limitFor returns the least MemoryLimit, in whole MiB, that the layout
// of prefetch and bp fits (the automatic side cache grows with it).
func (z *sizing) limitFor(cfg Config, s indexSummary, opts engine.Options, prefetch, bp int) int64 {
	var y sizing
	y.unitReads, y.unitReqs, y.unitDecoded, y.decodedPage = z.unitReads, z.unitReqs, z.unitDecoded, z.decodedPage
	c := cfg
	for range 8 {
		y.layout(c, s, opts, prefetch, bp)
		need := satAdd(y.mem.need(), y.mem.dictMin)
		if need <= c.MemoryLimit {
			break
		}
		c.MemoryLimit = min(satAdd(need, 1<<20-1)>>20<<20, math.MaxInt64>>20<<20)
	}
	return c.MemoryLimit
}
