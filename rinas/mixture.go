package rinas

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/rinas/plan"
)

// Source is one dataset of a mixture (Config.Sources). Exactly one way of
// sizing it applies to all sources of a mixture: Weight (relative shares),
// or Repeat and Choose (counts); a source with none set counts as Repeat 1.
type Source struct {
	// Name names the source in errors, Stats and States; default its
	// first path. Names are unique; a State finds a source's progress by
	// its name.
	Name  string
	Paths []string
	// Weight is the source's share of the delivered rows (tokens output:
	// of the delivered tokens), relative to the other sources' weights.
	// Where other sources set a weight, a Weight of 0 (which Go cannot
	// tell from one left out) gives no rows: the source is opened and
	// checked, its rows do not count in the default EpochSize, and its State
	// goes on in every checkpoint, so that a resume that weighs it again
	// starts it where it was. Weights all 0 are Repeat 1 each; the C ABI
	// and Python refuse weights given as 0 for every source.
	Weight float64
	// Repeat takes Repeat × the source's rows per epoch (upsampling when
	// above 1); Choose takes Choose rows (tokens) per epoch.
	Repeat float64
	Choose int64
	// Columns is the source's projection, matched position by position to
	// the mixture's (Config.Columns) where the names differ; default
	// Config.Columns. The columns must agree in physical type and
	// nesting.
	Columns []string
}

// MixState is a mixture's checkpoint (State.Mix): the blend's shares and
// counters, the mixture's epoch and batches, and each source's own State.
type MixState struct {
	Epoch   uint64 `json:"epoch"`
	Batches uint64 `json:"batches"`
	// Units is the epoch's rows for the whole world (tokens output: rows
	// of the token matrix) and BatchRows the batch, so that Reshard can
	// count the rest of the epoch.
	Units     uint64 `json:"units"`
	BatchRows int    `json:"batch_rows"`
	// Rest, when Reshard dealt the epoch to this world, is the rows of
	// the epoch the old world left (tokens output: rows of the token
	// matrix): this world's epoch is that remainder, in steps of its own,
	// and Batches counts the batches delivered in it. 0: the whole epoch.
	Rest     uint64        `json:"rest,omitempty"`
	EpochEnd bool          `json:"epoch_end,omitempty"`
	Shares   []float64     `json:"shares"`
	Given    []uint64      `json:"given"`
	Sources  []SourceState `json:"sources"`
}

// SourceState is one source's progress in a MixState.
type SourceState struct {
	Name  string `json:"name"`
	State *State `json:"state"`
}

// SourceStats counts what one source of a mixture gave (Stats.Sources):
// rows delivered (tokens output: documents or parts of them), tokens
// delivered (tokens output: document tokens and EOS), the source's own
// epochs begun, and the bytes its reads moved.
type SourceStats struct {
	Name         string
	Rows, Tokens int64
	Epochs       int64
	DiskBytes    int64
	PageBytes    int64
	Pages        int64
	DroppedRows  int64 // rows its own epochs leave out (fewer than World each)
	SkippedPages int64
	// IOMode is how the mixture's current epoch reads the source's
	// files (direct, buffered or mixed), its part of the choice over all
	// sources (Stats.IOMode and IOReason); DirectFiles and BufferedFiles
	// count them.
	IOMode                     string
	DirectFiles, BufferedFiles int
}

// defaultMixRows is a mixture's BatchRows when none is set (arrow output):
// a mixture delivers row batches.
const defaultMixRows = 1024

// mixture is a Loader over Config.Sources: one Loader per source (each
// reading its rows in order of its own plan, with its own epochs), all on
// one engine, and the blend (plan.Blend) that says how many rows each
// gives to every batch.
type mixture struct {
	cfg   Config
	names []string
	srcs  []*Loader
	blend *plan.Blend
	units uint64 // the epoch, for the whole world: rows (tokens output: rows of the token matrix)
	rest  uint64 // the resharded remainder of the current epoch, in the same units (0: none)
	cols  []string
	eng   *engine.Engine
	// engOpts are the engine's options (its slots count against
	// MemoryLimit once); union the sources' summaries merged; fixed what
	// the mixture itself counts against MemoryLimit.
	engOpts engine.Options
	union   indexSummary
	fixed   int64
	// io is the read modes chosen over the union of the sources' files
	// (chooseModes); each source holds its part.
	io ioState

	epoch, batches uint64
	finished       bool
	err            error
	nbatch, nrows  int64
	rows, toks     []int64

	// The batch being assembled (a Next cut short keeps it): the rows
	// each source still owes it, the sources' batches taken so far, the
	// State from before of each touched source that cannot give its
	// batch back (tokens output, or a source that gave two batches: what
	// State reports until the batch is returned; see rewind for the
	// others), and the token matrix being filled.
	wip struct {
		on    bool
		owe   []uint64
		given []uint64 // the blend's counters before the batch
		got   [][]*Batch
		snap  []*State
		tb    *tokenBuf
		row   int
		fill  float64
		cu    []int32
		toks  []int64
		rows  []int64
	}
	// The batch the last Next returned, what Unread needs to give it
	// back: the sources' batches it holds (arrow output) or its token
	// matrix, and the States from before it that wip keeps. Next drops
	// it (the batch owns them until then), so keeping it costs nothing.
	back struct {
		b    *Batch
		got  [][]*Batch
		snap []*State
		tb   *tokenBuf
	}
	// The token matrices (tokens output): parked in tokBufs, given back
	// by Batch.Release from any goroutine; once closed, one given back is
	// unmapped instead.
	tokBufs   chan *tokenBuf
	tokMu     sync.Mutex
	tokClosed bool
}

