package rinas

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/internal/cgroup"
	"golang.org/x/sys/unix"
)

func TestParseIOMode(t *testing.T) {
	for _, m := range []IOMode{IOAuto, IODirect, IOBuffered} {
		if got, err := ParseIOMode(strings.ToUpper(m.String())); err != nil || got != m {
			t.Errorf("ParseIOMode(%q) = %v, %v", m, got, err)
		}
	}
	if _, err := ParseIOMode("mmap"); !errors.Is(err, ErrConfig) {
		t.Fatalf("ParseIOMode(mmap): %v", err)
	}
}

// TestChooseIO is auto's rule over files and memory: a dataset whose
// projected bytes fit three quarters of the page cache this job can hold
// reads buffered; one that does not reads O_DIRECT but for the files
// already cached, most cached first, as many as fit; the node's memory is
// shared by its local ranks and capped by the memory cgroup.
func TestChooseIO(t *testing.T) {
	const M = 1 << 20
	unlimited := int64(cgroup.Unlimited)
	node := func(avail int64) ioFacts {
		return ioFacts{avail: avail, localWorld: 1, cgroup: unlimited, cgLimit: unlimited}
	}
	for _, tc := range []struct {
		name   string
		files  []ioFile
		facts  ioFacts
		direct []bool
		mode   string
		reason string
	}{
		{"fits the node", []ioFile{{100 * M, 0}, {100 * M, 0}}, node(1000 * M), []bool{false, false}, "buffered", "stay in the 1000 MiB"},
		{"larger than the node", []ioFile{{800 * M, 0}, {800 * M, 0}}, node(1000 * M), []bool{true, true}, "direct", "would not stay"},
		{"part would fit: no file is cached, all direct", []ioFile{{700 * M, 0}, {300 * M, 0}, {500 * M, 0}}, node(1000 * M),
			[]bool{true, true, true}, "direct", "would not stay"},
		{"the cached file buffered, the cold one direct", []ioFile{{300 * M, 0}, {600 * M, 600 * M}}, node(800 * M),
			// hold = 600 cached + 200 free; budget 600: the cached file
			// alone fills it.
			[]bool{true, false}, "mixed", "1 files already cached (600 MiB) buffered"},
		{"the most cached first, as many as fit", []ioFile{{300 * M, 280 * M}, {300 * M, 300 * M}, {300 * M, 290 * M}}, node(900 * M),
			// hold 900, budget 675: two of the three cached files.
			[]bool{true, false, false}, "mixed", "2 files already cached"},
		{"a cached file larger than the budget reads direct", []ioFile{{900 * M, 880 * M}}, node(900 * M), []bool{true}, "direct", ""},
		{"local ranks share the node", []ioFile{{300 * M, 0}}, ioFacts{avail: 1000 * M, localWorld: 4, cgroup: unlimited, cgLimit: unlimited},
			[]bool{true}, "direct", "shared by 4 local ranks"},
		{"the cgroup caps the node", []ioFile{{100 * M, 0}, {100 * M, 0}}, ioFacts{avail: 10000 * M, localWorld: 1, cgroup: 200 * M, cgLimit: 256 * M},
			[]bool{true, true}, "direct", "memory cgroup limit 256 MiB"},
		{"within the cgroup", []ioFile{{60 * M, 0}, {60 * M, 0}}, ioFacts{avail: 10000 * M, localWorld: 1, cgroup: 200 * M, cgLimit: 256 * M},
			[]bool{false, false}, "buffered", "memory cgroup limit 256 MiB"},
		{"the cgroup counts the cached pages as its own", []ioFile{{100 * M, 100 * M}, {100 * M, 0}}, ioFacts{avail: 10000 * M, localWorld: 1, cgroup: 200 * M, cgLimit: 256 * M},
			// hold = 100 cached + (200-100) free = 200; budget 150: the
			// cold file does not fit beside the cached one.
			[]bool{false, true}, "mixed", ""},
		{"memory unknown", []ioFile{{M, 0}}, ioFacts{avail: -1, cgroup: unlimited}, []bool{true}, "direct", "unknown"},
		{"no files", nil, node(M), []bool{}, "buffered", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := chooseIO(tc.files, tc.facts)
			if len(c.direct) != len(tc.direct) {
				t.Fatalf("direct %v, want %v", c.direct, tc.direct)
			}
			nd := 0
			for i := range c.direct {
				if c.direct[i] != tc.direct[i] {
					t.Fatalf("direct %v, want %v (%s)", c.direct, tc.direct, c.reason)
				}
				if c.direct[i] {
					nd++
				}
			}
			if c.mode != tc.mode || c.nDirect != nd || c.nBuffered != len(c.direct)-nd || !strings.HasPrefix(c.reason, c.mode+":") || !strings.Contains(c.reason, tc.reason) {
				t.Fatalf("mode %q (%d direct, %d buffered), reason %q; want %q, %d direct, reason with %q", c.mode, c.nDirect, c.nBuffered, c.reason, tc.mode, nd, tc.reason)
			}
		})
	}
}

