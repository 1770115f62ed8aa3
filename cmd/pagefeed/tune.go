package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pagefeed/pagefeed/internal/term"

	"github.com/pagefeed/pagefeed/bench"
	"github.com/pagefeed/pagefeed/rinas"
)

func init() {
	register("tune", "storage-tuning grid: IOPS, bandwidth and latency vs queue depth (or batch size), knees, charts", runTune)
}

const tuneUsage = `usage: pagefeed tune (--filename FILE [--size BYTES] | --parquet PATHS) [flags]
  raw grid:     --iodepth 1,2,4,...,256 --bs 4k,16k,64k,256k,1m --numjobs 1 --ioengine io_uring[,psync,mmap]
  Parquet grid: --batch 8,16,...,256 --prefetch 1,2,4,8 --ioengine io_uring[,psync] --io-mode auto|direct|buffered
  Parquet, rows/s by memory: --sweep-memory 1/4,1/2,1,2,4 (auto, direct, buffered, mmap; a memory cgroup each)
  lists are comma-separated; "a,b,...,z" continues a,b (×ratio or +step) up to z`

// runTune binds flags to bench.TuneConfig, runs the grid, writes
// results.csv, results.json and the charts into --out and prints the knees.
// Every bad input is reported before anything runs.
func runTune(args []string, stdout, stderr io.Writer) error {
	cfg, replot, err := parseTune(args, stderr)
	if err != nil {
		return err
	}
	if replot != "" {
		return replotTune(replot, cfg.OutDir, stdout)
	}
	if len(sweepRatios) > 0 {
		return sweepTune(cfg, stdout, stderr)
	}
	cfg.Logf = func(f string, a ...any) { fmt.Fprintf(stderr, "pagefeed tune: "+f+"\n", a...) }
	// Validate everything (grids, input, output folder) before running.
	if err := cfg.Fill(); err != nil {
		return err
	}
	bar := newTuneBar(stderr, cfg.Runtime)
	cfg.Progress = bar.update
	logf := cfg.Logf
	cfg.Logf = func(f string, a ...any) { bar.log(logf, f, a...) }
	runs := cfg.NumPoints()
	if cfg.CompareFio {
		runs *= 2 // at most: fio may be missing, and mmap has no fio run
	}
	fmt.Fprintf(stderr, "pagefeed tune: %d points × %v (about %v)\n", runs, cfg.Runtime,
		(time.Duration(runs) * cfg.Runtime).Round(time.Second))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, runErr := bench.RunTune(ctx, cfg)
	bar.clear()
	if res == nil {
		return runErr
	}
	files, err := res.WriteAll(cfg.OutDir)
	if err != nil && runErr == nil {
		runErr = err
	}
	if err := res.WriteSummary(stdout); err != nil {
		return err
	}
	if res.FioSkipped != "" {
		fmt.Fprintf(stdout, "fio: skipped (%s)\n", res.FioSkipped)
	}
	fmt.Fprintf(stdout, "wrote %s in %s\n", strings.Join(files, ", "), cfg.OutDir)
	return runErr
}

// tuneFlags are tune's flags that parseTune turns into TuneConfig fields.
type tuneFlags struct {
	parquet, depths, bss, jobs, engines, batches, prefetch, runtime, size string
	ioMode, sweep                                                         string
	direct                                                                onOff
}

// sweepRatios are --sweep-memory's ratios, set by parseTune (nil: a grid).
var sweepRatios []float64

