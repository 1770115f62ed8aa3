package rinas

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDefaultBufferRows checks the shuffle buffer's default policy on
// made-up facts; the expected figures follow from its documented rules.
func TestDefaultBufferRows(t *testing.T) {
	const gib = 1 << 30
	base := bufferFacts{Shuffle: ShufflePage, BatchRows: 32, RowsPerPage: 128, Rows: 1 << 20,
		RowBytes: 200, Limit: gib, Need: 300 << 20}
	cases := []struct {
		name string
		edit func(*bufferFacts)
		want int
	}{
		{"page shuffle, row batches: 256 pages' rows", nil, 256 * 128},
		{"fractional rows per page round up", func(f *bufferFacts) { f.RowsPerPage = 16.4 }, 4199},
		{"pages of one row", func(f *bufferFacts) { f.RowsPerPage = 1 }, 256},
		{"rows per page unknown count as one", func(f *bufferFacts) { f.RowsPerPage = 0 }, 256},
		{"at most the dataset's rows", func(f *bufferFacts) { f.Rows = 5000 }, 5000},
		{"an explicit buffer as set", func(f *bufferFacts) { f.BufferRows = 77 }, 77},
		{"an explicit buffer beyond every bound", func(f *bufferFacts) { f.BufferRows = 1 << 24; f.Limit = 1 }, 1 << 24},
		{"negative turns it off", func(f *bufferFacts) { f.BufferRows = -1 }, 0},
		{"page batches", func(f *bufferFacts) { f.BatchRows = 0 }, 0},
		{"row shuffle", func(f *bufferFacts) { f.Shuffle = ShuffleRow }, 0},
		{"rowgroup shuffle", func(f *bufferFacts) { f.Shuffle = ShuffleRowGroup }, 0},
		{"no shuffle", func(f *bufferFacts) { f.Shuffle = ShuffleNone }, 0},
		{"stream without a size (fill sets it)", func(f *bufferFacts) { f.Shuffle = ShuffleStream }, 0},
		{"an empty dataset", func(f *bufferFacts) { f.Rows = 0 }, 0},
		{"a mixture source: its share of the pages", func(f *bufferFacts) { f.Share = 0.3 }, int(math.Ceil(256 * 0.3 * 128))},
		{"a mixture source's share of one page at least", func(f *bufferFacts) { f.Share = 1e-6 }, 128},
		{"a mixture's only source: every page", func(f *bufferFacts) { f.Share = 1 }, 256 * 128},
		{"a mixture source's explicit buffer as set", func(f *bufferFacts) { f.Share, f.BufferRows = 0.3, 77 }, 77},
		// 1/4 of 1 GiB = 256 MiB at 64 KiB a row: 4096 rows.
		{"a quarter of the limit", func(f *bufferFacts) { f.RowBytes = 64 << 10 }, 4096},
		// Half of the 24 MiB the rest leaves, at 1 KiB a row: 12288 rows
		// (the quarter, 256 MiB, would allow 262144).
		{"half of what the rest leaves", func(f *bufferFacts) { f.RowBytes = 1 << 10; f.Need = gib - 24<<20; f.RowsPerPage = 1000 }, 12288},
		{"nothing left", func(f *bufferFacts) { f.Need = gib }, 0},
		{"more needed than the limit", func(f *bufferFacts) { f.Need = 2 * gib }, 0},
		{"row bytes below the bookkeeping count as it", func(f *bufferFacts) {
			f.RowBytes, f.Limit, f.Need, f.RowsPerPage = 0, 4*bufferRowOverhead*10, 0, 1000
		}, 10},
		{"huge pages of rows stay within the limit", func(f *bufferFacts) {
			f.RowsPerPage, f.Rows, f.RowBytes = 1e12, math.MaxInt64, bufferRowOverhead
		}, int(gib / 4 / bufferRowOverhead)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := base
			if c.edit != nil {
				c.edit(&f)
			}
			if got := defaultBufferRows(f); got != c.want {
				t.Errorf("defaultBufferRows(%+v) = %d, want %d", f, got, c.want)
			}
		})
	}
}

