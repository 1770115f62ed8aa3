package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/pagefeed/pagefeed/bench"
)

// runCompare binds --compare-fio's flags to bench.CompareConfig.
func runCompare(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pagebench --compare-fio", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var cfg bench.CompareConfig
	fs.Bool("compare-fio", true, "run the fio comparison")
	fs.IntVar(&cfg.Pairs, "pairs", 3, "fio/pagebench pairs per case")
	runtime := fs.String("runtime", "5s", "time per run (fio syntax)")
	size := fs.String("size", "2g", "test file size (fio syntax)")
	fs.StringVar(&cfg.Dir, "dir", "", "directory for the test file (default $TMPDIR)")
	fs.StringVar(&cfg.Fio, "fio", "fio", "fio binary")
	only := fs.String("case", "", "run only the cases whose name contains this")
	fs.IntVar(&cfg.BestBatch, "best-batch", 16, "N of --iodepth_batch_submit=N in the best settings")
	mode := fs.String("mode", "", "defaults or best: run only that comparison (default both)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("--compare-fio: %v", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("--compare-fio: unexpected argument %q", fs.Arg(0))
	}
	var err error
	if cfg.Runtime, err = bench.ParseTime(*runtime); err != nil {
		return err
	}
	if cfg.FileSize, err = bench.ParseSize(*size); err != nil {
		return err
	}
	if *only != "" {
		for _, c := range bench.DefaultCases {
			if strings.Contains(c.Name, *only) {
				cfg.Cases = append(cfg.Cases, c)
			}
		}
		if len(cfg.Cases) == 0 {
			return fmt.Errorf("--compare-fio: no case matches --case=%q", *only)
		}
	}
	switch *mode {
	case "":
	case bench.ModeDefaults, bench.ModeBest:
		cfg.Modes = []string{*mode}
	default:
		return fmt.Errorf("--compare-fio: --mode=%q (want defaults or best)", *mode)
	}
	cfg.Stderr = stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := bench.CompareFio(ctx, cfg)
	if err != nil {
		return err
	}
	return rep.WriteTable(stdout)
}
