package rinas

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/pagefeed/pagefeed/codec"
	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/rinas/plan"
)

// Stats counts what a Loader did. Read with Loader.Stats.
type Stats struct {
	Pages int64 // data pages read and decoded
	// DiskBytes counts the bytes the storage moved for the pages and
	// dictionaries read: O_DIRECT reads are rounded out to the file
	// system's alignment, so this is the disk's work (what fio counts).
	// PageBytes counts the page and dictionary bytes themselves.
	DiskBytes    int64
	PageBytes    int64
	Rows         int64 // rows delivered
	DecodedBytes int64 // uncompressed page bytes decoded
	Batches      int64
	Dictionaries int64 // dictionary pages read
	SlowReads    int64 // continuation pages read synchronously (rows longer than two pages)
	// ZeroCopyPages are pages handed over in the buffer they were read
	// into (uncompressed fixed-width lists in page batches: no copy).
	ZeroCopyPages int64
	SkippedPages  int64 // units dropped under Config.SkipBadPages (see Loader.Skipped)
	// SidePages counts the pages of projected columns other than the
	// lead read and decoded (included in Pages). StraddleReads counts the
	// side pages read whose rows reach outside the unit's span: the
	// neighbouring span reads them again.
	SidePages     int64
	StraddleReads int64
	// SideCacheHits counts the side pages taken from the side cache
	// instead of being read (Config.SideCacheBytes). PageCacheHits counts
	// the pages (of every projected column) that rows of row shuffle took
	// from a page decoded for another row instead of reading them.
	SideCacheHits int64
	PageCacheHits int64
	// Reads counts the page read requests issued (unordered fetch);
	// CoalescedPages the pages read as part of another page's request
	// (Config.CoalesceBytes).
	Reads          int64
	CoalescedPages int64
	// DroppedRows counts this rank's part of the rows that the epochs
	// begun so far leave out so that every rank takes the same steps
	// (Config.DropLast: what the world leaves out, spread over its ranks,
	// so that the ranks' counts sum to it; tokens output: also the rows
	// past Len's last batch); PaddedRows the rows this rank repeats for
	// it (Config.PadLast). Rows of pages whose row count the index does
	// not know count 0.
	DroppedRows  int64
	PaddedRows   int64
	IndexBuildNs int64
	// Sources counts per source of a mixture (Config.Sources), in
	// Sources order; the counters above are then the sums over them,
	// Rows and Batches the mixture's.
	Sources []SourceStats
	// IOMode is how the current epoch reads its pages (Config.IOMode):
	// "direct" (O_DIRECT), "buffered" (the page cache) or "mixed" (auto
	// read some files each way); IOReason says why, with the figures
	// auto weighed. DirectFiles and BufferedFiles count the files read
	// each way (a file whose file system refuses O_DIRECT counts as
	// direct here; the engine notices the fallback). A mixture's are
	// the choice over all its sources' files.
	IOMode        string
	IOReason      string
	DirectFiles   int
	BufferedFiles int
}

