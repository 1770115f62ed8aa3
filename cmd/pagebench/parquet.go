package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pagefeed/pagefeed/bench"
	"github.com/pagefeed/pagefeed/internal/cgroup"
	"github.com/pagefeed/pagefeed/internal/plot"
	"github.com/pagefeed/pagefeed/rinas"
)

const parquetUsage = `usage: pagebench --parquet=PATH_OR_GLOB [--column=NAME[,NAME...]] [--lead-column=NAME] [--coalesce=BYTES] [--side-cache=BYTES] [--shuffle=page|row|rowgroup|stream|none]
    [--fetch=unordered|ordered] [--batch=N] [--rows=N] [--buffer=N] [--iodepth=N] [--prefetch=N]
    [--runtime=S | --loops=N] [--seed=S] [--epoch=E] [--rank=R] [--world=W] [--dump-order=FILE]
    [--drop-last | --pad-last | --keep-uneven] [--deterministic]
    [--ioengine=io_uring|psync|mmap] [--engine=pagefeed|arrowgo|decode] [--io-mode=auto|direct|buffered | --direct=0|1] [--pin] [--output-format=normal|json]
       pagebench --source=PATH[:WEIGHT] --source=PATH[:WEIGHT]... [the flags above]   (a weighted mixture)
       pagebench --parquet=PATH_OR_GLOB --compare --runtime=S [--rounds=N] [--column=NAME] [--regimes=fits,larger,device|none] [--memory=SIZE] [--charts=DIR]
       pagebench --parquet=PATH_OR_GLOB --sweep=1/4,1/2,1,2,4 --runtime=S [--charts=DIR]
`

// isParquet reports whether args ask for Parquet mode.
func isParquet(args []string) bool {
	for _, a := range args {
		if a == "--parquet" || a == "-parquet" || strings.HasPrefix(a, "--parquet=") || strings.HasPrefix(a, "-parquet=") ||
			a == "--source" || a == "-source" || strings.HasPrefix(a, "--source=") || strings.HasPrefix(a, "-source=") {
			return true
		}
	}
	return false
}

// parquetFlags are Parquet mode's flags: those that set a
// bench.ParquetConfig field directly are bound to cfg, the rest are parsed
// into it by resolve.
type parquetFlags struct {
	cfg                           bench.ParquetConfig
	paths, sources                multi
	runtime, format               string
	direct, ioMode                string
	shuffle, fetch, ioengine, eng *string
	compare                       *bool
	rounds                        *int
	charts                        *string
	regimes, memory, sweep        *string
}