// putTok takes a token matrix back from a batch.
func (m *mixture) putTok(tb *tokenBuf) {
	m.tokMu.Lock()
	defer m.tokMu.Unlock()
	if m.tokClosed {
		tb.free()
		return
	}
	m.tokBufs <- tb // capacity holds every buffer: never blocks
}

func srcErr(name string, err error) error { return fmt.Errorf("source %q: %w", name, err) }

// checkSources validates cfg.Sources and returns the blend's weights.
func checkSources(cfg *Config) ([]float64, []string, error) {
	if len(cfg.Paths) > 0 || cfg.SharedIndex != nil {
		return nil, nil, fmt.Errorf("%w: set Sources or Paths (SharedIndex), not both", ErrConfig)
	}
	if cfg.EpochSize < 0 {
		return nil, nil, fmt.Errorf("%w: epoch size %d", ErrConfig, cfg.EpochSize)
	}
	names := make([]string, len(cfg.Sources))
	// Weight-sized when any source sets a weight (the others then weigh
	// 0); else sized by Repeat and Choose, a source setting none counting
	// as Repeat 1.
	byWeight := slices.ContainsFunc(cfg.Sources, func(s Source) bool { return s.Weight != 0 })
	for i, s := range cfg.Sources {
		names[i] = s.Name
		if names[i] == "" {
			if len(s.Paths) == 0 {
				return nil, nil, fmt.Errorf("%w: source %d has no paths", ErrConfig, i)
			}
			names[i] = s.Paths[0]
		}
		if slices.Contains(names[:i], names[i]) {
			return nil, nil, fmt.Errorf("%w: two sources are named %q", ErrConfig, names[i])
		}
		n := names[i]
		if len(s.Paths) == 0 {
			return nil, nil, fmt.Errorf("%w: source %q has no paths", ErrConfig, n)
		}
		bad := func(v float64) bool { return v < 0 || math.IsNaN(v) || math.IsInf(v, 0) }
		switch {
		case bad(s.Weight):
			return nil, nil, fmt.Errorf("%w: source %q: weight %v (want a finite value ≥ 0)", ErrConfig, n, s.Weight)
		case bad(s.Repeat):
			return nil, nil, fmt.Errorf("%w: source %q: repeat %v (want a finite value ≥ 0)", ErrConfig, n, s.Repeat)
		case s.Choose < 0:
			return nil, nil, fmt.Errorf("%w: source %q: choose %d", ErrConfig, n, s.Choose)
		case s.Weight != 0 && (s.Repeat != 0 || s.Choose != 0):
			return nil, nil, fmt.Errorf("%w: source %q sets weight with repeat or choose: give one kind", ErrConfig, n)
		case s.Repeat != 0 && s.Choose != 0:
			return nil, nil, fmt.Errorf("%w: source %q sets both repeat and choose", ErrConfig, n)
		}
		if byWeight && (s.Repeat != 0 || s.Choose != 0) {
			return nil, nil, fmt.Errorf("%w: source %q sets repeat or choose where other sources set weights: give all sources one kind", ErrConfig, n)
		}
	}
	ws := make([]float64, len(cfg.Sources))
	any := false
	for i, s := range cfg.Sources {
		ws[i] = s.Weight
		if !byWeight {
			ws[i] = -1 // from the sources' sizes, once known
			if s.Repeat == 0 && s.Choose == 0 {
				cfg.Sources[i].Repeat = 1
			}
		}
		any = any || ws[i] != 0
	}
	if !any {
		return nil, nil, fmt.Errorf("%w: the weights of sources %q are all zero", ErrConfig, names)
	}
	return ws, names, nil
}

