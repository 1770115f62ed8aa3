package rinas

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/gen"
)

// rtCopy copies the files of src into a new directory and returns their
// paths.
func rtCopy(t *testing.T, src []string) []string {
	t.Helper()
	dir := t.TempDir()
	out := make([]string, len(src))
	for i, p := range src {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = filepath.Join(dir, filepath.Base(p))
		if err := os.WriteFile(out[i], b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// rtChange is one way to change a file under a loader reading it.
type rtChange struct {
	name string
	do   func(t *testing.T, rng *rand.Rand, victim string, orig, with []byte)
}

var rtChanges = []rtChange{
	// Cut anywhere: below, inside or past the pages being copied.
	{"truncate", func(t *testing.T, rng *rand.Rand, victim string, orig, _ []byte) {
		if err := os.Truncate(victim, 4+rng.Int64N(int64(len(orig))-4)); err != nil {
			t.Error(err)
		}
	}},
	{"extend", func(t *testing.T, _ *rand.Rand, victim string, _, _ []byte) {
		f, err := os.OpenFile(victim, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Error(err)
			return
		}
		f.Write(make([]byte, 64<<10))
		f.Close()
	}},
	// rsync --inplace: the same size and layout, other values.
	{"inplace", func(t *testing.T, _ *rand.Rand, victim string, _, with []byte) { overwriteInPlace(t, victim, with, 0) }},
	{"rename", func(t *testing.T, _ *rand.Rand, victim string, _, with []byte) {
		tmp := victim + ".tmp"
		if err := os.WriteFile(tmp, with, 0o644); err != nil {
			t.Error(err)
			return
		}
		if err := os.Rename(tmp, victim); err != nil {
			t.Error(err)
		}
	}},
	{"delete", func(t *testing.T, _ *rand.Rand, victim string, _, _ []byte) {
		if err := os.Remove(victim); err != nil {
			t.Error(err)
		}
	}},
	// cp over it: O_TRUNC (the file empty for a moment), then the new
	// bytes.
	{"cp-over", func(t *testing.T, _ *rand.Rand, victim string, _, with []byte) {
		if err := os.WriteFile(victim, with, 0o644); err != nil {
			t.Error(err)
		}
	}},
	// Cut in half and written back whole, with its own bytes: the pages
	// past the cut read zeros (or fault) for a moment.
	{"cut-restore", func(t *testing.T, _ *rand.Rand, victim string, orig, _ []byte) {
		if err := os.Truncate(victim, int64(len(orig)/2)); err != nil {
			t.Error(err)
			return
		}
		f, err := os.OpenFile(victim, os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		f.WriteAt(orig, 0)
		f.Close()
	}},
}

// rtRun reads an epoch of a loader on cfg, changing victim with ch from
// another goroutine a random moment after batch `after`, while the
// loader's reads are in flight. It checks the contract: every row
// delivered is one of the original dataset's (sameLayoutFiles), at most
// once, with its own d value; the epoch ends with every row, or with
// ErrFileChanged naming the victim, or (SkipBadPages) with the victim's
// rows missing and its pages counted skipped; after Close (with the last
// batch still held, which stays valid) no descriptor is left.
func rtRun(t *testing.T, cfg Config, ch rtChange, victim string, orig, with []byte, after int, seed uint64) (outcome string) {
	t.Helper()
	perm := rand.New(rand.NewPCG(3, 4)).Perm(idRows)
	vi := -1
	for i, p := range cfg.Paths {
		if p == victim {
			vi = i
		}
	}
	fds := openFDs(t)
	l, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 9))
	var wg sync.WaitGroup
	defer wg.Wait()
	seen := map[int64]bool{}
	var held []*Batch
	var heldIDs [][]int64
	var runErr error
	for n := 0; ; n++ {
		if n == after {
			wg.Add(1)
			d := time.Duration(rng.IntN(1500)) * time.Microsecond
			go func() {
				defer wg.Done()
				time.Sleep(d)
				ch.do(t, rand.New(rand.NewPCG(seed, 1)), victim, orig, with)
			}()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		// The batch before stays held until here (a page batch holds a
		// fetch batch of the window): the last one is held past Close.
		if len(held) > 0 {
			held[0].Release()
			held, heldIDs = held[:0], heldIDs[:0]
		}
		b, err := l.Next(ctx)
		cancel()
		if err != nil {
			if err != io.EOF {
				runErr = err
			}
			break
		}
		var ids []int64
		for c, col := range b.Columns {
			for k, a := range col.Arrays {
				v := a.(*array.Int64).Int64Values()
				if c == 0 {
					ids = append(ids, v...)
					continue
				}
				iv := b.Columns[0].Arrays[k].(*array.Int64).Int64Values()
				for r, d := range v {
					if d != dOf(iv[r]) {
						t.Fatalf("%s: id %d with d %d, want %d", ch.name, iv[r], d, dOf(iv[r]))
					}
				}
			}
		}
		for _, id := range ids {
			f, j := (id-idBase)/idRows, (id-idBase)%idRows
			if id < idBase || f >= idFiles || seen[id] {
				t.Fatalf("%s: id %d: no row of the dataset, or delivered twice (error %v)", ch.name, id, runErr)
			}
			_ = j
			seen[id] = true
		}
		held, heldIDs = append(held, b), append(heldIDs, ids)
	}
	wg.Wait()
	st := l.Stats()
	skipped := l.Skipped()
	if err := l.Close(); err != nil && runErr == nil {
		t.Errorf("Close: %v", err)
	}
	// Held batches stay valid after Close.
	for k, b := range held {
		var ids []int64
		for _, a := range b.Columns[0].Arrays {
			ids = append(ids, a.(*array.Int64).Int64Values()...)
		}
		if fmt.Sprint(ids) != fmt.Sprint(heldIDs[k]) {
			t.Fatalf("%s: a batch held past Close changed", ch.name)
		}
		b.Release()
	}
	want := int64(idFiles * idRows)
	missing := want - int64(len(seen))
	switch {
	case runErr != nil:
		outcome = "ErrFileChanged"
		if !errors.Is(runErr, ErrFileChanged) || !strings.Contains(runErr.Error(), victim) {
			t.Fatalf("%s after batch %d: %d rows, then error %v: want ErrFileChanged naming %s", ch.name, after, len(seen), runErr, victim)
		}
	case missing == 0:
		outcome = "every row"
	case !cfg.SkipBadPages:
		t.Fatalf("%s: %d of %d rows and no error", ch.name, len(seen), want)
	default:
		outcome = "skipped"
		if st.SkippedPages == 0 {
			t.Fatalf("%s: %d rows missing, nothing skipped", ch.name, missing)
		}
		for _, sp := range skipped {
			if sp.Path != victim {
				t.Fatalf("%s: skipped a page of %s, changed was %s", ch.name, sp.Path, victim)
			}
		}
		// Every missing row is the victim's.
		for f := 0; f < idFiles; f++ {
			for j := 0; j < idRows; j++ {
				if id := idOf(perm, f, j); !seen[id] && f != vi {
					t.Fatalf("%s: row %d of file %d (not the victim) missing", ch.name, id, f)
				}
			}
		}
	}
	if n := openFDs(t); n != fds {
		t.Fatalf("%s: %d descriptors open after Close, %d before Open", ch.name, n, fds)
	}
	return outcome
}

// TestRedteam3FileChanges: a file changed under a loader reading it, at
// a random moment of an epoch while reads are in flight: truncated
// anywhere, extended, rewritten in place with the same layout, replaced
// by rename, deleted, copied over (O_TRUNC), cut and written back. Every
// read path: unordered and ordered fetch, row batches through the shuffle
// buffer, row shuffle, two columns (one dictionary-encoded), the
// defaults, SkipBadPages; uncompressed and zstd pages; io_uring and pread
// engines; reads through the page cache and O_DIRECT. See rtRun for what
// each run checks.
func TestRedteam3FileChanges(t *testing.T) {
	modes := []struct {
		name string
		edit func(*Config)
	}{
		{"page", func(c *Config) {}},
		{"defaults", func(c *Config) { c.BatchPages, c.Prefetch = 0, 0 }},
		{"ordered", func(c *Config) { c.Fetch = Ordered }},
		{"rowbatches-buffer", func(c *Config) { c.BatchRows, c.BufferRows = 50, 500 }},
		{"row", func(c *Config) { c.Shuffle, c.BatchRows = ShuffleRow, 64 }},
		{"columns-dict", func(c *Config) { c.Columns = []string{"id", "d"}; c.LeadColumn = "id" }},
		{"skip", func(c *Config) { c.SkipBadPages = true; c.Columns = []string{"id", "d"}; c.LeadColumn = "id" }},
	}
	outcomes := map[string]int{}
	for ci, codec := range []compress.Compression{compress.Codecs.Uncompressed, compress.Codecs.Zstd} {
		src := sameLayoutFiles(t, t.TempDir(), codec)
		with, err := os.ReadFile(src[0])
		if err != nil {
			t.Fatal(err)
		}
		orig, err := os.ReadFile(src[1])
		if err != nil {
			t.Fatal(err)
		}
		for mi, m := range modes {
			for xi, ch := range rtChanges {
				kind := []engine.Kind{engine.IOUring, engine.Pread}[(ci+mi+xi)%2]
				mode := []IOMode{IOBuffered, IODirect}[(ci+mi+xi/2)%2]
				seed := uint64(100*ci + 10*mi + xi)
				t.Run(fmt.Sprintf("%s/%s/%s/%s/%s", codec, m.name, ch.name, kind, mode), func(t *testing.T) {
					paths := rtCopy(t, src)
					cfg := baseConfig(dataset{paths: paths}, "id")
					cfg.BatchPages, cfg.Prefetch = 4, 1
					cfg.Engine.Kind, cfg.IOMode = kind, mode
					m.edit(&cfg)
					after := rand.New(rand.NewPCG(seed, 2)).IntN(12)
					outcomes[rtRun(t, cfg, ch, paths[1], orig, with, after, seed)]++
				})
			}
		}
	}
	t.Logf("outcomes: %v", outcomes)
}

// TestRedteam3ScribbledUnderARead: a file written over in place while a
// page of it is being read (the first attempt of the page's read lands,
// the file's bytes there are overwritten with garbage, and the rest of the
// read lands the garbage) fails the epoch with ErrFileChanged naming the
// file, the cause, not with the corrupt page the torn bytes decode to.
// Reads through the page cache and O_DIRECT, zstd pages.
func TestRedteam3ScribbledUnderARead(t *testing.T) {
	src := sameLayoutFiles(t, t.TempDir(), compress.Codecs.Zstd)
	for _, mode := range []IOMode{IOBuffered, IODirect} {
		t.Run(mode.String(), func(t *testing.T) {
			path := rtCopy(t, src[:1])[0]
			ix, err := index.Build(context.Background(), []string{path}, index.Options{Columns: []string{"id"}, NoSidecar: true, Logf: func(string, ...any) {}})
			if err != nil {
				t.Fatal(err)
			}
			loc := ix.Locate(0, 0)
			garbage := bytes.Repeat([]byte{0xa5}, int(loc.Size))
			var once sync.Once
			cfg := baseConfig(dataset{paths: []string{path}}, "id")
			cfg.SharedIndex = ix
			cfg.Shuffle, cfg.BatchPages, cfg.Prefetch, cfg.IOMode = ShuffleNone, 1, 1, mode
			cfg.Engine.Faults = engine.FaultFunc(func(f *engine.File, off int64, n, res int) int {
				hit := false
				if f.Path() == path && off <= loc.Offset && loc.Offset < off+int64(n) && res > 1 {
					once.Do(func() { hit = true })
				}
				if !hit {
					return res
				}
				overwriteInPlace(t, path, garbage, loc.Offset)
				return 1 // short: the rest is read again, from the scribbled file
			})
			l := openT(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			b, err := l.Next(ctx)
			if err == nil {
				b.Release()
			}
			if !errors.Is(err, ErrFileChanged) || !strings.Contains(err.Error(), path) {
				t.Fatalf("the first page (%d bytes at %d) overwritten under its read: %v; want ErrFileChanged naming %s", loc.Size, loc.Offset, err, path)
			}
		})
	}
}

// rtManyFiles generates a dataset of n small files (ids 0..n×rows) under
// a temporary directory, with codec.
func rtManyFiles(t *testing.T, n, rows int, codec string) dataset {
	t.Helper()
	res, err := gen.Run(context.Background(), gen.Config{Dir: t.TempDir(), Files: n, RowsPerFile: rows, PageSize: 2048, RowGroupRows: int64(rows / 2),
		PageVersion: 2, PageIndex: true, Codec: codec, Seed: 21, MeanTokens: 16})
	if err != nil {
		t.Fatal(err)
	}
	return dataset{paths: res.Files, rows: int64(n * rows)}
}

// TestRedteam3BudgetModes: many files under an open-file budget of one
// (every unit's file evicted and reopened), while every epoch's choice
// changes the files' modes: buffered (cached, memory to spare), direct
// (no memory), mixed (no memory, half the files cached: those buffered),
// buffered again (not cached, memory to spare). Every epoch delivers
// every row once; after Close no descriptor is left. io_uring and pread;
// unordered and ordered fetch, row shuffle, row batches through the
// shuffle buffer; zstd and plain pages.
func TestRedteam3BudgetModes(t *testing.T) {
	var mu sync.Mutex
	phase := 0
	setMemory(t, func() ioFacts {
		mu.Lock()
		defer mu.Unlock()
		phase++
		if phase%4 == 2 || phase%4 == 3 {
			return none()
		}
		return plenty()
	})
	// Choice k sees the residency at phase k-1, then sets phase k:
	// k%4 == 1 all cached (buffered), 2 none cached, no memory (direct),
	// 3 half cached, no memory (mixed), 0 none cached, memory to spare
	// (buffered).
	setResidency(t, func(path string) bool {
		mu.Lock()
		defer mu.Unlock()
		switch phase % 4 {
		case 0:
			return true
		case 2:
			return strings.HasSuffix(path, "0.parquet") || strings.HasSuffix(path, "2.parquet") || strings.HasSuffix(path, "4.parquet")
		}
		return false
	})
	modes := []struct {
		name string
		edit func(*Config)
	}{
		{"page", func(c *Config) {}},
		{"ordered", func(c *Config) { c.Fetch = Ordered }},
		{"row", func(c *Config) { c.Shuffle, c.BatchRows = ShuffleRow, 64 }},
		{"rowbatches-buffer", func(c *Config) { c.BatchRows, c.BufferRows = 50, 300 }},
	}
	for _, codec := range []string{"zstd", "none"} {
		ds := rtManyFiles(t, 12, 200, codec)
		for mi, m := range modes {
			kind := []engine.Kind{engine.IOUring, engine.Pread}[mi%2]
			t.Run(fmt.Sprintf("%s/%s/%s", codec, m.name, kind), func(t *testing.T) {
				mu.Lock()
				phase = 0
				mu.Unlock()
				cfg := baseConfig(ds, "id")
				cfg.Epochs, cfg.BatchPages, cfg.Prefetch = 8, 2, 1
				cfg.Engine.Kind = kind
				m.edit(&cfg)
				fds := openFDs(t)
				l := openT(t, cfg)
				l.fc.mu.Lock()
				l.fc.max = 1
				l.fc.mu.Unlock()
				seen := map[string]bool{}
				ids := epochIDs(t, l, func(int) { seen[l.Stats().IOMode] = true })
				if len(ids) != cfg.Epochs {
					t.Fatalf("%d epochs, want %d", len(ids), cfg.Epochs)
				}
				for _, e := range ids {
					checkExactlyOnce(t, e, ds.rows)
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				if n := openFDs(t); n != fds {
					t.Fatalf("%d descriptors after Close, %d before Open", n, fds)
				}
				if !seen["buffered"] || !seen["direct"] || !seen["mixed"] {
					t.Fatalf("modes seen %v: the test did not change modes", seen)
				}
			})
		}
	}
}

// TestRedteam3DeletedEvicted: under an open-file budget of one, a file
// deleted mid-epoch after the loader read and evicted it must be
// reopened to be read again: the epoch fails with ErrFileChanged
// naming it (its rows already delivered are its own, each once), as a
// file deleted while open fails, not with an open error.
func TestRedteam3DeletedEvicted(t *testing.T) {
	setMemory(t, plenty)
	ds := rtManyFiles(t, 6, 300, "none")
	for _, budget := range []int{1, 100} {
		t.Run(fmt.Sprint("budget", budget), func(t *testing.T) {
			paths := rtCopy(t, ds.paths)
			cfg := baseConfig(dataset{paths: paths}, "id")
			cfg.BatchPages, cfg.Prefetch = 2, 1
			l := openT(t, cfg)
			l.fc.mu.Lock()
			l.fc.max = budget
			l.fc.mu.Unlock()
			victim := paths[2]
			seen := map[int64]bool{}
			for n := 0; ; n++ {
				if n == 3 {
					if err := os.Remove(victim); err != nil {
						t.Fatal(err)
					}
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				b, err := l.Next(ctx)
				cancel()
				if err == io.EOF {
					t.Fatalf("the epoch ended: %d rows, the deleted file unnoticed", len(seen))
				}
				if err != nil {
					if !errors.Is(err, ErrFileChanged) || !strings.Contains(err.Error(), victim) {
						t.Fatalf("after batch %d: %v; want ErrFileChanged naming %s", n, err, victim)
					}
					break
				}
				for _, a := range b.Arrays {
					for _, id := range a.(*array.Int64).Int64Values() {
						if seen[id] || id < 0 || id >= ds.rows {
							t.Fatalf("id %d twice or out of range", id)
						}
						seen[id] = true
					}
				}
				b.Release()
			}
			l.Close()
		})
	}
}

// TestRedteam3CloseMidEpoch: a loader closed after a random few batches,
// while its producer has reads in flight and the consumer holds the last
// batch: Close returns, the held batch keeps its rows (released after
// Close), and no descriptor is left. io_uring and pread; page and row batches, ordered
// fetch, row shuffle; a mixture of two sources over the same engine.
func TestRedteam3CloseMidEpoch(t *testing.T) {
	setMemory(t, plenty)
	ds := rtManyFiles(t, 6, 600, "zstd")
	paths := rtCopy(t, ds.paths)
	modes := []func(*Config){
		func(c *Config) {},
		func(c *Config) { c.BatchRows = 100 },
		func(c *Config) { c.Fetch = Ordered },
		func(c *Config) { c.Shuffle, c.BatchRows = ShuffleRow, 64 },
		func(c *Config) {
			c.Paths, c.Columns, c.BatchRows = nil, []string{"id"}, 100
			c.Sources = []Source{{Name: "a", Paths: paths[:3], Weight: 2}, {Name: "b", Paths: paths[3:], Weight: 1}}
		},
	}
	rng := rand.New(rand.NewPCG(4, 4))
	for round := 0; round < 30; round++ {
		m := modes[round%len(modes)]
		cfg := baseConfig(dataset{paths: paths}, "id")
		cfg.Epochs, cfg.BatchPages, cfg.Prefetch = 3, 2, 2
		cfg.Engine.Kind = []engine.Kind{engine.IOUring, engine.Pread}[round%2]
		cfg.IOMode = []IOMode{IOAuto, IODirect}[round/2%2]
		m(&cfg)
		fds := openFDs(t)
		l, err := Open(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		var held *Batch
		var ids []int64
		for n := rng.IntN(6); n >= 0; n-- {
			if held != nil {
				held.Release()
			}
			b, err := l.Next(context.Background())
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			held, ids = b, nil
			for _, a := range b.Columns[0].Arrays {
				ids = append(ids, a.(*array.Int64).Int64Values()...)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", round, err)
		}
		var again []int64
		for _, a := range held.Columns[0].Arrays {
			again = append(again, a.(*array.Int64).Int64Values()...)
		}
		if fmt.Sprint(again) != fmt.Sprint(ids) {
			t.Fatalf("round %d: a batch held past Close changed", round)
		}
		held.Release()
		if n := openFDs(t); n != fds {
			t.Fatalf("round %d: %d descriptors after Close, %d before Open", round, n, fds)
		}
	}
}
