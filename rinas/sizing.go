package rinas

import (
	"fmt"
	"math"

	"github.com/pagefeed/pagefeed/engine"
)

// indexSummary holds the facts the loader's sizing depends on, gathered
// by Open from the index, a few page headers and the process
// (Loader.summarize): everything planSizing needs, so the sizing rules
// are a pure function of the configuration and this summary.
type indexSummary struct {
	// maxPage is the largest page or dictionary of the projection, in
	// bytes as stored; compressed reports whether any chunk of the
	// projection is compressed.
	maxPage    int
	compressed bool
	// decodedPage is the largest decoded size among the sampled pages
	// of the lead column (compressed columns only; 0 unknown or not
	// sampled).
	decodedPage int
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
}

// sizing is everything Open allocates, as planSizing decides it.
type sizing struct {
	// engine is the engine's options: what Open starts, or (shared
	// engine) what the memory check counts the slots by.
	engine engine.Options
	// prefetch is the read-ahead in batches (Config.Prefetch or the
	// automatic one); coalesce the most bytes one coalesced read spans
	// (0: off).
	prefetch int
	coalesce int
	// unitReads is the most reads one unit makes (lead and other
	// columns); perBatch a batch's; inflight the reads in flight at most;
	// window the units' pages decoded and held at once (read ahead, being
	// filled, the consumer's).
	unitReads int
	unitReqs  int // the most requests one unit issues: its reads, coalesced
	perBatch  int
	inflight  int
	window    int
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
	// unordered).
	directSpan int
	mem        memBreakdown
}

// memBreakdown is the memory Open sizes against Config.MemoryLimit.
type memBreakdown struct {
	slots    int64 // engine read slots: workers × slots per worker × slot size
	decoded  int64 // decoded pages of the window (unordered fetch)
	tokens   int64 // token buffers (tokens output)
	side     int64 // the side cache (Config.SideCacheBytes, several columns)
	dictLeft int64 // what the limit leaves: half the dictionary cache, half the decoders' dictionaries
	limit    int64
}

// need is what the parts sized up front take.
func (m memBreakdown) need() int64 { return m.slots + m.decoded + m.tokens + m.side }

// dictCache is the dictionary cache's byte bound.
func (m memBreakdown) dictCache() int64 { return m.dictLeft / 2 }

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

// planSizing sizes the loader: the engine's workers, queue depth and
// slots, the read-ahead, coalescing, the fetch batches, token buffers,
// decoders and dictionary budgets, and checks the total against
// Config.MemoryLimit (ErrMemory names every part). It reads nothing but
// its arguments. cfg is filled (Config.fill) and planned (row-group
// shuffle's BatchPages applied).
func planSizing(cfg Config, s indexSummary) (sizing, error) {
	var z sizing
	opts := cfg.Engine
	opts.SlotSize, z.coalesce = coalescePlan(cfg, s)
	z.unitReads = s.unitMax + s.sideReads
	z.unitReqs = z.unitReads
	if s.unitReqs > 0 {
		z.unitReqs = min(s.unitReqs, z.unitReads)
	}
	z.perBatch = cfg.BatchPages * z.unitReads
	decoded := 0
	if s.compressed {
		decoded = s.decodedPage
	}
	z.prefetch = cfg.Prefetch
	if z.prefetch == 0 {
		// The window counts a batch's pages as lead pages of mean size:
		// other columns' pages are often far smaller.
		mean := int(math.Ceil(float64(cfg.BatchPages) * (float64(s.unitMax) + s.sideMean)))
		z.prefetch = autoPrefetch(mean, opts.SlotSize, decoded, s.compressed)
	}
	// Slots hold requests, a coalesced run in one: a row group of
	// thousands of small pages needs far fewer slots than pages.
	z.inflight = cfg.BatchPages * z.unitReqs * (z.prefetch + 1)
	if cfg.Fetch == Ordered {
		z.inflight = z.unitReqs
	}
	if opts.Workers == 0 {
		opts.Workers = defaultWorkers(s.compressed, s.procs)
	}
	if opts.QueueDepth == 0 && cfg.IODepth > 0 {
		opts.QueueDepth = (cfg.IODepth + opts.Workers - 1) / opts.Workers
	}
	if opts.QueueDepth == 0 {
		opts.QueueDepth = min(256, max(8, (z.inflight+opts.Workers-1)/opts.Workers))
	}
	if opts.SlotsPerWorker == 0 {
		// Enough slots for the whole window plus dictionaries, so units
		// parked for a dictionary never starve the dictionary's read.
		opts.SlotsPerWorker = max(opts.QueueDepth, (z.inflight+z.unitReqs+opts.Workers-1)/opts.Workers+2)
	}
	if opts.Logf == nil {
		opts.Logf = cfg.Logf
	}
	if len(opts.CPUSets) == 0 && s.cpus != nil {
		opts.CPUSets = [][]int{s.cpus}
	}
	z.engine = opts
	z.fetchBatches = z.prefetch + 1
	if cfg.Fetch == Ordered {
		z.fetchBatches = 2
		z.directSpan = s.orderedSpan
	}
	err := z.planMemory(cfg, s, decoded)
	return z, err
}