// openMixture opens a Loader over cfg.Sources.
func openMixture(ctx context.Context, cfg Config) (*Loader, error) {
	cfg.Sources = slices.Clone(cfg.Sources)
	ws, names, err := checkSources(&cfg)
	if err != nil {
		return nil, err
	}
	if cfg.BatchRows == 0 && cfg.Output != OutputTokens {
		cfg.BatchRows = defaultMixRows
	}
	cfg.Paths = cfg.Sources[0].Paths // for fill's checks
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	cfg.Paths = nil
	if cfg.BatchRows == 0 {
		return nil, fmt.Errorf("%w: a mixture delivers row batches: set BatchRows", ErrConfig)
	}
	m := &mixture{cfg: cfg, names: names, rows: make([]int64, len(names)), toks: make([]int64, len(names))}
	l := &Loader{cfg: cfg, mix: m}
	ok := false
	defer func() {
		if !ok {
			m.close()
		}
	}()
	var rs *MixState
	if s := cfg.Resume; s != nil {
		if rs, err = m.checkResume(s); err != nil {
			return nil, err
		}
	}
	// The sources' indexes, through one reader.
	iopts := cfg.Index
	if iopts.Reader == nil {
		r := engine.OpenBatchReader(iopts.Parallelism, iopts.Logf)
		defer r.Close()
		iopts.Reader = r
	}
	for i, src := range cfg.Sources {
		c := cfg
		c.Sources, c.EpochSize, c.Resume = nil, 0, nil
		c.Paths = src.Paths
		if len(src.Columns) > 0 {
			c.Columns = src.Columns
		}
		c.Index = iopts
		h := fnv.New64a()
		h.Write([]byte(names[i]))
		c.Seed = cfg.Seed ^ h.Sum64()
		c.Epoch, c.Epochs = 0, math.MaxInt32
		// Every rank takes the same rows of every source's epoch (fewer
		// than World left out), one at a time: the mixture asks each
		// source for the rows the blend gives it.
		c.DropLast, c.PadLast, c.KeepUneven = true, false, false
		c.BatchRows = 1
		c.mixSource = true
		name := names[i]
		logf := cfg.Logf
		c.Logf = func(f string, a ...any) { logf("source %q: "+f, append([]any{name}, a...)...) }
		if rs != nil {
			for _, ss := range rs.Sources {
				if ss.Name == name {
					c.Resume = ss.State
				}
			}
		}
		if err := c.fill(); err != nil {
			return nil, srcErr(name, err)
		}
		sl, err := prepare(ctx, c)
		if err != nil {
			return nil, srcErr(name, err)
		}
		m.srcs = append(m.srcs, sl)
	}
	if err := m.checkColumns(); err != nil {
		return nil, err
	}
	if err := m.openEngine(); err != nil {
		return nil, err
	}
	l.eng = m.eng
	// The epoch and the blend's weights, from the sources' sizes.
	var size uint64
	for i, sl := range m.srcs {
		n := sl.space.Total()
		if cfg.Output == OutputTokens {
			n = sl.space.Tokens()
		}
		src := cfg.Sources[i]
		switch {
		case ws[i] > 0:
			size += n
		case ws[i] == 0:
			// A weighted source at 0 gives no rows: its rows would only
			// upsample the others.
		case src.Choose > 0:
			ws[i] = float64(src.Choose)
			size += uint64(src.Choose)
		default:
			ws[i] = src.Repeat * float64(n)
			size += uint64(ws[i])
		}
	}
	if cfg.EpochSize > 0 {
		size = uint64(cfg.EpochSize)
	}
	if cfg.Output == OutputTokens {
		size /= uint64(cfg.SeqLen)
	}
	m.units = size
	if m.blend, err = plan.NewBlend(ws); err != nil {
		return nil, fmt.Errorf("%w: sources %q: %w", ErrConfig, names, err)
	}
	if m.stepsOf(m.units) == 0 {
		return nil, fmt.Errorf("%w: the mixture's epoch of %d rows does not fill one batch of %d rows on each of %d ranks (set EpochSize)",
			ErrConfig, size, cfg.BatchRows, cfg.World)
	}
	m.epoch = cfg.Epoch
	if rs != nil {
		if err := m.resume(rs); err != nil {
			return nil, err
		}
	}
	if cfg.Output == OutputTokens {
		m.tokBufs = make(chan *tokenBuf, mixTokBufs)
		for i := 0; i < mixTokBufs; i++ {
			tb, err := newTokenBufW(cfg.BatchRows, cfg.SeqLen, cfg.Tokens64)
			if err != nil {
				return nil, err
			}
			m.tokBufs <- tb
		}
	}
	// The read modes, over all sources' files, after the engine's memory
	// is allocated (auto counts it as taken); each source applies its
	// part when it starts.
	m.chooseModes()
	// The rest of the memory limit, spread over the sources: less the
	// engine's slots, the token matrices and the row batches the consumer
	// holds (counted once here, not by each source).
	m.fixed = m.engineBytes()
	if cfg.Output == OutputTokens {
		m.fixed += int64(mixTokBufs) * tokenBufBytes64(cfg.BatchRows, cfg.SeqLen, cfg.Tokens64)
	} else {
		m.fixed += outBytes(cfg, m.union)
	}
	left := cfg.MemoryLimit - m.fixed
	for i, sl := range m.srcs {
		sl.cfg.SharedEngine = m.eng
		sl.cfg.MemoryLimit = left / int64(len(m.srcs))
		sl.cfg.mixShare = m.blend.Share(i)
		if sl.cfg.MemoryLimit <= 0 {
			return nil, fmt.Errorf("%w: source %q: the shared engine's slots, the token buffers and the row batches held (%d MiB) leave nothing of the %d MiB limit", ErrMemory, names[i], m.fixed>>20, cfg.MemoryLimit>>20)
		}
		if err := sl.start(); err != nil {
			return nil, srcErr(names[i], err)
		}
	}
	// What the Loader's accessors report: the engine's workers, the
	// memory planned over all sources, the first source's CPUs and
	// read-ahead.
	l.workers, l.cpus, l.cfg.Prefetch = max(m.eng.Workers(), 1), m.srcs[0].cpus, m.srcs[0].cfg.Prefetch
	l.planned = m.fixed
	for _, sl := range m.srcs {
		l.planned += sl.planned
	}
	ok = true
	return l, nil
}

