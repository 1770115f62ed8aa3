package bench

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"golang.org/x/sys/unix"

	"github.com/pagefeed/pagefeed/codec"
	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/procstat"
	"github.com/pagefeed/pagefeed/pin"
	"github.com/pagefeed/pagefeed/rinas"
)

// ParquetConfig is pagebench's Parquet mode: the loader (package rinas)
// over a dataset, or one of its baselines, for a time or a number of
// epochs. Zero fields take the defaults of fill.
type ParquetConfig struct {
	Name  string
	Paths []string // files, directories or globs
	// Sources, instead of Paths, reads a weighted mixture of datasets
	// (rinas.Config.Sources; pagefeed engine only).
	Sources []rinas.Source
	// Column is the projection: a leaf column, or several separated by
	// commas (pagefeed engine only); default the first leaf column.
	Column string
	// LeadColumn, Coalesce and SideCache set rinas.Config's LeadColumn,
	// CoalesceBytes and SideCacheBytes (default: rinas's).
	LeadColumn string
	Coalesce   int
	SideCache  int64
	Shuffle    rinas.Shuffle // default (zero) page
	Fetch      rinas.Fetch   // default (zero) unordered
	Batch      int           // pages per batch; default 64
	Rows       int           // rows per batch (row batches); 0 = page batches
	Buffer     int           // shuffle buffer rows
	IODepth    int           // reads in flight in all, as fio's iodepth (split over the workers); default 256
	Prefetch   int           // batches read ahead; default rinas's automatic window
	Workers    int           // engine workers; default rinas's (GOMAXPROCS, half for uncompressed columns)
	// IOEngine is io_uring, psync (the engine's pread pool) or mmap
	// (baseline: pages copied out of mmap'd files, page cache and all).
	// ParquetIOAuto (the zero value) chooses as the loader does: io_uring,
	// or psync where the kernel refuses io_uring (said through Logf); the
	// result names the one that ran. An explicit io_uring fails there, as
	// fio's.
	IOEngine ParquetIO
	// Engine is pagefeed (default), arrowgo (baseline: arrow-go's pqarrow
	// reading whole random row groups: chunk-granular I/O) or decode (the
	// codec alone: pages preloaded in memory, decoded on every core — the
	// ceiling a decode-bound loader is measured against).
	Engine ParquetEngine
	// IOMode is how the loader reads (io_uring and psync): auto (the
	// default) chooses per file between O_DIRECT and the page cache,
	// direct and buffered force one (rinas.Config.IOMode).
	IOMode rinas.IOMode
	// Pin places the engine workers on the cores of this local rank's GPU
	// group (package pin, $LOCAL_RANK).
	Pin     bool
	Runtime time.Duration
	Loops   int // whole epochs instead of a runtime
	Seed    uint64
	Epoch   uint64
	Rank    int
	World   int
	// DropLast, PadLast, KeepUneven and Deterministic are rinas.Config's.
	DropLast, PadLast, KeepUneven, Deterministic bool
	// DumpOrder writes every delivered page (row mode: "page row") in
	// delivery order, one per line.
	DumpOrder string
	// KeepCache skips evicting the dataset's pages from the page cache
	// before the run (page_cache_growth_bytes is then meaningless).
	KeepCache bool
	Logf      func(format string, args ...any)
}

// ParquetIO is how a Parquet-mode run reads: ParquetIOAuto (the zero
// value), ParquetIOUring, ParquetPsync or ParquetMmap.
type ParquetIO int

const (
	ParquetIOAuto  ParquetIO = iota // io_uring, or psync where the kernel refuses it
	ParquetIOUring                  // the engine's io_uring rings
	ParquetPsync                    // the engine's pread pool
	ParquetMmap                     // pages copied out of mmap'd files
)

var parquetIONames = [...]string{"auto", EngineIOUring, EnginePsync, EngineMmap}

func (k ParquetIO) String() string {
	if k >= 0 && int(k) < len(parquetIONames) {
		return parquetIONames[k]
	}
	return fmt.Sprintf("ParquetIO(%d)", int(k))
}

// ParseParquetIO parses an --ioengine name of Parquet mode; "" and "auto"
// are ParquetIOAuto.
func ParseParquetIO(s string) (ParquetIO, error) {
	if s == "" {
		return ParquetIOAuto, nil
	}
	for i, n := range parquetIONames {
		if s == n {
			return ParquetIO(i), nil
		}
	}
	return 0, fmt.Errorf("%w: ioengine %q (parquet mode: io_uring, psync, mmap or auto)", ErrBadOption, s)
}

// ParquetEngine is what a Parquet-mode run measures: the loader
// (ParquetPagefeed, the zero value) or a baseline.
type ParquetEngine int

const (
	ParquetPagefeed ParquetEngine = iota // the pagefeed loader
	ParquetArrowGo                       // arrow-go's pqarrow, whole row groups
	ParquetDecode                        // the codec alone on preloaded pages
)

var parquetEngineNames = [...]string{"pagefeed", "arrowgo", "decode"}

func (e ParquetEngine) String() string {
	if e >= 0 && int(e) < len(parquetEngineNames) {
		return parquetEngineNames[e]
	}
	return fmt.Sprintf("ParquetEngine(%d)", int(e))
}

// ParseParquetEngine parses an --engine name.
func ParseParquetEngine(s string) (ParquetEngine, error) {
	for i, n := range parquetEngineNames {
		if s == n {
			return ParquetEngine(i), nil
		}
	}
	return 0, fmt.Errorf("%w: engine %q (want pagefeed, arrowgo or decode)", ErrBadOption, s)
}

