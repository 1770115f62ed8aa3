package rinas

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pagefeed/pagefeed/engine"
)

// setResidency makes auto see the residency res returns, for the test.
func setResidency(t *testing.T, res func(path string) bool) {
	t.Helper()
	saved := residency
	residency = func(path string, ranges []engine.Extent) (int64, int64, error) {
		var n int64
		for _, r := range ranges {
			n += r.Len
		}
		if res(path) {
			return n, n, nil
		}
		return 0, n, nil
	}
	t.Cleanup(func() { residency = saved })
}

// mixIOBytes returns each source's projected bytes, as auto weighs them.
func mixIOBytes(t *testing.T, cfg Config) []int64 {
	t.Helper()
	setMemory(t, plenty)
	l := openT(t, cfg)
	defer l.Close()
	var out []int64
	for _, sl := range l.mix.srcs {
		var s int64
		for _, b := range sl.io.bytes {
			s += b
		}
		out = append(out, s)
	}
	return out
}

// TestIOModeMixtureUnion: under auto (the default) a mixture chooses the
// read modes once over the union of its sources' files, which share the
// page cache: three sources that each fit the page cache alone but not
// together read O_DIRECT, all of them; that fit together, buffered; one
// source already cached beside two that do not fit reads buffered and
// the others direct. Each source opens its files in its part's modes;
// Stats says the mixture's choice and, per source, its part; every row of
// every source comes once at the defaults (no weights).
func TestIOModeMixtureUnion(t *testing.T) {
	names := []string{"web", "code", "math"}
	cfg := mixConfig(t, names, nil)
	sizes := mixIOBytes(t, cfg)
	var union, largest int64
	for _, s := range sizes {
		union += s
		largest = max(largest, s)
	}
	// Between one source and the union: each alone stays in the budget
	// (roomShare of what auto may hold), all three do not.
	between := func(lo, hi int64) func() ioFacts {
		return func() ioFacts {
			f := plenty()
			f.avail = int64(float64(lo+hi) / 2 / roomShare)
			return f
		}
	}
	files := func(name string) int { return len(mixPaths(t, name)) }
	nfiles := files("web") + files("code") + files("math")
	cold := func(string) bool { return false }
	codeCached := func(p string) bool { return slices.Contains(mixPaths(t, "code"), p) }
	for _, tc := range []struct {
		name   string
		mem    func() ioFacts
		res    func(string) bool
		set    func(*Config)
		mode   string
		reason string
		per    []string // each source's part
	}{
		{"each fits, the union does not", between(largest, union), cold, nil, "direct", "would not stay", []string{"direct", "direct", "direct"}},
		{"the union fits", plenty, cold, nil, "buffered", "stay in", []string{"buffered", "buffered", "buffered"}},
		// code cached takes no new memory; web and math do not fit beside
		// it (the memory left is less than the smaller of them).
		{"one source cached", func() ioFacts {
			f := plenty()
			f.avail = int64(float64(sizes[1]+min(sizes[0], sizes[2])/2) / roomShare)
			return f
		}, codeCached, nil, "mixed", "already cached", []string{"direct", "buffered", "direct"}},
		{"direct set", plenty, cold, func(c *Config) { c.IOMode = IODirect }, "direct", "set by Config.IOMode", []string{"direct", "direct", "direct"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setMemory(t, tc.mem)
			setResidency(t, tc.res)
			if tc.name == "each fits, the union does not" {
				// What each source alone would have chosen: buffered.
				for i, sl := range openT(t, cfg).mix.srcs {
					if c := chooseIO(sl.ioFiles(), tc.mem()); c.mode != "buffered" {
						t.Fatalf("source %s alone: %s, want buffered: the case does not test the union", names[i], c.reason)
					}
				}
			}
			c := cfg
			if tc.set != nil {
				tc.set(&c)
			}
			l := openT(t, c)
			st := l.Stats()
			if st.IOMode != tc.mode || !strings.Contains(st.IOReason, tc.reason) || st.DirectFiles+st.BufferedFiles != nfiles {
				t.Fatalf("Stats: %s (%d direct, %d buffered files of %d): %s; want %s with %q", st.IOMode, st.DirectFiles, st.BufferedFiles, nfiles, st.IOReason, tc.mode, tc.reason)
			}
			for i, s := range st.Sources {
				n := files(names[i])
				want := tc.per[i]
				if s.IOMode != want || s.DirectFiles+s.BufferedFiles != n || (want == "direct") != (s.DirectFiles == n) {
					t.Fatalf("source %s: %s, %d direct and %d buffered of %d files; want %s", s.Name, s.IOMode, s.DirectFiles, s.BufferedFiles, n, want)
				}
			}
			bs, _ := runMixEach(t, l, 3, func() {
				for i, sl := range l.mix.srcs {
					if d, b := openModes(sl); (tc.per[i] == "direct" && b > 0) || (tc.per[i] == "buffered" && d > 0) {
						t.Fatalf("source %s reads %s: %d files open direct, %d buffered", names[i], tc.per[i], d, b)
					}
				}
			})
			per := make([][]int64, 3)
			for _, b := range bs {
				for i := range b {
					per[i] = append(per[i], b[i]...)
				}
			}
			for i, n := range names {
				checkExactlyOnce(t, per[i], int64(mixRows(n)))
			}
		})
	}
}