// bindParquetFlags defines Parquet mode's flags on fs.
func bindParquetFlags(fs *flag.FlagSet) *parquetFlags {
	p := &parquetFlags{}
	cfg := &p.cfg
	fs.Var(&p.paths, "parquet", "Parquet file, directory or glob (repeatable)")
	fs.Var(&p.sources, "source", "instead of --parquet: one dataset of a weighted mixture, PATH[:WEIGHT] (repeatable; without weights each source's rows once per epoch)")
	fs.StringVar(&cfg.Name, "name", "parquet", "job name")
	fs.StringVar(&cfg.Column, "column", "", "column(s) to read: a leaf or top-level name, or several separated by commas")
	fs.StringVar(&cfg.LeadColumn, "lead-column", "", "with several columns: the column whose pages define the row spans (default: the most bytes)")
	fs.Int64Var(&cfg.SideCache, "side-cache", 0, "with several columns: bytes of decoded pages of the other columns held for the next spans (default 64 MiB; -1 off)")
	fs.IntVar(&cfg.Coalesce, "coalesce", 0, "bytes up to which adjacent pages of a chunk are read in one request (default 1.25 MiB; -1 off)")
	p.shuffle = fs.String("shuffle", "page", "page|row|rowgroup|stream|none")
	p.fetch = fs.String("fetch", "unordered", "unordered|ordered")
	fs.IntVar(&cfg.Batch, "batch", 64, "pages per batch")
	fs.IntVar(&cfg.Rows, "rows", 0, "rows per batch (0: page batches)")
	fs.IntVar(&cfg.Buffer, "buffer", 0, "shuffle buffer rows (0: the loader's default, 256 pages' rows with --rows and page shuffle; -1: off)")
	fs.IntVar(&cfg.IODepth, "iodepth", 256, "reads in flight in all, as fio's iodepth (split over the workers)")
	fs.IntVar(&cfg.Prefetch, "prefetch", 0, "batches read ahead (default: 2, or 832 pages for compressed columns, at most 128 MiB decoded)")
	fs.IntVar(&cfg.Workers, "workers", 0, "engine workers (default GOMAXPROCS, half of it for uncompressed columns)")
	fs.StringVar(&p.runtime, "runtime", "", "run for this long (fio time syntax)")
	fs.IntVar(&cfg.Loops, "loops", 0, "run exactly this many epochs")
	fs.Uint64Var(&cfg.Seed, "seed", 0, "shuffle seed")
	fs.Uint64Var(&cfg.Epoch, "epoch", 0, "first epoch")
	fs.IntVar(&cfg.Rank, "rank", 0, "rank")
	fs.IntVar(&cfg.World, "world", 1, "world size")
	fs.BoolVar(&cfg.DropLast, "drop-last", false, "equal steps on every rank: leave out the epoch's uneven tail (default for --world > 1)")
	fs.BoolVar(&cfg.PadLast, "pad-last", false, "equal steps on every rank: repeat units from the start of the epoch's order")
	fs.BoolVar(&cfg.KeepUneven, "keep-uneven", false, "deliver every unit once; ranks may take different numbers of steps")
	fs.BoolVar(&cfg.Deterministic, "deterministic", false, "assemble batches in plan order: the same seed gives the same bytes")
	fs.StringVar(&cfg.DumpOrder, "dump-order", "", "write delivered pages (row mode: page row) to FILE")
	p.ioengine = fs.String("ioengine", "", "io_uring|psync|mmap (default: io_uring, or psync where the kernel refuses io_uring)")
	p.eng = fs.String("engine", "pagefeed", "pagefeed|arrowgo|decode")
	fs.StringVar(&p.direct, "direct", "", "1: O_DIRECT reads (--io-mode=direct), 0: buffered (--io-mode=buffered); default auto")
	fs.StringVar(&p.ioMode, "io-mode", "auto", "auto|direct|buffered: auto reads buffered a dataset that stays in the page cache this job can hold, O_DIRECT one that does not (but for files already cached)")
	fs.BoolVar(&cfg.KeepCache, "keep-cache", false, "do not evict the dataset from the page cache first")
	fs.BoolVar(&cfg.Pin, "pin", false, "pin engine workers to this local rank's GPU cores ($LOCAL_RANK)")
	fs.StringVar(&p.format, "output-format", "normal", "normal|json")
	p.compare = fs.Bool("compare", false, "run the loader against its baselines (unordered, ordered, stream, arrowgo, mmap) and print a table")
	p.rounds = fs.Int("rounds", 1, "with --compare: rounds of alternating runs (medians are reported)")
	p.charts = fs.String("charts", "", "with --compare or --sweep: write the charts (SVG and PNG) into this folder")
	p.regimes = fs.String("regimes", "fits,larger,device", "with --compare, or alone: the read modes (auto, direct, buffered, mmap) where the dataset fits (fits), in a memory cgroup it outgrows (larger), and fio at the same read sizes and depth (device); none to skip")
	p.memory = fs.String("memory", "", "with --compare: the memory cgroup's limit where the dataset is larger than memory (default: a quarter of the dataset's projected bytes)")
	p.sweep = fs.String("sweep", "", "dataset ÷ memory ratios (e.g. 1/4,1/2,1,2,4): rows/s of auto, direct, buffered and mmap inside a memory cgroup per ratio, and a chart with --charts")
	return p
}

// resolve parses the parsed flags' names into cfg's typed values, once,
// and checks what the flags alone can tell.
func (p *parquetFlags) resolve() error {
	cfg := &p.cfg
	var err error
	if cfg.Shuffle, err = rinas.ParseShuffle(*p.shuffle); err != nil {
		return fmt.Errorf("--shuffle: %w", err)
	}
	if cfg.Fetch, err = rinas.ParseFetch(*p.fetch); err != nil {
		return fmt.Errorf("--fetch: %w", err)
	}
	if cfg.IOEngine, err = bench.ParseParquetIO(*p.ioengine); err != nil {
		return fmt.Errorf("--ioengine: %w", err)
	}
	if cfg.Engine, err = bench.ParseParquetEngine(*p.eng); err != nil {
		return fmt.Errorf("--engine: %w", err)
	}
	if len(p.paths) == 0 && len(p.sources) == 0 {
		return fmt.Errorf("--parquet needs a path")
	}
	if len(p.paths) > 0 && len(p.sources) > 0 {
		return fmt.Errorf("--parquet and --source: give one dataset or a mixture")
	}
	for _, s := range p.sources {
		src, err := rinas.ParseSource(s)
		if err != nil {
			return fmt.Errorf("--source: %w", err)
		}
		cfg.Sources = append(cfg.Sources, src)
	}
	if cfg.IODepth < 1 || cfg.IODepth > 4096 {
		return fmt.Errorf("--iodepth=%d: want 1..4096", cfg.IODepth)
	}
	cfg.Paths = p.paths
	if p.runtime != "" {
		d, err := bench.ParseTime(p.runtime)
		if err != nil {
			return err
		}
		cfg.Runtime = d
	}
	if cfg.Runtime > 0 && cfg.Loops > 0 {
		return fmt.Errorf("--runtime and --loops exclude each other")
	}
	if cfg.IOMode, err = rinas.ParseIOMode(p.ioMode); err != nil {
		return fmt.Errorf("--io-mode: %w", err)
	}
	switch p.direct {
	case "":
	case "0":
		cfg.IOMode = rinas.IOBuffered
	case "1":
		cfg.IOMode = rinas.IODirect
	default:
		return fmt.Errorf("--direct=%s: want 0 or 1 (or --io-mode=auto|direct|buffered)", p.direct)
	}
	if p.direct != "" && p.ioMode != "auto" && p.ioMode != "" {
		return fmt.Errorf("--direct and --io-mode exclude each other")
	}
	if p.format != "normal" && p.format != "json" {
		return fmt.Errorf("--output-format=%s: want normal or json", p.format)
	}
	return nil
}