func (c *ParquetConfig) fill() error {
	if len(c.Sources) > 0 && (c.Engine != ParquetPagefeed || c.IOEngine == ParquetMmap) {
		return &Error{Op: "parquet", Err: fmt.Errorf("%w: --source reads through the pagefeed engine only", ErrBadOption)}
	}
	if len(c.Paths) == 0 && len(c.Sources) == 0 {
		return &Error{Op: "parquet", Err: fmt.Errorf("%w: no --parquet path", ErrBadOption)}
	}
	if c.Name == "" {
		c.Name = "parquet"
	}
	if c.Batch == 0 {
		c.Batch = 64
	}
	if c.IODepth == 0 {
		c.IODepth = 256
	}
	if c.IODepth < 1 || c.IODepth > 4096 {
		return &Error{Op: "parquet", Err: fmt.Errorf("%w: iodepth %d (want 1..4096)", ErrBadOption, c.IODepth)}
	}
	if c.IOEngine < ParquetIOAuto || c.IOEngine > ParquetMmap {
		return &Error{Op: "parquet", Err: fmt.Errorf("%w: %v", ErrBadOption, c.IOEngine)}
	}
	if c.Engine < ParquetPagefeed || c.Engine > ParquetDecode {
		return &Error{Op: "parquet", Err: fmt.Errorf("%w: %v", ErrBadOption, c.Engine)}
	}
	if c.Shuffle < rinas.ShufflePage || c.Shuffle > rinas.ShuffleNone {
		return &Error{Op: "parquet", Err: fmt.Errorf("%w: %v", ErrBadOption, c.Shuffle)}
	}
	if c.Fetch != rinas.Unordered && c.Fetch != rinas.Ordered {
		return &Error{Op: "parquet", Err: fmt.Errorf("%w: fetch %d", ErrBadOption, int(c.Fetch))}
	}
	if strings.Contains(c.Column, ",") && (c.Engine != ParquetPagefeed || c.IOEngine == ParquetMmap) {
		return &Error{Op: "parquet", Err: fmt.Errorf("%w: several columns (%s) need the pagefeed engine on io_uring or psync", ErrBadOption, c.Column)}
	}
	if c.Runtime <= 0 && c.Loops <= 0 {
		c.Loops = 1
	}
	if c.World == 0 {
		c.World = 1
	}
	if c.Logf == nil {
		c.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, "pagebench: "+format+"\n", args...) }
	}
	return nil
}

// ParquetResult is one Parquet-mode run.
type ParquetResult struct {
	Config        ParquetConfig
	Elapsed       time.Duration
	Pages         int64
	Rows          int64
	Batches       int64
	DiskBytes     int64 // what the device moved: pagefeed's O_DIRECT reads rounded out to the alignment
	PageBytes     int64 // the pages (and dictionaries) themselves; 0: as DiskBytes (the baselines count pages)
	DecodedBytes  int64
	BatchLat      *Latency
	IndexBuildNs  int64
	RSSPeak       int64
	RSSSamples    []int64 // RSS once a second
	CacheGrowth   int64   // dataset bytes that entered the page cache
	CPUs          []int   // CPUs the process may run on
	Usr, Sys      time.Duration
	EngineInfo    string
	Prefetch      int   // the loader's read-ahead in batches (chosen when Config.Prefetch is 0)
	Workers       int   // the loader's engine workers
	PlannedBytes  int64 // what Open sized against MemoryLimit (rinas.Loader.PlannedBytes)
	BatchUnits    int   // the units of a fetch batch Open chose (rinas.Loader.BatchPages)
	ZeroCopyPages int64 // pages handed over in their read buffers
	// Reads, SidePages, StraddleReads and CoalescedPages are the loader's
	// counters (rinas.Stats).
	Reads, SidePages, StraddleReads, CoalescedPages, SideCacheHits int64
	// EngineStats are the io_uring workers' counters over the measured
	// run (pagefeed engine on io_uring only).
	EngineStats *engine.Stats
	// IOMode, IOReason, DirectFiles and BufferedFiles are the loader's
	// read mode at the end of the run and why (rinas.Stats); a baseline
	// names its own: mmap reads through the page cache.
	IOMode, IOReason           string
	DirectFiles, BufferedFiles int
	// Sources counts per source of a mixture (Config.Sources).
	Sources []rinas.SourceStats

	measured time.Duration // when set, the measured part of Elapsed (decode only)
	pinned   []int         // the engine workers' CPUs, when pinned
}

// SourceJSON is one source of a mixture in a ParquetJob: rows and tokens
// delivered, its own epochs begun, the bytes its reads moved (io_bytes)
// and its pages.
type SourceJSON struct {
	Name      string `json:"name"`
	Rows      int64  `json:"rows"`
	Tokens    int64  `json:"tokens"`
	Epochs    int64  `json:"epochs"`
	IOBytes   int64  `json:"io_bytes"`
	PageBytes int64  `json:"page_bytes"`
	Pages     int64  `json:"pages"`
	// IOMode is how the source's files were read (its part of the
	// mixture's io_mode), DirectFiles and BufferedFiles how many each way.
	IOMode        string `json:"io_mode,omitempty"`
	DirectFiles   int    `json:"direct_files"`
	BufferedFiles int    `json:"buffered_files"`
}

// ParquetJob is a Parquet-mode job in fio's JSON shape: read.iops is pages
// per second and read.bw_bytes disk bytes per second; the rest are extra.
type ParquetJob struct {
	FioJob
	Pages           int64   `json:"pages"`
	Rows            int64   `json:"rows"`
	RowsPerSec      float64 `json:"rows_per_sec"`
	Batches         int64   `json:"batches"`
	PageBytes       int64   `json:"page_bytes"` // of the pages themselves; io_bytes counts what the device moved
	DecodedBytes    int64   `json:"decoded_bytes"`
	BatchLatNs      FioLat  `json:"batch_lat_ns"`
	IndexBuildNs    int64   `json:"index_build_ns"`
	RSSPeakBytes    int64   `json:"rss_peak_bytes"`
	RSSSamples      []int64 `json:"rss_samples_bytes"`
	PageCacheGrowth int64   `json:"page_cache_growth_bytes"`
	Shuffle         string  `json:"shuffle"`
	Fetch           string  `json:"fetch"`
	IOEngine        string  `json:"ioengine"`
	Engine          string  `json:"engine"`
	CPUs            []int   `json:"cpus"`
	EngineInfo      string  `json:"engine_info,omitempty"`
	Prefetch        int     `json:"prefetch,omitempty"`
	Workers         int     `json:"workers,omitempty"`
	PlannedBytes    int64   `json:"planned_bytes,omitempty"`
	BatchUnits      int     `json:"batch_units,omitempty"`
	ZeroCopyPages   int64   `json:"zero_copy_pages,omitempty"`
	Reads           int64   `json:"reads,omitempty"`
	SidePages       int64   `json:"side_pages,omitempty"`
	StraddleReads   int64   `json:"straddle_reads,omitempty"`
	CoalescedPages  int64   `json:"coalesced_pages,omitempty"`
	SideCacheHits   int64   `json:"side_cache_hits,omitempty"`
	// EngineStats: where the engine workers' time went (io_uring only).
	EngineStats *EngineStatsJSON `json:"engine_stats,omitempty"`
	// IOMode is how the pages were read: direct, buffered or mixed
	// (the loader's auto choice at the run's end, or the mode asked
	// for), and IOReason why; a baseline's is its own (mmap: the page
	// cache).
	IOMode        string       `json:"io_mode,omitempty"`
	IOReason      string       `json:"io_mode_reason,omitempty"`
	DirectFiles   int          `json:"direct_files,omitempty"`
	BufferedFiles int          `json:"buffered_files,omitempty"`
	Sources       []SourceJSON `json:"sources,omitempty"`
}