// Loader delivers an epoch's batches. See the package doc.
type Loader struct {
	cfg   Config
	ix    *index.Index
	eng   *engine.Engine
	owned bool // eng and ix are ours to close

	// The projection: index columns in projection order, the lead (whose
	// pages define the units) and its position, the other columns
	// (sides) and their positions; chunkRow0 is each chunk's first row
	// within its file.
	proj      []int
	lead      int
	leadPos   int
	sides     []int
	sidePos   []int
	chunkRow0 []int64

	rowStart []int64 // row mode: global first row of each page, len pages+1
	unitMax  int     // most lead pages one unit reads
	coalesce int     // most bytes one coalesced read spans (0: off)
	// sideReads is the most pages of the other columns one unit reads and
	// sideMean their mean bytes in lead pages of mean size; maxRun the longest run of one chunk's
	// pages one unit reads, in bytes (see planReads).
	sideReads int
	sideMean  float64
	maxRun    int
	dataset   string
	fileSums  string      // State.Files: each file's digest
	pageRows  []int32     // page units: rows starting in each page (-1 unknown)
	space     *plan.Space // the units as the epoch plans see them
	epochs    epochCache  // the epochs' orders and sums computed so far

	workers int
	dealt   int     // units dealt to workers so far (nextWorker; the producer's)
	firsts  []int64 // nextPages' scratch: the first row of its page each array holds
	cpus    []int   // the workers' CPU set, when pinned
	planned int64   // the bytes Open sized (PlannedBytes)
	// leadRatio is the lead column's sampled decoded bytes over stored
	// bytes, sideRowBytes the other columns' mean decoded bytes a row:
	// what rowCost estimates rows by.
	leadRatio    float64
	sideRowBytes float64
	// goMemDone gives the loader's share of the Go soft memory limit back
	// (gomem.go).
	goMemDone func()

	// Shared by the producer (and its engine handlers) and the consumer:
	// the codec chunks, made lazily by the producer and read by the
	// consumer's synchronous reads; the dictionary and side caches (each
	// under its own lock); and the fetch batches' hand-over channels.
	chunks []*codec.Chunk
	dicts  dictCache
	sideC  sideCache // decoded pages of the other columns (Config.SideCacheBytes)
	pcache pageCache // decoded pages of every column for row shuffle (rowcache.go)
	free   chan *fetchBatch
	ready  chan *fetchBatch // in order; a nil-units batch marks an epoch's end

	producer
	consumer

	closed bool
	mix    *mixture // Config.Sources: the loader delivers the mixture's batches

	stats Stats
	sa    struct {
		pages, disk, pageBytes, decoded, dicts, slow, zeroCopy atomic.Int64
		sidePages, straddle, reads, coalesced, sideHits        atomic.Int64
		pageHits                                               atomic.Int64
	}
	skips skipLog // Config.SkipBadPages
	io    ioState // each file's read mode (Config.IOMode)
}

// producer is the state of the producer goroutine and the engine
// handlers it starts: it fills fetch batches ahead of the consumer.
type producer struct {
	fc     fileCache // files, opened lazily by the producer, at most engine.OpenFileBudget(2)
	decs   []*codec.Decoder
	prodD  *codec.Decoder // the producer's (ordered fetch)
	direct *directReader  // the producer's synchronous reads (ordered fetch)
	hits   []*unit        // scratch: units the page cache gave (rowcache.go)
	pageQ  *engine.Queue
	dictQ  *engine.Queue
	fbs    []*fetchBatch

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the producer
	perr   error          // the producer's error, read after ready or pdone closes
	pdone  chan struct{}  // closed when the producer returns
}

// consumer is the state of the goroutine calling Next: the epoch's
// share, the units taken in, row assembly and the token buffers.
type consumer struct {
	syncD *codec.Decoder // the consumer goroutine's, for resume and slow reads
	epoch uint64
	ep    *plan.Epoch // the current epoch's order and sums
	share plan.Share  // this rank's part of it
	// cursor is how far the share is taken in (units whose fetch batch
	// is taken in whole; cur's units are added by State).
	cursor plan.Cursor
	// rest is what an earlier world left of the epoch (resumed from a
	// Resharded state), for State; nil otherwise.
	rest    *plan.Rest
	batches int64       // batches delivered in the current epoch
	waiting *fetchBatch // taken from ready, not landed yet (a cancelled wait)
	err     error       // sticky: the epoch failed
	cur     *fetchBatch // row batches: the batch whose units are being taken in
	curNext int         // next arrival index of cur to take in
	atEnd   bool        // row batches: the epoch's units are all taken in
	rows    rowStream
	outG    outGate // row batches held (arrow output)
	tokBufs chan *tokenBuf
	// tokMu orders token buffers coming back (Batch.Release, from any
	// goroutine) against Close: once tokClosed is set, a buffer coming
	// back is unmapped instead of parked. tokMapped counts the mapped ones.
	tokMu     sync.Mutex
	tokClosed bool
	tokMapped int
	finished  bool
	// Transactional assembly (see batchRecord): the record of the batch
	// being cut and of the last one returned; unread is a page batch's
	// fetch batch given back by Unread, delivered before anything else;
	// restDropped counts the rows dropRest dropped of the epoch so far.
	work, last  batchRecord
	unread      *fetchBatch
	restDropped int64
	// want, when > 0, is the rows the next row batch holds instead of
	// BatchRows (at most BatchRows): a mixture asks each source for the
	// rows the blend gives it.
	want int
}

