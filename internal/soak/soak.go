// Package soak runs pagefeed's long mixed workload under injected faults
// and samples the process's resident memory and goroutine count over time:
// both must stay flat. It backs cmd/soak and `make soak` (not CI).
//
// The workload cycles through loader configurations (page, row-group and
// row shuffles; unordered and ordered fetch; Arrow and token output; one
// epoch, two epochs, or a loader closed mid-epoch), each on its own
// engine whose reads meet EIO, short reads, EAGAIN, EINTR and ECANCELED
// at RateFaults' rates, with Config.SkipBadPages set, on a dataset where
// one id page in corruptEvery is corrupt. Every run of the id column is
// checked: no row twice, and rows delivered plus rows in skipped pages
// equal the dataset's. SkipBadPages skips corruption only, so a run whose
// read meets an injected EIO must fail with it: such runs are counted
// (Report.EIOFailed), and their rows are not expected.
//
// Two more kinds of run test the contracts under change and interruption
// (contracts.go). Rewrite runs overwrite a file of a second dataset in
// place mid-epoch with another valid file of the same layout, and check
// every row's value against the original's. Interrupt runs cancel Next's
// context at random points, give batches back with Unread and resume new
// loaders from State, and check that the epoch still delivers every row
// exactly once.
package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/engine/enginetest"
	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/gen"
	"github.com/pagefeed/pagefeed/internal/procstat"
	"github.com/pagefeed/pagefeed/rinas"
)

// ErrNotFlat is returned by Run when memory or goroutines grew.
var ErrNotFlat = errors.New("soak: RSS or goroutines not flat")

// Config configures Run. Zero fields take the defaults in fill.
type Config struct {
	Duration time.Duration // default 10 minutes
	Interval time.Duration // between samples; default Duration/20, at least 1 s
	Dir      string        // dataset folder; default a temporary one, generated and removed
	// RowsPerFile sizes the generated dataset (4 files); default 20000.
	RowsPerFile int
	// Fault rates per read attempt; default EIO 0.001, short 0.01,
	// EAGAIN, EINTR and ECANCELED 0.005 each.
	Faults *enginetest.RateFaults
	// Growth is the tolerated rise of RSS from the first to the last third
	// of the samples, as a fraction; default 0.25.
	Growth float64
	Out    io.Writer // one line per sample; default io.Discard
}

