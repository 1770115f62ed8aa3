package main

import (
	"context"
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
	"github.com/pagefeed/pagefeed/internal/plot"
	"github.com/pagefeed/pagefeed/rinas"
)

const parquetUsage = `usage: pagebench --parquet=PATH_OR_GLOB [--column=NAME[,NAME...]] [--lead-column=NAME] [--coalesce=BYTES] [--side-cache=BYTES] [--shuffle=page|row|rowgroup|stream|none]
    [--fetch=unordered|ordered] [--batch=N] [--rows=N] [--buffer=N] [--iodepth=N] [--prefetch=N]
    [--runtime=S | --loops=N] [--seed=S] [--epoch=E] [--rank=R] [--world=W] [--dump-order=FILE]
    [--drop-last | --pad-last | --keep-uneven] [--deterministic]
    [--ioengine=io_uring|psync|mmap] [--engine=pagefeed|arrowgo|decode] [--direct=0|1] [--pin] [--output-format=normal|json]
       pagebench --parquet=PATH_OR_GLOB --compare --runtime=S [--rounds=N] [--column=NAME]
`

// isParquet reports whether args ask for Parquet mode.
func isParquet(args []string) bool {
	for _, a := range args {
		if a == "--parquet" || a == "-parquet" || strings.HasPrefix(a, "--parquet=") || strings.HasPrefix(a, "-parquet=") {
			return true
		}
	}
	return false
}