// EngineStatsJSON is engine.Stats over the measured run, in nanoseconds.
type EngineStatsJSON struct {
	Workers         int    `json:"workers"`
	Enters          uint64 `json:"enters"`
	Waits           uint64 `json:"waits"`
	WaitNs          int64  `json:"wait_ns"`
	InKernelAtWaits uint64 `json:"in_kernel_at_waits"`
	QueuedAtWaits   uint64 `json:"queued_at_waits"`
	Reaped          uint64 `json:"reaped"`
	HandlerNs       int64  `json:"handler_ns"`
}

// ParquetOutput is the JSON document of a Parquet-mode run.
type ParquetOutput struct {
	FioVersion string       `json:"fio version"`
	Timestamp  int64        `json:"timestamp"`
	Jobs       []ParquetJob `json:"jobs"`
}

// RunParquet runs cfg. Progress, when set, is called about once a second
// with the pages so far.
func RunParquet(ctx context.Context, cfg ParquetConfig, progress func(pages int64, elapsed time.Duration)) (*ParquetResult, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	all := cfg.Paths
	for _, s := range cfg.Sources {
		all = append(slices.Clone(all), s.Paths...)
	}
	files, err := expandParquet(all)
	if err != nil {
		return nil, err
	}
	res := &ParquetResult{Config: cfg, BatchLat: NewLatency()}
	if !cfg.KeepCache {
		evictCache(files)
	}
	before := residentBytes(files)
	var dump *bufio.Writer
	if cfg.DumpOrder != "" {
		f, err := os.Create(cfg.DumpOrder)
		if err != nil {
			return nil, &Error{Op: "dump-order", Path: cfg.DumpOrder, Err: err}
		}
		defer f.Close()
		dump = bufio.NewWriterSize(f, 1<<20)
		defer dump.Flush()
	}
	stopRSS := sampleRSS(&res.RSSSamples)
	ru0 := rusage()
	start := time.Now()
	switch {
	case cfg.Engine == ParquetArrowGo:
		err = runArrowGo(ctx, cfg, files, res, dump, progress)
	case cfg.Engine == ParquetDecode:
		err = runDecodeOnly(ctx, cfg, files, res)
	case cfg.IOEngine == ParquetMmap:
		err = runMmap(ctx, cfg, files, res, dump, progress)
	default:
		err = runLoader(ctx, cfg, files, res, dump, progress)
	}
	res.Elapsed = time.Since(start)
	if res.measured > 0 {
		res.Elapsed = res.measured
	}
	ru1 := rusage()
	stopRSS()
	res.Usr = ru1.usr - ru0.usr
	res.Sys = ru1.sys - ru0.sys
	res.RSSPeak = ru1.maxrss
	res.CacheGrowth = max(residentBytes(files)-before, 0)
	res.CPUs = affinity()
	if res.pinned != nil {
		res.CPUs = res.pinned
	}
	if err != nil {
		return res, err
	}
	if dump != nil {
		if err := dump.Flush(); err != nil {
			return res, &Error{Op: "dump-order", Path: cfg.DumpOrder, Err: err}
		}
	}
	return res, nil
}

// deadline reports whether a runtime-bounded run is over.
func deadline(cfg *ParquetConfig, start time.Time) bool {
	return cfg.Runtime > 0 && cfg.Loops <= 0 && time.Since(start) >= cfg.Runtime
}