// setMemory makes auto see the memory facts f returns, for the test.
func setMemory(t *testing.T, f func() ioFacts) {
	t.Helper()
	saved := memoryFacts
	memoryFacts = f
	t.Cleanup(func() { memoryFacts = saved })
}

func plenty() ioFacts {
	return ioFacts{avail: 1 << 40, localWorld: 1, cgroup: cgroup.Unlimited, cgLimit: cgroup.Unlimited}
}

func none() ioFacts {
	return ioFacts{avail: 0, localWorld: 1, cgroup: cgroup.Unlimited, cgLimit: cgroup.Unlimited}
}

// openModes returns how many of the loader's open files read direct and
// buffered.
func openModes(l *Loader) (direct, buffered int) {
	l.fc.mu.Lock()
	defer l.fc.mu.Unlock()
	for _, e := range l.fc.ents {
		if e.f == nil {
			continue
		}
		if e.f.Direct() {
			direct++
		} else {
			buffered++
		}
	}
	return direct, buffered
}

// TestIOModeAtDefaults: with nothing set the loader reads auto: a small
// dataset on a node with memory to spare reads buffered, says so and why
// in Stats; with no memory to spare it reads O_DIRECT; the explicit modes
// and Engine.Direct win over auto; every epoch delivers every row once.
func TestIOModeAtDefaults(t *testing.T) {
	// Uncompressed: Open reads no page headers to size the decoded pages,
	// which would leave this small dataset's pages cached.
	ds := testDataset(t, "v2plain")
	for _, tc := range []struct {
		name   string
		mem    func() ioFacts
		set    func(*Config)
		mode   string
		reason string
	}{
		{"defaults, memory to spare", plenty, func(*Config) {}, "buffered", "stay in"},
		{"defaults, no memory", none, func(*Config) {}, "direct", "would not stay"},
		{"direct", plenty, func(c *Config) { c.IOMode = IODirect }, "direct", "set by Config.IOMode"},
		{"buffered", none, func(c *Config) { c.IOMode = IOBuffered }, "buffered", "set by Config.IOMode"},
		{"Engine.Direct Off", none, func(c *Config) { c.Engine.Direct = engine.Off }, "buffered", "set by"},
		{"Engine.Direct On", plenty, func(c *Config) { c.Engine.Direct = engine.On }, "direct", "set by"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setMemory(t, tc.mem)
			for _, p := range ds.paths {
				dropCache(t, p) // cached files read buffered whatever the memory
			}
			cfg := baseConfig(ds, "id")
			cfg.Epochs = 2
			if tc.name == "defaults, memory to spare" {
				cfg = Config{Paths: ds.paths, Logf: func(string, ...any) {}} // nothing set at all
			}
			tc.set(&cfg)
			l := openT(t, cfg)
			st := l.Stats()
			if st.IOMode != tc.mode || !strings.Contains(st.IOReason, tc.reason) {
				t.Fatalf("Stats.IOMode %q, reason %q; want %q with %q", st.IOMode, st.IOReason, tc.mode, tc.reason)
			}
			n := len(ds.paths)
			if (tc.mode == "direct") != (st.DirectFiles == n) || st.DirectFiles+st.BufferedFiles != n {
				t.Fatalf("%d direct, %d buffered files of %d", st.DirectFiles, st.BufferedFiles, n)
			}
			if cfg.Columns == nil {
				return // the first column is not "id": the rows are checked below
			}
			ids := epochIDs(t, l, func(int) {
				if d, b := openModes(l); (tc.mode == "direct" && b > 0) || (tc.mode == "buffered" && d > 0) {
					t.Errorf("%s: %d files open direct, %d buffered", tc.mode, d, b)
				}
			})
			for _, e := range ids {
				checkExactlyOnce(t, e, ds.rows)
			}
		})
	}
}