// mixTokBufs is how many token matrices a mixture has: one being filled,
// the rest with the consumer (Next waits while all are unreleased).
const mixTokBufs = 4

// chooseModes decides the read mode of every file of every source for
// the mixture's next epoch (Config.IOMode): auto's rule once over the
// union of the sources' files, which share the page cache, then each
// source takes its files' part (applyModes opens them so). The sources'
// own epochs do not choose: an upsampled source may begin hundreds in one
// mixture epoch, and each choice measures every file's residency. Next
// calls it as it begins an epoch (one residency call per projected chunk
// of every file, what one dataset's producer makes per epoch).
func (m *mixture) chooseModes() {
	n := 0
	for _, sl := range m.srcs {
		n += sl.ix.NumFiles()
	}
	c := chooseMode(m.cfg.IOMode, n, func() []ioFile {
		files := make([]ioFile, 0, n)
		for _, sl := range m.srcs {
			files = append(files, sl.ioFiles()...)
		}
		return files
	})
	m.io.set(c, m.cfg.Logf)
	at := 0
	for _, sl := range m.srcs {
		k := sl.ix.NumFiles()
		sl.io.set(c.part(at, at+k), nil) // the mixture said it
		at += k
	}
}

// checkColumns refuses sources whose projections cannot be one column
// each: different counts, physical types or nesting.
func (m *mixture) checkColumns() error {
	a := m.srcs[0]
	m.cols = a.projNames()
	for i, b := range m.srcs[1:] {
		if len(b.proj) != len(a.proj) {
			return fmt.Errorf("%w: source %q projects %d columns %v, source %q %d %v", ErrConfig,
				m.names[0], len(a.proj), a.projNames(), m.names[i+1], len(b.proj), b.projNames())
		}
		for k := range a.proj {
			da, db := a.ix.Column(a.proj[k]).Descr, b.ix.Column(b.proj[k]).Descr
			if da.PhysicalType() != db.PhysicalType() || da.MaxRepetitionLevel() != db.MaxRepetitionLevel() {
				return fmt.Errorf("%w: column %s of source %q is %s (repetition %d), column %s of source %q is %s (repetition %d)", ErrConfig,
					a.ix.Column(a.proj[k]).Path, m.names[0], da.PhysicalType(), da.MaxRepetitionLevel(),
					b.ix.Column(b.proj[k]).Path, m.names[i+1], db.PhysicalType(), db.MaxRepetitionLevel())
			}
		}
	}
	return nil
}

// openEngine starts the one engine every source reads through, sized for
// the union: slots for the largest page of any source, for two sources'
// read-ahead windows (the sources read ahead together and share them).
func (m *mixture) openEngine() error {
	var u indexSummary
	for i, sl := range m.srcs {
		s, err := sl.summarize()
		if err != nil {
			return srcErr(m.names[i], err)
		}
		if i == 0 {
			u = s
			continue
		}
		// The engine's slots must take any source's largest read; its
		// window is sized as the largest source's.
		u.maxPage = max(u.maxPage, s.maxPage)
		u.compressed = u.compressed || s.compressed
		if s.maxDict > u.maxDict {
			u.maxDict, u.maxDictFile = s.maxDict, s.maxDictFile
		}
		u.decodedPage = max(u.decodedPage, s.decodedPage)
		u.sidePage = max(u.sidePage, s.sidePage)
		u.sideDecoded = max(u.sideDecoded, s.sideDecoded)
		u.sideBytes = max(u.sideBytes, s.sideBytes)
		u.unitMax = max(u.unitMax, s.unitMax)
		u.unitReqs = max(u.unitReqs, s.unitReqs)
		u.sides = max(u.sides, s.sides)
		u.sideReads = max(u.sideReads, s.sideReads)
		u.sideMean = max(u.sideMean, s.sideMean)
		u.maxRun = max(u.maxRun, s.maxRun)
		u.units = max(u.units, s.units)
		u.rowBytes = max(u.rowBytes, s.rowBytes)
		u.sideRowBytes = max(u.sideRowBytes, s.sideRowBytes)
		u.files = max(u.files, s.files)
		u.orderedSpan = max(u.orderedSpan, s.orderedSpan)
		u.rows = max(u.rows, s.rows)
		u.rowsPerPage = max(u.rowsPerPage, s.rowsPerPage)
	}
	m.union = u
	c := m.srcs[0].cfg
	c.mixSource = false
	c.MemoryLimit = math.MaxInt64
	z, err := planSizing(c, u)
	if err != nil {
		return err
	}
	opts := z.engine
	if len(m.srcs) > 1 {
		opts.SlotsPerWorker *= 2
	}
	m.engOpts = opts
	if e := m.cfg.SharedEngine; e != nil {
		m.eng = e
	} else {
		if m.eng, err = engine.New(opts); err != nil {
			return err
		}
	}
	if b := m.engineBytes(); b > m.cfg.MemoryLimit {
		return fmt.Errorf("%w: the mixture's engine needs %d MiB of read slots (%d workers × %d slots × %d bytes), limit %d MiB",
			ErrMemory, b>>20, m.eng.Workers(), opts.SlotsPerWorker, opts.SlotSize, m.cfg.MemoryLimit>>20)
	}
	return nil
}