// parseTune parses tune's flags into a TuneConfig, or returns the
// --replot folder to redraw.
func parseTune(args []string, stderr io.Writer) (cfg bench.TuneConfig, replot string, err error) {
	fs := flag.NewFlagSet("tune", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned as one line; -h prints usage
	t := tuneFlags{direct: onOff(true)}
	fs.StringVar(&cfg.Filename, "filename", "", "raw `file` to read (laid out at --size if missing)")
	fs.StringVar(&t.size, "size", "", "bytes of --filename to use (e.g. 1g); required when it does not exist")
	fs.StringVar(&t.parquet, "parquet", "", "comma-separated Parquet files, directories or globs")
	fs.StringVar(&cfg.Column, "column", "", "Parquet: the column(s) to read (default the first leaf)")
	fs.StringVar(&t.depths, "iodepth", "1,2,4,...,256", "raw: queue depths")
	fs.StringVar(&t.bss, "bs", "4k,16k,64k,256k,1m", "raw: block sizes")
	fs.StringVar(&t.jobs, "numjobs", "1", "raw: jobs (clones) run together")
	fs.StringVar(&t.engines, "ioengine", "io_uring", "io engines: io_uring, psync, mmap (raw only)")
	fs.StringVar(&t.batches, "batch", "8,16,...,256", "Parquet: pages per batch")
	fs.StringVar(&t.prefetch, "prefetch", "1,2,4,8", "Parquet: batches read ahead")
	fs.StringVar(&t.runtime, "runtime", "2s", "time per point (at least 200ms)")
	fs.Var(&t.direct, "direct", "raw: O_DIRECT reads: on|off")
	fs.StringVar(&t.ioMode, "io-mode", "auto", "Parquet: auto|direct|buffered (auto: buffered a dataset that stays in the page cache this job can hold, O_DIRECT one that does not)")
	fs.StringVar(&t.sweep, "sweep-memory", "", "Parquet: instead of the grid, rows/s of auto, direct, buffered and mmap inside a memory cgroup per dataset ÷ memory `ratio` (e.g. 1/4,1/2,1,2,4), and its chart")
	fs.BoolVar(&cfg.CompareFio, "compare-fio", false, "raw: run fio on every point too, where fio is installed")
	fs.StringVar(&cfg.Fio, "fio", "fio", "fio binary for --compare-fio")
	fs.StringVar(&cfg.OutDir, "out", "tune-results", "output `dir` for results.csv, results.json and charts")
	fs.Uint64Var(&cfg.Seed, "seed", 0, "seed of the random offsets and page order")
	fs.StringVar(&replot, "replot", "", "redraw the charts and knees of `dir`/results.json into --out without measuring")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, tuneUsage)
			fs.SetOutput(stderr)
			fs.PrintDefaults()
		}
		return cfg, "", err
	}
	if fs.NArg() > 0 {
		return cfg, "", fmt.Errorf("unexpected argument %q (see pagefeed tune -h)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if replot != "" {
		return cfg, replot, nil
	}
	if t.parquet != "" {
		for _, p := range strings.Split(t.parquet, ",") {
			if p = strings.TrimSpace(p); p != "" {
				cfg.Parquet = append(cfg.Parquet, p)
			}
		}
		for _, raw := range []string{"iodepth", "bs", "numjobs", "size", "compare-fio", "direct"} {
			if set[raw] {
				return cfg, "", fmt.Errorf("--%s applies to --filename grids, not --parquet", raw)
			}
		}
	} else {
		for _, pq := range []string{"batch", "prefetch", "io-mode", "sweep-memory", "column"} {
			if set[pq] {
				return cfg, "", fmt.Errorf("--%s applies to --parquet grids, not --filename", pq)
			}
		}
	}
	return cfg, "", t.apply(&cfg)
}

// apply parses the grids, the runtime and the size into cfg.
func (t *tuneFlags) apply(cfg *bench.TuneConfig) error {
	var err error
	list := func(name, s string, lo, hi int64) []int {
		if err != nil {
			return nil
		}
		var vs []int
		if vs, err = bench.ParseGridInts(s, lo, hi); err != nil {
			err = fmt.Errorf("--%s %s: %w", name, s, err)
		}
		return vs
	}
	cfg.IODepths = list("iodepth", t.depths, 1, bench.MaxIODepth)
	cfg.BlockSizes = list("bs", t.bss, 512, 256<<20)
	cfg.NumJobs = list("numjobs", t.jobs, 1, 256)
	cfg.Batches = list("batch", t.batches, 1, 1<<16)
	cfg.Prefetch = list("prefetch", t.prefetch, 1, 64)
	if err != nil {
		return err
	}
	allowed := []string{bench.EngineIOUring, bench.EnginePsync, bench.EngineMmap}
	if t.parquet != "" {
		allowed = allowed[:2]
	}
	if cfg.IOEngines, err = bench.ParseGridWords(t.engines, allowed...); err != nil {
		return fmt.Errorf("--ioengine %s: %w", t.engines, err)
	}
	if cfg.Runtime, err = bench.ParseTime(t.runtime); err != nil {
		return fmt.Errorf("--runtime: %w", err)
	}
	if cfg.Runtime < bench.MinTuneRuntime {
		return fmt.Errorf("--runtime %s is too short to measure (want at least %v)", t.runtime, bench.MinTuneRuntime)
	}
	if t.size != "" {
		if cfg.Size, err = bench.ParseSize(t.size); err != nil || cfg.Size < 1 {
			return fmt.Errorf("--size %q: want bytes or 4k, 1m, 2g", t.size)
		}
	}
	cfg.NoDirect = !bool(t.direct)
	if cfg.IOMode, err = rinas.ParseIOMode(t.ioMode); err != nil {
		return fmt.Errorf("--io-mode: %w", err)
	}
	sweepRatios = nil
	if t.sweep != "" {
		if sweepRatios, err = bench.ParseRatios(t.sweep); err != nil {
			return fmt.Errorf("--sweep-memory: %w", err)
		}
	}
	return nil
}

