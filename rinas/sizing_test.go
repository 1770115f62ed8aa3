package rinas

import (
	"errors"
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
	uncompressed := indexSummary{maxPage: 1 << 20, unitMax: 1, procs: procs}
	compressed := indexSummary{maxPage: 64 << 10, compressed: true, decodedPage: 256 << 10, unitMax: 1, procs: procs}
	small := indexSummary{maxPage: 64 << 10, unitMax: 1, procs: procs}
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
			// 1 MiB pages, uncompressed: two batches ahead, half the cores.
			name: "uncompressed defaults", sum: uncompressed,
			want: want{slotSize: 1<<20 + 8192, workers: 4, depth: 48, slotsPerWorker: 51,
				prefetch: 2, coalesce: 1 << 20, unitReads: 1, inflight: 192, fetchBatches: 3, decoders: 4,
				slots: (1<<20 + 8192) * 51 * 4},
		},
		{
			// 64 KiB pages decoding to 256 KiB: the decoded window bounds
			// the read-ahead (128 MiB / (64 pages × 256 KiB) - 1 = 7).
			name: "compressed defaults", sum: compressed,
			want: want{slotSize: 64<<10 + 8192, workers: 8, depth: 64, slotsPerWorker: 67,
				prefetch: 7, coalesce: 64 << 10, unitReads: 1, inflight: 64 * 8, fetchBatches: 8, decoders: 8,
				slots: (64<<10 + 8192) * 67 * 8, decoded: 256 << 10 * 64 * 9},
		},
		{
			name: "explicit prefetch, iodepth, workers, slot size",
			edit: func(c *Config) {
				c.Prefetch, c.IODepth = 5, 64
				c.Engine.Workers, c.Engine.SlotSize = 2, 1<<20
			},
			sum: small,
			want: want{slotSize: 1 << 20, workers: 2, depth: 32, slotsPerWorker: 195,
				prefetch: 5, coalesce: 1<<20 - 8192, unitReads: 1, inflight: 64 * 6, fetchBatches: 6, decoders: 2,
				slots: (1 << 20) * 195 * 2},
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
				slots: (64<<10 + 8192) * 20 * 4},
		},
		{
			// Ordered fetch: one unit in flight, two fetch batches, no
			// decoded window counted, the synchronous reader's span.
			name: "ordered", edit: func(c *Config) { c.Fetch = Ordered },
			sum: func() indexSummary { s := compressed; s.orderedSpan = 200000; return s }(),
			want: want{slotSize: 64<<10 + 8192, workers: 8, depth: 8, slotsPerWorker: 8,
				prefetch: 7, coalesce: 64 << 10, unitReads: 1, inflight: 1, fetchBatches: 2, decoders: 8,
				directSpan: 200000, slots: (64<<10 + 8192) * 8 * 8},
		},
		{
			// Row groups of 16 pages: the slot grows to hold a coalesced
			// run of up to 8 pages of the largest size.
			name: "row-group units",
			edit: func(c *Config) { c.Shuffle, c.BatchPages = ShuffleRowGroup, 1 },
			sum:  indexSummary{maxPage: 64 << 10, unitMax: 16, maxRun: 1 << 20, procs: procs},
			want: want{slotSize: 512<<10 + 8192, workers: 4, depth: 12, slotsPerWorker: 18,
				prefetch: 2, coalesce: 512 << 10, unitReads: 16, inflight: 48, fetchBatches: 3, decoders: 4,
				slots: (512<<10 + 8192) * 18 * 4},
		},
		{
			// Row groups of 3283 pages of 8 KiB read as 206 coalesced
			// requests (as the loader counts them): the window's slots
			// are counted by requests, each as large as a run of 8 pages.
			name: "row-group units of many small pages",
			edit: func(c *Config) { c.Shuffle, c.BatchPages = ShuffleRowGroup, 1 },
			sum:  indexSummary{maxPage: 8 << 10, unitMax: 3283, unitReqs: 206, maxRun: 27 << 20, procs: procs},
			want: want{slotSize: 64<<10 + 8192, workers: 4, depth: 155, slotsPerWorker: 208,
				prefetch: 2, coalesce: 64 << 10, unitReads: 3283, inflight: 618, fetchBatches: 3, decoders: 4,
				slots: (64<<10 + 8192) * 208 * 4},
		},
		{
			name: "row-group units without coalescing",
			edit: func(c *Config) { c.Shuffle, c.BatchPages, c.CoalesceBytes = ShuffleRowGroup, 1, -1 },
			sum:  indexSummary{maxPage: 64 << 10, unitMax: 16, maxRun: 1 << 20, procs: procs},
			want: want{slotSize: 64<<10 + 8192, workers: 4, depth: 12, slotsPerWorker: 18,
				prefetch: 2, coalesce: 0, unitReads: 16, inflight: 48, fetchBatches: 3, decoders: 4,
				slots: (64<<10 + 8192) * 18 * 4},
		},
		{
			// 8 rows × 2048 tokens: 64 KiB of int32 tokens, 64 KiB of
			// positions, 64 KiB + 4 of cu_seqlens, 16 KiB of mask, rounded
			// to pages: 53 pages; four buffers (prefetch + 2).
			name: "tokens int32", edit: func(c *Config) { c.Output = OutputTokens },
			sum: small,
			want: want{slotSize: 64<<10 + 8192, workers: 4, depth: 48, slotsPerWorker: 51,
				prefetch: 2, coalesce: 64 << 10, unitReads: 1, inflight: 192, fetchBatches: 3, tokenBufs: 4, decoders: 4,
				slots: (64<<10 + 8192) * 51 * 4, tokens: 4 * 53 * 4096},
		},
		{
			name: "tokens int64", edit: func(c *Config) { c.Output, c.Tokens64 = OutputTokens, true },
			sum: small,
			want: want{slotSize: 64<<10 + 8192, workers: 4, depth: 48, slotsPerWorker: 51,
				prefetch: 2, coalesce: 64 << 10, unitReads: 1, inflight: 192, fetchBatches: 3, tokenBufs: 4, decoders: 4,
				slots: (64<<10 + 8192) * 51 * 4, tokens: 4 * 69 * 4096},
		},
		{
			// A lead and two other columns, each unit reading a page of
			// each (half a lead page's bytes on average): slots fit the
			// unit's three-page run, the window counts 1.5 pages a unit.
			name: "several columns",
			sum: indexSummary{maxPage: 64 << 10, compressed: true, decodedPage: 64 << 10, unitMax: 1,
				sides: 2, sideReads: 2, sideMean: 0.5, maxRun: 3 * 64 << 10, procs: procs},
			want: want{slotSize: 192<<10 + 8192, workers: 8, depth: 216, slotsPerWorker: 219,
				prefetch: 8, coalesce: 192 << 10, unitReads: 3, inflight: 192 * 9, fetchBatches: 9, decoders: 8,
				slots: (192<<10 + 8192) * 219 * 8, decoded: 64 << 10 * 192 * 10, side: 64 << 20},
		},
		{
			// A shared engine: coalescing stays within one page (its slots
			// are not ours), one decoder per worker it has.
			name: "shared engine",
			sum:  func() indexSummary { s := small; s.shared, s.sharedWorkers = true, 3; return s }(),
			want: want{slotSize: 64<<10 + 8192, workers: 4, depth: 48, slotsPerWorker: 51,
				prefetch: 2, coalesce: 64 << 10, unitReads: 1, inflight: 192, fetchBatches: 3, decoders: 3,
				slots: (64<<10 + 8192) * 51 * 4},
		},
		{
			// One-byte pages on one core.
			name: "tiny pages", edit: func(c *Config) { c.BatchPages = 1 },
			sum: indexSummary{maxPage: 1, unitMax: 1, procs: 1},
			want: want{slotSize: 8193, workers: 1, depth: 8, slotsPerWorker: 8,
				prefetch: 2, coalesce: 1, unitReads: 1, inflight: 3, fetchBatches: 3, decoders: 1,
				slots: 8193 * 8},
		},
		{
			// 256 MiB compressed pages: the read-ahead falls to its floor.
			name: "huge pages",
			edit: func(c *Config) { c.BatchPages, c.Engine.Workers, c.MemoryLimit = 1, 1, 4<<30 },
			sum:  indexSummary{maxPage: 256 << 20, compressed: true, unitMax: 1, procs: procs},
			want: want{slotSize: 256<<20 + 8192, workers: 1, depth: 8, slotsPerWorker: 8,
				prefetch: 2, coalesce: 1280 << 10, unitReads: 1, inflight: 3, fetchBatches: 3, decoders: 1,
				slots: (256<<20 + 8192) * 8},
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
				slots: z.mem.slots, decoded: z.mem.decoded, tokens: z.mem.tokens, side: z.mem.side}
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
			if z.poolPerClass != 4*z.perBatch*(z.prefetch+2) || z.window != z.perBatch*(z.prefetch+2) || z.perBatch != cfg.BatchPages*z.unitReads {
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
	s := indexSummary{maxPage: 64 << 10, compressed: true, decodedPage: 1 << 20, unitMax: 1, procs: 4}
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
	s := indexSummary{maxPage: 4096, unitMax: 1, procs: 2, cpus: []int{2, 3}}
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

// TestPlanSizingMemory: over MemoryLimit the plan fails with ErrMemory
// naming every part and its size.
func TestPlanSizingMemory(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Config)
		sum  indexSummary
		want []string
	}{
		{
			name: "slots",
			edit: func(c *Config) { c.MemoryLimit = 100 << 20 },
			sum:  indexSummary{maxPage: 1 << 20, unitMax: 1, procs: 8},
			// 1 MiB + 8 KiB slots × 51 × 4 workers = 205 MiB.
			want: []string{"205 MiB of read slots (4 workers × 51 slots × 1056768 bytes for batches of 64 pages with prefetch 2)",
				"0 MiB of decoded pages (0 bytes each)", "0 MiB of token buffers", "0 MiB of side cache", "limit 100 MiB", "dictionary cache"},
		},
		{
			name: "every part",
			edit: func(c *Config) { c.MemoryLimit, c.Output, c.BatchRows, c.Prefetch = 64<<20, OutputTokens, 64, 4 },
			sum: indexSummary{maxPage: 64 << 10, compressed: true, decodedPage: 1 << 20, unitMax: 1,
				sides: 1, sideReads: 1, sideMean: 1, maxRun: 128 << 10, procs: 2},
			// 128 pages a batch × 6 batches × 1 MiB decoded; 6 buffers of
			// 64 × 2048 tokens (417 pages each); the 64 MiB side cache.
			want: []string{"MiB of read slots (2 workers ×", "768 MiB of decoded pages (1048576 bytes each)",
				"9 MiB of token buffers", "64 MiB of side cache", "limit 64 MiB", "dictionary cache"},
		},
		{
			name: "huge pages",
			sum:  indexSummary{maxPage: 256 << 20, compressed: true, unitMax: 1, procs: 8},
			want: []string{"MiB of read slots (8 workers × ", "268443648 bytes", "limit 1024 MiB"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := planSizing(sizingConfig(t, c.edit), c.sum)
			if !errors.Is(err, ErrMemory) {
				t.Fatalf("planSizing: %v, want ErrMemory", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\ndoes not say %q", err, w)
				}
			}
		})
	}
}