// runParquet binds Parquet-mode flags to bench.ParquetConfig and runs it
// (--compare: the loader against its baselines).
func runParquet(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pagebench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	p := bindParquetFlags(fs)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			_, err = io.WriteString(stdout, parquetUsage)
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q in parquet mode", fs.Arg(0))
	}
	if err := p.resolve(); err != nil {
		return err
	}
	cfg := p.cfg
	var progress func(int64, time.Duration)
	if f, ok := stderr.(*os.File); ok && isTerminal(f) {
		progress = parquetProgress(stderr, cfg)
		defer fmt.Fprint(stderr, "\r\033[K")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *p.sweep != "" {
		return sweepParquet(ctx, cfg, *p.sweep, *p.charts, p.format == "json", stdout, stderr)
	}
	regimesSet := false
	fs.Visit(func(f *flag.Flag) { regimesSet = regimesSet || f.Name == "regimes" })
	if *p.compare || regimesSet {
		if cfg.Runtime <= 0 {
			return fmt.Errorf("--compare and --regimes need --runtime")
		}
		if *p.compare && p.format == "json" {
			return fmt.Errorf("--compare prints a table: --output-format=json goes with --regimes alone")
		}
		if *p.compare {
			if err := compareParquet(ctx, cfg, *p.rounds, *p.charts, stdout, stderr); err != nil {
				return err
			}
		}
		return compareRegimes(ctx, cfg, *p.regimes, *p.memory, *p.rounds, p.format == "json", stdout, stderr)
	}
	res, err := bench.RunParquet(ctx, cfg, progress)
	if err != nil {
		return err
	}
	if p.format == "json" {
		return res.WriteJSON(stdout)
	}
	return res.WriteNormal(stdout)
}

// parquetProgress returns the progress line a terminal gets about once a
// second: the page rate since the last line, the pages so far and, for a
// runtime, the time left.
func parquetProgress(stderr io.Writer, cfg bench.ParquetConfig) func(int64, time.Duration) {
	last := int64(0)
	lastT := time.Duration(0)
	return func(pages int64, el time.Duration) {
		rate := float64(pages-last) / (el - lastT).Seconds()
		last, lastT = pages, el
		eta := ""
		if cfg.Runtime > 0 {
			eta = fmt.Sprintf("[eta %s]", fmtETA(cfg.Runtime-el))
		}
		fmt.Fprintf(stderr, "\rJobs: 1: [%s][r=%.0f pages/s][%d pages]%s   ", cfg.Shuffle, rate, pages, eta)
	}
}

// compareParquet runs --compare: the loader against its baselines for
// rounds rounds, printed as a table and, with charts, drawn into that
// folder.
func compareParquet(ctx context.Context, cfg bench.ParquetConfig, rounds int, charts string, stdout, stderr io.Writer) error {
	if cfg.Runtime <= 0 {
		return fmt.Errorf("--compare needs --runtime")
	}
	if charts != "" {
		// Fail before measuring when the folder cannot be written.
		if err := os.MkdirAll(charts, 0o755); err != nil {
			return fmt.Errorf("--charts: %w", err)
		}
	}
	rows, err := bench.CompareParquet(ctx, bench.ParquetCompareConfig{Base: cfg, Runtime: cfg.Runtime, Rounds: rounds, Progress: stderr})
	if err != nil {
		return err
	}
	if err := bench.WriteParquetTable(stdout, rows); err != nil {
		return err
	}
	if charts == "" {
		return nil
	}
	return writeCompareCharts(charts, rows, stdout)
}