// runParquet binds Parquet-mode flags to bench.ParquetConfig and runs it.
func runParquet(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pagebench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var cfg bench.ParquetConfig
	var paths multi
	var runtime, format string
	direct := 1
	fs.Var(&paths, "parquet", "Parquet file, directory or glob (repeatable)")
	fs.StringVar(&cfg.Name, "name", "parquet", "job name")
	fs.StringVar(&cfg.Column, "column", "", "column(s) to read: a leaf or top-level name, or several separated by commas")
	fs.StringVar(&cfg.LeadColumn, "lead-column", "", "with several columns: the column whose pages define the row spans (default: the most bytes)")
	fs.Int64Var(&cfg.SideCache, "side-cache", 0, "with several columns: bytes of decoded pages of the other columns held for the next spans (default 64 MiB; -1 off)")
	fs.IntVar(&cfg.Coalesce, "coalesce", 0, "bytes up to which adjacent pages of a chunk are read in one request (default 1.25 MiB; -1 off)")
	shuffle := fs.String("shuffle", "page", "page|row|rowgroup|stream|none")
	fetch := fs.String("fetch", "unordered", "unordered|ordered")
	fs.IntVar(&cfg.Batch, "batch", 64, "pages per batch")
	fs.IntVar(&cfg.Rows, "rows", 0, "rows per batch (0: page batches)")
	fs.IntVar(&cfg.Buffer, "buffer", 0, "shuffle buffer rows")
	fs.IntVar(&cfg.IODepth, "iodepth", 256, "reads in flight in all, as fio's iodepth (split over the workers)")
	fs.IntVar(&cfg.Prefetch, "prefetch", 0, "batches read ahead (default: 2, or 832 pages for compressed columns, at most 128 MiB decoded)")
	fs.IntVar(&cfg.Workers, "workers", 0, "engine workers (default GOMAXPROCS, half of it for uncompressed columns)")
	fs.StringVar(&runtime, "runtime", "", "run for this long (fio time syntax)")
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
	ioengine := fs.String("ioengine", "", "io_uring|psync|mmap (default: io_uring, or psync where the kernel refuses io_uring)")
	eng := fs.String("engine", "pagefeed", "pagefeed|arrowgo|decode")
	fs.IntVar(&direct, "direct", 1, "O_DIRECT reads: 0 or 1")
	fs.BoolVar(&cfg.KeepCache, "keep-cache", false, "do not evict the dataset from the page cache first")
	fs.BoolVar(&cfg.Pin, "pin", false, "pin engine workers to this local rank's GPU cores ($LOCAL_RANK)")
	fs.StringVar(&format, "output-format", "normal", "normal|json")
	compare := fs.Bool("compare", false, "run the loader against its baselines (unordered, ordered, stream, arrowgo, mmap) and print a table")
	rounds := fs.Int("rounds", 1, "with --compare: rounds of alternating runs (medians are reported)")
	charts := fs.String("charts", "", "with --compare: write bar charts (SVG and PNG) of rows/s and batch p99 into this folder")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			_, err = io.WriteString(stdout, parquetUsage)
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q in parquet mode", fs.Arg(0))
	}
	// Names are parsed here, once; the config holds their typed values.
	var err error
	if cfg.Shuffle, err = rinas.ParseShuffle(*shuffle); err != nil {
		return fmt.Errorf("--shuffle: %w", err)
	}
	if cfg.Fetch, err = rinas.ParseFetch(*fetch); err != nil {
		return fmt.Errorf("--fetch: %w", err)
	}
	if cfg.IOEngine, err = bench.ParseParquetIO(*ioengine); err != nil {
		return fmt.Errorf("--ioengine: %w", err)
	}
	if cfg.Engine, err = bench.ParseParquetEngine(*eng); err != nil {
		return fmt.Errorf("--engine: %w", err)
	}
	if len(paths) == 0 {
		return fmt.Errorf("--parquet needs a path")
	}
	if cfg.IODepth < 1 || cfg.IODepth > 4096 {
		return fmt.Errorf("--iodepth=%d: want 1..4096", cfg.IODepth)
	}
	cfg.Paths = paths
	if runtime != "" {
		d, err := bench.ParseTime(runtime)
		if err != nil {
			return err
		}
		cfg.Runtime = d
	}
	if cfg.Runtime > 0 && cfg.Loops > 0 {
		return fmt.Errorf("--runtime and --loops exclude each other")
	}
	switch direct {
	case 0:
		cfg.Buffered = true
	case 1:
	default:
		return fmt.Errorf("--direct=%d: want 0 or 1", direct)
	}
	if format != "normal" && format != "json" {
		return fmt.Errorf("--output-format=%s: want normal or json", format)
	}
	var progress func(int64, time.Duration)
	if f, ok := stderr.(*os.File); ok && isTerminal(f) {
		last := int64(0)
		lastT := time.Duration(0)
		progress = func(pages int64, el time.Duration) {
			rate := float64(pages-last) / (el - lastT).Seconds()
			last, lastT = pages, el
			eta := ""
			if cfg.Runtime > 0 {
				eta = fmt.Sprintf("[eta %s]", fmtETA(cfg.Runtime-el))
			}
			fmt.Fprintf(stderr, "\rJobs: 1: [%s][r=%.0f pages/s][%d pages]%s   ", cfg.Shuffle, rate, pages, eta)
		}
		defer fmt.Fprint(stderr, "\r\033[K")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *compare {
		if cfg.Runtime <= 0 {
			return fmt.Errorf("--compare needs --runtime")
		}
		if *charts != "" {
			// Fail before measuring when the folder cannot be written.
			if err := os.MkdirAll(*charts, 0o755); err != nil {
				return fmt.Errorf("--charts: %w", err)
			}
		}
		rows, err := bench.CompareParquet(ctx, bench.ParquetCompareConfig{Base: cfg, Runtime: cfg.Runtime, Rounds: *rounds, Progress: stderr})
		if err != nil {
			return err
		}
		if err := bench.WriteParquetTable(stdout, rows); err != nil {
			return err
		}
		if *charts == "" {
			return nil
		}
		return writeCompareCharts(*charts, rows, stdout)
	}
	res, err := bench.RunParquet(ctx, cfg, progress)
	if err != nil {
		return err
	}
	if format == "json" {
		return res.WriteJSON(stdout)
	}
	return res.WriteNormal(stdout)
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
