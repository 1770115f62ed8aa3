package rinas

import (
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
	"github.com/pagefeed/pagefeed/internal/childtest"
	"github.com/pagefeed/pagefeed/internal/gen"
)

// rtMaps counts the mappings of the given files in /proc/self/maps (a
// file deleted or renamed over since it was mapped shows as "path
// (deleted)").
func rtMaps(t testing.TB, paths ...string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		for _, p := range paths {
			if strings.HasSuffix(line, " "+p) || strings.HasSuffix(line, " "+p+" (deleted)") {
				n++
			}
		}
	}
	return n
}

// rtCopy copies the files of src into a new directory (written just now:
// in the page cache whole, so auto maps them) and returns their paths.
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

// rtChange is one way to change a file under a loader that has it
// mapped.
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
	{"inplace", func(t *testing.T, _ *rand.Rand, victim string, _, with []byte) { rewriteInPlace(t, victim, with) }},
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

// rtRun reads an epoch of a loader on cfg (whose files must all be
// mapped at Open), changing victim with ch from another goroutine a
// random moment after batch `after`, while the loader's reads are in
// flight. It checks the contract: every row delivered is one of the
// original dataset's (sameLayoutFiles), at most once, with its own d
// value; the epoch ends with every row, or with ErrFileChanged naming the
// victim, or (SkipBadPages) with the victim's rows missing and its pages
// counted skipped; after Close (with batches still held, which stay
// valid) no mapping of the files and no descriptor is left.
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
	if st := l.Stats(); st.MappedFiles != len(cfg.Paths) {
		l.Close()
		t.Fatalf("%d of %d files mapped at Open (%s): the test needs them mapped", st.MappedFiles, len(cfg.Paths), st.IOReason)
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
	all := append([]string{victim + ".tmp"}, cfg.Paths...)
	if n := rtMaps(t, all...); n != 0 {
		t.Fatalf("%s: %d mappings of the dataset's files left after Close", ch.name, n)
	}
	if n := openFDs(t); n != fds {
		t.Fatalf("%s: %d descriptors open after Close, %d before Open", ch.name, n, fds)
	}
	return outcome
}

// TestRedteam3MappedChanges: a file changed under a loader that reads it
// out of a memory map (auto, the files in the page cache whole), at a
// random moment of an epoch while reads are in flight: truncated
// anywhere, extended, rewritten in place with the same layout, replaced
// by rename, deleted, copied over (O_TRUNC), cut and written back. Every
// read path: unordered and ordered fetch, row batches through the shuffle
// buffer, row shuffle, two columns (one dictionary-encoded), the
// defaults, SkipBadPages; uncompressed and zstd pages; io_uring and pread
// engines. See rtRun for what each run checks.
func TestRedteam3MappedChanges(t *testing.T) {
	setMemory(t, plenty)
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
				seed := uint64(100*ci + 10*mi + xi)
				t.Run(fmt.Sprintf("%s/%s/%s/%s", codec, m.name, ch.name, kind), func(t *testing.T) {
					paths := rtCopy(t, src)
					cfg := baseConfig(dataset{paths: paths}, "id")
					cfg.BatchPages, cfg.Prefetch = 4, 1
					cfg.Engine.Kind = kind
					m.edit(&cfg)
					after := rand.New(rand.NewPCG(seed, 2)).IntN(12)
					outcomes[rtRun(t, cfg, ch, paths[1], orig, with, after, seed)]++
				})
			}
		}
	}
	t.Logf("outcomes: %v", outcomes)
}