func (c *Config) fill() {
	if c.Duration <= 0 {
		c.Duration = 10 * time.Minute
	}
	if c.Interval <= 0 {
		c.Interval = max(c.Duration/20, time.Second)
	}
	if c.Faults == nil {
		c.Faults = &enginetest.RateFaults{EIO: 0.001, Short: 0.01, EAGAIN: 0.005, EINTR: 0.005, ECANCELED: 0.005, Seed: 1}
	}
	if c.RowsPerFile <= 0 {
		c.RowsPerFile = 20000
	}
	if c.Growth <= 0 {
		c.Growth = 0.25
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
}

// Sample is the process's state at one moment of the run.
type Sample struct {
	Elapsed    time.Duration `json:"elapsed_ns"`
	RSS        int64         `json:"rss_bytes"`
	HeapInuse  uint64        `json:"heap_inuse_bytes"`
	Goroutines int           `json:"goroutines"`
	Runs       int64         `json:"runs"`
	Reads      int64         `json:"read_attempts"`
}

// Report is what Run measured.
type Report struct {
	Samples []Sample `json:"samples"`
	Runs    int64    `json:"runs"`    // loaders opened and closed
	Batches int64    `json:"batches"` // batches delivered
	Rows    int64    `json:"rows"`
	// Reads counts read attempts the injector saw; Faults what it
	// injected (EIO among them, each failing its run).
	Reads     int64                  `json:"read_attempts"`
	Faults    enginetest.FaultCounts `json:"faults"`
	Skipped   int64                  `json:"skipped_pages"`
	EIOFailed int64                  `json:"eio_failed_runs"` // runs ended by an injected EIO, as they must
	Lost      int64                  `json:"lost_rows"`       // rows neither delivered nor in a skipped page: must be 0
	Dup       int64                  `json:"duplicated_rows"` // must be 0
	// Wrong counts rows delivered whose values are not the dataset's
	// (a rewritten file's rows, or an id outside the dataset), and token
	// epochs whose tokens differ from the dataset's: must be 0.
	Wrong int64 `json:"wrong_rows"`
	// Rewrites counts files rewritten in place mid-epoch; RewriteErrors
	// the runs that then ended with ErrFileChanged naming the file, and
	// RewriteSkips those that skipped its units (SkipBadPages) instead.
	// Undetected counts rewrite runs that ended without an error although
	// rows were missing or wrong: must be 0.
	Rewrites      int64 `json:"rewrites"`
	RewriteErrors int64 `json:"rewrite_errors"`
	RewriteSkips  int64 `json:"rewrite_skips"`
	Undetected    int64 `json:"rewrites_undetected"`
	// Interrupts counts Next calls ended by their context; Resumes the
	// loaders opened from another's State; Unreads the batches given back.
	Interrupts int64   `json:"interrupts"`
	Resumes    int64   `json:"resumes"`
	Unreads    int64   `json:"unreads"`
	RSSGrowth  float64 `json:"rss_growth"` // last third's median over the first third's, minus 1
	GoroFirst  int     `json:"goroutines_first"`
	GoroLast   int     `json:"goroutines_last"`
	Flat       bool    `json:"flat"`
}

// Run runs the workload for cfg.Duration (or until ctx ends) and reports
// the samples. It returns ErrNotFlat (with the report) when RSS grew more
// than cfg.Growth or goroutines kept rising, and an error when a row was
// lost, duplicated or wrong, a rewrite went undetected, or a run failed.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.fill()
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "pagefeed-soak-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	w, err := newWorkload(ctx, cfg, dir)
	if err != nil {
		return nil, err
	}
	rep := &Report{}
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	start := time.Now()
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		s := Sample{Elapsed: time.Since(start), RSS: procstat.RSS(), HeapInuse: ms.HeapInuse, Goroutines: runtime.NumGoroutine(),
			Runs: w.runs, Reads: cfg.Faults.Counts().Attempts}
		rep.Samples = append(rep.Samples, s)
		fmt.Fprintf(cfg.Out, "t=%-6s rss=%6.1fMiB heap=%6.1fMiB goroutines=%-3d runs=%-5d reads=%d\n",
			s.Elapsed.Round(time.Second), float64(s.RSS)/(1<<20), float64(s.HeapInuse)/(1<<20), s.Goroutines, s.Runs, s.Reads)
	}
	sample()
	next := time.Now().Add(cfg.Interval)
	var runErr error
	for ctx.Err() == nil && runErr == nil {
		runErr = w.step(ctx)
		if time.Now().After(next) {
			sample()
			next = next.Add(cfg.Interval)
		}
	}
	if errors.Is(runErr, context.DeadlineExceeded) || errors.Is(runErr, context.Canceled) {
		runErr = nil
	}
	runtime.GC()
	sample()
	rep.Runs, rep.Batches, rep.Rows = w.runs, w.batches, w.rowsOut
	rep.Faults = cfg.Faults.Counts()
	rep.Reads = rep.Faults.Attempts
	rep.Skipped, rep.Lost, rep.Dup, rep.EIOFailed = w.skipped, w.lost, w.dup, w.eioFailed
	rep.Wrong, rep.Rewrites, rep.RewriteErrors, rep.RewriteSkips, rep.Undetected = w.wrong, w.rewrites, w.rewriteErrors, w.rewriteSkips, w.undetected
	rep.Interrupts, rep.Resumes, rep.Unreads = w.interrupts, w.resumes, w.unreads
	rep.verdict(cfg.Growth)
	switch {
	case runErr != nil:
		return rep, runErr
	case rep.Lost != 0 || rep.Dup != 0 || rep.Wrong != 0 || rep.Undetected != 0:
		return rep, fmt.Errorf("soak: %d rows lost, %d duplicated, %d wrong; %d rewrites undetected", rep.Lost, rep.Dup, rep.Wrong, rep.Undetected)
	case !rep.Flat:
		return rep, ErrNotFlat
	}
	return rep, nil
}

