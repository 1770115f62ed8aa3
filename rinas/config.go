package rinas

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/index"
)

// Sentinel errors.
var (
	ErrClosed = errors.New("rinas: loader closed")
	ErrConfig = errors.New("rinas: invalid config")
	ErrState  = errors.New("rinas: state does not match this loader")
	ErrMemory = errors.New("rinas: configuration exceeds the memory limit")
)

// Shuffle is how an epoch orders its data.
type Shuffle int

const (
	ShufflePage     Shuffle = iota // YOUMU: pages in a seeded random order
	ShuffleRow                     // every row in random order; a page is read once while it stays cached
	ShuffleRowGroup                // Reimu: row groups in random order, rows shuffled within
	ShuffleStream                  // pages in file order through the shuffle buffer
	ShuffleNone                    // pages in file order
)

var shuffleNames = [...]string{"page", "row", "rowgroup", "stream", "none"}

func (s Shuffle) String() string {
	if int(s) < len(shuffleNames) {
		return shuffleNames[s]
	}
	return fmt.Sprintf("Shuffle(%d)", int(s))
}

// ParseShuffle parses a Shuffle name.
func ParseShuffle(s string) (Shuffle, error) {
	for i, n := range shuffleNames {
		if strings.EqualFold(s, n) {
			return Shuffle(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown shuffle %q (want page, row, rowgroup, stream or none)", ErrConfig, s)
}

// Fetch is how the reads of a batch are issued.
type Fetch int

const (
	Unordered Fetch = iota // RINAS: all reads of a batch in flight, assembled as they land
	Ordered                // one read at a time, in order: the classic map-style loader
)

func (f Fetch) String() string {
	if f == Ordered {
		return "ordered"
	}
	return "unordered"
}

// ParseFetch parses a Fetch name.
func ParseFetch(s string) (Fetch, error) {
	switch strings.ToLower(s) {
	case "unordered":
		return Unordered, nil
	case "ordered":
		return Ordered, nil
	}
	return 0, fmt.Errorf("%w: unknown fetch %q (want unordered or ordered)", ErrConfig, s)
}

// Output is what a Batch carries.
type Output int

const (
	OutputArrow  Output = iota // Arrow arrays of the column's rows
	OutputTokens               // packed [BatchRows, SeqLen] int32 tokens
)

// ParseOutput parses an Output name.
func ParseOutput(s string) (Output, error) {
	switch strings.ToLower(s) {
	case "arrow":
		return OutputArrow, nil
	case "tokens":
		return OutputTokens, nil
	}
	return 0, fmt.Errorf("%w: unknown output %q (want arrow or tokens)", ErrConfig, s)
}

func (o Output) String() string {
	if o == OutputTokens {
		return "tokens"
	}
	return "arrow"
}

// Config configures a Loader. Zero fields take the defaults that fill
// documents.
type Config struct {
	// Paths are Parquet files, directories or globs; Columns the projection:
	// leaf columns by dotted path, a name that is not a leaf standing for
	// all the leaves under it (default the first leaf). Every batch carries
	// every projected column, row-aligned (see Batch.Columns).
	Paths   []string
	Columns []string
	// LeadColumn, with several columns, is the column whose pages define
	// the epoch's row spans (page, stream and no shuffle: one lead page;
	// row shuffle: one row; rowgroup: one row group); the other columns
	// read the pages that overlap each span. It must be projected, and
	// its pages' first rows must be known (an offset index, or a header
	// walk of a flat column or of V2 pages) unless the shuffle is
	// rowgroup. Default: the projected column with the most bytes among
	// those.
	LeadColumn string

	Shuffle Shuffle
	// BatchPages is the fetch unit: the number of pages (row mode: rows;
	// rowgroup mode: row groups) whose reads are issued together and
	// assembled in completion order. Default 64.
	BatchPages int
	// BatchRows, when > 0, makes Next return batches of this many rows
	// (tokens output: rows of the token matrix) instead of one batch per
	// BatchPages pages.
	BatchRows int
	// BufferRows is YOUMU's shuffle buffer (Algorithm 2), in rows: arriving
	// rows are inserted at random places and random rows leave once it is
	// full, so a batch mixes the rows of every page the buffer spans. It
	// applies to row batches (BatchRows > 0; tokens output). Negative
	// turns it off. 0 picks it at Open: in page shuffle with row batches,
	// the rows of 256 pages of the lead column's mean row count, at most
	// the dataset's rows, within 1/4 of MemoryLimit and half of what the
	// read slots, decoded window, token buffers and side cache leave; 8192
	// in stream mode; off otherwise (row and row-group shuffles mix rows
	// themselves; page batches are BatchPages whole pages in random
	// order). In a mixture each source's default buffer holds its weight's
	// share of those pages (at least one page's rows), so that a mixture
	// batch's rows span as many pages as one dataset's do. Without it a row batch of page shuffle is consecutive rows
	// of one or two pages, which trains far worse on data stored in any
	// order (by source, date, length, topic). The cost: a buffered row
	// keeps its page decoded until the page's last row leaves (a buffer of
	// W pages' rows keeps about W·ln(rows per page) pages alive, and the
	// default is counted so against MemoryLimit), each row is moved twice
	// more, and a batch gathers its rows from many pages instead of one.
	// Loader.BufferRows says which. The default depends on the dataset
	// and the Config only, unless memory binds it, so a State resumes
	// into the same buffer. A buffer set here is counted the same way
	// against MemoryLimit (ErrMemory when it does not fit), and at run
	// time random rows leave early while the rows held weigh more than
	// that (each row at its page's estimated decoded bytes over its rows).
	BufferRows int
	Fetch      Fetch
	// CoalesceBytes merges the reads of pages of one column chunk that a
	// unit reads together (a row group's pages, a span's pages of another
	// column, a page and its continuation) into one request when they are
	// adjacent or at most 4 KiB apart, up to this many bytes per request
	// (Meta's DPP coalesces up to about 1.25 MiB). When units can read
	// several pages of a chunk, read slots grow to hold a coalesced run
	// (up to 8 of the largest page). Default 1.25 MiB; negative turns
	// coalescing off. With SharedEngine a run is at most the largest page.
	CoalesceBytes int
	// SideCacheBytes bounds the decoded pages of the projected columns
	// other than the lead that are held for the next spans that need
	// them (several columns only; counted against MemoryLimit): a side
	// page usually covers several lead pages' rows. Default 64 MiB;
	// negative turns it off (each span then reads its side pages). Row
	// shuffle holds every column's pages in its page cache instead,
	// sized from MemoryLimit.
	SideCacheBytes int64
	// Prefetch is how many batches beyond the one being consumed are read
	// ahead (unordered fetch). 0 picks it at Open: 2 for uncompressed
	// columns (each batch ahead holds its read slots, and a smaller set of
	// read buffers reads faster); for compressed ones enough for 832 pages (at
	// most 256 MiB of read slots, each as large as the largest page, and
	// 128 MiB of decoded pages, their size read from sampled page
	// headers), since decoding loads the cores and the disk's tail latency
	// grows with it. Loader.Prefetch says which.
	Prefetch int

	Seed   uint64
	Epoch  uint64 // first epoch
	Epochs int    // epochs to run; default 1. Next returns io.EOF after the last.

	// Rank of World. World 0 takes all three from $RANK, $WORLD_SIZE and
	// $LOCAL_RANK as torchrun sets them (else rank 0 of 1).
	Rank, World, LocalRank int

	// DropLast, PadLast and KeepUneven say how an epoch that does not
	// divide evenly is shared out, so that every rank takes the same
	// number of steps (a rank that stops early leaves the others waiting
	// in a collective forever). At most one may be set; with none set,
	// DropLast is the default for World > 1 and KeepUneven for World 1.
	// World counts every shard that reads the dataset: with DataLoader
	// workers, ranks × workers.
	//
	// Ranks share rows, not whole pages: laid end to end in the epoch's
	// order, the units' rows form a stream, and each rank takes a
	// contiguous range of it; a unit at a range's boundary is read by both
	// ranks, each keeping its own rows of it (before any in-memory
	// shuffle). Every rank computes the whole world's plan from the index.
	//
	// DropLast gives every rank the same number of full batches:
	// ⌊rows/(World·BatchRows)⌋ (tokens output: of estimated tokens, of
	// BatchRows·SeqLen each), and leaves out the rest of the stream, fewer
	// than World·BatchRows rows; page batches give every rank
	// ⌊rows/World⌋ rows (fewer than World left out) and the same steps
	// (see Loader.Len), or, where some page's rows are unknown (no
	// offset index), ⌊units/World⌋ whole pages (fewer than World left
	// out). Stats.DroppedRows counts this rank's part of what is left
	// out, and Open logs it. A world that would leave a rank without data
	// — fewer rows than one batch on every rank (which is also when
	// DropLast would leave out more than half of them), fewer rows than
	// ranks with page batches, or fewer pages than ranks where their rows
	// are unknown — fails at Open with ErrConfig.
	//
	// PadLast instead repeats the start of the stream, as PyTorch's
	// DistributedSampler pads: every rank gets as many full batches as
	// ⌈rows/(World·BatchRows)⌉ (page batches: ⌈rows/World⌉ rows, or
	// ⌈units/World⌉ whole pages), fewer than World·BatchRows rows (page
	// batches: World rows, or pages) repeated. Stats.PaddedRows counts the
	// repeats this rank delivers.
	//
	// KeepUneven delivers every row exactly once, in ranges that differ by
	// at most one row (one unit with page batches of unknown rows): ranks
	// may take different numbers of steps, by at most one.
	//
	// Equal steps hold for every epoch, resumed ones included, and for the
	// rest of an epoch that Reshard dealt to another world. A unit
	// dropped by SkipBadPages is not made up for: with row batches its
	// rank may then take a step less.
	DropLast, PadLast, KeepUneven bool

	// Deterministic delivers batches, and the rows within them, in plan
	// order: the reads of a batch still complete in any order inside the
	// fetch window, but a batch is assembled in the order of its units,
	// not their landing order. Two runs with the same seed then give
	// byte-identical batches.
	Deterministic bool

	Output Output
	SeqLen int // tokens: columns of the token matrix; default 2048
	// EOS is the id written after each document (tokens output); 0 means
	// the default 50256 unless ExplicitEOS is set. Pad fills the tail of
	// the last row; 0 means EOS unless ExplicitPad is set.
	EOS, Pad                 int32
	ExplicitEOS, ExplicitPad bool
	// Tokens64 delivers the token matrix as int64 (Batch.Tokens64)
	// instead of int32 (Batch.Tokens).
	Tokens64 bool
	// Truncate cuts a document longer than SeqLen to its first SeqLen-1
	// tokens and its EOS; by default it continues on the next row.
	Truncate bool

	// MemoryLimit bounds what the loader holds: read slots, the decoded
	// pages of the fetch window, token buffers, the side cache, the rows
	// taken in and not yet delivered (the shuffle buffer's included) and
	// the row batches a consumer holds unreleased. Open sizes them from
	// the dataset and shrinks what it chose (read-ahead, then batch size)
	// until they fit; a configuration whose one batch cannot fit fails at
	// Open with ErrMemory saying what to raise or lower. Dictionaries get
	// what is left: half for the cache, evicted least recently used first
	// (those of units in flight stay), half for the decoders' column
	// readers; a dictionary larger than the cache's half fails with
	// ErrMemory. Default 1 GiB. Loader.PlannedBytes says what Open sized.
	MemoryLimit int64

	// Pin places the engine workers on the cores next to this rank's GPU.
	// Off by default; Engine.CPUSets, when set, wins.
	Pin PinOptions

	// IOMode is how pages are read. IOAuto (the default) chooses per
	// file at Open and again at every epoch's start: buffered reads (the
	// page cache) when the projected bytes stay in three quarters of the
	// page cache this job can hold — the node's MemAvailable, split among
	// its $LOCAL_WORLD_SIZE ranks, and no more than the memory cgroup's
	// limit leaves; when they do not, O_DIRECT, which neither churns
	// through the cache nor evicts it, but for the files already cached
	// (as many as fit), whose reads hit the cache (Stats.IOMode and
	// IOReason say what was chosen and why).
	// Residency comes from cachestat(2), or mincore(2) on kernels before
	// 6.5. IODirect and IOBuffered read every file one way. With IOAuto,
	// an Engine.Direct of On or Off is an explicit choice and wins.
	// Either way a file system that refuses O_DIRECT gets buffered
	// reads (said once), unless Engine.Direct is On. Over a mixture
	// (Sources) auto chooses once for the union of all sources' files,
	// which share the page cache, at Open and at every mixture epoch's
	// start (not at the sources' own epochs), and each file keeps its
	// mode within its source (Stats.Sources says each source's part).
	IOMode IOMode

	// IODepth is how many page reads may be in the kernel at once, over
	// all engine workers (fio's iodepth for one job): each worker's
	// Engine.QueueDepth becomes IODepth/Workers, rounded up. 0 leaves
	// Engine.QueueDepth, whose default follows the read-ahead window.
	IODepth int

	// Engine configures the data plane. Engine.Workers defaults to
	// GOMAXPROCS (decoding runs on the workers), or half of it (at least
	// one) when every page of the column is stored uncompressed: decoding
	// those is cheap, and fewer rings keep more reads in each. Ignored
	// when SharedEngine is set.
	Engine       engine.Options
	SharedEngine *engine.Engine
	// Index configures the index build; SharedIndex skips the build.
	// Without Index.Reader, Open reads through engine.OpenBatchReader.
	Index       index.Options
	SharedIndex *index.Index

	// Resume, when set, continues exactly from a State taken by a Loader
	// of the same dataset, seed, shuffle, output and rank; Open refuses
	// any other with ErrState naming the field that does not fit.
	Resume *State

	// SkipBadPages drops a unit (a page, row or row group) whose page is
	// corrupt (IsCorruption: bad Parquet, a CRC mismatch, a page that
	// contradicts its offset index, a file that shrank after indexing),
	// instead of failing the epoch (the default). Each drop is counted in
	// Stats.SkippedPages, listed by Loader.Skipped with its file and
	// offset, and noticed through Logf; the rest of the epoch is
	// delivered exactly once. Other errors still fail the epoch: I/O
	// errors such as EIO or ENOMEM (after the engine's retries),
	// unsupported encodings, pages over a size limit.
	SkipBadPages bool

	// Logf receives notices; default stderr.
	Logf func(format string, args ...any)

	// Sources, when set instead of Paths, make the loader a weighted
	// mixture of datasets (see Source and the package doc's Mixtures);
	// EpochSize is the mixture's epoch for the whole world, in rows
	// (tokens output: tokens). Default: the sum of the sources at their
	// weights as given (each source's rows with a Weight above 0, Repeat × its
	// rows, or Choose). The sources' files are read in the modes IOMode
	// chooses over all of them together.
	Sources   []Source
	EpochSize int64

	// mixSource: a mixture's source, whose shared engine's slots and
	// row batches held by the consumer the mixture counts against
	// MemoryLimit once.
	mixSource bool
	// mixShare is a mixture source's share of every batch's rows (its
	// blend weight), 0 outside a mixture: the source's default shuffle
	// buffer is that share of one dataset's (bufsize.go).
	mixShare float64

	// batchAuto and sideAuto record that fill chose BatchPages and
	// SideCacheBytes: Open may lower them to fit MemoryLimit (sizing.go).
	batchAuto, sideAuto bool
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func envInt(name string, def int) (int, error) {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%w: $%s=%q is not an integer", ErrConfig, name, v)
	}
	return n, nil
}

// Bounds of the sizes a Config may ask for, checked before anything is
// sized: beyond them the arithmetic of the plan, not memory, would fail.
const (
	maxWorld      = 1 << 20 // ranks
	maxBatchRows  = 1 << 24 // rows of a row batch, tokens of a row
	maxBufferRows = 1 << 40 // rows of the shuffle buffer (MemoryLimit bounds it far lower)
)

// defaultCoalesce is Config.CoalesceBytes' default.
const defaultCoalesce = 1280 << 10

// coalesceSlotPages bounds the slot growth for coalesced runs, in pages of
// the largest size.
const coalesceSlotPages = 8

// fill applies defaults and validates.
func (c *Config) fill() error {
	if len(c.Paths) == 0 && c.SharedIndex == nil {
		return fmt.Errorf("%w: no paths", ErrConfig)
	}
	if c.Shuffle < ShufflePage || c.Shuffle > ShuffleNone {
		return fmt.Errorf("%w: shuffle %d", ErrConfig, c.Shuffle)
	}
	if c.BatchPages == 0 {
		c.BatchPages = 64
		c.batchAuto = true
	}
	if c.BatchPages < 0 || c.BatchPages > 1<<16 {
		return fmt.Errorf("%w: batch of %d pages (want 1..65536)", ErrConfig, c.BatchPages)
	}
	if c.BatchRows < 0 || c.BatchRows > maxBatchRows {
		return fmt.Errorf("%w: batch of %d rows (want 0..%d)", ErrConfig, c.BatchRows, maxBatchRows)
	}
	if c.BufferRows > maxBufferRows {
		return fmt.Errorf("%w: buffer of %d rows (want at most %d)", ErrConfig, c.BufferRows, maxBufferRows)
	}
	if c.Shuffle == ShuffleStream && c.BufferRows == 0 {
		c.BufferRows = 8192
	}
	if c.IODepth < 0 || c.IODepth > 1<<16 {
		return fmt.Errorf("%w: iodepth %d (want 0..65536)", ErrConfig, c.IODepth)
	}
	if c.Prefetch < 0 || c.Prefetch > maxPrefetch {
		return fmt.Errorf("%w: prefetch %d (want 0..%d)", ErrConfig, c.Prefetch, maxPrefetch)
	}
	if c.Epochs == 0 {
		c.Epochs = 1
	}
	if c.Epochs < 0 {
		return fmt.Errorf("%w: %d epochs", ErrConfig, c.Epochs)
	}
	if c.World == 0 {
		var err error
		if c.Rank, err = envInt("RANK", 0); err != nil {
			return err
		}
		if c.World, err = envInt("WORLD_SIZE", 1); err != nil {
			return err
		}
		if c.LocalRank, err = envInt("LOCAL_RANK", 0); err != nil {
			return err
		}
	}
	if c.World < 1 || c.World > maxWorld || c.Rank < 0 || c.Rank >= c.World {
		return fmt.Errorf("%w: rank %d of world %d (want a world of 1..%d and a rank below it)", ErrConfig, c.Rank, c.World, maxWorld)
	}
	if c.Output == OutputTokens {
		if c.SeqLen == 0 {
			c.SeqLen = 2048
		}
		if c.SeqLen < 0 || c.SeqLen > maxBatchRows {
			return fmt.Errorf("%w: seq_len %d (want 0..%d)", ErrConfig, c.SeqLen, maxBatchRows)
		}
		if c.BatchRows == 0 {
			c.BatchRows = 8
		}
		// cu_seqlens index the flattened matrix with int32.
		if int64(c.BatchRows)*int64(c.SeqLen) >= math.MaxInt32 {
			return fmt.Errorf("%w: a token matrix of %d rows × seq_len %d has %d tokens (want fewer than 2^31)",
				ErrConfig, c.BatchRows, c.SeqLen, int64(c.BatchRows)*int64(c.SeqLen))
		}
		if c.EOS == 0 && !c.ExplicitEOS {
			c.EOS = 50256
		}
		if c.Pad == 0 && !c.ExplicitPad {
			c.Pad = c.EOS
		}
	}
	if c.CoalesceBytes == 0 {
		c.CoalesceBytes = defaultCoalesce
	}
	if c.SideCacheBytes == 0 {
		c.SideCacheBytes = 64 << 20
		c.sideAuto = true
	}
	switch n := btoi(c.DropLast) + btoi(c.PadLast) + btoi(c.KeepUneven); {
	case n > 1:
		return fmt.Errorf("%w: at most one of DropLast, PadLast and KeepUneven", ErrConfig)
	case n == 0 && c.World > 1:
		c.DropLast = true
	case n == 0:
		c.KeepUneven = true
	}
	if c.MemoryLimit == 0 {
		c.MemoryLimit = 1 << 30
	}
	if c.IOMode < IOAuto || c.IOMode > IOBuffered {
		return fmt.Errorf("%w: io mode %d", ErrConfig, c.IOMode)
	}
	if c.IOMode == IOAuto && c.Engine.Direct == engine.On {
		c.IOMode = IODirect
	}
	if c.IOMode == IOAuto && c.Engine.Direct == engine.Off {
		c.IOMode = IOBuffered
	}
	if c.Logf == nil {
		c.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, "rinas: "+format+"\n", args...) }
	}
	return nil
}