func fmtETA(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int(d.Seconds() + 0.5)
	return fmt.Sprintf("%02dm:%02ds", s/60, s%60)
}

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// writeCompareCharts draws the comparison: rows/s (log scale would hide
// nothing here, so linear with values printed) and batch latency p99.
func writeCompareCharts(dir string, rows []bench.ParquetCompareRow, stdout io.Writer) error {
	labels := make([]string, len(rows))
	rps := make([]float64, len(rows))
	// Batch latency only for the cases that deliver batches (decoding
	// alone from memory has none).
	var latLabels []string
	var p99 []float64
	for i, r := range rows {
		labels[i], rps[i] = r.Short, r.RowsPerSec
		if labels[i] == "" {
			labels[i] = r.Label
		}
		if r.BatchP99Ns > 0 {
			latLabels, p99 = append(latLabels, labels[i]), append(p99, r.BatchP99Ns/1e6)
		}
	}
	for _, c := range []struct {
		name string
		bars plot.Bars
	}{
		{"compare_rows_per_sec", plot.Bars{Title: "rows delivered per second (same run)", YLabel: "rows/s", Unit: "rows/s", Labels: labels, Values: rps}},
		{"compare_batch_p99", plot.Bars{Title: "batch latency p99", YLabel: "p99 batch latency (ms)", Unit: "ms", Labels: latLabels, Values: p99}},
	} {
		if len(c.bars.Values) == 0 {
			continue
		}
		base := filepath.Join(dir, c.name)
		if err := c.bars.Save(base); err != nil {
			return fmt.Errorf("chart %s: %w", base, err)
		}
		fmt.Fprintf(stdout, "wrote %s.svg and %s.png\n", base, base)
	}
	return nil
}

// hooks are the system calls of --regimes and --sweep: the binary their
// children run, the memory cgroups, dropping the page cache and fio.
// Zero values take bench's defaults; tests set them so that nothing
// touches the node's cache or control groups.
var hooks struct {
	pagebench   string
	env         []string
	fio         string
	createGroup func(name string, limit int64) (*cgroup.Group, error)
	dropCaches  func() error
}

// compareRegimes runs the read modes in both memory regimes and the
// device limit (bench.CompareRegimes) after --compare's baselines.
func compareRegimes(ctx context.Context, cfg bench.ParquetConfig, regimes, memory string, rounds int, asJSON bool, stdout, stderr io.Writer) error {
	if regimes == "none" {
		return nil
	}
	rc := bench.RegimesConfig{Base: cfg, Runtime: cfg.Runtime, Rounds: rounds, Progress: stderr,
		Pagebench: hooks.pagebench, Env: hooks.env, Fio: hooks.fio, CreateGroup: hooks.createGroup, DropCaches: hooks.dropCaches}
	for _, r := range strings.Split(regimes, ",") {
		rc.Regimes = append(rc.Regimes, strings.TrimSpace(r))
	}
	if memory != "" {
		n, err := bench.ParseSize(memory)
		if err != nil || n < 1 {
			return fmt.Errorf("--memory=%s: want a size such as 256m", memory)
		}
		rc.Memory = n
	}
	res, err := bench.CompareRegimes(ctx, rc)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(stdout, res)
	}
	fmt.Fprintln(stdout)
	return bench.WriteRegimes(stdout, res)
}

// sweepParquet runs --sweep: every read mode in a memory cgroup per
// dataset ÷ memory ratio, as a table and, with charts, a chart.
func sweepParquet(ctx context.Context, cfg bench.ParquetConfig, ratios, charts string, asJSON bool, stdout, stderr io.Writer) error {
	if cfg.Runtime <= 0 {
		return fmt.Errorf("--sweep needs --runtime")
	}
	rs, err := bench.ParseRatios(ratios)
	if err != nil {
		return fmt.Errorf("--sweep: %w", err)
	}
	if charts != "" {
		if err := os.MkdirAll(charts, 0o755); err != nil {
			return fmt.Errorf("--charts: %w", err)
		}
	}
	res, err := bench.SweepMemory(ctx, bench.SweepConfig{Base: cfg, Ratios: rs, Runtime: cfg.Runtime, Progress: stderr,
		Pagebench: hooks.pagebench, Env: hooks.env, CreateGroup: hooks.createGroup, DropCaches: hooks.dropCaches})
	if err != nil {
		return err
	}
	if charts != "" {
		base, err := res.SaveChart(charts, "rows_by_memory")
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s.svg and %s.png\n", base, base)
	}
	if asJSON {
		return writeJSON(stdout, res)
	}
	return res.WriteTable(stdout)
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
