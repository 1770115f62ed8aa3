package rinas

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/pagefeed/pagefeed/codec"
	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/engine/enginetest"
	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/gen"
	"golang.org/x/sys/unix"
)

// The reliability tests generate their own datasets, once per test binary,
// under relDir; TestMain removes it after the last test.
var (
	relMu   sync.Mutex
	relDir  string
	relSets = map[string]dataset{}
)

// manyPages returns a dataset of a few hundred small V2 pages with an
// offset index (the shared datasets have a handful of pages).
func manyPages(t *testing.T) dataset {
	t.Helper()
	return relDataset(t, "manypages", gen.Config{Files: 3, RowsPerFile: 4000, PageSize: 512, RowGroupRows: 1000,
		PageVersion: 2, PageIndex: true, Codec: "snappy", Dictionary: true, Seed: 3, MeanTokens: 4})
}

// v1Walk returns a dataset of V1 pages without a page index: the index
// walks page headers.
func v1Walk(t *testing.T) dataset {
	t.Helper()
	return relDataset(t, "v1walk", gen.Config{Files: 2, RowsPerFile: 1500, PageSize: 2048, RowGroupRows: 500,
		PageVersion: 1, Codec: "zstd", Seed: 7, MeanTokens: 8})
}

func relDataset(t *testing.T, name string, c gen.Config) dataset {
	t.Helper()
	relMu.Lock()
	defer relMu.Unlock()
	if ds, ok := relSets[name]; ok {
		return ds
	}
	if relDir == "" {
		d, err := os.MkdirTemp("", "rinas-reliability-")
		if err != nil {
			t.Fatal(err)
		}
		relDir = d
	}
	c.Dir = filepath.Join(relDir, name)
	res, err := gen.Run(context.Background(), c)
	if err != nil {
		t.Fatalf("generate %s: %v", name, err)
	}
	ds := dataset{paths: res.Files, rows: res.Rows}
	relSets[name] = ds
	return ds
}