// epochIDs reads every epoch of l and returns each epoch's ids; each(n)
// runs after the n-th batch.
func epochIDs(t *testing.T, l *Loader, each func(n int)) [][]int64 {
	t.Helper()
	var out [][]int64
	ep := uint64(1 << 63)
	for n := 0; ; n++ {
		b, err := l.Next(context.Background())
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if b.Epoch != ep {
			ep = b.Epoch
			out = append(out, nil)
		}
		for _, a := range b.Arrays {
			out[len(out)-1] = append(out[len(out)-1], a.(*array.Int64).Int64Values()...)
		}
		b.Release()
		each(n)
	}
}

// dropCache evicts path's pages from the page cache.
func dropCache(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil { // dirty pages stay cached
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
}

// TestIOModeChangesMidEpoch: under auto, memory that comes and goes
// between epochs and a page cache dropped in the middle of them change the
// files' modes from epoch to epoch (each epoch re-chooses), and never a
// row: every epoch delivers every row exactly once, with the slots
// scribbled on release (a page used after its batch's Release would read
// garbage), the files open within their budget, and no descriptor left
// behind by the files reopened in another mode. Unordered and
// ordered fetch, page and row-group shuffles.
func TestIOModeChangesMidEpoch(t *testing.T) {
	ds := testDataset(t, "v2plain")
	for _, tc := range []struct {
		name string
		set  func(*Config)
	}{
		{"page", func(*Config) {}},
		{"ordered", func(c *Config) { c.Fetch = Ordered }},
		{"rowgroup", func(c *Config) { c.Shuffle = ShuffleRowGroup }},
		{"page rows", func(c *Config) { c.BatchRows = 100 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			calls := 0
			var modes []string
			setMemory(t, func() ioFacts {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if calls%2 == 0 {
					// Memory gone, and the cache with it.
					for _, p := range ds.paths {
						dropCache(t, p)
					}
					return none()
				}
				return plenty()
			})
			cfg := baseConfig(ds, "id")
			cfg.Epochs, cfg.BatchPages, cfg.Prefetch = 5, 4, 1
			cfg.Engine.Scribble = true
			tc.set(&cfg)
			fds := openFDs(t)
			l := openT(t, cfg)
			ids := epochIDs(t, l, func(n int) {
				st := l.Stats()
				mu.Lock()
				if len(modes) == 0 || modes[len(modes)-1] != st.IOMode {
					modes = append(modes, st.IOMode)
				}
				mu.Unlock()
				if n%3 == 1 {
					// The cache goes under the loader's feet.
					for _, p := range ds.paths {
						dropCache(t, p)
					}
				}
				if open := l.fc.openNow(); open > l.fc.max {
					t.Errorf("%d files open, budget %d", open, l.fc.max)
				}
			})
			if len(ids) != cfg.Epochs {
				t.Fatalf("%d epochs, want %d", len(ids), cfg.Epochs)
			}
			for _, e := range ids {
				checkExactlyOnce(t, e, ds.rows)
			}
			if calls < cfg.Epochs {
				t.Fatalf("auto chose %d times for %d epochs", calls, cfg.Epochs)
			}
			// Reads still in flight at an epoch's end may cache pages
			// again after the drop: "mixed" is direct enough.
			if !containsAll(modes, "buffered") || !(containsAll(modes, "direct") || containsAll(modes, "mixed")) {
				t.Fatalf("modes seen %v: want buffered, and direct or mixed", modes)
			}
			// Files reopened in another mode leave no descriptor behind.
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if n := openFDs(t); n != fds {
				t.Fatalf("%d descriptors open after Close, %d before Open", n, fds)
			}
		})
	}
}

func containsAll(have []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

// TestIOModeJSON: a JSON config names the mode (as the C ABI's "io_mode"
// key does); an unknown name is an error.
func TestIOModeJSON(t *testing.T) {
	var c struct {
		M IOMode `json:"io_mode"`
	}
	if err := json.Unmarshal([]byte(`{"io_mode":"buffered"}`), &c); err != nil || c.M != IOBuffered {
		t.Fatalf("%v, %v", c.M, err)
	}
	if err := json.Unmarshal([]byte(`{"io_mode":"mmap"}`), &c); !errors.Is(err, ErrConfig) {
		t.Fatalf("unknown mode: %v", err)
	}
	if b, _ := json.Marshal(c); string(b) != `{"io_mode":"buffered"}` {
		t.Fatalf("marshal: %s", b)
	}
}
