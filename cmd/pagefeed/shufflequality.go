package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"

	"github.com/pagefeed/pagefeed/internal/quality"
)

func init() {
	register("shufflequality", "train a small model under each shuffle order of a topic-sorted dataset; loss and order statistics", runShuffleQuality)
}

// runShuffleQuality binds flags to quality.Config, runs the
// experiment, prints the table and writes results.json and the charts
// into --out.
func runShuffleQuality(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("shufflequality", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var c quality.Config
	var orders string
	fs.IntVar(&c.Data.Topics, "topics", 8, "topics (classes)")
	fs.IntVar(&c.Data.Rows, "rows", 16384, "training rows, sorted by topic")
	fs.IntVar(&c.Data.ValRows, "val-rows", 2048, "validation rows")
	fs.IntVar(&c.Data.Vocab, "vocab", 512, "vocabulary size")
	fs.IntVar(&c.Data.DocLen, "doc-len", 16, "mean tokens per document")
	fs.IntVar(&c.Data.RowGroupRows, "row-group-rows", 1024, "rows per row group")
	fs.Int64Var(&c.Data.PageBytes, "page-size", 1024, "target data page size in bytes")
	fs.StringVar(&c.Data.Dir, "data", "", "folder for the generated dataset (default: a temporary folder, removed)")
	fs.IntVar(&c.BatchRows, "batch", 32, "rows per SGD batch (the loader's BatchRows)")
	fs.IntVar(&c.BufferRows, "buffer", 1024, "shuffle buffer rows for page+buffer and stream")
	fs.Float64Var(&c.LR, "lr", 8, "SGD learning rate")
	fs.IntVar(&c.EvalEvery, "eval-every", 16, "validation loss every this many steps (curves)")
	fs.StringVar(&c.Fetch, "fetch", "ordered", "loader fetch: ordered (deterministic) or unordered")
	fs.StringVar(&orders, "orders", strings.Join(quality.Orders, ","), "orders to compare")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of the dataset and the shuffles")
	seeds := fs.Int("seeds", 1, "runs with seeds seed, seed+1, ...: a mean ± sd table too (charts show the first)")
	out := fs.String("out", "shufflequality-results", "output `dir` for results.json, results.md and the charts")
	quiet := fs.Bool("quiet", false, "no per-order lines on stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "usage: pagefeed shufflequality [--topics K] [--rows N] [--batch B] [--buffer R] [--orders row,page,...] [--seed S] [--out DIR]")
			fs.SetOutput(stderr)
			fs.PrintDefaults()
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (see pagefeed shufflequality -h)", fs.Arg(0))
	}
	c.Orders = nil
	for _, o := range strings.Split(orders, ",") {
		c.Orders = append(c.Orders, strings.TrimSpace(o))
	}
	switch {
	case c.BatchRows < 1:
		return fmt.Errorf("--batch %d: want at least 1", c.BatchRows)
	case c.BufferRows < 1:
		return fmt.Errorf("--buffer %d: want at least 1", c.BufferRows)
	case !(c.LR > 0):
		return fmt.Errorf("--lr %g: want > 0", c.LR)
	case c.EvalEvery < 1:
		return fmt.Errorf("--eval-every %d: want at least 1", c.EvalEvery)
	case *seeds < 1 || *seeds > 100:
		return fmt.Errorf("--seeds %d: want 1..100", *seeds)
	}
	if err := sqWritableDir(*out); err != nil {
		return err
	}
	if !*quiet {
		var mu sync.Mutex // notices may come from engine goroutines
		c.Logf = func(f string, a ...any) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(stderr, "pagefeed shufflequality: "+f+"\n", a...)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	runs, err := quality.RunSeeds(ctx, c, *seeds, stdout)
	if err != nil {
		return err
	}
	if len(runs) > 1 {
		fmt.Fprintf(stdout, "mean ± sd over %d seeds (%d..%d):\n\n", len(runs), c.Seed, c.Seed+uint64(len(runs)-1))
		if err := quality.WriteSummary(stdout, quality.Summarize(runs)); err != nil {
			return err
		}
		fmt.Fprintln(stdout)
	}
	charts, err := quality.WriteResults(*out, runs)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote results.json, results.md and %s (.svg, .png) in %s (first run: %.1fs)\n", strings.Join(charts, ", "), *out, runs[0].TotalSeconds)
	return nil
}

// sqWritableDir creates dir if needed and proves a file can be written there.
func sqWritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("output folder: %w", err)
	}
	f, err := os.CreateTemp(dir, ".pagefeed-*")
	if err != nil {
		return fmt.Errorf("output folder %s is not writable: %w", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}
