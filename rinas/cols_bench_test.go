package rinas

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/pagefeed/pagefeed/index"
)

// BenchmarkColumns reads one epoch of $PAGEFEED_COLS_BENCH (a pagefeed gen
// dataset) per iteration in page shuffle, batches of 64 pages, with the
// projection $PAGEFEED_COLS (default id,input_ids,text). It reports rows/s
// and the read amplification: disk bytes over the projection's on-disk
// page bytes (each row is delivered once per epoch).
// $PAGEFEED_SIDE_CACHE sets Config.SideCacheBytes (-1: off).
func BenchmarkColumns(b *testing.B) {
	dir := os.Getenv("PAGEFEED_COLS_BENCH")
	if dir == "" {
		b.Skip("set PAGEFEED_COLS_BENCH to a pagefeed gen dataset")
	}
	cols := strings.Split(os.Getenv("PAGEFEED_COLS"), ",")
	if cols[0] == "" {
		cols = []string{"id", "input_ids", "text"}
	}
	cfg := Config{Paths: []string{dir}, Columns: cols, Shuffle: ShufflePage, BatchPages: 64, World: 1,
		Index: index.Options{NoSidecar: true, Logf: func(string, ...any) {}}, Logf: func(string, ...any) {}}
	if v := os.Getenv("PAGEFEED_SIDE_CACHE"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		cfg.SideCacheBytes = n
	}
	b.ReportAllocs()
	var rows, disk, onDisk int64
	for i := 0; i < b.N; i++ {
		// Open (index, engine slots) is not timed: rows/s is the
		// epoch's, as pagebench reports it.
		b.StopTimer()
		cfg.Seed = uint64(i)
		l, err := Open(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		eachBatch(b, l, func(bt *Batch) { bt.Release() })
		b.StopTimer()
		st := l.Stats()
		rows += st.Rows
		disk += st.DiskBytes
		for _, k := range l.proj {
			for g := 0; g < l.ix.NumPages(k); g++ {
				onDisk += int64(l.ix.Locate(k, g).Size)
			}
			for c := 0; c < l.ix.NumChunks(); c++ {
				onDisk += int64(l.ix.Chunk(k, c).DictSize)
			}
		}
		l.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(disk)/float64(onDisk), "read-amp")
}