func runLoader(ctx context.Context, cfg ParquetConfig, files []string, res *ParquetResult, dump *bufio.Writer, progress func(int64, time.Duration)) error {
	sh, fe := cfg.Shuffle, cfg.Fetch
	epochs := cfg.Loops
	if epochs <= 0 {
		epochs = 1 << 30 // runtime-bounded
	}
	kind := engine.Auto
	switch cfg.IOEngine {
	case ParquetIOUring:
		kind = engine.IOUring
	case ParquetPsync:
		kind = engine.Pread
	}
	rc := rinas.Config{
		Paths: files, Shuffle: sh, Fetch: fe, BatchPages: cfg.Batch, BatchRows: cfg.Rows, BufferRows: cfg.Buffer,
		Prefetch: cfg.Prefetch, Seed: cfg.Seed, Epoch: cfg.Epoch, Epochs: epochs, Rank: cfg.Rank, World: cfg.World,
		DropLast: cfg.DropLast, PadLast: cfg.PadLast, KeepUneven: cfg.KeepUneven, Deterministic: cfg.Deterministic,
		// --iodepth is the depth of the whole run, as fio's is for one
		// job: the workers' rings share it.
		IODepth: cfg.IODepth,
		Engine:  engine.Options{Kind: kind, Workers: cfg.Workers, Logf: cfg.Logf},
		IOMode:  cfg.IOMode,
		Index:   index.Options{Logf: cfg.Logf},
		Logf:    cfg.Logf,
		Pin:     rinas.PinOptions{Enable: cfg.Pin},
	}
	if cfg.Column != "" {
		rc.Columns = strings.Split(cfg.Column, ",")
	}
	if len(cfg.Sources) > 0 {
		rc.Paths, rc.Sources = nil, cfg.Sources
	}
	rc.LeadColumn, rc.CoalesceBytes, rc.SideCacheBytes = cfg.LeadColumn, cfg.Coalesce, cfg.SideCache
	l, err := rinas.Open(ctx, rc)
	if err != nil {
		return uringRefused(kind, err)
	}
	defer l.Close()
	if cfg.IOEngine == ParquetIOAuto {
		res.Config.IOEngine = ParquetIOUring
		if l.Engine().Info().Kind == engine.Pread {
			res.Config.IOEngine = ParquetPsync
		}
	}
	res.EngineInfo = engineInfo(l.Engine().Info())
	res.pinned = l.CPUs()
	res.IndexBuildNs = l.Stats().IndexBuildNs
	est0 := l.Engine().Stats()
	start := time.Now()
	lastTick := start
	for !deadline(&cfg, start) {
		t0 := time.Now()
		b, err := l.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		res.BatchLat.Record(time.Since(t0).Nanoseconds())
		res.Batches++
		res.Rows += int64(b.Rows)
		if dump != nil {
			// Page batches name their pages (one that holds part of a
			// page, at a rank's boundary, also names its rows in Refs).
			if len(b.Refs) > 0 && (cfg.Rows > 0 || cfg.Shuffle == rinas.ShuffleRow) {
				for _, r := range b.Refs {
					dump.WriteString(strconv.FormatUint(r.Page, 10))
					dump.WriteByte(' ')
					dump.WriteString(strconv.FormatUint(uint64(r.Row), 10))
					dump.WriteByte('\n')
				}
			} else {
				for _, p := range b.Pages {
					dump.WriteString(strconv.FormatUint(p, 10))
					dump.WriteByte('\n')
				}
			}
		}
		b.Release()
		if progress != nil && time.Since(lastTick) >= time.Second {
			lastTick = time.Now()
			progress(l.Stats().Pages, time.Since(start))
		}
	}
	st := l.Stats()
	res.Pages, res.DiskBytes, res.PageBytes, res.DecodedBytes = st.Pages, st.DiskBytes, st.PageBytes, st.DecodedBytes
	res.ZeroCopyPages, res.Prefetch, res.Workers = st.ZeroCopyPages, l.Prefetch(), l.Workers()
	res.Reads, res.SidePages, res.StraddleReads, res.CoalescedPages = st.Reads, st.SidePages, st.StraddleReads, st.CoalescedPages
	res.SideCacheHits = st.SideCacheHits
	res.PlannedBytes, res.BatchUnits = l.PlannedBytes(), l.BatchPages()
	res.IOMode, res.IOReason, res.DirectFiles, res.BufferedFiles = st.IOMode, st.IOReason, st.DirectFiles, st.BufferedFiles
	res.Sources = st.Sources
	if l.Engine().Info().Kind == engine.IOUring {
		est := l.Engine().Stats().Sub(est0)
		res.EngineStats = &est
	}
	return nil
}

// engineInfo names an engine's backend and what it set up, e.g.
// "io_uring SINGLE_ISSUER|DEFER_TASKRUN fixedbufs hugepages".
func engineInfo(i engine.Info) string {
	s := "pread"
	if i.Kind == engine.IOUring {
		s = "io_uring"
		if i.SetupFlags != "" {
			s += " " + i.SetupFlags
		}
	}
	if i.FixedBuffers {
		s += " fixedbufs"
	}
	if i.RegisterFiles {
		s += " registerfiles"
	}
	if i.HugePages {
		s += " hugepages"
	}
	return s
}

// buildIndex indexes the baselines' dataset for the configured column.
func buildIndex(ctx context.Context, cfg ParquetConfig, files []string, res *ParquetResult) (*index.Index, error) {
	rd := engine.OpenBatchReader(0, cfg.Logf)
	defer rd.Close()
	opts := index.Options{Logf: cfg.Logf, Reader: rd}
	if cfg.Column != "" {
		opts.Columns = []string{cfg.Column}
	}
	ix, err := index.Build(ctx, files, opts)
	if err != nil {
		return nil, err
	}
	res.IndexBuildNs = int64(ix.Stats().BuildTime)
	return ix, nil
}

// baselinePlan returns the loader's own page plan of epoch
// (rinas.PlanPagesRows) for a baseline: cfg's shuffle, seed, rank, world and
// equal-steps policy over ix's units, the column's pages or under the
// rowgroup shuffle its row groups (unitPages). It is the plan of page
// batches also where cfg asks for row batches, whose end by row counts
// the baselines do not reproduce; the row shuffle, whose units are rows,
// has none (ErrBadOption).
func baselinePlan(cfg *ParquetConfig, ix *index.Index, epoch uint64) (rinas.PagePlan, error) {
	rows := ix.PageRows(0)
	if cfg.Shuffle == rinas.ShuffleRowGroup {
		rows = make([]int32, ix.NumChunks())
		for c := range rows {
			rows[c] = int32(ix.Chunk(0, c).NumRows)
		}
	}
	rc := rinas.Config{Shuffle: cfg.Shuffle, Seed: cfg.Seed, Rank: cfg.Rank, World: cfg.World,
		DropLast: cfg.DropLast, PadLast: cfg.PadLast, KeepUneven: cfg.KeepUneven}
	p, err := rinas.PlanPagesRows(rc, rows, epoch)
	if err != nil {
		return p, &Error{Op: "parquet", Off: -1, Err: fmt.Errorf("%w: the %s baseline reads the loader's page plan: %v", ErrBadOption, baselineName(cfg), err)}
	}
	return p, nil
}

// baselineName names cfg's baseline for errors.
func baselineName(cfg *ParquetConfig) string {
	if cfg.Engine != ParquetPagefeed {
		return cfg.Engine.String()
	}
	return cfg.IOEngine.String()
}