// runMixEach reads every batch of a mixture of n sources, calling each
// after every batch.
func runMixEach(t *testing.T, l *Loader, n int, each func()) ([]mixBatch, int) {
	t.Helper()
	var bs []mixBatch
	for {
		b, more := nextMix(t, l, n)
		if !more {
			return bs, len(bs)
		}
		bs = append(bs, b)
		each()
	}
}

// nextMix returns the next batch of a mixture split by source, or false
// at the end.
func nextMix(t *testing.T, l *Loader, n int) (mixBatch, bool) {
	t.Helper()
	bs, _ := runMix(t, l, n, 1)
	if len(bs) == 0 {
		return nil, false
	}
	return bs[0], true
}

// TestIOModeMixtureEpochs: a mixture chooses its read modes at Open and
// again at every mixture epoch's start, once for all sources (memory
// facts read once per epoch, however many epochs of their own the
// sources begin: an upsampled source begins many), so memory that comes
// and goes between epochs turns every source's reads direct and back;
// the rows never change: each source's own epochs give each of its rows
// once, with the slots scribbled on release. Unordered and ordered fetch.
func TestIOModeMixtureEpochs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		names   []string
		weights []float64
		size    int64
		fetch   Fetch
	}{
		{"defaults", []string{"web", "code", "math"}, nil, 0, Unordered},
		{"upsampled", []string{"code", "tiny"}, []float64{1, 1}, 2400, Unordered},
		// The producers' synchronous reads take the modes the mixture
		// stores from the consumer's goroutine.
		{"ordered", []string{"web", "code", "math"}, nil, 0, Ordered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			calls := 0
			setMemory(t, func() ioFacts {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if calls%2 == 0 {
					return none()
				}
				return plenty()
			})
			setResidency(t, func(string) bool { return false })
			cfg := mixConfig(t, tc.names, tc.weights)
			cfg.Epochs, cfg.EpochSize, cfg.BatchRows = 3, tc.size, 128
			cfg.Engine.Scribble, cfg.Fetch = true, tc.fetch
			l := openT(t, cfg)
			n := len(tc.names)
			per := make([][]int64, n)
			modes := map[uint64]string{}
			for {
				bs, err := l.Next(context.Background())
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("Next: %v", err)
				}
				b := splitMix(t, bs, n)
				ep := bs.Epoch
				bs.Release()
				for i := range b {
					per[i] = append(per[i], b[i]...)
				}
				st := l.Stats()
				want := "buffered"
				if ep%2 == 1 {
					want = "direct"
				}
				for _, s := range st.Sources {
					if s.IOMode != want {
						t.Fatalf("epoch %d: source %s reads %s, the mixture %s; want %s", ep, s.Name, s.IOMode, st.IOMode, want)
					}
				}
				modes[ep] = st.IOMode
			}
			if len(modes) != cfg.Epochs || calls != cfg.Epochs {
				t.Fatalf("%d epochs (%v), memory read %d times: want once per epoch, %d", len(modes), modes, calls, cfg.Epochs)
			}
			for i, name := range tc.names {
				checkEpochs(t, name, per[i], mixRows(name))
			}
			if st := l.Stats(); tc.name == "upsampled" && st.Sources[1].Epochs < 10 {
				t.Fatalf("the small source began %d epochs", st.Sources[1].Epochs)
			}
		})
	}
}