// planMemory sizes the token buffers, the decoded window, the side cache
// and the dictionary budgets of z (whose engine options and read-ahead
// are set), and checks them against Config.MemoryLimit. decoded is the
// decoded page size the window counts (0 unknown).
func (z *sizing) planMemory(cfg Config, s indexSummary, decoded int) error {
	opts := z.engine
	m := &z.mem
	m.limit = cfg.MemoryLimit
	m.slots = int64(opts.SlotSize) * int64(opts.SlotsPerWorker) * int64(opts.Workers)
	if cfg.slotsCounted {
		m.slots = 0 // a mixture's source: the shared engine's slots are counted once, by the mixture
	}
	if cfg.Output == OutputTokens {
		z.tokenBufs = z.prefetch + 2
		m.tokens = int64(tokenBufBytes(cfg.BatchRows, cfg.SeqLen, cfg.Tokens64)) * int64(z.tokenBufs)
	}
	// Pages are decoded as they land and held until their batch is
	// released: the window read ahead, the batch being filled and the
	// consumer's.
	z.window = z.perBatch * (z.prefetch + 2)
	if cfg.Fetch == Unordered {
		m.decoded = int64(decoded) * int64(z.window)
	}
	// Row-group units read whole chunks: no page of another column
	// straddles two of them, so there is nothing for a side cache to hold.
	if s.sides > 0 && cfg.SideCacheBytes > 0 && cfg.Shuffle != ShuffleRowGroup {
		m.side = cfg.SideCacheBytes
	}
	if need := m.need(); need > m.limit {
		return fmt.Errorf("%w: %d MiB of read slots (%d workers × %d slots × %d bytes for batches of %d pages with prefetch %d), %d MiB of decoded pages (%d bytes each), %d MiB of token buffers and %d MiB of side cache, limit %d MiB, which leaves nothing for the dictionary cache",
			ErrMemory, m.slots>>20, opts.Workers, opts.SlotsPerWorker, opts.SlotSize, cfg.BatchPages, z.prefetch, m.decoded>>20, decoded, m.tokens>>20, m.side>>20, m.limit>>20)
	}
	// What the limit leaves goes to dictionaries: half to the cache, half
	// to the decoders' column readers, which keep the dictionaries they
	// decoded alive (shared out per decoder and the two synchronous
	// ones).
	m.dictLeft = m.limit - m.need()
	// One decoder per worker of the engine actually used (a shared
	// engine may have another worker count than Engine.Workers says;
	// the engine makes at least one worker).
	z.decoders = max(opts.Workers, 1)
	if s.shared {
		z.decoders = max(s.sharedWorkers, 1)
	}
	z.dictStateBytes = max(m.dictLeft/2/int64(z.decoders+2), 1)
	z.poolPerClass = 4 * z.window
	return nil
}