// TestRedteam3MappedCutInsidePage: a file cut while a page of it is
// being copied out of its mapping, inside the memory page that page ends
// in, reads zeros past the new end instead of faulting (a mapping reads a
// partial last page whole), and the page then fails to decode. The epoch
// must still fail with ErrFileChanged naming the file, as it does when the
// file is read with pread (a short read, then none), not with a corrupt
// page. The cut lands between the two attempts of the first page's read
// (the engine's FaultInjector makes the first attempt short and cuts the
// file), so it is the first batch's, before any identity check.
func TestRedteam3MappedCutInsidePage(t *testing.T) {
	setMemory(t, plenty)
	src := sameLayoutFiles(t, t.TempDir(), compress.Codecs.Zstd)
	for _, mode := range []IOMode{IOBuffered, IOAuto} {
		t.Run(mode.String(), func(t *testing.T) {
			path := rtCopy(t, src[:1])[0]
			ix, err := index.Build(context.Background(), []string{path}, index.Options{Columns: []string{"id"}, NoSidecar: true, Logf: func(string, ...any) {}})
			if err != nil {
				t.Fatal(err)
			}
			loc := ix.Locate(0, 0)
			end := loc.Offset + int64(loc.Size)
			cut := max(loc.Offset+2, (end-1)&^4095+1)
			var once sync.Once
			cfg := baseConfig(dataset{paths: []string{path}}, "id")
			cfg.SharedIndex = ix
			cfg.Shuffle, cfg.BatchPages, cfg.Prefetch, cfg.IOMode = ShuffleNone, 1, 1, mode
			cfg.Engine.Faults = engine.FaultFunc(func(f *engine.File, off int64, n, res int) int {
				cutNow := false
				if f.Path() == path && off <= loc.Offset && loc.Offset < off+int64(n) && res > 1 {
					once.Do(func() { cutNow = true })
				}
				if !cutNow {
					return res
				}
				if err := os.Truncate(path, cut); err != nil {
					t.Error(err)
				}
				return 1 // short: the rest is read again, from the cut file
			})
			l := openT(t, cfg)
			if st := l.Stats(); (st.MappedFiles == 1) != (mode == IOAuto) {
				t.Fatalf("%s: %d files mapped", mode, st.MappedFiles)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			b, err := l.Next(ctx)
			if err == nil {
				b.Release()
			}
			if !errors.Is(err, ErrFileChanged) || !strings.Contains(err.Error(), path) {
				t.Fatalf("cut at %d inside the first page (%d bytes at %d): %v; want ErrFileChanged naming %s", cut, loc.Size, loc.Offset, err, path)
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

// mappedOpen counts the loader's open files that are mapped, and the
// mappings of paths in /proc/self/maps at the same moment (the file cache
// opens and closes files under its lock).
func mappedOpen(t *testing.T, l *Loader, paths []string) (open, maps int) {
	l.fc.mu.Lock()
	defer l.fc.mu.Unlock()
	for _, e := range l.fc.ents {
		if e.f != nil && e.f.Mapped() {
			open++
		}
	}
	return open, rtMaps(t, paths...)
}

// TestRedteam3MappedBudgetModes: many files under an open-file budget of
// one (every unit's file evicted and reopened, mapped again and
// unmapped), while every epoch's choice changes the files' modes: all
// mapped, all direct (no memory), buffered unmapped (not cached), half
// mapped. Every epoch delivers every row once; no more mappings of the
// dataset's files exist than open mapped files; after Close none, and no
// descriptor. io_uring and pread; unordered and ordered fetch, row
// shuffle, row batches through the shuffle buffer; zstd and plain pages.
func TestRedteam3MappedBudgetModes(t *testing.T) {
	var mu sync.Mutex
	phase := 0
	setMemory(t, func() ioFacts {
		mu.Lock()
		defer mu.Unlock()
		phase++
		if phase%4 == 2 {
			return none()
		}
		return plenty()
	})
	// Choice k sees the residency at phase k-1, then sets phase k:
	// k%4 == 1 all mapped, 2 all direct, 3 buffered unmapped, 0 half
	// mapped.
	setResidency(t, func(path string) bool {
		mu.Lock()
		defer mu.Unlock()
		switch phase % 4 {
		case 0:
			return true
		case 3:
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
				if st := l.Stats(); st.MappedFiles != len(ds.paths) {
					t.Fatalf("%d of %d files mapped at Open", st.MappedFiles, len(ds.paths))
				}
				l.fc.mu.Lock()
				l.fc.max = 1
				l.fc.mu.Unlock()
				most, seenMapped := map[string]bool{}, 0
				ids := epochIDs(t, l, func(int) {
					st := l.Stats()
					most[fmt.Sprintf("%s/%d", st.IOMode, st.MappedFiles)] = true
					mo, n := mappedOpen(t, l, ds.paths)
					seenMapped = max(seenMapped, mo)
					if n > mo {
						t.Fatalf("%d mappings of the dataset's files, %d open mapped files", n, mo)
					}
				})
				if len(ids) != cfg.Epochs {
					t.Fatalf("%d epochs, want %d", len(ids), cfg.Epochs)
				}
				for _, e := range ids {
					checkExactlyOnce(t, e, ds.rows)
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				if n := rtMaps(t, ds.paths...); n != 0 {
					t.Fatalf("%d mappings left after Close", n)
				}
				if n := openFDs(t); n != fds {
					t.Fatalf("%d descriptors after Close, %d before Open", n, fds)
				}
				if seenMapped == 0 || len(most) < 3 {
					t.Fatalf("modes seen %v, at most %d files open mapped: the test did not change modes", most, seenMapped)
				}
				t.Logf("modes seen %v; at most %d open mapped", most, seenMapped)
			})
		}
	}
}

// TestRedteam3MappedDeletedEvicted: under an open-file budget of one, a
// file deleted mid-epoch after the loader mapped, read and evicted it
// must be reopened to be read again: the epoch fails with ErrFileChanged
// naming it (its rows already delivered are its own, each once), as a
// file deleted while open fails, not with an open error.
func TestRedteam3MappedDeletedEvicted(t *testing.T) {
	setMemory(t, plenty)
	ds := rtManyFiles(t, 6, 300, "none")
	for _, budget := range []int{1, 100} {
		t.Run(fmt.Sprint("budget", budget), func(t *testing.T) {
			paths := rtCopy(t, ds.paths)
			cfg := baseConfig(dataset{paths: paths}, "id")
			cfg.BatchPages, cfg.Prefetch = 2, 1
			l := openT(t, cfg)
			if st := l.Stats(); st.MappedFiles != len(paths) {
				t.Fatalf("%d of %d files mapped", st.MappedFiles, len(paths))
			}
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
			if n := rtMaps(t, paths...); n != 0 {
				t.Fatalf("%d mappings left after Close", n)
			}
		})
	}
}

// TestRedteam3MappedCloseMidEpoch: a loader reading mapped files closed
// after a random few batches, while its producer has reads in flight and
// the consumer holds the last batch: Close returns, the held batch keeps
// its rows (released after Close), and no mapping of the files nor any
// descriptor is left. io_uring and pread; page and row batches, ordered
// fetch, row shuffle; a mixture of two sources over the same engine.
func TestRedteam3MappedCloseMidEpoch(t *testing.T) {
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
		m(&cfg)
		fds := openFDs(t)
		l, err := Open(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if st := l.Stats(); st.MappedFiles == 0 {
			l.Close()
			t.Fatalf("round %d: no file mapped (%s)", round, st.IOReason)
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
		if n := rtMaps(t, paths...); n != 0 {
			t.Fatalf("round %d: %d mappings left after Close", round, n)
		}
		if n := openFDs(t); n != fds {
			t.Fatalf("round %d: %d descriptors after Close, %d before Open", round, n, fds)
		}
	}
}

// memcgMappedEnv carries the mapped-reads cgroup child's cgroup and
// dataset.
const memcgMappedEnv = "PAGEFEED_RINAS_REDTEAM3_MEMCG"

// TestRedteam3MappedMemcg: files read out of memory maps (auto made to
// see them cached whole and memory to spare) by a loader in a memory
// cgroup (v1) whose limit is a fraction of their size: the cgroup's
// reclaim takes the mapped pages back from under the copies, which fault
// them in again. Two epochs deliver every row once; the child is not
// OOM-killed and its usage stays within the limit (to a few pages).
func TestRedteam3MappedMemcg(t *testing.T) {
	if v := os.Getenv(memcgMappedEnv); v != "" {
		mappedMemcgChild(t, v)
		return
	}
	if testing.Short() || raceEnabled {
		t.Skip("-short or -race: generates 200 MB and runs a child whose memory the detector would swell")
	}
	probe := filepath.Join(memcgRoot, fmt.Sprintf("pagefeed-rt3-%d-probe", os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		t.Skipf("cannot create a memory cgroup under %s (cgroup v1 and root needed): %v", memcgRoot, err)
	}
	os.Remove(probe)
	res, err := gen.Run(context.Background(), gen.Config{Dir: t.TempDir(), Files: 4, RowsPerFile: 6000, PageSize: 64 << 10,
		RowGroupRows: 1000, PageVersion: 2, PageIndex: true, Codec: "none", Seed: 3, MeanTokens: 2048})
	if err != nil {
		t.Fatal(err)
	}
	var size int64
	for _, p := range res.Files {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		size += st.Size()
	}
	cg := filepath.Join(memcgRoot, fmt.Sprintf("pagefeed-rt3-%d", os.Getpid()))
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Skipf("memory cgroup: %v", err)
	}
	defer os.Remove(cg)
	limit := int64(128 << 20)
	for _, f := range []string{"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"} {
		if err := os.WriteFile(filepath.Join(cg, f), []byte(fmt.Sprint(limit)), 0); err != nil && f == "memory.limit_in_bytes" {
			t.Fatalf("%s: %v", f, err)
		}
	}
	childtest.Run(t, "TestRedteam3MappedMemcg", memcgMappedEnv, cg+"|"+filepath.Dir(res.Files[0]))
	peak := readInt(t, filepath.Join(cg, "memory.max_usage_in_bytes"))
	t.Logf("%d MiB of files; cgroup peak %d MiB of %d MiB, %d failed charges", size>>20, peak>>20, limit>>20, readInt(t, filepath.Join(cg, "memory.failcnt")))
	// The kernel's forced charges may pass the limit by a few pages.
	if peak > limit+1<<20 {
		t.Fatalf("peak %d over the limit %d", peak, limit)
	}
}

func mappedMemcgChild(t *testing.T, v string) {
	cg, dir, _ := strings.Cut(v, "|")
	if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(fmt.Sprint(os.Getpid())), 0); err != nil {
		t.Fatalf("joining %s: %v", cg, err)
	}
	setMemory(t, plenty)
	setResidency(t, func(string) bool { return true })
	paths, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	for _, p := range paths {
		dropCache(t, p)
	}
	cfg := baseConfig(dataset{paths: paths}, "id")
	cfg.Columns, cfg.LeadColumn, cfg.Epochs, cfg.MemoryLimit = []string{"id", "input_ids"}, "input_ids", 2, 64<<20
	l := openT(t, cfg)
	if st := l.Stats(); st.MappedFiles != len(paths) {
		t.Fatalf("%d of %d files mapped", st.MappedFiles, len(paths))
	}
	var ids []int64
	ep := uint64(0)
	eachBatch(t, l, func(b *Batch) {
		if b.Epoch != ep {
			checkExactlyOnce(t, ids, int64(len(paths)*6000))
			ids, ep = ids[:0], b.Epoch
		}
		for _, a := range b.Columns[0].Arrays {
			ids = append(ids, a.(*array.Int64).Int64Values()...)
		}
		b.Release()
	})
	checkExactlyOnce(t, ids, int64(len(paths)*6000))
	if ep != 1 {
		t.Fatalf("last epoch %d, want 1", ep)
	}
	t.Logf("2 epochs of %d rows read mapped", len(paths)*6000)
}