// buildIndex indexes ds's "id" column so a test can aim faults at a page
// before the loader starts reading.
func buildIndex(t *testing.T, ds dataset) *index.Index {
	t.Helper()
	ix, err := index.Build(context.Background(), ds.paths, index.Options{Columns: []string{"id"}, NoSidecar: true, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatalf("index.Build: %v", err)
	}
	return ix
}

// failPage returns an injector under which every read of page g of ix
// fails with EIO, as a bad sector would: permanently. The loader must use
// buffered reads (Direct: Off) so attempts start exactly at the page.
func failPage(ix *index.Index, g int) *enginetest.RateFaults {
	loc := ix.Locate(0, g)
	path := ix.File(loc.File).Path
	lo, hi := loc.Offset, loc.Offset+int64(loc.Size)
	return &enginetest.RateFaults{EIO: 1, Only: func(f *engine.File, off int64) bool {
		return f.Path() == path && off >= lo && off < hi
	}}
}

// TestFaultsTransientLoaderDeliversEverything: with short reads, EAGAIN,
// EINTR and ECANCELED injected under every read, each row still arrives
// exactly once, in both page layouts.
func TestFaultsTransientLoaderDeliversEverything(t *testing.T) {
	for _, kind := range []string{"manypages", "v1walk"} {
		t.Run(kind, func(t *testing.T) {
			ds := manyPages(t)
			if kind != "manypages" {
				ds = v1Walk(t)
			}
			inj := &enginetest.RateFaults{Short: 0.05, EAGAIN: 0.03, EINTR: 0.03, ECANCELED: 0.03, Seed: 9}
			cfg := baseConfig(ds, "id")
			cfg.BatchPages = 16
			cfg.Engine.Faults = inj
			l := openT(t, cfg)
			ids, _, _ := drain(t, l, -1)
			checkExactlyOnce(t, ids, ds.rows)
			c := inj.Counts()
			if c.Transient() == 0 {
				t.Fatalf("no faults injected over %d attempts", c.Attempts)
			}
			if s := l.Stats(); s.SkippedPages != 0 {
				t.Fatalf("%d pages skipped with transient faults only", s.SkippedPages)
			}
			t.Logf("%d read attempts, %d transient faults survived (%+v)", c.Attempts, c.Transient(), c)
		})
	}
}

// TestFaultsBadPageFailsEpoch: by default a page whose read fails for
// good fails the epoch with an error naming its file and offset, and says
// so again on the next call.
func TestFaultsBadPageFailsEpoch(t *testing.T) {
	ds := manyPages(t)
	ix := buildIndex(t, ds)
	g := ix.NumPages(0) / 2
	loc := ix.Locate(0, g)
	cfg := baseConfig(ds, "id")
	cfg.SharedIndex = ix
	cfg.Engine.Faults = failPage(ix, g)
	cfg.Engine.Direct = engine.Off
	l := openT(t, cfg)
	var err error
	for err == nil {
		var b *Batch
		if b, err = l.Next(context.Background()); err == nil {
			b.Release()
		}
	}
	var ee *engine.Error
	if !errors.As(err, &ee) || !errors.Is(err, unix.EIO) || ee.Path != ix.File(loc.File).Path || ee.Off != loc.Offset {
		t.Fatalf("Next: %v, want a read EIO of %s at offset %d", err, ix.File(loc.File).Path, loc.Offset)
	}
	if _, err2 := l.Next(context.Background()); !errors.Is(err2, unix.EIO) {
		t.Fatalf("Next after the failure: %v, want the same error", err2)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// corruptPages overwrites the head of each page g of pages (of ix, built
// before) with 0xff bytes, which no page header parses as: a bad page the
// loader can only meet as corruption. The files must be the test's own.
// It returns the files' index built again: the writes changed the files'
// mtime and ctime, so ix no longer describes them (the loader would refuse
// every page of theirs as a file changed since it was indexed), while a
// disk that rots keeps them; the new index has the same pages.
func corruptPages(t *testing.T, ix *index.Index, pages ...int) *index.Index {
	t.Helper()
	for _, g := range pages {
		loc := ix.Locate(0, g)
		f, err := os.OpenFile(ix.File(loc.File).Path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("\xff\xff\xff\xff\xff\xff\xff\xff"), loc.Offset); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	var cols []string
	for k := 0; k < ix.NumColumns(); k++ {
		cols = append(cols, ix.Column(k).Path)
	}
	paths := make([]string, ix.NumFiles())
	for i := range paths {
		paths[i] = ix.File(i).Path
	}
	nix, err := index.Build(context.Background(), paths, index.Options{Columns: cols, NoSidecar: true, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatalf("index.Build: %v", err)
	}
	return nix
}

// TestFaultsBadPageSkipped: with SkipBadPages a corrupt page is dropped,
// counted and reported with its file and offset; every other row arrives
// exactly once; the epoch ends normally.
func TestFaultsBadPageSkipped(t *testing.T) {
	ds := copyDataset(t, manyPages(t))
	ix := buildIndex(t, ds)
	g := ix.NumPages(0) / 3
	loc := ix.Locate(0, g)
	ix = corruptPages(t, ix, g)
	cfg := baseConfig(ds, "id")
	cfg.SharedIndex = ix
	cfg.SkipBadPages = true
	var notices []string
	cfg.Logf = func(format string, args ...any) { notices = append(notices, format) }
	l := openT(t, cfg)
	ids, pages, _ := drain(t, l, -1)
	if slices.Contains(pages, uint64(g)) {
		t.Fatalf("bad page %d delivered", g)
	}
	if got, want := len(pages), ix.NumPages(0)-1; got != want {
		t.Fatalf("%d pages delivered, want %d", got, want)
	}
	// The missing rows are exactly the bad page's.
	seen := make(map[int64]int, len(ids))
	for _, id := range ids {
		seen[id]++
		if seen[id] > 1 {
			t.Fatalf("id %d delivered twice", id)
		}
	}
	if int64(len(ids)) != ds.rows-int64(loc.NumRows) {
		t.Fatalf("%d rows delivered, want %d - %d", len(ids), ds.rows, loc.NumRows)
	}
	s := l.Stats()
	sk := l.Skipped()
	if s.SkippedPages != 1 || len(sk) != 1 {
		t.Fatalf("SkippedPages %d, Skipped %v; want one", s.SkippedPages, sk)
	}
	if sk[0].Page != uint64(g) || sk[0].Path != ix.File(loc.File).Path || sk[0].Off != loc.Offset || !IsCorruption(sk[0].Err) {
		t.Fatalf("Skipped[0] = %+v, want page %d of %s at %d with a corruption error", sk[0], g, ix.File(loc.File).Path, loc.Offset)
	}
	if len(notices) != 1 {
		t.Fatalf("%d notices, want one: %q", len(notices), notices)
	}
}

// TestFaultsEIONotSkipped: SkipBadPages drops corrupt pages only. A read
// that fails for good with EIO (a dying disk), whether on one page or at
// random among transient faults, fails the epoch with that error in every
// mode, instead of ending an empty or short epoch as if all went well.
func TestFaultsEIONotSkipped(t *testing.T) {
	ds := manyPages(t)
	ix := buildIndex(t, ds)
	g := ix.NumPages(0) / 2
	for _, tc := range []struct {
		sh        Shuffle
		batchRows int
		fetch     Fetch
		random    bool
	}{{ShufflePage, 0, Unordered, false}, {ShufflePage, 0, Unordered, true}, {ShuffleRowGroup, 0, Unordered, true},
		{ShufflePage, 100, Unordered, true}, {ShuffleRow, 64, Unordered, true}, {ShuffleRow, 64, Unordered, false}} {
		t.Run(fmt.Sprintf("%v/rows%d/random=%v", tc.sh, tc.batchRows, tc.random), func(t *testing.T) {
			cfg := baseConfig(ds, "id")
			cfg.SharedIndex = ix
			cfg.Shuffle, cfg.BatchRows = tc.sh, tc.batchRows
			cfg.SkipBadPages = true
			inj := failPage(ix, g)
			if tc.random {
				inj = &enginetest.RateFaults{EIO: 0.03, Short: 0.02, EAGAIN: 0.02, EINTR: 0.02, ECANCELED: 0.02, Seed: 5}
			}
			cfg.Engine.Faults = inj
			cfg.Engine.Direct = engine.Off
			cfg.CoalesceBytes = -1 // one read per page, as many chances to fail
			l := openT(t, cfg)
			var err error
			rows := 0
			for err == nil {
				var b *Batch
				if b, err = l.Next(context.Background()); err == nil {
					rows += b.Rows
					b.Release()
				}
			}
			if err == io.EOF || !errors.Is(err, unix.EIO) {
				t.Fatalf("Next after %d of %d rows: %v, want the EIO (%d injected)", rows, ds.rows, err, inj.Counts().EIO)
			}
			if IsCorruption(err) {
				t.Fatalf("%v counts as corruption", err)
			}
			if n := l.Stats().SkippedPages; n != 0 {
				t.Fatalf("%d pages skipped for EIO", n)
			}
		})
	}
}

// TestFaultsRandomCorruptionSkipped: corrupt pages among transient faults,
// with SkipBadPages, in every shuffle: every unit is either delivered once
// or skipped once, never both, never twice.
func TestFaultsRandomCorruptionSkipped(t *testing.T) {
	ds := copyDataset(t, manyPages(t))
	ix := buildIndex(t, ds)
	var bad []int
	for g := 5; g < ix.NumPages(0); g += 37 {
		bad = append(bad, g)
	}
	ix = corruptPages(t, ix, bad...)
	for _, tc := range []struct {
		sh        Shuffle
		batchRows int
	}{{ShufflePage, 0}, {ShuffleRowGroup, 0}, {ShufflePage, 100}, {ShuffleRow, 64}} {
		sh := tc.sh
		t.Run(fmt.Sprintf("%v/rows%d", sh, tc.batchRows), func(t *testing.T) {
			inj := &enginetest.RateFaults{Short: 0.02, EAGAIN: 0.02, EINTR: 0.02, ECANCELED: 0.02, Seed: 5}
			cfg := baseConfig(ds, "id")
			cfg.SharedIndex = ix
			cfg.Shuffle = sh
			cfg.BatchRows = tc.batchRows
			cfg.SkipBadPages = true
			cfg.Engine.Faults = inj
			// One read per page, so that faults hit several row groups.
			cfg.CoalesceBytes = -1
			l := openT(t, cfg)
			seen := make(map[int64]bool)
			pages := map[uint64]bool{}
			eachBatch(t, l, func(b *Batch) {
				for _, a := range b.Arrays {
					for _, id := range a.(*array.Int64).Int64Values() {
						if seen[id] {
							t.Fatalf("id %d delivered twice", id)
						}
						seen[id] = true
					}
				}
				for _, p := range b.Pages {
					pages[p] = true
				}
				b.Release()
			})
			st := l.Stats()
			c := inj.Counts()
			if c.Transient() == 0 || st.SkippedPages == 0 {
				t.Fatalf("%d transient faults, skipped %d: the test did not exercise skipping", c.Transient(), st.SkippedPages)
			}
			lost := int64(0)
			for _, sp := range l.Skipped() {
				if sp.Path == "" || !IsCorruption(sp.Err) {
					t.Fatalf("skipped %+v: want a file and a corruption error", sp)
				}
				switch sh {
				case ShuffleRow:
					lost++ // a unit is one row
				case ShufflePage:
					if pages[sp.Page] {
						t.Fatalf("page %d skipped and delivered", sp.Page)
					}
					lost += int64(ix.Locate(0, int(sp.Page)).NumRows)
				default:
					ci := ix.Chunk(0, ix.Locate(0, int(sp.Page)).Chunk)
					for k := 0; k < ci.NumPages; k++ {
						lost += int64(ix.Locate(0, ci.FirstPage+k).NumRows)
					}
				}
			}
			if int64(len(seen))+lost != ds.rows {
				t.Fatalf("%d rows delivered + %d in skipped units != %d", len(seen), lost, ds.rows)
			}
			t.Logf("%d attempts, %d transient; %d units skipped, %d rows delivered", c.Attempts, c.Transient(), st.SkippedPages, len(seen))
		})
	}
}

// TestFaultsProducerFailureEndsWait: when the producer fails after handing
// a batch over (here the shared engine is closed under the loader, so its
// Submit is refused), Next returns the error instead of waiting forever
// for reads that were never issued.
func TestFaultsProducerFailureEndsWait(t *testing.T) {
	ds := manyPages(t)
	ds.paths = ds.paths[:1] // one file: open before the engine closes, so Submit is what fails
	workers := 2
	e, err := engine.New(engine.Options{Workers: workers, SlotSize: 64 << 10, QueueDepth: 64, SlotsPerWorker: 128, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cfg := baseConfig(ds, "id")
	cfg.SharedEngine = e
	cfg.Engine.Workers = workers
	cfg.BatchPages, cfg.Prefetch = 4, 2 // a window far short of the epoch
	var got error
	done := make(chan struct{})
	go func() {
		defer close(done)
		l, err := Open(context.Background(), cfg)
		if err != nil {
			got = err
			return
		}
		defer l.Close()
		for n := 0; ; n++ {
			if n == 1 {
				e.Close()
			}
			b, err := l.Next(context.Background())
			if err != nil {
				got = err
				return
			}
			b.Release()
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Next still waiting 10 s after the engine closed")
	}
	if got == nil || got == io.EOF {
		t.Fatalf("Next: %v, want the producer's error", got)
	}
	t.Logf("Next: %v", got)
}

// TestIsCorruptionClassifies: SkipBadPages skips what IsCorruption
// accepts: corruption from codec, index and the loader itself, wrapped as
// they arrive; never I/O errors, unsupported pages, limits or
// cancellation.
func TestIsCorruptionClassifies(t *testing.T) {
	codecErr := func(kind error) error {
		return &codec.Error{Op: "decode", Path: "/d/f.parquet", Column: "id", Off: 4, Err: fmt.Errorf("%w: detail", kind)}
	}
	for _, tc := range []struct {
		name    string
		err     error
		corrupt bool
	}{
		{"codec corrupt", codecErr(codec.ErrCorrupt), true},
		{"codec crc", codecErr(codec.ErrCRC), true},
		{"index corrupt", &index.Error{Op: "offset_index", Path: "/d/f.parquet", Off: 9, Err: fmt.Errorf("%w: x", index.ErrCorrupt)}, true},
		{"page rows", pageErrorf("check rows", "/d/f.parquet", 4, ErrPageRows, "3 rows"), true},
		{"file changed", pageErrorf("read", "/d/f.parquet", 4, ErrFileChanged, "short"), true},
		{"wrapped twice", fmt.Errorf("batch: %w", codecErr(codec.ErrCorrupt)), true},
		{"EIO", &engine.Error{Op: "read", Path: "/d/f.parquet", Off: 4, Err: unix.EIO}, false},
		{"ENOMEM", &engine.Error{Op: "read", Path: "/d/f.parquet", Off: 4, Err: unix.ENOMEM}, false},
		{"unsupported", codecErr(codec.ErrUnsupported), false},
		{"page too large", codecErr(codec.ErrPageTooLarge), false},
		{"not parquet", &index.Error{Op: "footer", Path: "/d/f.parquet", Err: index.ErrNotParquet}, false},
		{"cancelled", context.Canceled, false},
	} {
		if got := IsCorruption(tc.err); got != tc.corrupt {
			t.Errorf("%s: IsCorruption(%v) = %v, want %v", tc.name, tc.err, got, tc.corrupt)
		}
	}
}