// unitPages returns the pages [lo, hi) of the column of baselinePlan's
// unit u: the page itself, or under the rowgroup shuffle the row group's.
func unitPages(cfg *ParquetConfig, ix *index.Index, u uint64) (lo, hi int) {
	if cfg.Shuffle != rinas.ShuffleRowGroup {
		return int(u), int(u) + 1
	}
	c := ix.Chunk(0, int(u))
	return c.FirstPage, c.FirstPage + c.NumPages
}

// runMmap is the page-cache baseline: the loader's page plan
// (baselinePlan), each page copied out of the mmap'd file and decoded.
// Its batches are Batch units of the plan.
func runMmap(ctx context.Context, cfg ParquetConfig, files []string, res *ParquetResult, dump *bufio.Writer, progress func(int64, time.Duration)) error {
	ix, err := buildIndex(ctx, cfg, files, res)
	if err != nil {
		return err
	}
	m := &mmapReader{ix: ix, maps: make([][]byte, ix.NumFiles()), dicts: map[int]*codec.Dictionary{}, buf: make([]byte, 0, 1<<20)}
	defer m.close()
	if err := m.open(); err != nil {
		return err
	}
	start := time.Now()
	lastTick, batchStart := start, start
	for ep := 0; cfg.Loops <= 0 || ep < cfg.Loops; ep++ {
		plan, err := baselinePlan(&cfg, ix, cfg.Epoch+uint64(ep))
		if err != nil {
			return err
		}
		for j := uint64(0); j < plan.Len(); j++ {
			if j%uint64(cfg.Batch) == 0 {
				if deadline(&cfg, start) {
					return nil
				}
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			lo, hi := unitPages(&cfg, ix, plan.At(j))
			for g := lo; g < hi; g++ {
				if err := m.page(g, res); err != nil {
					return err
				}
				if dump != nil {
					dump.WriteString(strconv.Itoa(g))
					dump.WriteByte('\n')
				}
			}
			if (j+1)%uint64(cfg.Batch) == 0 || j+1 == plan.Len() {
				res.Batches++
				now := time.Now()
				res.BatchLat.Record(now.Sub(batchStart).Nanoseconds())
				batchStart = now
				if progress != nil && now.Sub(lastTick) >= time.Second {
					lastTick = now
					progress(res.Pages, now.Sub(start))
				}
			}
		}
		if deadline(&cfg, start) {
			break
		}
	}
	return nil
}

// mmapReader is runMmap's reader: every file of ix mapped, one decoder,
// and each chunk's dictionary decoded once.
type mmapReader struct {
	ix    *index.Index
	maps  [][]byte
	dec   *codec.Decoder
	dicts map[int]*codec.Dictionary
	buf   []byte
}

// open maps every file and makes the decoder; close undoes what it did.
func (m *mmapReader) open() error {
	for i := range m.maps {
		fi := m.ix.File(i)
		f, err := os.Open(fi.Path)
		if err != nil {
			return &Error{Op: "open", Path: fi.Path, Err: err}
		}
		b, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size), unix.PROT_READ, unix.MAP_SHARED)
		f.Close()
		if err != nil {
			return &Error{Op: "mmap", Path: fi.Path, Err: err}
		}
		m.maps[i] = b
	}
	m.dec = codec.NewDecoder(codec.Options{})
	return nil
}

func (m *mmapReader) close() {
	for _, b := range m.maps {
		if b != nil {
			unix.Munmap(b)
		}
	}
	if m.dec != nil {
		m.dec.Close()
	}
}

// page copies page g out of its mapped file (its chunk's dictionary
// first, once) and decodes it, counting it in res.
func (m *mmapReader) page(g int, res *ParquetResult) error {
	ix := m.ix
	loc := ix.Locate(0, g)
	ci := ix.Chunk(0, loc.Chunk)
	ch := codec.ChunkOf(ci.Descr, ci.Codec, ix.File(loc.File).Path, nil)
	mp := m.maps[loc.File]
	d := m.dicts[loc.Chunk]
	if d == nil && ci.DictSize > 0 {
		var err error
		if d, err = m.dec.Dictionary(ch, mp[ci.DictOffset:ci.DictOffset+int64(ci.DictSize)], ci.DictOffset); err != nil {
			return err
		}
		m.dicts[loc.Chunk] = d
		res.DiskBytes += int64(ci.DictSize)
	}
	m.buf = append(m.buf[:0], mp[loc.Offset:loc.Offset+int64(loc.Size)]...)
	pg, err := m.dec.DecodePage(ch, d, m.buf, loc.Offset)
	if err != nil {
		return err
	}
	res.Pages++
	res.Rows += int64(pg.Rows())
	res.DiskBytes += int64(loc.Size)
	res.DecodedBytes += int64(pg.Header().UncompressedSize)
	pg.Release()
	return nil
}

// arrowFile is a file open for runArrowGo: arrow-go's reader of it and the
// index of the column's top-level field.
type arrowFile struct {
	f   *os.File
	pr  *file.Reader
	fr  *pqarrow.FileReader
	col int
}

// openArrowFile opens path for arrow-go, reading the top-level field top.
func openArrowFile(path, top string) (*arrowFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{Op: "open", Path: path, Err: err}
	}
	pr, err := file.NewParquetReader(f)
	if err != nil {
		f.Close()
		return nil, &Error{Op: "open", Path: path, Err: err}
	}
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		pr.Close()
		f.Close()
		return nil, &Error{Op: "open", Path: path, Err: err}
	}
	o := &arrowFile{f: f, pr: pr, fr: fr, col: pr.MetaData().Schema.Root().FieldIndexByName(top)}
	if o.col < 0 {
		pr.Close()
		f.Close()
		return nil, &Error{Op: "open", Path: path, Err: fmt.Errorf("no field %q", top)}
	}
	return o, nil
}

