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
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/pqtest"
	"golang.org/x/sys/unix"
)

// Files of the in-place rewrite tests: idFiles files of idRows rows each.
// Every file has the same layout byte for byte (the same page offsets and
// sizes, compressed too): its id column is delta-encoded from a shared
// permutation, so files differ only in each page's first value, and its
// d column is dictionary-encoded from the same permutation. Writing one
// file's bytes over another's (rsync --inplace, a job rewriting a shard)
// then leaves a valid file whose page map is the old one's.
const (
	idFiles = 4
	idRows  = 3000
	idBase  = 1 << 24 // keeps every first value's varint the same length
)

// idOf is row j's id in file i; dOf its d value.
func idOf(perm []int, i, j int) int64 { return idBase + int64(i*idRows+perm[j]) }
func dOf(id int64) int64 {
	i, p := (id-idBase)/idRows, (id-idBase)%idRows
	return 5000 + i*1000 + p%64
}

// sameLayoutFiles writes the dataset under dir with codec and returns its
// paths.
func sameLayoutFiles(t *testing.T, dir string, codec compress.Compression) []string {
	t.Helper()
	perm := rand.New(rand.NewPCG(3, 4)).Perm(idRows)
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "d", Type: arrow.PrimitiveTypes.Int64}}, nil)
	props := parquet.NewWriterProperties(parquet.WithCompression(codec), parquet.WithDataPageSize(1024), parquet.WithBatchSize(64),
		parquet.WithDictionaryDefault(false), parquet.WithDictionaryFor("d", true), parquet.WithEncodingFor("id", parquet.Encodings.DeltaBinaryPacked),
		parquet.WithStats(false), parquet.WithMaxRowGroupLength(idRows/2), parquet.WithDataPageVersion(parquet.DataPageV2))
	var paths []string
	for i := 0; i < idFiles; i++ {
		ib, db := array.NewInt64Builder(memory.DefaultAllocator), array.NewInt64Builder(memory.DefaultAllocator)
		for j := 0; j < idRows; j++ {
			id := idOf(perm, i, j)
			ib.Append(id)
			db.Append(dOf(id))
		}
		ia, da := ib.NewArray(), db.NewArray()
		rec := array.NewRecordBatch(sc, []arrow.Array{ia, da}, idRows)
		p := filepath.Join(dir, fmt.Sprintf("part-%d.parquet", i))
		pqtest.WriteRecords(t, p, props, rec)
		rec.Release()
		ia.Release()
		da.Release()
		ib.Release()
		db.Release()
		paths = append(paths, p)
	}
	// The premise: file 0's bytes fit file 1's page map exactly.
	ix, err := index.Build(context.Background(), paths[:2], index.Options{Columns: []string{"id", "d"}, NoSidecar: true, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	if ix.File(0).Size != ix.File(1).Size {
		t.Fatalf("%s: files of %d and %d bytes: not the same layout", codec, ix.File(0).Size, ix.File(1).Size)
	}
	for k := 0; k < ix.NumColumns(); k++ {
		n := ix.NumPages(k) / 2
		for g := 0; g < n; g++ {
			a, b := ix.Locate(k, g), ix.Locate(k, g+n)
			if a.Offset != b.Offset || a.Size != b.Size {
				t.Fatalf("%s: column %d page %d at %d+%d in one file, %d+%d in the other: not the same layout", codec, k, g, a.Offset, a.Size, b.Offset, b.Size)
			}
		}
	}
	return paths
}

// overwriteInPlace writes b over path at off (same inode, same size),
// again until the file's ctime differs from before: a rewrite within the
// file system's timestamp granularity would keep it. It may run on any
// goroutine (it reports with t.Error).
func overwriteInPlace(t *testing.T, path string, b []byte, off int64) {
	t.Helper()
	var before unix.Stat_t
	if err := unix.Stat(path, &before); err != nil {
		t.Error(err)
		return
	}
	for {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		_, err = f.WriteAt(b, off)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Error(err)
			return
		}
		var now unix.Stat_t
		if err := unix.Stat(path, &now); err != nil {
			t.Error(err)
			return
		}
		if now.Ctim != before.Ctim {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// rewriteRun reads every batch of a loader on cfg, writing file 0's bytes
// over victim after `after` batches, and returns the ids and d values
// delivered, the units skipped and the first error.
func rewriteRun(t *testing.T, cfg Config, victim string, with []byte, after int) (ids, ds []int64, skipped int64, err error) {
	t.Helper()
	l, err := Open(context.Background(), cfg)
	if err != nil {
		return nil, nil, 0, err
	}
	defer l.Close()
	defer func() { skipped = l.Stats().SkippedPages }()
	for n := 0; ; n++ {
		if n == after {
			overwriteInPlace(t, victim, with, 0)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		b, err := l.Next(ctx)
		cancel()
		if err == io.EOF {
			return ids, ds, 0, nil
		}
		if err != nil {
			return ids, ds, 0, err
		}
		for c, col := range b.Columns {
			for _, a := range col.Arrays {
				if c == 0 {
					ids = append(ids, a.(*array.Int64).Int64Values()...)
				} else {
					ds = append(ds, a.(*array.Int64).Int64Values()...)
				}
			}
		}
		b.Release()
	}
}

// TestRewriteInPlaceDetected: a file overwritten in place mid-epoch by
// another valid file of the same layout (same size, same inode, the same
// page offsets) never delivers the new bytes' rows through the old page
// map: every row delivered is one of the dataset's, at most once, with its
// own d value, and once the loader reads the rewritten file the epoch
// fails with ErrFileChanged naming it (with SkipBadPages its units are
// skipped and counted instead). Every read path runs: unordered and
// ordered fetch, row batches through the shuffle buffer, row shuffle,
// several columns with a dictionary-encoded one; uncompressed and zstd
// pages; the rewrite at the start, a third and two thirds of the epoch.
func TestRewriteInPlaceDetected(t *testing.T) {
	modes := []struct {
		name string
		edit func(*Config)
	}{
		{"page", func(c *Config) {}},
		{"ordered", func(c *Config) { c.Fetch = Ordered }},
		{"rowbatches-buffer", func(c *Config) { c.BatchRows, c.BufferRows = 50, 500 }},
		{"row", func(c *Config) { c.Shuffle, c.BatchRows = ShuffleRow, 64 }},
		{"columns-dict", func(c *Config) { c.Columns = []string{"id", "d"}; c.LeadColumn = "id" }},
		{"skip", func(c *Config) { c.SkipBadPages = true }},
	}
	for _, codec := range []compress.Compression{compress.Codecs.Uncompressed, compress.Codecs.Zstd} {
		src := sameLayoutFiles(t, t.TempDir(), codec)
		with, err := os.ReadFile(src[0])
		if err != nil {
			t.Fatal(err)
		}
		perm := rand.New(rand.NewPCG(3, 4)).Perm(idRows)
		for _, m := range modes {
			base := func() Config {
				cfg := baseConfig(dataset{paths: src}, "id")
				cfg.BatchPages, cfg.Prefetch = 4, 1
				m.edit(&cfg)
				return cfg
			}
			// The batches of a clean epoch, to rewrite at its thirds.
			_, _, _, err := rewriteRun(t, base(), "", nil, -1)
			if err != nil {
				t.Fatalf("%s %s clean: %v", codec, m.name, err)
			}
			l := openT(t, base())
			batches := 0
			eachBatch(t, l, func(b *Batch) { batches++; b.Release() })
			l.Close()
			for _, after := range []int{0, batches / 3, 2 * batches / 3} {
				t.Run(fmt.Sprintf("%s/%s/after%d", codec, m.name, after), func(t *testing.T) {
					paths := make([]string, len(src))
					dir := t.TempDir()
					for i, p := range src {
						b, err := os.ReadFile(p)
						if err != nil {
							t.Fatal(err)
						}
						paths[i] = filepath.Join(dir, filepath.Base(p))
						if err := os.WriteFile(paths[i], b, 0o644); err != nil {
							t.Fatal(err)
						}
					}
					victim := paths[1]
					cfg := base()
					cfg.Paths = paths
					ids, ds, skipped, err := rewriteRun(t, cfg, victim, with, after)
					// Every row delivered is the original dataset's, once.
					seen := map[int64]bool{}
					for i, id := range ids {
						if seen[id] {
							t.Fatalf("id %d delivered twice (%d rows delivered, error %v): rows of the rewritten file went out", id, len(ids), err)
						}
						seen[id] = true
						if i < len(ds) && ds[i] != dOf(id) {
							t.Fatalf("row %d: id %d with d %d, want %d", i, id, ds[i], dOf(id))
						}
					}
					want := map[int64]bool{}
					for f := 0; f < idFiles; f++ {
						for j := 0; j < idRows; j++ {
							want[idOf(perm, f, j)] = true
						}
					}
					for id := range seen {
						if !want[id] {
							t.Fatalf("id %d is no row of the dataset", id)
						}
					}
					switch {
					case err == nil && len(ids) == idFiles*idRows:
						t.Logf("every row arrived (the victim was read before the rewrite)")
					case err == nil && !cfg.SkipBadPages:
						t.Fatalf("%d of %d rows and no error", len(ids), idFiles*idRows)
					case err == nil && skipped == 0:
						t.Fatalf("%d of %d rows, no error and nothing counted skipped", len(ids), idFiles*idRows)
					case err == nil:
						t.Logf("%d of %d rows, %d units of the rewritten file skipped", len(ids), idFiles*idRows, skipped)
					case !errors.Is(err, ErrFileChanged) || !strings.Contains(err.Error(), victim):
						t.Fatalf("error %v: want ErrFileChanged naming %s", err, victim)
					default:
						t.Logf("%d rows, then %v", len(ids), err)
					}
				})
			}
		}
	}
}

// TestRewriteInPlaceBeforeResume: a State holding pending rows (row
// batches through the shuffle buffer) resumed over a shared index after
// the file of those rows was rewritten in place with the same layout:
// Open reads the pending rows again, synchronously, and fails with
// ErrFileChanged naming the file instead of handing out the new bytes'
// rows. (The State's fingerprint cannot see it: it is the shared index's.)
func TestRewriteInPlaceBeforeResume(t *testing.T) {
	paths := sameLayoutFiles(t, t.TempDir(), compress.Codecs.Uncompressed)
	with, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	ix, err := index.Build(context.Background(), paths, index.Options{Columns: []string{"id"}, NoSidecar: true, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig(dataset{paths: paths}, "id")
	cfg.SharedIndex = ix
	cfg.BatchPages, cfg.BatchRows, cfg.BufferRows = 4, 50, 2000
	l := openT(t, cfg)
	var st *State
	for n := 0; n < 10; n++ {
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		b.Release()
		st = l.State()
	}
	l.Close()
	// The file of a pending row other than file 0 (whose bytes go over it).
	victim := -1
	for _, ref := range st.Pending {
		if f := ix.Locate(0, int(ref.Page)).File; f != 0 {
			victim = f
			break
		}
	}
	if victim < 0 {
		t.Fatalf("no pending row outside file 0 among %d", len(st.Pending))
	}
	overwriteInPlace(t, paths[victim], with, 0)
	cfg.Resume = st
	r, err := Open(context.Background(), cfg)
	if err == nil {
		defer r.Close()
		b, err := r.Next(context.Background())
		if err == nil {
			ids := b.Arrays[0].(*array.Int64).Int64Values()
			b.Release()
			t.Fatalf("resumed over a rewritten file: first batch %v", ids[:min(len(ids), 8)])
		}
	}
	if !errors.Is(err, ErrFileChanged) || !strings.Contains(err.Error(), paths[victim]) {
		t.Fatalf("resume: %v, want ErrFileChanged naming %s", err, paths[victim])
	}
}