// TestBufferRowBytes: a buffered row counts its share of the decoded
// pages (every projected column) that the buffer keeps alive, about
// H(rows per page) pages per page of rows held, plus its bookkeeping.
func TestBufferRowBytes(t *testing.T) {
	cases := []struct {
		page              int
		sideMean, perPage float64
		want              int64
	}{
		{page: 8192, perPage: 128, want: 348 + bufferRowOverhead}, // 8192 × 5.433 / 128
		{page: 8192, sideMean: 1, perPage: 128, want: 696 + bufferRowOverhead},
		{page: 1000, perPage: 3, want: 615 + bufferRowOverhead}, // 1000 × 1.844 / 3
		{page: 256 << 10, perPage: 200, want: 7705 + bufferRowOverhead},
		{page: 1 << 20, perPage: 0, want: 1<<20 + bufferRowOverhead}, // unknown rows per page: one
		{page: 0, perPage: 10, want: bufferRowOverhead},
		{page: -5, sideMean: -1, perPage: 10, want: bufferRowOverhead},
	}
	for _, c := range cases {
		if got := bufferRowBytes(c.page, c.sideMean, c.perPage); got != c.want {
			t.Errorf("bufferRowBytes(%d, %g, %g) = %d, want %d", c.page, c.sideMean, c.perPage, got, c.want)
		}
	}
}

// TestPinFactor: pinFactor is the harmonic number H(r) within 2% for
// pages of 1 to 100,000 rows, 1 below one row.
func TestPinFactor(t *testing.T) {
	h := 0.0
	for r := 1; r <= 100000; r++ {
		h += 1 / float64(r)
		if got := pinFactor(float64(r)); math.Abs(got-h) > 0.02*h {
			t.Fatalf("pinFactor(%d) = %.4f, H(%d) = %.4f", r, got, r, h)
		}
	}
	for _, r := range []float64{0, 0.5, 1, math.Inf(-1)} {
		if got := pinFactor(r); got != 1 {
			t.Errorf("pinFactor(%g) = %g, want 1", r, got)
		}
	}
}

// TestPlanSizingBuffer: the default buffer is sized within what the
// other parts leave of MemoryLimit, is counted in the breakdown (the
// dictionaries get the rest), and never makes a Config fail that fits
// without it; a buffer set in the Config is taken as set.
func TestPlanSizingBuffer(t *testing.T) {
	sum := indexSummary{maxPage: 64 << 10, compressed: true, decodedPage: 256 << 10, unitMax: 1, procs: 4,
		rows: 1 << 20, rowsPerPage: 200}
	for _, limit := range []int64{16 << 20, 64 << 20, 100 << 20, 200 << 20, 1 << 30, 8 << 30} {
		for _, rows := range []int{0, 32} {
			t.Run(fmt.Sprintf("limit%dMiB/rows%d", limit>>20, rows), func(t *testing.T) {
				cfg := sizingConfig(t, func(c *Config) { c.MemoryLimit, c.BatchRows = limit, rows })
				off := cfg
				off.BufferRows = -1
				z, err := planSizing(cfg, sum)
				zo, erro := planSizing(off, sum)
				if (err == nil) != (erro == nil) || (err != nil && !errors.Is(err, ErrMemory)) {
					t.Fatalf("with the default buffer: %v; without: %v", err, erro)
				}
				if err != nil {
					return
				}
				m := z.mem
				if zo.bufferRows != 0 || zo.mem.buffer != 0 {
					t.Errorf("BufferRows -1 sized a buffer of %d rows, %d bytes", zo.bufferRows, zo.mem.buffer)
				}
				if rows == 0 {
					if z.bufferRows != 0 || m.buffer != 0 {
						t.Errorf("page batches sized a buffer of %d rows", z.bufferRows)
					}
					return
				}
				rb := bufferRowBytes(256<<10, 0, 200)
				if m.buffer != int64(z.bufferRows)*rb {
					t.Errorf("buffer of %d rows counted at %d bytes, want %d a row", z.bufferRows, m.buffer, rb)
				}
				if z.bufferRows > defaultBufferPages*200 || m.buffer > limit/bufferLimitShare || m.buffer > (limit-zo.mem.need())/bufferLeftShare {
					t.Errorf("buffer of %d rows (%d bytes) beyond its bounds: limit %d, the rest needs %d", z.bufferRows, m.buffer, limit, zo.mem.need())
				}
				if m.need()+m.dictLeft != limit || m.dictLeft != zo.mem.dictLeft-m.buffer {
					t.Errorf("breakdown %+v does not count the buffer against the limit (without it: %+v)", m, zo.mem)
				}
			})
		}
	}
	// A buffer set in the Config is taken as set, and counted against
	// the limit like the default: past it, ErrMemory says how many rows
	// fit.
	cfg := sizingConfig(t, func(c *Config) { c.BatchRows, c.BufferRows, c.MemoryLimit = 32, 1<<10, 256<<20 })
	if z, err := planSizing(cfg, sum); err != nil || z.bufferRows != 1<<10 || z.mem.buffer != 1<<10*bufferRowBytes(256<<10, 0, 200) {
		t.Errorf("BufferRows 1<<10: %d rows, %d bytes, %v", z.bufferRows, z.mem.buffer, err)
	}
	cfg = sizingConfig(t, func(c *Config) { c.BatchRows, c.BufferRows, c.MemoryLimit = 32, 1<<22, 256<<20 })
	if _, err := planSizing(cfg, sum); !errors.Is(err, ErrMemory) || !strings.Contains(err.Error(), "lower BufferRows to ") {
		t.Errorf("BufferRows 1<<22 under 256 MiB: %v, want ErrMemory saying how many rows fit", err)
	}
}