// runArrowGo is the chunk-granular baseline: arrow-go's pqarrow reads
// whole row groups of the column, in the loader's page plan
// (baselinePlan). Under the rowgroup shuffle it reads each row group once
// and keeps all its rows; any other shuffle is served page by page, and
// arrow-go can only read the whole row group holding the page
// (chunk-granular I/O), keeping the page's rows: the YOUMU comparison.
func runArrowGo(ctx context.Context, cfg ParquetConfig, files []string, res *ParquetResult, dump *bufio.Writer, progress func(int64, time.Duration)) error {
	ix, err := buildIndex(ctx, cfg, files, res)
	if err != nil {
		return err
	}
	readers := make([]*arrowFile, ix.NumFiles())
	defer func() {
		for _, o := range readers {
			if o != nil {
				o.pr.Close()
				o.f.Close()
			}
		}
	}()
	top := strings.SplitN(ix.Column(0).Path, ".", 2)[0]
	start := time.Now()
	lastTick := start
	for ep := 0; cfg.Loops <= 0 || ep < cfg.Loops; ep++ {
		plan, err := baselinePlan(&cfg, ix, cfg.Epoch+uint64(ep))
		if err != nil {
			return err
		}
		for j := uint64(0); j < plan.Len(); j++ {
			if deadline(&cfg, start) {
				return nil
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			c, keep := int(plan.At(j)), int64(-1)
			page := c
			if cfg.Shuffle != rinas.ShuffleRowGroup {
				loc := ix.Locate(0, c)
				c, keep = loc.Chunk, int64(loc.NumRows)
				if keep < 0 {
					return &Error{Op: "arrowgo", Path: ix.File(loc.File).Path, Err: fmt.Errorf("%w: page shuffle via arrow-go needs page row counts (offset index)", ErrBadOption)}
				}
			}
			ci := ix.Chunk(0, c)
			if readers[ci.File] == nil {
				if readers[ci.File], err = openArrowFile(ix.File(ci.File).Path, top); err != nil {
					return err
				}
			}
			if err := readArrowChunk(ctx, readers[ci.File], ix, ci, page, keep, res, dump); err != nil {
				return err
			}
			if progress != nil && time.Since(lastTick) >= time.Second {
				lastTick = time.Now()
				progress(res.Pages, time.Since(start))
			}
		}
		if deadline(&cfg, start) {
			break
		}
	}
	return nil
}

// readArrowChunk reads row group ci of the column through o as one batch
// and counts it in res: keep ≥ 0, as page page of keep rows (the page
// shuffle); keep < 0, as the whole row group.
func readArrowChunk(ctx context.Context, o *arrowFile, ix *index.Index, ci index.ChunkInfo, page int, keep int64, res *ParquetResult, dump *bufio.Writer) error {
	t0 := time.Now()
	cr, err := o.fr.GetColumn(ctx, o.col)
	if err != nil {
		return err
	}
	chunked, err := o.fr.ReadColumn([]int{ci.RowGroup}, cr)
	if err != nil {
		return &Error{Op: "read", Path: o.f.Name(), Err: err}
	}
	rowsRead := int64(chunked.Len())
	chunked.Release()
	res.BatchLat.Record(time.Since(t0).Nanoseconds())
	res.Batches++
	if cc, err := o.pr.MetaData().RowGroup(ci.RowGroup).ColumnChunk(ix.Leaf(0, ci.File)); err == nil {
		res.DiskBytes += cc.TotalCompressedSize()
		res.DecodedBytes += cc.TotalUncompressedSize()
	}
	if keep >= 0 {
		res.Rows += keep
		res.Pages++
		if dump != nil {
			dump.WriteString(strconv.Itoa(page))
			dump.WriteByte('\n')
		}
		return nil
	}
	res.Rows += rowsRead
	res.Pages += int64(ci.NumPages)
	if dump != nil {
		for g := ci.FirstPage; g < ci.FirstPage+ci.NumPages; g++ {
			dump.WriteString(strconv.Itoa(g))
			dump.WriteByte('\n')
		}
	}
	return nil
}

// JSON converts the result to fio's JSON shape with the Parquet fields.
func (r *ParquetResult) JSON() ParquetOutput {
	cfg := r.Config
	secs := r.Elapsed.Seconds()
	if secs <= 0 {
		secs = 1e-9
	}
	ms := r.Elapsed.Milliseconds()
	pageBytes := r.PageBytes
	if pageBytes == 0 {
		pageBytes = r.DiskBytes
	}
	j := ParquetJob{
		FioJob: FioJob{
			JobName: cfg.Name,
			JobOptions: map[string]string{
				"parquet": strings.Join(cfg.Paths, ":"), "column": cfg.Column, "shuffle": cfg.Shuffle.String(), "fetch": cfg.Fetch.String(),
				"batch": strconv.Itoa(cfg.Batch), "iodepth": strconv.Itoa(cfg.IODepth), "ioengine": cfg.IOEngine.String(), "engine": cfg.Engine.String(),
			},
			Read: FioIO{
				IOBytes: r.DiskBytes, IOKBytes: r.DiskBytes >> 10, BWBytes: int64(float64(r.DiskBytes) / secs),
				BW: int64(float64(r.DiskBytes) / secs / 1024), IOPS: float64(r.Pages) / secs, Runtime: ms, TotalIOs: r.Pages,
				ClatNs: emptyIO().ClatNs,
			},
			JobRuntime: ms,
			UsrCPU:     100 * r.Usr.Seconds() / secs,
			SysCPU:     100 * r.Sys.Seconds() / secs,
		},
		Pages: r.Pages, Rows: r.Rows, RowsPerSec: float64(r.Rows) / secs, Batches: r.Batches, PageBytes: pageBytes, DecodedBytes: r.DecodedBytes,
		BatchLatNs: fioLat(r.BatchLat, true), IndexBuildNs: r.IndexBuildNs, RSSPeakBytes: r.RSSPeak, RSSSamples: r.RSSSamples,
		PageCacheGrowth: r.CacheGrowth, Shuffle: cfg.Shuffle.String(), Fetch: cfg.Fetch.String(), IOEngine: cfg.IOEngine.String(), Engine: cfg.Engine.String(),
		CPUs: r.CPUs, EngineInfo: r.EngineInfo, Prefetch: r.Prefetch, Workers: r.Workers, ZeroCopyPages: r.ZeroCopyPages,
		PlannedBytes: r.PlannedBytes, BatchUnits: r.BatchUnits,
		Reads: r.Reads, SidePages: r.SidePages, StraddleReads: r.StraddleReads, CoalescedPages: r.CoalescedPages, SideCacheHits: r.SideCacheHits,
		IOMode: r.IOMode, IOReason: r.IOReason, DirectFiles: r.DirectFiles, BufferedFiles: r.BufferedFiles,
	}
	for _, s := range r.Sources {
		j.Sources = append(j.Sources, SourceJSON{Name: s.Name, Rows: s.Rows, Tokens: s.Tokens, Epochs: s.Epochs, IOBytes: s.DiskBytes, PageBytes: s.PageBytes, Pages: s.Pages,
			IOMode: s.IOMode, DirectFiles: s.DirectFiles, BufferedFiles: s.BufferedFiles})
	}
	if j.IOMode == "" && cfg.IOEngine == ParquetMmap {
		j.IOMode, j.IOReason = "mmap", "mmap: pages copied out of memory-mapped files (the page cache)"
	}
	if st := r.EngineStats; st != nil {
		j.EngineStats = &EngineStatsJSON{Workers: r.Workers, Enters: st.Enters, Waits: st.Waits, WaitNs: int64(st.WaitTime),
			InKernelAtWaits: st.InKernelAtWaits, QueuedAtWaits: st.QueuedAtWaits, Reaped: st.Reaped, HandlerNs: int64(st.HandlerTime)}
	}
	return ParquetOutput{FioVersion: Version, Timestamp: time.Now().Unix(), Jobs: []ParquetJob{j}}
}

// WriteJSON writes the result as indented JSON.
func (r *ParquetResult) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r.JSON(), "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// WriteNormal writes a short human summary.
func (r *ParquetResult) WriteNormal(w io.Writer) error {
	j := r.JSON().Jobs[0]
	_, err := fmt.Fprintf(w, "%s: (shuffle=%s, fetch=%s, ioengine=%s, engine=%s, batch=%d, io_mode=%s)\n"+
		"  read: pages/s=%.0f, BW=%s, rows/s=%.0f, decoded=%s in %.2fs\n"+
		"  batch lat (usec): mean=%.1f, p50=%.1f, p99=%.1f, p99.9=%.1f\n"+
		"  index build=%.1fms, rss peak=%s, page cache growth=%s, cpu: usr=%.1f%% sys=%.1f%% on cpus %v\n",
		j.JobName, j.Shuffle, j.Fetch, j.IOEngine, j.Engine, r.Config.Batch, cmp.Or(j.IOMode, "-"),
		j.Read.IOPS, fmtBytesRate(float64(j.Read.BWBytes)), j.RowsPerSec, fmtBytes(float64(r.DecodedBytes), true), r.Elapsed.Seconds(),
		j.BatchLatNs.Mean/1e3, float64(j.BatchLatNs.Percentile["50.000000"])/1e3, float64(j.BatchLatNs.Percentile["99.000000"])/1e3,
		float64(j.BatchLatNs.Percentile["99.900000"])/1e3,
		float64(r.IndexBuildNs)/1e6, fmtBytes(float64(r.RSSPeak), true), fmtBytes(float64(r.CacheGrowth), true), j.UsrCPU, j.SysCPU, r.CPUs)
	if err == nil && r.EngineStats != nil {
		_, err = io.WriteString(w, engineStatsLine(r.EngineStats, r.Workers, r.Elapsed))
	}
	if err == nil && r.IOReason != "" {
		_, err = fmt.Fprintf(w, "  reads: %s\n", r.IOReason)
	}
	return err
}

// engineStatsLine says where the engine workers' time went over a run of
// length el: waiting for reads (and at what depth, with what backlog) or
// running handlers (decoding).
func engineStatsLine(st *engine.Stats, workers int, el time.Duration) string {
	wall := float64(el) * float64(max(workers, 1))
	if wall <= 0 {
		return ""
	}
	waits := float64(max(st.Waits, 1))
	return fmt.Sprintf("  engine workers (%d): waiting %.0f%% of the time (at depth %.1f, %.0f queued behind), handlers %.0f%%, %.1f reads per enter\n",
		workers, 100*float64(st.WaitTime)/wall, float64(st.InKernelAtWaits)/waits, float64(st.QueuedAtWaits)/waits,
		100*float64(st.HandlerTime)/wall, float64(st.Reaped)/float64(max(st.Enters, 1)))
}

func fmtBytesRate(bps float64) string { return fmtBytes(bps, true) + "/s" }

// expandParquet lists the dataset's files as the index and the loader
// read them (index.ExpandPaths), so a run evicts and measures exactly the
// files it reads.
func expandParquet(paths []string) ([]string, error) {
	infos, err := index.ExpandPaths(paths, nil)
	if err != nil {
		return nil, err
	}
	files := make([]string, len(infos))
	for i, fi := range infos {
		files[i] = fi.Path
	}
	return files, nil
}

// evictCache drops the dataset's clean pages from the page cache, so a
// run starts cold and page-cache growth is measured from zero.
func evictCache(files []string) {
	for _, path := range files {
		if f, err := os.Open(path); err == nil {
			dropCache(int(f.Fd()))
			f.Close()
		}
	}
}

// residentBytes sums the dataset's bytes in the page cache (mincore).
func residentBytes(files []string) int64 {
	var total int64
	for _, path := range files {
		total += residentFile(path)
	}
	return total
}

func residentFile(path string) int64 {
	page := int64(os.Getpagesize())
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return 0
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0
	}
	defer unix.Munmap(m)
	vec := make([]byte, (st.Size()+page-1)/page)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		return 0
	}
	var n int64
	for _, v := range vec {
		if v&1 != 0 {
			n += page
		}
	}
	return n
}