// engineBytes is the engine's slots (none when the engine is shared from
// outside: its owner counts them).
func (m *mixture) engineBytes() int64 {
	if m.eng == nil || m.cfg.SharedEngine != nil {
		return 0
	}
	o := m.engOpts
	return int64(o.SlotSize) * int64(o.SlotsPerWorker) * int64(max(o.Workers, 1))
}

// epochUnits is the current epoch's rows for the whole world: the
// remainder Reshard dealt to this world, or the whole epoch.
func (m *mixture) epochUnits() uint64 {
	if m.rest > 0 {
		return m.rest
	}
	return m.units
}

// steps is the batches every rank takes in the current mixture epoch.
func (m *mixture) steps() uint64 { return m.stepsOf(m.epochUnits()) }

// stepsOf is the batches every rank takes in an epoch of n rows: the rows
// dealt out as Config's equal-steps policy says.
func (m *mixture) stepsOf(n uint64) uint64 {
	w, b := uint64(m.cfg.World), uint64(m.cfg.BatchRows)
	switch {
	case m.cfg.PadLast:
		return (n + w*b - 1) / (w * b)
	case m.cfg.KeepUneven:
		return (plan.Split(n, m.cfg.World, m.cfg.Rank) + b - 1) / b
	}
	return n / (w * b)
}

// batchRows is the rows of the mixture epoch's batch k (the last one short
// under KeepUneven).
func (m *mixture) batchRows(k uint64) uint64 {
	b := uint64(m.cfg.BatchRows)
	if m.cfg.KeepUneven {
		if own := plan.Split(m.epochUnits(), m.cfg.World, m.cfg.Rank); (k+1)*b > own {
			return own - k*b
		}
	}
	return b
}

func (m *mixture) next(ctx context.Context) (*Batch, error) {
	if m.err != nil {
		return nil, m.err
	}
	m.back.b, m.back.got, m.back.snap, m.back.tb = nil, nil, nil, nil
	w := &m.wip
	if !w.on {
		if m.finished {
			return nil, io.EOF
		}
		if m.batches >= m.steps() {
			if m.epoch+1 >= m.cfg.Epoch+uint64(m.cfg.Epochs) {
				m.finished = true
				return nil, io.EOF
			}
			m.epoch++
			m.batches, m.rest = 0, 0
			m.chooseModes()
			for _, sl := range m.srcs {
				sl.applyModes()
			}
		}
		n := m.batchRows(m.batches)
		w.on = true
		w.given = m.blend.Given()
		w.owe = make([]uint64, len(m.srcs))
		m.blend.Take(n, w.owe)
		w.got = make([][]*Batch, len(m.srcs))
		w.snap = make([]*State, len(m.srcs))
		w.rows = make([]int64, len(m.srcs))
		w.toks = make([]int64, len(m.srcs))
		w.row, w.fill, w.cu = 0, 0, w.cu[:0]
	}
	if m.cfg.Output == OutputTokens && w.tb == nil {
		select {
		case w.tb = <-m.tokBufs:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		w.cu = append(w.tb.cu[:0], 0)
	}
	for i, sl := range m.srcs {
		for w.owe[i] > 0 {
			if w.snap[i] == nil {
				switch {
				case m.cfg.Output == OutputTokens:
					// One source batch per row: State before the first is
					// what State reports until the batch is out.
					w.snap[i] = sl.State()
				case len(w.got[i]) > 0:
					// A second batch of this source (its own epoch ended
					// in the first): the first goes back to it, which
					// then reports its State from before, and is cut
					// again by the Next below.
					m.rewind(i)
					w.snap[i] = sl.State()
				}
			}
			if m.cfg.Output != OutputTokens {
				sl.want = int(w.owe[i])
			}
			b, err := sl.Next(ctx)
			sl.want = 0
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = fmt.Errorf("%w: its epochs ran out", ErrState)
				}
				err = srcErr(m.names[i], err)
				if ctx.Err() == nil {
					m.err = err // the source failed: the mixture did too
				}
				return nil, err
			}
			if m.cfg.Output == OutputTokens {
				m.copyRow(i, b)
				b.Release()
				w.owe[i]--
				continue
			}
			if b.Rows == 0 {
				b.Release()
				m.err = srcErr(m.names[i], fmt.Errorf("rinas: an empty batch"))
				return nil, m.err
			}
			w.got[i] = append(w.got[i], b)
			w.rows[i] += int64(b.Rows)
			w.owe[i] -= min(w.owe[i], uint64(b.Rows))
		}
	}
	return m.finish(), nil
}

