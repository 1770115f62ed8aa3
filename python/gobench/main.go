// Command gobench drains the Go loader with tokens output for a while and
// prints tokens/s and per-batch latency as JSON: the baseline python/bench.py
// compares the Python binding with, on the same data and config.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/pagefeed/pagefeed/rinas"
)

func main() {
	paths := flag.String("paths", "", "comma-separated Parquet files, directories or globs")
	column := flag.String("column", "input_ids", "tokens column")
	seqLen := flag.Int("seq-len", 2048, "tokens per row")
	batchRows := flag.Int("batch-rows", 8, "rows per batch")
	shuffle := flag.String("shuffle", "page", "shuffle")
	seconds := flag.Float64("seconds", 5, "run time")
	flag.Parse()
	sh, err := rinas.ParseShuffle(*shuffle)
	if err != nil {
		fail(err)
	}
	l, err := rinas.Open(context.Background(), rinas.Config{Paths: strings.Split(*paths, ","), Columns: []string{*column},
		Shuffle: sh, Output: rinas.OutputTokens, SeqLen: *seqLen, BatchRows: *batchRows, Epochs: 1 << 20, World: 1})
	if err != nil {
		fail(err)
	}
	defer l.Close()
	var tokens int64
	var lat []time.Duration
	cpu0 := cpuTime()
	start := time.Now()
	end := start.Add(time.Duration(*seconds * float64(time.Second)))
	for time.Now().Before(end) {
		t0 := time.Now()
		b, err := l.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			fail(err)
		}
		tokens += int64(len(b.Tokens))
		b.Release()
		lat = append(lat, time.Since(t0))
	}
	el := time.Since(start)
	cpu := cpuTime() - cpu0
	slices.Sort(lat)
	json.NewEncoder(os.Stdout).Encode(map[string]any{
		"tokens_per_s": float64(tokens) / el.Seconds(), "batches": len(lat),
		"batch_p50_ns":     lat[len(lat)/2].Nanoseconds(),
		"cpu_ns_per_batch": cpu.Nanoseconds() / int64(len(lat)),
	})
}

// cpuTime returns the CPU time (user and system) of the whole process so
// far: with the batches, what each costs on every thread together.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gobench:", err)
	os.Exit(1)
}