type usage struct {
	usr, sys time.Duration
	maxrss   int64
}

func rusage() usage {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return usage{}
	}
	u := usage{usr: time.Duration(ru.Utime.Nano()), sys: time.Duration(ru.Stime.Nano()), maxrss: ru.Maxrss << 10}
	if hwm := peakRSS(); hwm > 0 {
		u.maxrss = hwm
	}
	return u
}

// peakRSS returns this process's peak resident set (VmHWM), 0 when
// unknown. Unlike getrusage's ru_maxrss it starts afresh at exec: a
// child started from a large parent (the benchmark's cgroup runs) would
// otherwise report the parent's peak.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n << 10
			}
		}
	}
	return 0
}

// sampleRSS appends the process RSS to out once a second until stopped.
func sampleRSS(out *[]int64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				*out = append(*out, procstat.RSS())
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func affinity() []int {
	cpus, _ := pin.Current()
	return cpus
}

// decodeOnlyBytes caps the pages preloaded by the decode-only run.
const decodeOnlyBytes = 256 << 20

// runDecodeOnly decodes pages already in memory on GOMAXPROCS goroutines,
// each with its own Decoder, for the runtime (or one pass per loop): the
// codec's throughput on the same pages the loader reads, without I/O.
func runDecodeOnly(ctx context.Context, cfg ParquetConfig, files []string, res *ParquetResult) error {
	ix, err := buildIndex(ctx, cfg, files, res)
	if err != nil {
		return err
	}
	pages, err := preloadPages(&cfg, ix)
	if err != nil {
		return err
	}
	workers := runtime.GOMAXPROCS(0)
	if cfg.Workers > 0 {
		workers = cfg.Workers
	}
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var c decodeCounts
			err := decodeShare(ctx, &cfg, pages, w, workers, start, &c)
			mu.Lock()
			res.Pages += c.pages
			res.Rows += c.rows
			res.DecodedBytes += c.decoded
			res.DiskBytes += c.disk
			if err != nil && firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}(w)
	}
	wg.Wait()
	res.measured = time.Since(start)
	return firstErr
}