// rewind gives source i's one batch in the batch being assembled back to
// the source (Loader.Unread), which then counts its rows as not delivered:
// its State is again the one from before the batch, and its next Next
// cuts the same rows. It is how the mixture keeps each touched source's
// State from before a batch without taking a snapshot per batch, which
// would list the source's buffered rows every time: a source whose State
// is wanted while its batch is out (State before the batch is returned,
// or after Unread) is rewound then. Nothing has asked the source for
// anything since that batch, so it is the source's last, unreleased.
func (m *mixture) rewind(i int) {
	w := &m.wip
	b := w.got[i][0]
	if err := m.srcs[i].Unread(b); err != nil {
		panic(fmt.Sprintf("rinas: source %q: its batch in the mixture's could not go back: %v", m.names[i], err))
	}
	w.owe[i] += uint64(b.Rows)
	w.rows[i] -= int64(b.Rows)
	w.got[i] = nil
}

// copyRow copies source i's one-row token batch into the matrix.
func (m *mixture) copyRow(i int, b *Batch) {
	w := &m.wip
	sl := m.cfg.SeqLen
	at := w.row * sl
	if b.Tokens64 != nil {
		copy(w.tb.tokens64[at:at+sl], b.Tokens64)
	} else {
		copy(w.tb.tokens[at:at+sl], b.Tokens)
	}
	copy(w.tb.pos[at:at+sl], b.PositionIDs)
	copy(w.tb.mask[at:at+sl], b.LossMask)
	for _, c := range b.CuSeqlens[1:] {
		w.cu = append(w.cu, int32(at)+c)
	}
	w.fill += b.Fill
	w.toks[i] += int64(math.Round(b.Fill * float64(sl)))
	w.rows[i] += int64(b.Rows)
	w.row++
}

// finish turns the assembled batch into the Batch Next returns.
func (m *mixture) finish() *Batch {
	w := &m.wip
	b := &Batch{Epoch: m.epoch, SeqLen: m.cfg.SeqLen, SourceRows: make([]int, len(m.srcs))}
	m.back.b, m.back.got, m.back.snap, m.back.tb = b, w.got, w.snap, w.tb
	if tb := w.tb; tb != nil {
		n := w.row * m.cfg.SeqLen
		if tb.tokens != nil {
			b.Tokens = tb.tokens[:n]
		} else {
			b.Tokens64 = tb.tokens64[:n]
		}
		tb.cu = w.cu
		b.PositionIDs, b.CuSeqlens, b.LossMask = tb.pos[:n], w.cu, tb.mask[:n]
		b.Fill = w.fill / float64(max(w.row, 1))
		b.Rows = w.row
		b.free = func() { m.putTok(tb) }
		w.tb = nil
	} else {
		cols := make([]Column, len(m.cols))
		for c := range cols {
			cols[c].Name = m.cols[c]
		}
		var kids []*Batch
		for _, got := range w.got {
			for _, cb := range got {
				for c := range cb.Columns {
					for _, a := range cb.Columns[c].Arrays {
						a.Retain()
						cols[c].Arrays = append(cols[c].Arrays, a)
					}
				}
				b.Rows += cb.Rows
				kids = append(kids, cb)
			}
		}
		b.setColumns(cols)
		b.free = func() {
			for _, cb := range kids {
				cb.Release()
			}
		}
	}
	// The blend's units: rows (tokens output: rows of the token matrix).
	g := m.blend.Given()
	for i := range m.srcs {
		b.SourceRows[i] = int(g[i] - w.given[i])
		m.rows[i] += w.rows[i]
		m.toks[i] += w.toks[i]
	}
	w.on, w.got, w.snap = false, nil, nil
	m.batches++
	m.nbatch++
	m.nrows += int64(b.Rows)
	return b
}

// unread gives back b, the batch the last next returned (Loader.Unread):
// the batch becomes again the one being assembled, complete, with the
// blend's counters and each touched source's State from before it, so
// that State reports it as not delivered and the next call returns its
// rows again (the same source batches, or the same token matrix) without
// asking the sources for any.
func (m *mixture) unread(b *Batch) error {
	k := &m.back
	if b == nil || k.b != b || !b.released.CompareAndSwap(false, true) {
		return ErrUnread
	}
	// The arrays b retained; b.free (the source batches, or the token
	// matrix back to the pool) is not called: the wip keeps them.
	for _, c := range b.Columns {
		for _, a := range c.Arrays {
			a.Release()
		}
	}
	w := &m.wip
	w.on, w.got, w.snap, w.tb = true, k.got, k.snap, k.tb
	for i := range m.srcs {
		m.rows[i] -= w.rows[i]
		m.toks[i] -= w.toks[i]
	}
	m.batches--
	m.nbatch--
	m.nrows -= int64(b.Rows)
	k.b, k.got, k.snap, k.tb = nil, nil, nil, nil
	return nil
}

// state returns the mixture's checkpoint after the last batch Next
// returned.
func (m *mixture) state() *State {
	s := &State{Version: stateVersion, Output: m.cfg.Output.String(), Seed: m.cfg.Seed, Epoch: m.epoch, Rank: m.cfg.Rank, World: m.cfg.World}
	ms := &MixState{Epoch: m.epoch, Batches: m.batches, Units: m.units, Rest: m.rest, BatchRows: m.cfg.BatchRows, EpochEnd: m.finished, Given: m.blend.Given()}
	if m.wip.on {
		ms.Given = slices.Clone(m.wip.given)
	}
	for i := range m.srcs {
		ms.Shares = append(ms.Shares, m.blend.Share(i))
	}
	for i, sl := range m.srcs {
		st := (*State)(nil)
		switch {
		case !m.wip.on:
			st = sl.State()
		case m.wip.snap[i] != nil:
			st = m.wip.snap[i]
		default:
			if len(m.wip.got[i]) > 0 {
				m.rewind(i)
			}
			st = sl.State()
		}
		ms.Sources = append(ms.Sources, SourceState{Name: m.names[i], State: st})
	}
	s.Mix = ms
	return s
}

