// Command soak runs pagefeed's mixed workload under injected read faults,
// in-place rewrites of files and interrupted Next calls for a while and
// reports resident memory and goroutines over time; both must stay flat,
// and no row may be lost, duplicated or wrong. `make soak` runs
// it (SOAK_TIME, default 10m); it is not part of CI.
//
//	soak [--time 10m] [--interval 30s] [--dir DIR] [--json]
//
// It exits 0 when the curves are flat and every row was accounted for, 1
// otherwise, 2 on bad flags.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/pagefeed/pagefeed/internal/soak"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := 10 * time.Minute
	if v := os.Getenv("SOAK_TIME"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			fmt.Fprintf(stderr, "soak: SOAK_TIME=%q: %v\n", v, err)
			return 2
		}
		def = d
	}
	dur := fs.Duration("time", def, "how long to run (also $SOAK_TIME)")
	interval := fs.Duration("interval", 0, "time between samples (default time/20, at least 1s)")
	dir := fs.String("dir", "", "dataset folder (default: a temporary one)")
	asJSON := fs.Bool("json", false, "print the report as JSON after the samples")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || *dur <= 0 {
		fmt.Fprintln(stderr, "usage: soak [--time D] [--interval D] [--dir DIR] [--json]")
		return 2
	}
	if *interval <= 0 {
		*interval = max(*dur/20, time.Second) // soak.Config's default, said up front
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fmt.Fprintf(stdout, "soak: %v of mixed loader runs under injected faults, in-place rewrites and interrupts, a sample every %v\n", *dur, *interval)
	rep, err := soak.Run(ctx, soak.Config{Duration: *dur, Interval: *interval, Dir: *dir, Out: stdout})
	if rep != nil {
		f := rep.Faults
		fmt.Fprintf(stdout, "runs %d, batches %d, rows %d; read attempts %d; faults injected %d (EIO %d, short %d, EAGAIN %d, EINTR %d, ECANCELED %d); pages skipped %d; "+
			"rewrites in place %d (ErrFileChanged %d, skipped %d, undetected %d); interrupts %d, resumes %d, unreads %d; rows lost %d, duplicated %d, wrong %d\n",
			rep.Runs, rep.Batches, rep.Rows, rep.Reads, f.Total(), f.EIO, f.Short, f.EAGAIN, f.EINTR, f.ECANCELED, rep.Skipped,
			rep.Rewrites, rep.RewriteErrors, rep.RewriteSkips, rep.Undetected, rep.Interrupts, rep.Resumes, rep.Unreads, rep.Lost, rep.Dup, rep.Wrong)
		fmt.Fprintf(stdout, "RSS growth first→last third %+.1f%%; goroutines (max per third) %d → %d; flat: %v\n",
			100*rep.RSSGrowth, rep.GoroFirst, rep.GoroLast, rep.Flat)
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			enc.Encode(rep)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "soak: %v\n", err)
		return 1
	}
	return 0
}
