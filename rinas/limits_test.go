//go:build linux

package rinas

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pagefeed/pagefeed/internal/gen"
)

// limitsBigEnv names TestLimitsNoAbort's dataset of big pages;
// limitsASEnv marks its child once it runs under RLIMIT_AS.
const (
	limitsBigEnv = "PAGEFEED_RINAS_LIMITS_BIG"
	limitsASEnv  = "PAGEFEED_RINAS_LIMITS_AS"
)

// TestLimitsNoAbort: in a process whose address space (ulimit -v) is twice
// MemoryLimit's default, configurations whose sizes no memory could hold
// end in errors naming the setting, and every output completes an epoch
// at its defaults: never the Go runtime's "out of memory" or a failed
// thread creation, which abort the process (the child would die). Each
// variant runs in a child process of its own under RLIMIT_AS.
func TestLimitsNoAbort(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		// 20 pages of 12 MB (rows of 300 KB images): more than the
		// address space left, read and decoded. Written here: the
		// children have no room to.
		big := filepath.Join(t.TempDir(), "images.parquet")
		writeBinaryRows(t, big, 800, 40, 300<<10)
		t.Setenv(limitsBigEnv, big)
	}
	v, child := inChild(t, "oversize", "pages", "rows", "buffer", "tokens", "row-shuffle", "big-pages")
	if !child {
		return
	}
	if raceEnabled {
		t.Skip("the race detector's shadow memory does not fit RLIMIT_AS")
	}
	const limit = 1 << 30 // MemoryLimit's default
	if os.Getenv(limitsASEnv) == "" {
		// The limit in force from the process's start, as ulimit -v sets
		// it (the Go runtime sizes its reservations by it): set it, then
		// run this test binary again in this process.
		rl := unix.Rlimit{Cur: 2 * limit, Max: 2 * limit}
		if err := unix.Setrlimit(unix.RLIMIT_AS, &rl); err != nil {
			t.Skipf("setrlimit AS: %v", err)
		}
		err := syscall.Exec(os.Args[0], os.Args, append(os.Environ(), limitsASEnv+"=1"))
		t.Fatalf("exec under RLIMIT_AS: %v", err)
	}
	ds := smallDataset(t, 3)
	base := func() Config { return baseConfig(ds, "input_ids") }
	if v == "big-pages" {
		cfg := Config{Paths: []string{os.Getenv(limitsBigEnv)}, Columns: []string{"id", "image"}, World: 1, Logf: t.Logf}
		l := openT(t, cfg)
		rows := 0
		eachBatch(t, l, func(b *Batch) { rows += b.Rows; b.Release() })
		if rows != 800 {
			t.Errorf("%d rows of 800", rows)
		}
		t.Logf("%s: planned %d MiB, batches of %d units, prefetch %d", v, l.PlannedBytes()>>20, l.BatchPages(), l.Prefetch())
		return
	}
	if v != "oversize" {
		// The output at its defaults completes an epoch.
		cfg := base()
		switch v {
		case "rows":
			cfg.BatchRows = 32
		case "buffer":
			cfg.BatchRows, cfg.BufferRows = 32, 10000
		case "tokens":
			cfg.Output = OutputTokens
		case "row-shuffle":
			cfg.Shuffle, cfg.BatchRows = ShuffleRow, 16
		}
		l := openT(t, cfg)
		rows := 0
		eachBatch(t, l, func(b *Batch) { rows += b.Rows; b.Release() })
		if cfg.Output == OutputArrow && int64(rows) != ds.rows {
			t.Errorf("%d rows of %d", rows, ds.rows)
		}
		t.Logf("%s: planned %d MiB, %d batches of %d units, prefetch %d", v, l.PlannedBytes()>>20, l.Stats().Batches, l.BatchPages(), l.Prefetch())
		return
	}
	// Sizes no limit holds: refused before anything is allocated.
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want error
	}{
		{"buffer 1e12 rows", func(c *Config) { c.BatchRows, c.BufferRows = 32, 1e12 }, ErrMemory},
		{"batch 65536 prefetch 64", func(c *Config) { c.BatchPages, c.Prefetch = 1<<16, 64 }, nil},
		{"seq_len 2^30", func(c *Config) { c.Output, c.SeqLen, c.BatchRows = OutputTokens, 1<<30, 64 }, ErrConfig},
		{"tokens 2^20 × 2^20", func(c *Config) { c.Output, c.SeqLen, c.BatchRows = OutputTokens, 1<<20, 1<<20 }, ErrConfig},
		{"tokens 4096 × 65536", func(c *Config) { c.Output, c.SeqLen, c.BatchRows = OutputTokens, 65536, 4096 }, ErrMemory},
		{"world 2^40", func(c *Config) { c.Rank, c.World = 0, 1<<40 }, ErrConfig},
		{"batch rows 2^40", func(c *Config) { c.BatchRows = 1 << 40 }, ErrConfig},
	} {
		cfg := base()
		tc.edit(&cfg)
		l, err := Open(context.Background(), cfg)
		if err == nil {
			// A small dataset: the share bounds the window.
			if tc.want != nil {
				l.Close()
				t.Errorf("%s: Open accepted it", tc.name)
				continue
			}
			eachBatch(t, l, func(b *Batch) { b.Release() })
			l.Close()
			continue
		}
		if tc.want == nil || !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		t.Logf("%s: %v", tc.name, err)
	}
	if _, err := Reshard([]*State{{Version: stateVersion, World: 1}}, 1<<40); err == nil || !errors.Is(err, ErrConfig) {
		t.Errorf("Reshard to 2^40 ranks: %v, want ErrConfig", err)
	}
}