// checkResume checks a State against the mixture's settings; the sources
// check their own States when they open.
func (m *mixture) checkResume(s *State) (*MixState, error) {
	switch {
	case s.Version != stateVersion:
		return nil, versionErr(s.Version)
	case s.Mix == nil:
		return nil, fmt.Errorf("%w: it is one dataset's state, this loader reads a mixture of %d sources", ErrState, len(m.names))
	case s.Output != m.cfg.Output.String():
		return nil, stateErr("output", "%q, this loader's is %q", s.Output, m.cfg.Output)
	case s.Seed != m.cfg.Seed:
		return nil, stateErr("seed", "%d, this loader's is %d", s.Seed, m.cfg.Seed)
	case s.Rank != m.cfg.Rank || s.World != m.cfg.World:
		return nil, stateErr("rank", "rank %d of %d, this loader is rank %d of %d (Reshard deals a state to another world)", s.Rank, s.World, m.cfg.Rank, m.cfg.World)
	case len(s.Mix.Given) != len(s.Mix.Sources) || len(s.Mix.Shares) != len(s.Mix.Sources):
		return nil, stateErr("mix", "%d counters and %d shares for %d sources", len(s.Mix.Given), len(s.Mix.Shares), len(s.Mix.Sources))
	case s.Mix.Rest > s.Mix.Units:
		return nil, stateErr("mix", "a remainder of %d rows in an epoch of %d", s.Mix.Rest, s.Mix.Units)
	case s.Mix.Epoch < m.cfg.Epoch || s.Mix.Epoch >= m.cfg.Epoch+uint64(m.cfg.Epochs):
		return nil, stateErr("epoch", "%d, this loader runs epochs %d..%d", s.Mix.Epoch, m.cfg.Epoch, m.cfg.Epoch+uint64(m.cfg.Epochs)-1)
	}
	for i, ss := range s.Mix.Sources {
		if ss.State == nil || slices.ContainsFunc(s.Mix.Sources[:i], func(o SourceState) bool { return o.Name == ss.Name }) {
			return nil, stateErr("mix", "source %q: no state, or named twice", ss.Name)
		}
	}
	return s.Mix, nil
}

// resume continues the mixture where rs left it. The blend's counters
// carry on when the sources and their shares are those of rs; otherwise
// (weights changed, a source added or removed) they restart from here,
// and each source still continues where it was.
func (m *mixture) resume(rs *MixState) error {
	m.epoch, m.batches, m.rest = rs.Epoch, rs.Batches, rs.Rest
	same := len(rs.Sources) == len(m.names)
	for i := 0; same && i < len(m.names); i++ {
		same = rs.Sources[i].Name == m.names[i] && math.Abs(rs.Shares[i]-m.blend.Share(i)) < 1e-12
	}
	if same {
		if err := m.blend.Restore(rs.Given); err != nil {
			return fmt.Errorf("%w: field mix: %w", ErrState, err)
		}
	} else {
		m.cfg.Logf("the mixture's sources or weights differ from the checkpoint's: every source continues where it was, and the new blend counts from here")
	}
	if rs.EpochEnd {
		m.batches = m.steps()
	}
	return nil
}

// stats sums the sources' counters, with the mixture's rows and batches
// and its read modes.
func (m *mixture) stats() Stats {
	var s Stats
	for i, sl := range m.srcs {
		c := sl.Stats()
		s.Pages += c.Pages
		s.DiskBytes += c.DiskBytes
		s.PageBytes += c.PageBytes
		s.DecodedBytes += c.DecodedBytes
		s.Dictionaries += c.Dictionaries
		s.SlowReads += c.SlowReads
		s.ZeroCopyPages += c.ZeroCopyPages
		s.SkippedPages += c.SkippedPages
		s.SidePages += c.SidePages
		s.StraddleReads += c.StraddleReads
		s.SideCacheHits += c.SideCacheHits
		s.Reads += c.Reads
		s.CoalescedPages += c.CoalescedPages
		s.DroppedRows += c.DroppedRows
		s.IndexBuildNs += c.IndexBuildNs
		ep := int64(0)
		if sl.ep != nil || sl.finished {
			ep = int64(sl.epoch-sl.cfg.Epoch) + 1
		}
		s.Sources = append(s.Sources, SourceStats{Name: m.names[i], Rows: m.rows[i], Tokens: m.toks[i], Epochs: ep,
			DiskBytes: c.DiskBytes, PageBytes: c.PageBytes, DroppedRows: c.DroppedRows, Pages: c.Pages, SkippedPages: c.SkippedPages,
			IOMode: c.IOMode, DirectFiles: c.DirectFiles, BufferedFiles: c.BufferedFiles})
	}
	s.Batches, s.Rows = m.nbatch, m.nrows
	m.io.stats(&s)
	return s
}