// Open builds (or takes) the index, starts the engine and the producer,
// and validates the whole configuration: unknown columns, a column the
// tokens output cannot pack, memory beyond MemoryLimit and a State from
// another dataset or seed fail here, not later.
func Open(ctx context.Context, cfg Config) (*Loader, error) {
	if len(cfg.Sources) > 0 {
		return openMixture(ctx, cfg)
	}
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	l, err := prepare(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := l.start(); err != nil {
		l.closeAll()
		return nil, err
	}
	return l, nil
}

// prepare is Open's first half: the index (built or taken) and the units,
// before anything is sized. cfg is filled. On error nothing stays open.
func prepare(ctx context.Context, cfg Config) (*Loader, error) {
	l := &Loader{cfg: cfg}
	if err := l.openIndex(ctx); err != nil {
		l.closeAll()
		return nil, err
	}
	if err := l.openUnits(); err != nil {
		l.closeAll()
		return nil, err
	}
	return l, nil
}

// start is Open's second half: sizing, the engine, the epoch and the
// producer. On error the caller closes l.
func (l *Loader) start() error {
	if err := l.openEngine(); err != nil {
		return err
	}
	// After the engine's memory is allocated: auto counts it as taken.
	// A mixture chose its sources' modes over all of them.
	if !l.cfg.mixSource {
		l.chooseModes()
	}
	l.applyModes()
	if err := l.startEpoch(l.cfg.Resume); err != nil {
		return err
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.pdone = make(chan struct{})
	l.wg.Add(1)
	go l.produce(l.epoch, l.ep, l.share.Spans, l.cursor)
	return nil
}

func (l *Loader) openIndex(ctx context.Context) error {
	if l.cfg.SharedIndex != nil {
		l.ix = l.cfg.SharedIndex
	} else {
		opts := l.cfg.Index
		if len(l.cfg.Columns) > 0 {
			opts.Columns = l.cfg.Columns
		}
		if opts.Reader == nil {
			r := engine.OpenBatchReader(opts.Parallelism, opts.Logf)
			defer r.Close()
			opts.Reader = r
		}
		ix, err := index.Build(ctx, l.cfg.Paths, opts)
		if errors.Is(err, index.ErrColumn) {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		if err != nil {
			return err
		}
		l.ix = ix
		l.stats.IndexBuildNs = int64(ix.Stats().BuildTime)
	}
	if l.ix.NumColumns() == 0 {
		return fmt.Errorf("%w: no column to load", ErrConfig)
	}
	if err := l.projection(); err != nil {
		return err
	}
	col := l.ix.Column(l.lead)
	if l.cfg.Output == OutputTokens {
		d := col.Descr
		if pt := d.PhysicalType().String(); (pt != "INT32" && pt != "INT64") || d.MaxRepetitionLevel() > 1 {
			return fmt.Errorf("%w: column %s (%s, repetition %d): tokens output packs integer columns (int32, int64, uint16, uint32) or lists of them only",
				ErrConfig, col.Path, d.PhysicalType(), d.MaxRepetitionLevel())
		}
	}
	// The first file's leaf paths, as before columns were named
	// logically: checkpoints taken then stay valid.
	name := col.Descr.Path()
	if len(l.proj) > 1 {
		// The whole projection, and which column led the spans.
		for _, k := range l.proj {
			name += "\x00" + l.ix.Column(k).Descr.Path()
		}
	}
	l.dataset, l.fileSums = fingerprint(l.ix, name)
	return nil
}

// Automatic read-ahead (Config.Prefetch 0): autoSmallPrefetch batches for
// uncompressed columns; for compressed ones a window of at least
// autoDecodePages pages, with at most autoSlotBytes of slots (each as
// large as the largest page) and autoDecodeBytes of decoded pages.
const (
	autoSmallPrefetch = 2
	autoDecodePages   = 832
	autoSlotBytes     = 256 << 20
	autoDecodeBytes   = 128 << 20
	maxPrefetch       = 64 // Config.Prefetch's bound
	sampleHeaders     = 8  // page headers read to estimate decoded pages
)

// autoPrefetch returns the read-ahead in batches for batches of perBatch
// reads into slots of slotSize bytes.
//
// Batches are handed over in order, so the device idles behind one slow
// read unless enough is in flight past it; but every batch read ahead
// holds its slots, and reads into a larger set of buffers are slower
// where a read's cost is its DMA segments. Uncompressed pages are
// read-bound and keep autoSmallPrefetch batches ahead: more reads no
// faster and lengthen the batch tail (the consumer runs ahead, then waits
// longer on the straggler).
//
// Compressed pages are decode-bound, and decoding on every core lengthens
// the disk's tail latency, so they want a longer window: autoDecodePages
// pages, bounded by autoSlotBytes of read slots. Every page read ahead is
// also decoded ahead, so large pages bound the window by their decoded
// size too (decoded, 0 when unknown; autoDecodeBytes).
func autoPrefetch(perBatch, slotSize, decoded int, compressed bool) int {
	if !compressed {
		return autoSmallPrefetch
	}
	byPages := (autoDecodePages+perBatch-1)/perBatch - 1
	bySlots := autoSlotBytes/(perBatch*slotSize) - 1
	byDecoded := maxPrefetch
	if decoded > 0 {
		byDecoded = autoDecodeBytes/(perBatch*decoded) - 1
	}
	return max(autoSmallPrefetch, min(byPages, bySlots, byDecoded, maxPrefetch))
}

// decodedPageEstimate returns the largest decoded size among up to
// sampleHeaders data pages spread over the lead column, read from their
// headers, or 0 when none could be read, and the sampled pages' decoded
// bytes over their stored bytes (1 when none could be read). It sizes the
// read-ahead and the memory check only: a page it cannot read fails when
// its batch does.
func (l *Loader) decodedPageEstimate() (int, float64) { return l.decodedEstimate(l.lead) }

// decodedEstimate is decodedPageEstimate for index column k.
func (l *Loader) decodedEstimate(k int) (int, float64) {
	n := l.ix.NumPages(k)
	m := min(n, sampleHeaders)
	est := 0
	var dec, stored float64
	for i := 0; i < m; i++ {
		loc := l.ix.Locate(k, i*n/m)
		b, err := preadFile(l.ix.File(loc.File).Path, loc.Offset, min(int(loc.Size), 4096))
		if err != nil {
			continue
		}
		if h, hn, err := codec.ParsePageHeader(b); err == nil {
			est = max(est, int(h.UncompressedSize))
			dec += float64(int(h.UncompressedSize) + hn)
			stored += float64(loc.Size)
		}
	}
	if dec == 0 || stored == 0 {
		return est, 1
	}
	return est, dec / stored
}

// defaultWorkers is Engine.Workers' default: GOMAXPROCS, halved (at least
// one) when no page of the column is compressed, so decoding is cheap and
// one ring per two cores keeps the reads flowing (see Config.Engine).
func defaultWorkers(compressed bool, procs int) int {
	n := procs
	if compressed {
		return n
	}
	return max(1, n/2)
}

// PlannedBytes returns the memory Open sized against Config.MemoryLimit
// for read slots, decoded pages, token buffers, the side cache, rows taken
// in and row batches held; dictionaries get what the limit leaves.
func (l *Loader) PlannedBytes() int64 { return l.planned }

// BatchPages returns the units of a fetch batch in use: Config.BatchPages,
// or fewer when the rank's share of an epoch has fewer units, or when Open
// lowered a BatchPages it chose to fit MemoryLimit (page batches then
// carry that many pages).
func (l *Loader) BatchPages() int { return l.cfg.BatchPages }

// Workers returns the number of engine workers in use.
func (l *Loader) Workers() int { return l.workers }

// Prefetch returns the read-ahead in batches in use: Config.Prefetch, or
// the one Open chose when it was 0.
func (l *Loader) Prefetch() int { return l.cfg.Prefetch }

// summarize gathers the facts planSizing needs: page and dictionary sizes
// from the index, a decoded size from a few page headers (compressed
// columns), the process's GOMAXPROCS, a shared engine's workers and the
// pinning plan.
func (l *Loader) summarize() (indexSummary, error) {
	s := indexSummary{
		unitMax:   l.unitMax,
		sides:     len(l.sides),
		sideReads: l.sideReads,
		sideMean:  l.sideMean,
		maxRun:    l.maxRun,
		procs:     runtime.GOMAXPROCS(0),
		rows:      l.ix.NumRows(),
	}
	s.rowsPerPage = float64(s.rows) / float64(max(l.ix.NumPages(l.lead), 1))
	var stored, sideStored int64 // the projection's page bytes, the other columns'
	for _, k := range l.proj {
		for _, sz := range l.ix.PageSizes(k) {
			s.maxPage = max(s.maxPage, int(sz))
			stored += int64(sz)
			if k != l.lead {
				s.sidePage = max(s.sidePage, int(sz))
				sideStored += int64(sz)
			}
		}
		for c := 0; c < l.ix.NumChunks(); c++ {
			ci := l.ix.Chunk(k, c)
			s.maxPage = max(s.maxPage, int(ci.DictSize))
			if int(ci.DictSize) > s.maxDict {
				s.maxDict, s.maxDictFile = int(ci.DictSize), l.ix.File(ci.File).Path
			}
			s.compressed = s.compressed || ci.Codec != compress.Codecs.Uncompressed
		}
	}
	ratio := 1.0
	s.leadRatio = 1
	if s.compressed {
		s.decodedPage, ratio = l.decodedPageEstimate()
		s.leadRatio = ratio
		sideRatio := 1.0
		for _, k := range l.sides {
			d, r := l.decodedEstimate(k)
			s.sideDecoded, sideRatio = max(s.sideDecoded, d), max(sideRatio, r)
		}
		s.sideBytes = int64(float64(sideStored) * sideRatio)
		stored = int64(float64(stored-sideStored)*ratio + float64(sideStored)*sideRatio)
		ratio = 1
	} else {
		s.sideBytes = sideStored
	}
	s.units = l.space.Len()
	if rows := l.ix.NumRows(); rows > 0 {
		s.rowBytes = float64(stored) * ratio / float64(rows)
		s.sideRowBytes = float64(s.sideBytes) / float64(rows)
	}
	s.files, s.fdBudget = l.ix.NumFiles(), engine.OpenFileBudget(2)
	s.addrLeft = addrSpaceLeft()
	if e := l.cfg.SharedEngine; e != nil {
		s.shared, s.sharedWorkers = true, e.Workers()
	}
	if l.cfg.Shuffle == ShuffleRowGroup {
		// A unit reads whole chunks: count its requests as they coalesce.
		_, c := coalescePlan(l.cfg, s)
		s.unitReqs = l.rowGroupRequests(c)
	}
	if l.cfg.Fetch == Ordered {
		s.orderedSpan = s.maxPage // any one page or dictionary of the projection
		for c := 0; c < l.ix.NumChunks(); c++ {
			ci := l.ix.Chunk(l.lead, c)
			s.orderedSpan = max(s.orderedSpan, int(ci.DictSize))
			end := ci.FirstPage + ci.NumPages
			for g := ci.FirstPage; g < end; g++ {
				// A unit spans its pages: up to unitMax from g (a whole
				// chunk for row groups).
				last := l.ix.Locate(l.lead, min(g+l.unitMax, end)-1)
				s.orderedSpan = max(s.orderedSpan, int(last.Offset+int64(last.Size)-l.ix.Locate(l.lead, g).Offset))
				if l.cfg.Shuffle == ShuffleRowGroup {
					break
				}
			}
		}
	}
	if len(l.cfg.Engine.CPUSets) == 0 {
		cpus, err := l.planCPUs()
		if err != nil {
			return s, err
		}
		s.cpus = cpus
	}
	return s, nil
}

// openEngine sizes the loader (planSizing over the summary) and
// allocates what the sizing says: the engine (unless shared), decoders,
// the side and dictionary caches, the fetch batches and token buffers.
func (l *Loader) openEngine() error {
	sum, err := l.summarize()
	if err != nil {
		return err
	}
	z, err := planSizing(l.cfg, sum)
	if err != nil {
		return err
	}
	l.cfg.Prefetch, l.cfg.BatchPages, l.cfg.BufferRows = z.prefetch, z.batchPages, z.bufferRows
	l.planned = z.mem.need()
	if z.shrunk != "" {
		l.cfg.Logf("lowered to fit MemoryLimit (%d MiB), the address space limit and the open-file budget: %s", l.cfg.MemoryLimit>>20, z.shrunk)
	}
	l.coalesce = z.coalesce
	opts := z.engine
	if len(opts.CPUSets) > 0 {
		l.cpus = opts.CPUSets[0]
	}
	l.sideC.init(z.mem.side)
	l.pcache.init(z.pageCache, z.pageCacheWant)
	if l.cfg.SharedEngine != nil {
		l.eng = l.cfg.SharedEngine
	} else {
		e, err := engine.New(opts)
		if err != nil {
			return err
		}
		l.eng, l.owned = e, true
	}
	// One decoder per engine worker: the engine starts the workers the
	// sizing asked for, a shared one has the workers summarize counted.
	l.workers = max(l.eng.Workers(), 1)
	if l.workers != z.decoders {
		return fmt.Errorf("rinas: the engine runs %d workers, sized for %d", l.workers, z.decoders)
	}
	// Decoded pages live until their batch is released: a pool deep
	// enough for the whole window reuses their buffers instead of making
	// the runtime zero (and the kernel fault in) fresh ones for every
	// page. A read stall lets the consumer release the whole window at
	// once, so the pool's byte bound is the loader's memory limit, not
	// the allocator's default 64 MiB: it never holds more than the
	// window's peak.
	copts := codec.Options{Mem: &codec.PoolAllocator{
		MaxPerClass:      z.poolPerClass,
		MaxBytesPerClass: l.cfg.MemoryLimit,
	}}
	copts.MaxStateDictBytes = z.dictStateBytes
	// Page batches hand the decoded pages themselves to the consumer, and
	// a unit's slots are kept until its batch is recycled: uncompressed
	// fixed-width pages may then keep their values where the read put
	// them (no copy). Row batches keep rows in the shuffle buffer past
	// their fetch batch, so their pages never alias a slot.
	wopts := copts
	// Row shuffle shares decoded pages among the rows they hold
	// (rowcache.go): they must not alias the slots they were read into.
	wopts.AliasInput = l.cfg.BatchRows == 0 && l.cfg.Shuffle != ShuffleRow
	l.decs = make([]*codec.Decoder, z.decoders)
	for i := range l.decs {
		l.decs[i] = codec.NewDecoder(wopts)
	}
	l.syncD = codec.NewDecoder(copts)
	if l.cfg.Fetch == Ordered {
		l.prodD = codec.NewDecoder(copts)
		l.direct = newDirectReader(z.directSpan, l.cfg.Engine.Direct)
	}
	l.fc.init(l.eng, l.ix, z.openFiles, l.cfg.Logf)
	l.chunks = make([]*codec.Chunk, l.ix.NumColumns()*l.ix.NumChunks())
	l.dicts.init(z.mem.dictCache())
	l.pageQ = l.eng.NewQueue(engine.QueueOptions{Handler: l.onPage})
	l.dictQ = l.eng.NewQueue(engine.QueueOptions{Handler: l.onDict})

	l.free = make(chan *fetchBatch, z.fetchBatches)
	l.ready = make(chan *fetchBatch, z.fetchBatches+1)
	for i := 0; i < z.fetchBatches; i++ {
		fb := &fetchBatch{id: i, units: make([]unit, l.cfg.BatchPages), order: make([]int32, l.cfg.BatchPages),
			done: make(chan struct{}, 1)}
		for u := range fb.units {
			fb.units[u].comps = make([]*engine.Completion, z.unitReads)
			fb.units[u].data = make([][]byte, z.unitReads)
			fb.units[u].offs = make([]int64, z.unitReads)
			fb.units[u].side = make([]sideSpan, len(l.sides))
		}
		l.fbs = append(l.fbs, fb)
		l.free <- fb
	}
	if z.tokenBufs > 0 {
		l.tokBufs = make(chan *tokenBuf, z.tokenBufs)
		for i := 0; i < z.tokenBufs; i++ {
			b, err := newTokenBufW(l.cfg.BatchRows, l.cfg.SeqLen, l.cfg.Tokens64)
			if err != nil {
				return err
			}
			l.tokMapped++
			if !b.locked && i == 0 {
				l.cfg.Logf("token buffers are not mlock'ed (RLIMIT_MEMLOCK too low)")
			}
			l.tokBufs <- b
		}
	}
	l.rows.init(l)
	l.rows.maxCost = z.mem.rows
	l.leadRatio, l.sideRowBytes = sum.leadRatio, sum.sideRowBytes
	l.outG.init(z.mem.out)
	l.goMemDone = goMemLimit(z.heapShare)
	return nil
}

// Next returns the next batch, io.EOF after the last epoch.
func (l *Loader) Next(ctx context.Context) (*Batch, error) {
	if l.closed {
		return nil, ErrClosed
	}
	if l.mix != nil {
		return l.mix.next(ctx)
	}
	if l.finished {
		return nil, io.EOF
	}
	l.begin()
	var b *Batch
	var err error
	if l.cfg.BatchRows == 0 {
		b, err = l.nextPages(ctx)
	} else {
		b, err = l.nextRows(ctx)
	}
	if err != nil {
		return nil, err
	}
	l.commit(b)
	l.stats.Batches++
	l.stats.Rows += int64(b.Rows)
	l.batches++
	return b, nil
}

// take returns the next fetch batch in order, landed; nil at an epoch's
// end. The caller owns it until it recycles it. A wait cut short by ctx
// keeps the batch, and the next call waits for it again.
func (l *Loader) take(ctx context.Context) (*fetchBatch, error) {
	if l.err != nil {
		return nil, l.err
	}
	fb := l.waiting
	if fb == nil {
		var ok bool
		select {
		case fb, ok = <-l.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if !ok {
			if l.perr != nil {
				l.err = l.perr
				return nil, l.perr
			}
			return nil, ErrClosed
		}
		if fb.n == 0 {
			l.recycle(fb)
			return nil, nil
		}
		l.waiting = fb
	}
	// A producer that fails after handing fb over (a Submit refused) may
	// never issue all of fb's reads: its error ends the wait.
	for pdone := l.pdone; ; {
		select {
		case <-fb.done:
		case <-pdone:
			if l.perr == nil {
				pdone = nil // it finished: fb's reads are all issued
				continue
			}
			l.waiting = nil
			l.err = l.perr
			return nil, l.perr
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		break
	}
	l.waiting = nil
	if err := l.landedErr(fb); err != nil {
		l.recycle(fb)
		l.err = err // the epoch failed: later calls say so again
		return nil, err
	}
	return fb, nil
}

func (l *Loader) nextPages(ctx context.Context) (*Batch, error) {
	for {
		fb := l.unread
		l.unread = nil
		if fb == nil {
			var err error
			if fb, err = l.take(ctx); err != nil {
				return nil, err
			}
		}
		if fb == nil {
			if err := l.endEpoch(); err != nil {
				return nil, err
			}
			continue
		}
		arrs := make([]arrow.Array, 0, fb.n)
		var segs [][]arrow.Array
		b := &Batch{Epoch: fb.epoch, Pages: make([]uint64, 0, fb.n)}
		// firsts[i] is the first row of its page that arrs[i] holds: a
		// batch holding part of a page names every row in Refs.
		firsts, cut := l.firsts[:0], false
		for _, ui := range l.takeOrder(fb)[:fb.n] {
			u := &fb.units[ui]
			var at int64 // the unit's rows before page i
			for i, p := range u.pages {
				a := p.Array()
				if u.cut {
					// A unit cut at a share's or a batch's boundary
					// delivers its rows [lo, hi) only.
					lo, hi := min(max(u.lo-at, 0), int64(a.Len())), min(max(u.hi-at, 0), int64(a.Len()))
					at += int64(a.Len())
					if lo >= hi {
						continue
					}
					arrs = append(arrs, array.NewSlice(a, lo, hi))
					if len(l.sides) > 0 {
						segs = append(segs, sliceSegs(u.segs[i], lo, hi))
					}
					b.Pages = append(b.Pages, uint64(u.first+i))
					b.Rows += int(hi - lo)
					firsts, cut = append(firsts, lo), cut || lo > 0 || hi < int64(a.Len())
					continue
				}
				if u.row >= 0 {
					// A row unit (row shuffle) delivers its one row, not
					// the page it was read with; the other columns' arrays
					// already hold just that row (planSides).
					a = array.NewSlice(a, int64(u.row), int64(u.row)+1)
					b.Refs = append(b.Refs, RowRef{Page: uint64(u.first + i), Row: uint32(u.row)})
				} else {
					a.Retain()
				}
				arrs = append(arrs, a)
				if len(l.sides) > 0 {
					for _, x := range u.segs[i] {
						x.Retain()
					}
					segs = append(segs, u.segs[i])
				}
				b.Pages = append(b.Pages, uint64(u.first+i))
				b.Rows += a.Len()
				firsts = append(firsts, 0)
			}
		}
		if cut && b.Refs == nil {
			b.Refs = make([]RowRef, 0, b.Rows)
			for i, a := range arrs {
				for r := firsts[i]; r < firsts[i]+int64(a.Len()); r++ {
					b.Refs = append(b.Refs, RowRef{Page: b.Pages[i], Row: uint32(r)})
				}
			}
		}
		l.firsts = firsts
		b.setColumns(l.columnsOf(arrs, segs))
		l.work.fb, l.work.cursor = fb, l.cursor
		l.cursor.Commit(fb.xEnd)
		fb.out.Store(true)
		b.free = func() { l.recycle(fb) }
		return b, nil
	}
}

// Stats returns counters so far.
func (l *Loader) Stats() Stats {
	if l.mix != nil {
		return l.mix.stats()
	}
	s := l.stats
	s.Pages = l.sa.pages.Load()
	s.DiskBytes = l.sa.disk.Load()
	s.PageBytes = l.sa.pageBytes.Load()
	s.DecodedBytes = l.sa.decoded.Load()
	s.Dictionaries = l.sa.dicts.Load()
	s.SlowReads = l.sa.slow.Load()
	s.ZeroCopyPages = l.sa.zeroCopy.Load()
	s.SkippedPages = l.skips.n.Load()
	s.SidePages = l.sa.sidePages.Load()
	s.StraddleReads = l.sa.straddle.Load()
	s.Reads = l.sa.reads.Load()
	s.SideCacheHits = l.sa.sideHits.Load()
	s.PageCacheHits = l.sa.pageHits.Load()
	s.CoalescedPages = l.sa.coalesced.Load()
	l.io.stats(&s)
	return s
}

// Index returns the loader's page index.
func (l *Loader) Index() *index.Index { return l.ix }

// Engine returns the loader's engine.
func (l *Loader) Engine() *engine.Engine { return l.eng }

// Close stops the producer, waits for every read in flight and releases
// everything. Batches not yet released stay valid until released.
func (l *Loader) Close() error {
	if l.closed {
		return ErrClosed
	}
	l.closed = true
	return l.closeAll()
}

func (l *Loader) closeAll() error {
	if l.mix != nil {
		return l.mix.close()
	}
	if l.cancel != nil {
		l.cancel()
	}
	l.wg.Wait()
	var errs []error
	if l.pageQ != nil {
		// Reads in flight land and are decoded; after that no Handler
		// touches the fetch batches. Slots still held belong to batches
		// the consumer has not released: they stay valid (the engine
		// unmaps its memory at the last Release), so nothing waits for
		// them here.
		ctx := context.Background()
		errs = append(errs, l.pageQ.Settle(ctx), l.dictQ.Settle(ctx))
	}
	// Drop whatever landed but was never handed over.
	for _, fb := range l.fbs {
		if !fb.out.Load() {
			fb.releasePages()
		}
	}
	l.rows.drop()
	l.last.reset(&l.rows)
	l.work.reset(&l.rows)
	l.dicts.drop()
	l.sideC.drop()
	l.pcache.drop()
	if l.tokBufs != nil {
		l.tokMu.Lock()
		l.tokClosed = true // buffers released from here on are unmapped
		var parked []*tokenBuf
		for len(l.tokBufs) > 0 {
			parked = append(parked, <-l.tokBufs)
		}
		l.tokMu.Unlock()
		for _, tb := range parked {
			l.unmapTokBuf(tb)
		}
	}
	errs = append(errs, l.fc.closeAll())
	if l.owned && l.eng != nil {
		errs = append(errs, l.eng.Close())
	}
	for _, d := range l.decs {
		d.Close()
	}
	if l.syncD != nil {
		l.syncD.Close()
	}
	if l.prodD != nil {
		l.prodD.Close()
	}
	if l.direct != nil {
		l.direct.close()
	}
	if l.goMemDone != nil {
		l.goMemDone()
	}
	return errors.Join(errs...)
}

// putTokBuf takes a token buffer back from a batch, from any goroutine:
// parked for the next batch, or unmapped once the loader is closed.
func (l *Loader) putTokBuf(tb *tokenBuf) {
	l.tokMu.Lock()
	if !l.tokClosed {
		l.tokBufs <- tb // capacity holds every buffer: never blocks
		l.tokMu.Unlock()
		return
	}
	l.tokMu.Unlock()
	l.unmapTokBuf(tb)
}

// unmapTokBuf frees a token buffer for good.
func (l *Loader) unmapTokBuf(tb *tokenBuf) {
	tb.free()
	l.tokMu.Lock()
	l.tokMapped--
	l.tokMu.Unlock()
}