// linkedFiles makes n hard links to one small generated file (with an
// offset index) under a fresh folder, and returns their paths.
func linkedFiles(t *testing.T, n, rows int) []string {
	t.Helper()
	dir := t.TempDir()
	res, err := gen.Run(context.Background(), gen.Config{Dir: filepath.Join(dir, "src"), Files: 1, RowsPerFile: rows, PageSize: 1024,
		PageVersion: 2, PageIndex: true, Codec: "none", Seed: 1, MeanTokens: 2})
	if err != nil {
		t.Fatal(err)
	}
	paths := make([]string, n)
	for i := range paths {
		paths[i] = filepath.Join(dir, fmt.Sprintf("f%05d.parquet", i))
		if err := os.Link(res.Files[0], paths[i]); err != nil {
			t.Fatal(err)
		}
	}
	return paths
}

// openFDs counts the process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// drainPages reads every batch of a loader on cfg, failing on an error
// or a row delivered twice or never, and returns the rows seen and the
// most descriptors open after any batch.
func drainPages(t *testing.T, cfg Config) (rows, peak int) {
	t.Helper()
	l := openT(t, cfg)
	seen := map[RowRef]bool{}
	eachBatch(t, l, func(b *Batch) {
		refs := b.Refs
		if len(refs) == 0 { // page batches: every row of each page
			for i, p := range b.Pages {
				for r := 0; r < b.Arrays[i].Len(); r++ {
					refs = append(refs, RowRef{Page: p, Row: uint32(r)})
				}
			}
		}
		for _, r := range refs {
			if seen[r] {
				t.Fatalf("row %+v twice", r)
			}
			seen[r] = true
		}
		b.Release()
		peak = max(peak, openFDs(t))
	})
	if n := l.ix.NumRows(); int64(len(seen)) != n {
		t.Fatalf("%d rows of %d", len(seen), n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return len(seen), peak
}

// TestLimitsOpenFiles: under RLIMIT_NOFILE 64 (soft and hard) a dataset
// of 500 files completes an epoch at the defaults, with unordered and
// ordered fetch, page and row shuffle, index build included; the fetch
// window and file cache fit the budget (half the limit). In a process
// with the usual limit, 10,000 files keep a bounded number of
// descriptors open.
func TestLimitsOpenFiles(t *testing.T) {
	v, child := inChild(t, "nofile64-500files", "10000files")
	if !child {
		return
	}
	switch v {
	case "nofile64-500files":
		paths := linkedFiles(t, 500, 40)
		rl := unix.Rlimit{Cur: 64, Max: 64}
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
			t.Skipf("setrlimit NOFILE: %v", err)
		}
		for _, edit := range []func(*Config){
			func(*Config) {},
			func(c *Config) { c.Fetch = Ordered },
			func(c *Config) { c.Shuffle, c.BatchRows = ShuffleRow, 16 },
			func(c *Config) { c.BatchRows, c.BufferRows = 16, 100 },
		} {
			cfg := baseConfig(dataset{paths: paths}, "id")
			cfg.Index.NoSidecar = true
			edit(&cfg)
			rows, peak := drainPages(t, cfg)
			t.Logf("%v %v rows %d: %d rows, at most %d descriptors open", cfg.Shuffle, cfg.Fetch, cfg.BatchRows, rows, peak)
		}
	case "10000files":
		paths := linkedFiles(t, 10000, 20)
		before := openFDs(t)
		for _, fetch := range []Fetch{Unordered, Ordered} {
			cfg := baseConfig(dataset{paths: paths}, "id")
			cfg.Fetch = fetch
			rows, peak := drainPages(t, cfg)
			if peak-before > maxIdleFiles+64 {
				t.Errorf("%v: %d descriptors open at the peak, %d before", fetch, peak, before)
			}
			t.Logf("%v: %d rows, at most %d descriptors open (%d before)", fetch, rows, peak, before)
		}
	}
}