// close closes the sources, then the engine they share.
func (m *mixture) close() error {
	var errs []error
	for _, sl := range m.srcs {
		errs = append(errs, sl.closeAll())
	}
	if m.wip.tb != nil {
		m.wip.tb.free()
		m.wip.tb = nil
	}
	if m.tokBufs != nil {
		m.tokMu.Lock()
		m.tokClosed = true
		for len(m.tokBufs) > 0 {
			(<-m.tokBufs).free()
		}
		m.tokMu.Unlock()
	}
	for _, got := range m.wip.got {
		for _, b := range got {
			b.Release()
		}
	}
	m.wip.got = nil
	if m.eng != nil && m.cfg.SharedEngine == nil {
		errs = append(errs, m.eng.Close())
	}
	return errors.Join(errs...)
}

// reshardMix is Reshard over a mixture's states: each source's states are
// resharded as one dataset's are, the blend's counters (the same on every
// rank) carry on, and the new world's epoch is the rest of the mixture
// epoch (MixState.Rest): the rows the old world had still to deliver, in
// steps of the new world's own (Len counts them, the same on every rank).
func reshardMix(states []*State, world int) ([]*State, error) {
	s0 := states[0]
	if world < 1 || world > maxWorld || len(states) != s0.World {
		return nil, fmt.Errorf("%w: reshard %d mixture states of a world of %d to world %d", ErrState, len(states), s0.World, world)
	}
	byRank := make([]*State, s0.World)
	for _, s := range states {
		if s == nil || s.Mix == nil || s.Rank < 0 || s.Rank >= s0.World || byRank[s.Rank] != nil {
			return nil, fmt.Errorf("%w: not one mixture state per rank", ErrState)
		}
		if s.World != s0.World || s.Seed != s0.Seed || s.Output != s0.Output || s.Mix.Epoch != s0.Mix.Epoch ||
			len(s.Mix.Sources) != len(s0.Mix.Sources) || s.Mix.Units != s0.Mix.Units || s.Mix.BatchRows != s0.Mix.BatchRows {
			return nil, fmt.Errorf("%w: mixture states of different runs, epochs or settings", ErrState)
		}
		byRank[s.Rank] = s
	}
	m0 := s0.Mix
	out := make([]*State, world)
	// What the old world delivered, and the new world's steps of the rest.
	b := uint64(max(m0.BatchRows, 1))
	epoch := m0.Units // the old world's epoch: the whole, or a remainder of it
	if m0.Rest > 0 {
		epoch = m0.Rest
	}
	var done uint64 // the rows every old rank delivered
	for _, s := range byRank {
		if s.Mix.Rest != m0.Rest {
			return nil, fmt.Errorf("%w: mixture states of different remainders of an epoch", ErrState)
		}
		done += s.Mix.Batches * b
	}
	done = min(done, epoch)
	// A remainder of no rows is the end of the epoch.
	rest, end := epoch-done, m0.EpochEnd || done == epoch
	if end {
		rest = 0
	}
	for r := range out {
		out[r] = &State{Version: stateVersion, Output: s0.Output, Seed: s0.Seed, Epoch: s0.Epoch, Rank: r, World: world,
			Mix: &MixState{Epoch: m0.Epoch, Units: m0.Units, Rest: rest, BatchRows: m0.BatchRows, EpochEnd: end,
				Shares: slices.Clone(m0.Shares), Given: slices.Clone(m0.Given)}}
	}
	for k, ss := range m0.Sources {
		src := make([]*State, len(byRank))
		for r, s := range byRank {
			if s.Mix.Sources[k].Name != ss.Name {
				return nil, fmt.Errorf("%w: rank %d's source %d is %q, rank 0's %q", ErrState, r, k, s.Mix.Sources[k].Name, ss.Name)
			}
			src[r] = s.Mix.Sources[k].State
		}
		rs, err := Reshard(src, world)
		if err != nil {
			return nil, srcErr(ss.Name, err)
		}
		for r := range out {
			out[r].Mix.Sources = append(out[r].Mix.Sources, SourceState{Name: ss.Name, State: rs[r]})
		}
	}
	return out, nil
}

// ParseSource parses a command line's source, PATH[:WEIGHT]: a file,
// directory or glob, and after its last colon a weight when what follows
// is a number (else the whole is the path, which counts as Repeat 1).
// The source is named by its path.
func ParseSource(s string) (Source, error) {
	path := s
	var w float64
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		if v, err := strconv.ParseFloat(s[i+1:], 64); err == nil {
			path, w = s[:i], v
			if w <= 0 || math.IsNaN(w) || math.IsInf(w, 0) {
				return Source{}, fmt.Errorf("%w: source %q: weight %v (want a positive number)", ErrConfig, s, w)
			}
		}
	}
	if path == "" {
		return Source{}, fmt.Errorf("%w: source %q has no path", ErrConfig, s)
	}
	return Source{Name: path, Paths: []string{path}, Weight: w}, nil
}