// sweepTune runs --sweep-memory: every read mode inside a memory cgroup
// per ratio (bench.SweepMemory, each run pagebench's Parquet mode as a
// child: bin/pagebench beside this binary, else on $PATH), the table on
// stdout and the chart in --out.
func sweepTune(cfg bench.TuneConfig, stdout, stderr io.Writer) error {
	pb, err := pagebenchBinary()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	base := bench.ParquetConfig{Paths: cfg.Parquet, Column: cfg.Column, Seed: cfg.Seed}
	res, err := bench.SweepMemory(ctx, bench.SweepConfig{Base: base, Ratios: sweepRatios, Runtime: cfg.Runtime, Pagebench: pb, Progress: stderr})
	if err != nil {
		return err
	}
	if err := res.WriteTable(stdout); err != nil {
		return err
	}
	chart, err := res.SaveChart(cfg.OutDir, "rows_by_memory")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s.svg and %s.png\n", chart, chart)
	return nil
}

// pagebenchBinary finds pagebench: beside this executable, else on PATH.
func pagebenchBinary() (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "pagebench")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath("pagebench")
	if err != nil {
		return "", fmt.Errorf("--sweep-memory runs pagebench, which is neither beside this binary nor on PATH (make build)")
	}
	return p, nil
}

// replotTune redraws charts and knees from dir/results.json into out.
func replotTune(dir, out string, stdout io.Writer) error {
	f, err := os.Open(filepath.Join(dir, "results.json"))
	if err != nil {
		return err
	}
	defer f.Close()
	res, err := bench.ReadTuneResult(f)
	if err != nil {
		return err
	}
	res.Knees = bench.Knees(res.Points)
	res.Recommended = bench.Recommend(res.Knees)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	charts, err := res.Charts(out)
	if err != nil {
		return err
	}
	if err := res.WriteSummary(stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "redrew %s (.svg, .png) in %s\n", strings.Join(charts, ", "), out)
	return nil
}

// tuneBar is the progress bar: drawn only when stderr is a terminal.
// Notices may come from engine goroutines: mu orders them with the bar.
type tuneBar struct {
	mu      sync.Mutex
	w       io.Writer
	per     time.Duration
	drawn   bool
	enabled bool
}

// log clears the bar and writes one notice through logf.
func (b *tuneBar) log(logf func(string, ...any), f string, a ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.clearLocked()
	logf(f, a...)
}

func newTuneBar(stderr io.Writer, per time.Duration) *tuneBar {
	b := &tuneBar{w: stderr, per: per}
	if f, ok := stderr.(*os.File); ok {
		b.enabled = term.IsTerminal(f)
	}
	return b
}

func (b *tuneBar) update(done, total int, point string) {
	if !b.enabled || total == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	const width = 30
	n := done * width / total
	eta := (time.Duration(total-done) * b.per).Round(time.Second)
	fmt.Fprintf(b.w, "\r\x1b[K[%s%s] %d/%d eta %v  %s", strings.Repeat("#", n), strings.Repeat(".", width-n), done, total, eta, point)
	b.drawn = true
}

func (b *tuneBar) clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.clearLocked()
}

func (b *tuneBar) clearLocked() {
	if b.drawn {
		fmt.Fprint(b.w, "\r\x1b[K")
		b.drawn = false
	}
}
