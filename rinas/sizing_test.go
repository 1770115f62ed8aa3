package rinas

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pagefeed/pagefeed/engine"
)

// sizingConfig returns a filled Config (defaults applied as Open does)
// after edit.
func sizingConfig(t *testing.T, edit func(*Config)) Config {
	t.Helper()
	cfg := Config{Paths: []string{"unused.parquet"}, World: 1, Logf: func(string, ...any) {}}
	if edit != nil {
		edit(&cfg)
	}
	if err := cfg.fill(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestPlanSizing checks the sizing rules on summaries of made-up datasets:
// no disk, no engine. The expected figures are worked out by hand from the
// rules' documented formulas.
func TestPlanSizing(t *testing.T) {
	const procs = 8
	const units = 1 << 20 // far more than any window
	uncompressed := indexSummary{maxPage: 1 << 20, unitMax: 1, procs: procs, units: units}
	compressed := indexSummary{maxPage: 64 << 10, compressed: true, decodedPage: 256 << 10, unitMax: 1, procs: procs, units: units}
	small := indexSummary{maxPage: 64 << 10, unitMax: 1, procs: procs, units: units}
	type want struct {
		slotSize, workers, depth, slotsPerWorker int
		prefetch, coalesce, unitReads, inflight  int
		fetchBatches, tokenBufs, decoders        int
		directSpan                               int
		slots, decoded, tokens, side             int64
	}
	cases := []struct {
		name string
		edit func(*Config)
		sum  indexSummary
		want want
	}{
		{
			// 1 MiB pages, uncompressed: two batches ahead, half the cores,
			// the window's pages counted at their size.
			name: "uncompressed defaults", sum: uncompressed,
			want: want{slotSize: 1<<20 + 8192, workers: 4, depth: 48, slotsPerWorker: 48,
				prefetch: 2, coalesce: 1 << 20, unitReads: 1, inflight: 192, fetchBatches: 3, decoders: 4,
				slots: (1<<20 + 8192) * 48 * 4, decoded: 1 << 20 * 64 * 3},
		},
		{
			// 64 KiB pages decoding to 256 KiB: the decoded window bounds
			// the read-ahead (128 MiB / (64 pages × 256 KiB) - 1 = 7).
			name: "compressed defaults", sum: compressed,
			want: want{slotSize: 64<<10 + 8192, workers: 8, depth: 64, slotsPerWorker: 64,
				prefetch: 7, coalesce: 64 << 10, unitReads: 1, inflight: 64 * 8, fetchBatches: 8, decoders: 8,
				slots: (64<<10 + 8192) * 64 * 8, decoded: 256 << 10 * 64 * 8},
		},
		{
			name: "explicit prefetch, iodepth, workers, slot size",
			edit: func(c *Config) {
				c.Prefetch, c.IODepth = 5, 64
				c.Engine.Workers, c.Engine.SlotSize = 2, 1<<20
			},
			sum: small,
			want: want{slotSize: 1 << 20, workers: 2, depth: 32, slotsPerWorker: 192,
				prefetch: 5, coalesce: 1<<20 - 8192, unitReads: 1, inflight: 64 * 6, fetchBatches: 6, decoders: 2,
				slots: (1 << 20) * 192 * 2, decoded: 64 << 10 * 64 * 6},
		},
		{
			// Engine.QueueDepth wins over IODepth; explicit slots per worker stay.
			name: "explicit queue depth and slots",
			edit: func(c *Config) {
				c.IODepth = 64
				c.Engine.QueueDepth, c.Engine.SlotsPerWorker = 16, 20
			},
			sum: small,
			want: want{slotSize: 64<<10 + 8192, workers: 4, depth: 16, slotsPerWorker: 20,
				prefetch: 2, coalesce: 64 << 10, unitReads: 1, inflight: 192, fetchBatches: 3, decoders: 4,
				slots: (64<<10 + 8192) * 20 * 4, decoded: 64 << 10 * 64 * 3},
		},
		{
			// Ordered fetch: one unit in flight, so one worker (the
			// producer reads the pages itself), two fetch batches decoded,
			// the synchronous reader's span.
			name: "ordered", edit: func(c *Config) { c.Fetch = Ordered },
			sum: func() indexSummary { s := compressed; s.orderedSpan = 200000; return s }(),
			want: want{slotSize: 64<<10 + 8192, workers: 1, depth: 1, slotsPerWorker: 1,
				prefetch: 7, coalesce: 64 << 10, unitReads: 1, inflight: 1, fetchBatches: 2, decoders: 1,
				directSpan: 200000, slots: (64<<10 + 8192) * 1, decoded: 256 << 10 * 64 * 2},
		},
		{
			// Row groups of 16 pages: the slot grows to hold a coalesced
			// run of up to 8 pages of the largest size.
			name: "row-group units",
			edit: func(c *Config) { c.Shuffle, c.BatchPages = ShuffleRowGroup, 1 },
			sum:  indexSummary{maxPage: 64 << 10, unitMax: 16, maxRun: 1 << 20, procs: procs, units: units},
			want: want{slotSize: 512<<10 + 8192, workers: 4, depth: 12, slotsPerWorker: 12,
				prefetch: 2, coalesce: 512 << 10, unitReads: 16, inflight: 48, fetchBatches: 3, decoders: 4,
				slots: (512<<10 + 8192) * 12 * 4, decoded: 64 << 10 * 16 * 3},
		},
		{
			// Row groups of 3283 pages of 8 KiB read as 206 coalesced
			// requests (as the loader counts them): the window's slots
			// are counted by requests, each as large as a run of 8 pages.
			name: "row-group units of many small pages",
			edit: func(c *Config) { c.Shuffle, c.BatchPages = ShuffleRowGroup, 1 },
			sum:  indexSummary{maxPage: 8 << 10, unitMax: 3283, unitReqs: 206, maxRun: 27 << 20, procs: procs, units: units},
			want: want{slotSize: 64<<10 + 8192, workers: 4, depth: 155, slotsPerWorker: 155,
				prefetch: 2, coalesce: 64 << 10, unitReads: 3283, inflight: 618, fetchBatches: 3, decoders: 4,
				slots: (64<<10 + 8192) * 155 * 4, decoded: 8 << 10 * 3283 * 3},
		},
		{
			name: "row-group units without coalescing",
			edit: func(c *Config) { c.Shuffle, c.BatchPages, c.CoalesceBytes = ShuffleRowGroup, 1, -1 },
			sum:  indexSummary{maxPage: 64 << 10, unitMax: 16, maxRun: 1 << 20, procs: procs, units: units},
			want: want{slotSize: 64<<10 + 8192, workers: 4, depth: 12, slotsPerWorker: 12,
				prefetch: 2, coalesce: 0, unitReads: 16, inflight: 48, fetchBatches: 3, decoders: 4,
				slots: (64<<10 + 8192) * 12 * 4, decoded: 64 << 10 * 16 * 3},
		},
		{
			// 8 rows × 2048 tokens: 64 KiB of int32 tokens, 64 KiB of
			// positions, 64 KiB + 4 of cu_seqlens, 16 KiB of mask, rounded
			// to pages: 53 pages; four buffers (prefetch + 2).
			name: "tokens int32", edit: func(c *Config) { c.Output = OutputTokens },
			sum: small,
			want: want{slotSize: 64<<10 + 8192, workers: 4, depth: 48, slotsPerWorker: 48,
				prefetch: 2, coalesce: 64 << 10, unitReads: 1, inflight: 192, fetchBatches: 3, tokenBufs: 4, decoders: 4,
				slots: (64<<10 + 8192) * 48 * 4, decoded: 64 << 10 * 64 * 3, tokens: 4 * 53 * 4096},
		},
		{
			name: "tokens int64", edit: func(c *Config) { c.Output, c.Tokens64 = OutputTokens, true },
			sum: small,
			want: want{slotSize: 64<<10 + 8192, workers: 4, depth: 48, slotsPerWorker: 48,
				prefetch: 2, coalesce: 64 << 10, unitReads: 1, inflight: 192, fetchBatches: 3, tokenBufs: 4, decoders: 4,
				slots: (64<<10 + 8192) * 48 * 4, decoded: 64 << 10 * 64 * 3, tokens: 4 * 69 * 4096},
		},
		{
			// A lead and two other columns, each unit reading a page of
			// each (half a lead page's bytes on average): slots fit the
			// unit's three-page run, the read-ahead counts 1.5 pages a
			// unit, the decoded window each column's pages at their size.
			name: "several columns",
			sum: indexSummary{maxPage: 64 << 10, compressed: true, decodedPage: 64 << 10, unitMax: 1,
				sides: 2, sideReads: 2, sideMean: 0.5, maxRun: 3 * 64 << 10, procs: procs, units: units,
				sidePage: 32 << 10, sideDecoded: 32 << 10, sideBytes: 1 << 30},
			want: want{slotSize: 192<<10 + 8192, workers: 8, depth: 216, slotsPerWorker: 216,
				prefetch: 8, coalesce: 192 << 10, unitReads: 3, inflight: 192 * 9, fetchBatches: 9, decoders: 8,
				slots: (192<<10 + 8192) * 216 * 8, decoded: (64<<10 + 2*32<<10) * 64 * 9, side: 64 << 20},
		},
		{
			// A shared engine: coalescing stays within one page (its slots
			// are not ours), one decoder per worker it has.
			name: "shared engine",
			sum:  func() indexSummary { s := small; s.shared, s.sharedWorkers = true, 3; return s }(),
			want: want{slotSize: 64<<10 + 8192, workers: 4, depth: 48, slotsPerWorker: 48,
				prefetch: 2, coalesce: 64 << 10, unitReads: 1, inflight: 192, fetchBatches: 3, decoders: 3,
				slots: (64<<10 + 8192) * 48 * 4, decoded: 64 << 10 * 64 * 3},
		},
		{
			// One-byte pages on one core: as many slots as reads in
			// flight.
			name: "tiny pages", edit: func(c *Config) { c.BatchPages = 1 },
			sum: indexSummary{maxPage: 1, unitMax: 1, procs: 1, units: units},
			want: want{slotSize: 8193, workers: 1, depth: 3, slotsPerWorker: 3,
				prefetch: 2, coalesce: 1, unitReads: 1, inflight: 3, fetchBatches: 3, decoders: 1,
				slots: 8193 * 3, decoded: 3},
		},
		{
			// Dictionaries: a slot more on each worker, so units parked
			// for a dictionary never starve its read.
			name: "dictionaries", sum: func() indexSummary { s := small; s.maxDict = 32 << 10; return s }(),
			want: want{slotSize: 64<<10 + 8192, workers: 4, depth: 48, slotsPerWorker: 49,
				prefetch: 2, coalesce: 64 << 10, unitReads: 1, inflight: 192, fetchBatches: 3, decoders: 4,
				slots: (64<<10 + 8192) * 49 * 4, decoded: 64 << 10 * 64 * 3},
		},
		{
			// 256 MiB compressed pages: the read-ahead falls to its floor.
			name: "huge pages",
			edit: func(c *Config) { c.BatchPages, c.Engine.Workers, c.MemoryLimit = 1, 1, 4<<30 },
			sum:  indexSummary{maxPage: 256 << 20, compressed: true, unitMax: 1, procs: procs, units: units},
			want: want{slotSize: 256<<20 + 8192, workers: 1, depth: 3, slotsPerWorker: 3,
				prefetch: 2, coalesce: 1280 << 10, unitReads: 1, inflight: 3, fetchBatches: 3, decoders: 1,
				slots: (256<<20 + 8192) * 3, decoded: 256 << 20 * 3},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := sizingConfig(t, c.edit)
			z, err := planSizing(cfg, c.sum)
			if err != nil {
				t.Fatal(err)
			}
			got := want{slotSize: z.engine.SlotSize, workers: z.engine.Workers, depth: z.engine.QueueDepth,
				slotsPerWorker: z.engine.SlotsPerWorker, prefetch: z.prefetch, coalesce: z.coalesce,
				unitReads: z.unitReads, inflight: z.inflight, fetchBatches: z.fetchBatches, tokenBufs: z.tokenBufs,
				decoders: z.decoders, directSpan: z.directSpan,
				slots: z.mem.slots, tokens: z.mem.tokens, side: z.mem.side,
				// the pages' bytes, less each unit's bookkeeping
				decoded: z.mem.decoded - int64(z.batchPages*z.fetchBatches)*(unitOverhead+48*int64(z.unitReads))}
			if got != c.want {
				t.Errorf("planSizing:\n got %+v\nwant %+v", got, c.want)
			}
			// What the parts leave goes to dictionaries, half to the cache
			// and half shared by the worker and synchronous decoders.
			m := z.mem
			if m.limit != cfg.MemoryLimit || m.need()+m.dictLeft != m.limit || m.dictLeft < 0 {
				t.Errorf("breakdown %+v does not add up to the limit %d", m, cfg.MemoryLimit)
			}
			if want := max(m.dictLeft/2/int64(z.decoders+2), 1); z.dictStateBytes != want || m.dictCache() != m.dictLeft/2 {
				t.Errorf("dictionary budgets: state %d per decoder, cache %d; want %d and %d", z.dictStateBytes, m.dictCache(), want, m.dictLeft/2)
			}
			if z.poolPerClass != 4*z.window || z.window != z.perBatch*z.fetchBatches || z.perBatch != z.batchPages*z.unitReads || z.batchPages != cfg.BatchPages {
				t.Errorf("window %d, pool %d per class for %d pages a batch and prefetch %d", z.window, z.poolPerClass, z.perBatch, z.prefetch)
			}
			if z.engine.Logf == nil {
				t.Error("engine Logf not set")
			}
		})
	}
}

// TestPlanSizingPure checks that the plan reads only its arguments: the
// same inputs give the same sizing, and the Config it was given (held by
// value) is not what it changes.
func TestPlanSizingPure(t *testing.T) {
	cfg := sizingConfig(t, nil)
	s := indexSummary{maxPage: 64 << 10, compressed: true, decodedPage: 1 << 20, unitMax: 1, procs: 4, units: 1 << 20}
	a, err := planSizing(cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := planSizing(cfg, s)
	a.engine.Logf, b.engine.Logf = nil, nil
	if a.prefetch != b.prefetch || a.engine.SlotsPerWorker != b.engine.SlotsPerWorker || a.mem != b.mem || cfg.Prefetch != 0 || cfg.Engine.Workers != 0 {
		t.Errorf("planSizing is not a function of its arguments: %+v vs %+v (cfg prefetch %d)", a, b, cfg.Prefetch)
	}
	// GOMAXPROCS comes from the summary, not the process.
	s.procs = 13
	if c, _ := planSizing(cfg, s); c.engine.Workers != 13 {
		t.Errorf("workers %d for 13 procs, want 13", c.engine.Workers)
	}
}

// TestPlanSizingCPUs: the pinning plan's CPU set goes to every worker
// unless Engine.CPUSets is given.
func TestPlanSizingCPUs(t *testing.T) {
	s := indexSummary{maxPage: 4096, unitMax: 1, procs: 2, cpus: []int{2, 3}, units: 1 << 20}
	z, err := planSizing(sizingConfig(t, nil), s)
	if err != nil || len(z.engine.CPUSets) != 1 || len(z.engine.CPUSets[0]) != 2 || z.engine.CPUSets[0][1] != 3 {
		t.Errorf("CPUSets %v, %v; want [[2 3]]", z.engine.CPUSets, err)
	}
	given := [][]int{{0}}
	z, err = planSizing(sizingConfig(t, func(c *Config) { c.Engine = engine.Options{CPUSets: given} }), s)
	if err != nil || len(z.engine.CPUSets) != 1 || z.engine.CPUSets[0][0] != 0 {
		t.Errorf("CPUSets %v, %v; want the given [[0]]", z.engine.CPUSets, err)
	}
}

// TestPlanSizingShrinks: what Open chooses shrinks to fit MemoryLimit
// before anything is refused: the read-ahead first, then the batch.
func TestPlanSizingShrinks(t *testing.T) {
	const units = 1 << 20
	cases := []struct {
		name                string
		edit                func(*Config)
		sum                 indexSummary
		prefetch, batch     int
		shrunk              string
		fetchBatches, files int
	}{
		{
			// 1 MiB pages under 100 MiB: one batch in flight, of the
			// pages that fit.
			name: "1 MiB pages, 100 MiB", edit: func(c *Config) { c.MemoryLimit = 100 << 20 },
			sum:      indexSummary{maxPage: 1 << 20, unitMax: 1, procs: 8, units: units},
			prefetch: 0, batch: 48, shrunk: "prefetch 0, batches of 48 units",
		},
		{
			// 16 MiB compressed pages decoding to 64 MiB: a batch of
			// seven, prefetch 1.
			name:     "huge compressed pages",
			sum:      indexSummary{maxPage: 16 << 20, compressed: true, decodedPage: 64 << 20, unitMax: 1, procs: 2, units: units},
			prefetch: 0, batch: 12, shrunk: "prefetch 0, batches of 12 units",
		},
		{
			// Five pages of 4 MiB (a DuckDB file: one page per chunk):
			// one batch of the five, nothing ahead, nothing shrunk.
			name:     "five pages",
			sum:      indexSummary{maxPage: 3 << 20, compressed: true, decodedPage: 4450928, unitMax: 1, procs: 2, units: 5},
			prefetch: 0, batch: 5,
		},
		{
			// 500 files and 32 descriptors: the window holds at most 31
			// units (each may hold a file open).
			name:     "open-file budget",
			sum:      indexSummary{maxPage: 8 << 10, unitMax: 1, procs: 2, units: units, files: 500, fdBudget: 32},
			prefetch: 0, batch: 31, shrunk: "prefetch 0, batches of 31 units",
		},
		{
			// 1 MiB pages with 500 MiB of address space left (ulimit -v):
			// 244 MiB after the Go runtime's reserve.
			name: "address space", sum: indexSummary{maxPage: 1 << 20, unitMax: 1, procs: 2, units: units, addrLeft: 500 << 20},
			prefetch: 0, batch: 64, shrunk: "prefetch 0",
		},
		{
			// As many files as the budget allows: no bound.
			name:     "files within the budget",
			sum:      indexSummary{maxPage: 8 << 10, unitMax: 1, procs: 2, units: units, files: 30, fdBudget: 32},
			prefetch: 2, batch: 64,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := sizingConfig(t, c.edit)
			z, err := planSizing(cfg, c.sum)
			if err != nil {
				t.Fatal(err)
			}
			if z.prefetch != c.prefetch || z.batchPages != c.batch || z.shrunk != c.shrunk {
				t.Errorf("prefetch %d, batches of %d, shrunk %q; want %d, %d, %q", z.prefetch, z.batchPages, z.shrunk, c.prefetch, c.batch, c.shrunk)
			}
			if got := z.mem.need() + z.mem.dictMin; got > cfg.MemoryLimit {
				t.Errorf("needs %d bytes, limit %d", got, cfg.MemoryLimit)
			}
			// A batch more would not fit (when one was shrunk).
			if strings.Contains(c.shrunk, "batches") {
				more := sizingConfig(t, func(m *Config) {
					if c.edit != nil {
						c.edit(m)
					}
					m.BatchPages = z.batchPages + 1
				})
				if _, err := planSizing(more, c.sum); err == nil {
					t.Errorf("a batch of %d fits too", more.BatchPages)
				}
			}
		})
	}
}

// TestPlanSizingFiveMiBPages: a dataset of five pages of about 4 MiB
// decoded plans no more than twice its decoded size.
func TestPlanSizingFivePages(t *testing.T) {
	const decoded = 4450928
	s := indexSummary{maxPage: 3 << 20, compressed: true, decodedPage: decoded, unitMax: 1, procs: 2, units: 5}
	z, err := planSizing(sizingConfig(t, nil), s)
	if err != nil {
		t.Fatal(err)
	}
	if need := z.mem.need(); need > 2*5*decoded {
		t.Errorf("plans %d bytes (%+v) for five pages of %d decoded", need, z.mem, decoded)
	}
}

// TestPlanSizingMemory: a configuration whose one batch cannot fit fails
// with ErrMemory naming every part, and each fix it suggests works.
func TestPlanSizingMemory(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Config)
		sum  indexSummary
		want []string
	}{
		{
			// An explicit batch of 1 MiB pages over 100 MiB.
			name: "explicit batch",
			edit: func(c *Config) { c.MemoryLimit, c.BatchPages = 100<<20, 64 },
			sum:  indexSummary{maxPage: 1 << 20, unitMax: 1, procs: 8, units: 1 << 20},
			want: []string{"MiB of read slots (4 workers × 16 slots × 1056768 bytes for batches of 64 units with prefetch 0)", "MiB of decoded pages (1048576 bytes each, 64 pages)",
				"limit of 100 MiB", "raise MemoryLimit to ", "or lower BatchPages to "},
		},
		{
			name: "explicit prefetch",
			edit: func(c *Config) { c.MemoryLimit, c.Prefetch, c.BatchPages = 300<<20, 8, 64 },
			sum:  indexSummary{maxPage: 1 << 20, unitMax: 1, procs: 2, units: 1 << 20},
			want: []string{"with prefetch 8", "or lower Prefetch to "},
		},
		{
			name: "every part",
			edit: func(c *Config) {
				c.MemoryLimit, c.Output, c.BatchRows, c.Prefetch, c.BatchPages = 64<<20, OutputTokens, 64, 4, 64
			},
			sum: indexSummary{maxPage: 64 << 10, compressed: true, decodedPage: 1 << 20, unitMax: 1,
				sides: 1, sideReads: 1, sideMean: 1, maxRun: 128 << 10, procs: 2, units: 1 << 20,
				sidePage: 64 << 10, sideDecoded: 1 << 20, sideBytes: 1 << 30},
			want: []string{"MiB of read slots (2 workers ×", "640 MiB of decoded pages (1048576 bytes each, 640 pages)",
				"9 MiB of token buffers", "8 MiB of side cache", "limit of 64 MiB", "or lower BatchPages to "},
		},
		{
			// A page of 600 MiB, read and decoded, is more than the
			// limit: nothing but the limit helps.
			name: "huge pages",
			sum:  indexSummary{maxPage: 600 << 20, compressed: true, unitMax: 1, procs: 8, units: 1 << 20},
			want: []string{"600 MiB of read slots (1 workers × 1 slots × 629153792 bytes", "limit of 1024 MiB", "raise MemoryLimit to 1201 MiB"},
		},
		{
			// A page of 200 MiB with 500 MiB of address space left.
			name: "address space",
			sum:  indexSummary{maxPage: 200 << 20, unitMax: 1, procs: 2, units: 10, addrLeft: 380 << 20},
			want: []string{"they map 968 MiB, and the address space limit (RLIMIT_AS, ulimit -v) leaves 380 MiB, 256 MiB of which are kept for the Go runtime", "raise the address space limit by 845 MiB"},
		},
		{
			// A shuffle buffer of 10^12 rows: refused before anything is
			// allocated, with the rows that fit.
			name: "shuffle buffer",
			edit: func(c *Config) { c.BatchRows, c.BufferRows = 32, 1e12 },
			sum:  indexSummary{maxPage: 64 << 10, unitMax: 1, procs: 2, units: 1 << 20, rowBytes: 100},
			want: []string{"of them the shuffle buffer", "or lower BufferRows to "},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := sizingConfig(t, c.edit)
			_, err := planSizing(cfg, c.sum)
			if !errors.Is(err, ErrMemory) {
				t.Fatalf("planSizing: %v, want ErrMemory", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\ndoes not say %q", err, w)
				}
			}
			// Every fix it suggests fits.
			msg := err.Error()
			for _, fix := range []struct {
				say string
				set func(*Config, int)
			}{
				{"raise MemoryLimit to ", func(c *Config, v int) { c.MemoryLimit = int64(v) << 20 }},
				{"lower BatchPages to ", func(c *Config, v int) { c.BatchPages = v }},
				{"lower Prefetch to ", func(c *Config, v int) { c.Prefetch = v }},
				{"lower BufferRows to ", func(c *Config, v int) { c.BufferRows = v }},
				{"lower BatchRows to ", func(c *Config, v int) { c.BatchRows = v }},
			} {
				i := strings.Index(msg, fix.say)
				if i < 0 {
					continue
				}
				var v int
				if _, err := fmt.Sscan(msg[i+len(fix.say):], &v); err != nil {
					t.Fatalf("%q: %v", msg[i:], err)
				}
				cfg := sizingConfig(t, c.edit)
				fix.set(&cfg, v)
				if fix.say == "lower Prefetch to " && v == 0 {
					cfg.Prefetch = 0 // automatic: fits as shrunk
				}
				if _, err := planSizing(cfg, c.sum); err != nil {
					t.Errorf("%s%d: %v", fix.say, v, err)
				}
			}
		})
	}
}

// TestPlanSizingFiles: explicit batches beyond the open-file budget are
// refused with ErrConfig saying what fits.
func TestPlanSizingFiles(t *testing.T) {
	s := indexSummary{maxPage: 8 << 10, unitMax: 1, procs: 2, units: 1 << 20, files: 500, fdBudget: 32}
	_, err := planSizing(sizingConfig(t, func(c *Config) { c.BatchPages = 64 }), s)
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "lower BatchPages to 31") || !strings.Contains(err.Error(), "500 files") {
		t.Fatalf("planSizing: %v, want ErrConfig suggesting BatchPages 31", err)
	}
	if _, err := planSizing(sizingConfig(t, func(c *Config) { c.BatchPages = 31 }), s); err != nil {
		t.Fatalf("BatchPages 31: %v", err)
	}
}