// preloadedPage is a page runDecodeOnly holds in memory, with its chunk
// and decoded dictionary.
type preloadedPage struct {
	ch   *codec.Chunk
	dict *codec.Dictionary
	b    []byte
	off  int64
}

// preloadPages reads the pages of the loader's page plan of cfg's first
// epoch (baselinePlan), in its order, up to decodeOnlyBytes, and decodes
// their chunks' dictionaries.
func preloadPages(cfg *ParquetConfig, ix *index.Index) ([]preloadedPage, error) {
	plan, err := baselinePlan(cfg, ix, cfg.Epoch)
	if err != nil {
		return nil, err
	}
	dec := codec.NewDecoder(codec.Options{})
	defer dec.Close()
	dicts := map[int]*codec.Dictionary{}
	chunks := map[int]*codec.Chunk{}
	var pages []preloadedPage
	total := 0
	for k := uint64(0); k < plan.Len() && total < decodeOnlyBytes; k++ {
		lo, hi := unitPages(cfg, ix, plan.At(k))
		for g := lo; g < hi && total < decodeOnlyBytes; g++ {
			loc := ix.Locate(0, g)
			ci := ix.Chunk(0, loc.Chunk)
			path := ix.File(loc.File).Path
			read := func(off int64, n int) ([]byte, error) {
				b, err := engine.ReadRange(path, off, n, engine.Off)
				if err == io.EOF { // shorter than the index says
					err = &Error{Op: "read", Path: path, Off: off, Err: io.ErrUnexpectedEOF}
				}
				return b, err
			}
			ch := chunks[loc.Chunk]
			if ch == nil {
				ch = codec.ChunkOf(ci.Descr, ci.Codec, path, nil)
				chunks[loc.Chunk] = ch
				if ci.DictSize > 0 {
					b, err := read(ci.DictOffset, int(ci.DictSize))
					if err != nil {
						return nil, err
					}
					if dicts[loc.Chunk], err = dec.Dictionary(ch, b, ci.DictOffset); err != nil {
						return nil, err
					}
				}
			}
			b, err := read(loc.Offset, int(loc.Size))
			if err != nil {
				return nil, err
			}
			pages = append(pages, preloadedPage{ch, dicts[loc.Chunk], b, loc.Offset})
			total += len(b)
		}
	}
	if len(pages) == 0 {
		return nil, &Error{Op: "decode", Err: fmt.Errorf("%w: no pages", ErrBadOption)}
	}
	return pages, nil
}

// decodeCounts is what one decode-only worker did.
type decodeCounts struct {
	pages, rows, decoded, disk int64
}

// decodeShare decodes worker w's share of pages (every workers-th, from
// the w-th) with its own Decoder, round after round until the runtime is
// over or ctx is done (Loops: once), counting into c.
func decodeShare(ctx context.Context, cfg *ParquetConfig, pages []preloadedPage, w, workers int, start time.Time, c *decodeCounts) error {
	d := codec.NewDecoder(codec.Options{Mem: &codec.PoolAllocator{}})
	defer d.Close()
	for i := w; ; i += workers {
		if i >= len(pages) {
			if cfg.Loops > 0 {
				return nil
			}
			i %= len(pages)
		}
		if c.pages%64 == 0 && (ctx.Err() != nil || deadline(cfg, start)) {
			return nil
		}
		pg := &pages[i]
		out, err := d.DecodePage(pg.ch, pg.dict, pg.b, pg.off)
		if err != nil {
			return err
		}
		c.pages++
		c.rows += int64(out.Rows())
		c.decoded += int64(out.Header().UncompressedSize)
		c.disk += int64(len(pg.b))
		out.Release()
	}
}

// uringRefused words an explicit io_uring the kernel refuses as fio does
// ("err=1, func=io_queue_init, error=Operation not permitted"); other
// errors pass unchanged.
func uringRefused(kind engine.Kind, err error) error {
	var ee *engine.Error
	var errno syscall.Errno
	if kind != engine.IOUring || !errors.As(err, &ee) || ee.Op != "io_uring setup" || !errors.As(err, &errno) {
		return err
	}
	msg := errno.Error()
	if msg != "" {
		msg = strings.ToUpper(msg[:1]) + msg[1:]
	}
	return fmt.Errorf("%w: io_uring: err=%d, func=io_queue_init, error=%s (leave --ioengine unset to fall back to psync)", ErrEngine, int(errno), msg)
}