// pagesPerBatch is the mean number of distinct pages the rows of a batch
// come from.
func pagesPerBatch(t *testing.T, l *Loader) (float64, int) {
	t.Helper()
	var batches, pages, rows int
	eachBatch(t, l, func(b *Batch) {
		seen := map[uint64]bool{}
		for _, r := range b.Refs {
			seen[r.Page] = true
		}
		rows += len(b.Refs)
		pages += len(seen)
		batches++
		b.Release()
	})
	return float64(pages) / float64(max(batches, 1)), rows
}

// TestDefaultBufferMixesPages: with nothing set but row batches, page
// shuffle buffers the rows of 256 pages (here, the whole small dataset
// at most), so a batch draws its rows from many pages; with the buffer
// turned off it takes consecutive rows of one or two pages. Both
// deliver every row once.
func TestDefaultBufferMixesPages(t *testing.T) {
	ds := testDataset(t, "v2")
	for _, col := range []string{"id", "input_ids"} {
		t.Run(col, func(t *testing.T) {
			cfg := defaultsConfig(ds.paths, col)
			cfg.BatchRows = 32
			l := openT(t, cfg)
			ix := l.Index()
			perPage := float64(ix.NumRows()) / float64(ix.NumPages(0))
			want := min(int(math.Ceil(defaultBufferPages*perPage)), int(ix.NumRows()))
			if l.BufferRows() != want {
				t.Fatalf("BufferRows() = %d at defaults, want %d (%d pages of %.1f rows, at most %d)", l.BufferRows(), want, defaultBufferPages, perPage, ix.NumRows())
			}
			mixed, n := pagesPerBatch(t, l)
			if n != int(ds.rows) {
				t.Fatalf("%d rows delivered, want %d", n, ds.rows)
			}
			off := cfg
			off.BufferRows = -1
			lo := openT(t, off)
			if lo.BufferRows() != 0 {
				t.Fatalf("BufferRows() = %d with BufferRows -1", lo.BufferRows())
			}
			plain, n := pagesPerBatch(t, lo)
			if n != int(ds.rows) {
				t.Fatalf("%d rows delivered without the buffer, want %d", n, ds.rows)
			}
			// 32 rows drawn from the rows of min(256, all) pages come from
			// many pages; without the buffer from about 32/perPage + 1.
			t.Logf("%s: %.1f rows a page, %d pages: %.1f pages a batch at defaults, %.1f without the buffer",
				col, perPage, ix.NumPages(0), mixed, plain)
			if plain > 32/perPage+2 || mixed < 2*plain || mixed < min(16, float64(ix.NumPages(0))/2) {
				t.Errorf("pages a batch: %.1f at defaults, %.1f without the buffer (%.1f rows a page)", mixed, plain, perPage)
			}
		})
	}
}