// verdict compares the first and last thirds of the samples (the first
// sample, before any run, is left out: it has no engine memory yet).
func (r *Report) verdict(growth float64) {
	s := r.Samples
	if len(s) > 3 {
		s = s[1:]
	}
	third := max(len(s)/3, 1)
	med := func(xs []Sample) float64 {
		v := make([]float64, len(xs))
		for i, x := range xs {
			v[i] = float64(x.RSS)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	maxG := func(xs []Sample) int {
		m := 0
		for _, x := range xs {
			m = max(m, x.Goroutines)
		}
		return m
	}
	first, last := s[:third], s[len(s)-third:]
	r.RSSGrowth = med(last)/med(first) - 1
	r.GoroFirst, r.GoroLast = maxG(first), maxG(last)
	r.Flat = r.RSSGrowth <= growth && r.GoroLast <= r.GoroFirst+4
}

// workload is the cycle of loader runs.
type workload struct {
	cfg   Config
	paths []string
	rows  int64
	idIx  *index.Index
	seen  []uint32 // per id: the run that delivered it

	// The rewrite runs' datasets (by codec) and the tokens runs' index
	// and expected tokens (contracts.go).
	rw     map[string]*rwSet
	tokIx  *index.Index
	tokens tokenSum

	runs, batches, rowsOut int64
	skipped, lost, dup     int64
	eioFailed              int64

	wrong, rewrites, rewriteErrors, rewriteSkips, undetected int64
	interrupts, resumes, unreads                             int64
}

// newWorkload generates the datasets under dir and indexes them.
func newWorkload(ctx context.Context, cfg Config, dir string) (*workload, error) {
	res, err := gen.Run(ctx, gen.Config{Dir: dir, Files: 4, RowsPerFile: cfg.RowsPerFile, PageSize: 8 << 10, RowGroupRows: 5000,
		PageVersion: 2, PageIndex: true, Dictionary: true, Codec: "zstd", Seed: 1, MeanTokens: 48, Parallelism: 2})
	if err != nil {
		return nil, fmt.Errorf("soak: generate: %w", err)
	}
	idIx, err := indexColumn(ctx, res.Files, "id")
	if err != nil {
		return nil, err
	}
	w := &workload{cfg: cfg, paths: res.Files, rows: res.Rows, idIx: idIx, seen: make([]uint32, res.Rows)}
	// Before the id column's corruption: the tokens digest reads the files whole.
	if err := w.setupContracts(ctx, dir); err != nil {
		return nil, fmt.Errorf("soak: %w", err)
	}
	if err := corruptPages(idIx); err != nil {
		return nil, fmt.Errorf("soak: %w", err)
	}
	// Index the corrupted files again: an index taken before the writes
	// would see every file written as changed (ErrFileChanged) and
	// SkipBadPages would skip the files whole, not the corrupt pages.
	if w.idIx, err = indexColumn(ctx, res.Files, "id"); err != nil {
		return nil, err
	}
	if w.tokIx, err = indexColumn(ctx, res.Files, "input_ids"); err != nil {
		return nil, err
	}
	return w, nil
}

// indexColumn indexes column col of paths, without a sidecar.
func indexColumn(ctx context.Context, paths []string, col string) (*index.Index, error) {
	ix, err := index.Build(ctx, paths, index.Options{Columns: []string{col}, NoSidecar: true, Logf: func(string, ...any) {}})
	if err != nil {
		return nil, fmt.Errorf("soak: index %s: %w", col, err)
	}
	return ix, nil
}

// corruptEvery is the spacing of the id pages corruptPages damages.
const corruptEvery = 40

// corruptPages overwrites the header of every corruptEvery-th page of the
// id column (at least one) with 0xff bytes, which no page header parses as: corruption
// for SkipBadPages to skip in every run.
func corruptPages(ix *index.Index) error {
	for g := min(corruptEvery/2, ix.NumPages(0)/2); g < ix.NumPages(0); g += corruptEvery {
		loc := ix.Locate(0, g)
		f, err := os.OpenFile(ix.File(loc.File).Path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteAt([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, loc.Offset)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

type variant struct {
	name    string
	kind    kind
	column  string
	shuffle rinas.Shuffle
	fetch   rinas.Fetch
	output  rinas.Output
	epochs  int
	stopAt  int // close after this many batches (0: run to the end)
	direct  engine.Tristate
	// Rewrite and interrupt runs: the rewrite dataset's codec, row
	// batches (0: page batches), SkipBadPages on the rewrite dataset.
	codec     string
	batchRows int
	skip      bool
}

// kind is what a variant's run does besides reading.
type kind int

const (
	plain     kind = iota // read under faults
	rewrite               // rewrite a file in place mid-epoch (rewriteRun)
	interrupt             // cancel, unread and resume (interruptRun)
)

var variants = []variant{
	{name: "page/unordered", column: "id", shuffle: rinas.ShufflePage},
	{name: "rowgroup", column: "id", shuffle: rinas.ShuffleRowGroup},
	{name: "tokens", column: "input_ids", shuffle: rinas.ShufflePage, output: rinas.OutputTokens},
	{name: "page/two-epochs/buffered", column: "id", shuffle: rinas.ShufflePage, epochs: 2, direct: engine.Off},
	{name: "ordered", column: "id", shuffle: rinas.ShufflePage, fetch: rinas.Ordered},
	{name: "page/closed-mid-epoch", column: "input_ids", shuffle: rinas.ShufflePage, stopAt: 7},
	{name: "stream", column: "id", shuffle: rinas.ShuffleStream},
	{name: "rewrite/page/none", kind: rewrite, codec: "none"},
	{name: "interrupt/pages", kind: interrupt, column: "id"},
	{name: "rewrite/ordered/zstd", kind: rewrite, codec: "zstd", fetch: rinas.Ordered},
	{name: "interrupt/rows", kind: interrupt, column: "id", batchRows: 700},
	{name: "rewrite/rows/zstd", kind: rewrite, codec: "zstd", batchRows: 50},
	{name: "interrupt/tokens", kind: interrupt, column: "input_ids", output: rinas.OutputTokens},
	{name: "rewrite/page/skip/zstd", kind: rewrite, codec: "zstd", skip: true},
	{name: "rewrite/ordered/none", kind: rewrite, codec: "none", fetch: rinas.Ordered},
	{name: "rewrite/rows/skip/none", kind: rewrite, codec: "none", batchRows: 50, skip: true},
}

// step runs the next variant once.
func (w *workload) step(ctx context.Context) error {
	v := variants[w.runs%int64(len(variants))]
	return w.run(ctx, v)
}

// run runs v once.
func (w *workload) run(ctx context.Context, v variant) error {
	w.runs++
	switch v.kind {
	case rewrite:
		return w.rewriteRun(ctx, v)
	case interrupt:
		return w.interruptRun(ctx, v)
	}
	l, err := rinas.Open(ctx, w.config(v))
	if err != nil {
		return fmt.Errorf("soak: %s: open: %w", v.name, err)
	}
	return w.plainRun(ctx, v, l)
}

// config is the loader configuration of v's runs over the soak dataset.
func (w *workload) config(v variant) rinas.Config {
	cfg := rinas.Config{
		Paths: w.paths, Columns: []string{v.column}, Shuffle: v.shuffle, Fetch: v.fetch, Output: v.output,
		Seed: uint64(w.runs), Epochs: max(v.epochs, 1), World: 1, SkipBadPages: true, BatchPages: 32,
		Engine: engine.Options{Faults: w.cfg.Faults, Direct: v.direct},
		Index:  index.Options{NoSidecar: true, Logf: func(string, ...any) {}},
		Logf:   func(string, ...any) {},
	}
	if v.output == rinas.OutputTokens {
		cfg.SeqLen, cfg.BatchRows = 512, 8
	}
	if v.shuffle == rinas.ShuffleStream {
		cfg.BatchRows = 256
	}
	if v.column == "id" {
		cfg.SharedIndex = w.idIx
	}
	return cfg
}

// plainRun reads l's epochs under faults and checks the id column.
func (w *workload) plainRun(ctx context.Context, v variant, l *rinas.Loader) error {
	run := uint32(w.runs)
	delivered := int64(0)
	n := 0
	for {
		b, err := l.Next(ctx)
		if err == io.EOF {
			break
		}
		if errors.Is(err, syscall.EIO) {
			// An injected EIO fails the run: that is the contract.
			w.eioFailed++
			w.skipped += l.Stats().SkippedPages
			return l.Close()
		}
		if err != nil {
			l.Close()
			return fmt.Errorf("soak: %s: %w", v.name, err)
		}
		n++
		w.batches++
		w.rowsOut += int64(b.Rows)
		if v.column == "id" {
			for _, a := range b.Arrays {
				for _, id := range a.(*array.Int64).Int64Values() {
					if id < 0 || id >= w.rows {
						continue
					}
					// Each epoch is a run of its own for the check.
					if w.seen[id] == run+uint32(b.Epoch)<<24 {
						w.dup++
					}
					w.seen[id] = run + uint32(b.Epoch)<<24
					delivered++
				}
			}
		}
		b.Release()
		if v.stopAt > 0 && n >= v.stopAt {
			break
		}
	}
	st := l.Stats()
	w.skipped += st.SkippedPages
	if v.column == "id" && v.stopAt == 0 {
		inSkipped := int64(0)
		for _, sp := range l.Skipped() {
			if v.shuffle == rinas.ShuffleRowGroup {
				ci := w.idIx.Chunk(0, w.idIx.Locate(0, int(sp.Page)).Chunk)
				for k := 0; k < ci.NumPages; k++ {
					inSkipped += int64(w.idIx.Locate(0, ci.FirstPage+k).NumRows)
				}
			} else {
				inSkipped += int64(w.idIx.Locate(0, int(sp.Page)).NumRows)
			}
		}
		if want := w.rows*int64(max(v.epochs, 1)) - inSkipped; delivered < want {
			w.lost += want - delivered
		}
	}
	return l.Close()
}