// TestDefaultBufferResumesExactly: a State taken anywhere in an epoch
// read with the default buffer (arrow and tokens output) resumes into
// the same buffer: the rows before it and after it are the
// uninterrupted run's, in its order. Ordered fetch and Deterministic
// make the order a function of the seed.
func TestDefaultBufferResumesExactly(t *testing.T) {
	ds := testDataset(t, "v2")
	for _, tc := range []struct {
		name string
		col  string
		mod  func(*Config)
	}{
		{"arrow/ordered", "input_ids", func(c *Config) { c.BatchRows, c.Fetch = 32, Ordered }},
		{"arrow/deterministic", "input_ids", func(c *Config) { c.BatchRows, c.Deterministic = 32, true }},
		{"tokens/ordered", "input_ids", func(c *Config) { c.Output, c.SeqLen, c.Fetch = OutputTokens, 256, Ordered }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := defaultsConfig(ds.paths, tc.col)
			cfg.Seed, cfg.World = 9, 1
			tc.mod(&cfg)
			full, states := refsOf(t, openT(t, cfg), -1)
			if l := openT(t, cfg); l.BufferRows() == 0 {
				t.Fatal("no default buffer")
			}
			for _, k := range []int{0, len(states) / 3, len(states) - 2} {
				head, _ := refsOf(t, openT(t, cfg), k+1)
				blob, err := MarshalState(states[k])
				if err != nil {
					t.Fatal(err)
				}
				st, err := UnmarshalState(blob)
				if err != nil {
					t.Fatal(err)
				}
				if len(st.Pending) == 0 && k < len(states)-2 {
					t.Errorf("state after batch %d holds no buffered row", k)
				}
				rcfg := cfg
				rcfg.Resume = st
				rest, _ := refsOf(t, openT(t, rcfg), -1)
				if got := append(slices.Clone(head), rest...); !slices.Equal(got, full) {
					t.Fatalf("resume after batch %d (%d rows pending): %d rows, not the uninterrupted run's %d in its order",
						k, len(st.Pending), len(got), len(full))
				}
			}
		})
	}
}

// refsOf reads up to max batches (all: -1) and returns the rows they
// delivered (tokens output: a document split across batches counts once,
// in the batch that ends it) and the State after each batch.
func refsOf(t *testing.T, l *Loader, max int) ([]RowRef, []*State) {
	t.Helper()
	var refs []RowRef
	var states []*State
	for n := 0; max < 0 || n < max; n++ {
		b, err := l.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		for _, r := range b.Refs {
			refs = append(refs, RowRef{Page: r.Page, Row: r.Row})
		}
		b.Release()
		states = append(states, l.State())
	}
	return refs, states
}

// BenchmarkDefaultBuffer reads one epoch of $PAGEFEED_BUFFER_BENCH (a
// pagefeed gen dataset; column $PAGEFEED_BUFFER_COLUMN, default
// input_ids) per iteration in row batches of 64 at the loader's
// defaults ("default": the default shuffle buffer) and with the buffer
// off ("off": BufferRows -1), nothing else set. Run it with -count N so
// the two alternate, and compare their rows/s as a ratio; cpu-ns/row is
// the process's CPU time (every goroutine's: decode included) over the
// epochs' rows.
func BenchmarkDefaultBuffer(b *testing.B) {
	dir := os.Getenv("PAGEFEED_BUFFER_BENCH")
	if dir == "" {
		b.Skip("set PAGEFEED_BUFFER_BENCH to a pagefeed gen dataset")
	}
	col := os.Getenv("PAGEFEED_BUFFER_COLUMN")
	if col == "" {
		col = "input_ids"
	}
	for _, side := range []struct {
		name   string
		buffer int
	}{{"default", 0}, {"off", -1}} {
		b.Run(side.name, func(b *testing.B) {
			cfg := defaultsConfig([]string{dir}, col)
			cfg.BatchRows, cfg.BufferRows, cfg.World = 64, side.buffer, 1
			b.ReportAllocs()
			var rows int64
			var cpu time.Duration // the process's, all goroutines'
			buffer := 0
			for i := 0; i < b.N; i++ {
				// Open (index, engine slots) is not timed: rows/s is the
				// epoch's.
				b.StopTimer()
				cfg.Seed = uint64(i)
				l, err := Open(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				buffer = l.BufferRows()
				b.StartTimer()
				cpu0 := cpuTime()
				eachBatch(b, l, func(bt *Batch) { bt.Release() })
				cpu += cpuTime() - cpu0
				b.StopTimer()
				rows += l.Stats().Rows
				l.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(buffer), "buffer-rows")
			if cpu > 0 && rows > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(rows), "cpu-ns/row")
			}
		})
	}
}
