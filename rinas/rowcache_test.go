package rinas

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/pqtest"
)

// TestRowShuffleSharesPages: row shuffle over pages of 4,000 rows (one
// page per column chunk) reads each page about once, not once per row:
// rows take their page from one decoded for another row, or wait for a
// decode under way; every row arrives once, in page and row batches,
// unordered and ordered fetch.
func TestRowShuffleSharesPages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "duck.parquet")
	writeOnePagePerChunk(t, path, 20000, 4000, 20)
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"row batches", func(c *Config) { c.BatchRows = 64 }},
		{"page batches", func(c *Config) {}},
		{"ordered", func(c *Config) { c.BatchRows, c.Fetch = 64, Ordered }},
		{"buffer", func(c *Config) { c.BatchRows, c.BufferRows = 64, 1000 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Paths: []string{path}, Columns: []string{"id"}, Shuffle: ShuffleRow, World: 1, Logf: t.Logf}
			tc.edit(&cfg)
			l := openT(t, cfg)
			seen := make([]bool, 20000)
			n := 0
			eachBatch(t, l, func(b *Batch) {
				for _, a := range b.Arrays {
					for _, id := range a.(*array.Int64).Int64Values() {
						if seen[id] {
							t.Fatalf("id %d twice", id)
						}
						seen[id] = true
						n++
					}
				}
				b.Release()
			})
			st := l.Stats()
			if n != 20000 {
				t.Fatalf("%d rows of 20000", n)
			}
			// Five pages of id; a unit of each window may read its page
			// again once the cache let it go, but nowhere near a read a row.
			if st.Pages > 200 || st.PageCacheHits < 20000-st.Pages {
				t.Errorf("%d pages read, %d rows from shared pages, for 20000 rows of 5 pages", st.Pages, st.PageCacheHits)
			}
			t.Logf("%d pages read, %d rows from shared pages", st.Pages, st.PageCacheHits)
		})
	}
}

// BenchmarkRowShuffleHugePages: row shuffle over a file of 200,000 rows in
// two row groups of one page per column chunk (DuckDB's layout at its
// defaults; token pages of about 11 MB decoded), at the default
// configuration with row batches of 64: rows/s with the page cache and
// without it (every row reads and decodes its page), in the same run,
// alternating. Per iteration the cache side reads $PAGEFEED_ROWS_BENCH
// rows (default 50,000), the other a hundredth of them (each of its rows
// reads an 11 MB page).
func BenchmarkRowShuffleHugePages(b *testing.B) {
	path := filepath.Join(b.TempDir(), "duck.parquet")
	writeOnePagePerChunk(b, path, 200000, 100000, 27)
	benchRowShuffle(b, path, []string{"tokens"}, 50000, 100)
}

// BenchmarkRowShuffleHugePagesSeveral is BenchmarkRowShuffleHugePages
// over four columns (id, tokens, text, score: pages of 0.8, 10, 3.3 and
// 0.8 MB decoded): without the page cache every row reads and decodes a
// page of each. The cache side reads $PAGEFEED_ROWS_BENCH rows (default
// 20,000) per iteration, the other a five-hundredth of them.
func BenchmarkRowShuffleHugePagesSeveral(b *testing.B) {
	path := filepath.Join(b.TempDir(), "duck.parquet")
	writeOnePagePerChunkCols(b, path, 200000, 100000)
	benchRowShuffle(b, path, []string{"id", "tokens", "text", "score"}, 20000, 500)
}

// benchRowShuffle reports the rows/s of row shuffle over path's cols with
// the page cache (rows rows an iteration) and without (rows/div), and
// their ratio.
func benchRowShuffle(b *testing.B, path string, cols []string, rows, div int) {
	if v := envIntB(b, "PAGEFEED_ROWS_BENCH"); v > 0 {
		rows = v
	}
	var took [2]time.Duration
	var got [2]int
	for i := 0; i < b.N; i++ {
		for k := 0; k < 2; k++ {
			side := (i + k) % 2 // 0: cache, 1: none
			cfg := Config{Paths: []string{path}, Columns: cols, Shuffle: ShuffleRow, BatchRows: 64, World: 1, Seed: uint64(i),
				Logf: func(string, ...any) {}}
			benchNoPageCache = side == 1
			l, err := Open(context.Background(), cfg)
			benchNoPageCache = false
			if err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			n, want := 0, rows
			if side == 1 {
				want = max(rows/div, 1)
			}
			for n < want {
				bt, err := l.Next(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				n += bt.Rows
				bt.Release()
			}
			took[side] += time.Since(t0)
			got[side] += n
			l.Close()
		}
	}
	with, without := float64(got[0])/took[0].Seconds(), float64(got[1])/took[1].Seconds()
	b.ReportMetric(with, "rows/s-cache")
	b.ReportMetric(without, "rows/s-nocache")
	b.ReportMetric(with/without, "speedup")
}

func envIntB(b *testing.B, name string) int {
	n := 0
	if v := os.Getenv(name); v != "" {
		if _, err := fmt.Sscan(v, &n); err != nil {
			b.Fatal(err)
		}
	}
	return n
}

// TestRowShuffleSharedPageCorrupt: with SkipBadPages, a corrupt page
// shared by row units fails every row that waited for it (each skipped and
// counted) and no other: every other row arrives once.
func TestRowShuffleSharedPageCorrupt(t *testing.T) {
	ds := copyDataset(t, manyPages(t))
	ix := buildIndex(t, ds)
	g := ix.NumPages(0) / 2
	ix = corruptPages(t, ix, g)
	cfg := baseConfig(ds, "id")
	cfg.SharedIndex, cfg.Shuffle, cfg.BatchRows, cfg.SkipBadPages = ix, ShuffleRow, 32, true
	l := openT(t, cfg)
	seen := map[int64]bool{}
	eachBatch(t, l, func(b *Batch) {
		for _, a := range b.Arrays {
			for _, id := range a.(*array.Int64).Int64Values() {
				if seen[id] {
					t.Fatalf("id %d twice", id)
				}
				seen[id] = true
			}
		}
		b.Release()
	})
	bad := int64(ix.Locate(0, g).NumRows)
	if st := l.Stats(); int64(len(seen)) != ds.rows-bad || st.SkippedPages != bad {
		t.Fatalf("%d rows and %d skipped, want %d and the bad page's %d", len(seen), st.SkippedPages, ds.rows-bad, bad)
	}
}

// writeOnePagePerChunkCols writes rows rows in row groups of rgRows with
// every column chunk one page (DuckDB's layout): id int64, tokens
// list<int32> (id%50+1 values id*7+k), text string ("row-<id>" repeated
// id%5+1 times) and score double (id/2).
func writeOnePagePerChunkCols(t testing.TB, path string, rows, rgRows int) {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "tokens", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
		{Name: "text", Type: arrow.BinaryTypes.String},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64}}, nil)
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDataPageSize(256<<20),
		parquet.WithDictionaryDefault(false), parquet.WithMaxRowGroupLength(int64(rgRows)), parquet.WithBatchSize(int64(rgRows)))
	var recs []arrow.RecordBatch
	for r0 := 0; r0 < rows; r0 += rgRows {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		for r := r0; r < min(r0+rgRows, rows); r++ {
			b.Field(0).(*array.Int64Builder).Append(int64(r))
			lb := b.Field(1).(*array.ListBuilder)
			lb.Append(true)
			for k := range r%50 + 1 {
				lb.ValueBuilder().(*array.Int32Builder).Append(int32(r*7 + k))
			}
			b.Field(2).(*array.StringBuilder).Append(rowText(int64(r)))
			b.Field(3).(*array.Float64Builder).Append(float64(r) / 2)
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	pqtest.WriteRecords(t, path, props, recs...)
	for _, r := range recs {
		r.Release()
	}
}

func rowText(id int64) string { return strings.Repeat(fmt.Sprintf("row-%d;", id), int(id%5)+1) }

// TestRowShuffleSharesPagesSeveralColumns: row shuffle of four columns
// over pages of 4,000 rows (one page per column chunk) decodes each page
// of every column about once over an epoch (at most twice what a page
// shuffle epoch decodes), not once per row, and delivers every row once,
// row-aligned, with its values: at the defaults (page batches), with row
// batches, ordered fetch and a shuffle buffer.
func TestRowShuffleSharesPagesSeveralColumns(t *testing.T) {
	const rows = 20000
	path := filepath.Join(t.TempDir(), "duck.parquet")
	writeOnePagePerChunkCols(t, path, rows, 4000)
	cols := []string{"id", "tokens", "text", "score"}
	// What the columns hold decoded: one epoch of unshuffled pages.
	base := openT(t, Config{Paths: []string{path}, Columns: cols, World: 1, Logf: t.Logf})
	eachBatch(t, base, func(b *Batch) { b.Release() })
	once := base.Stats().DecodedBytes
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"defaults", func(c *Config) {}},
		{"row batches", func(c *Config) { c.BatchRows = 64 }},
		{"ordered", func(c *Config) { c.BatchRows, c.Fetch = 64, Ordered }},
		{"buffer", func(c *Config) { c.BatchRows, c.BufferRows = 64, 1000 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Paths: []string{path}, Columns: cols, Shuffle: ShuffleRow, World: 1, Logf: t.Logf}
			tc.edit(&cfg)
			l := openT(t, cfg)
			seen := make([]bool, rows)
			n := 0
			eachBatch(t, l, func(b *Batch) {
				checkRowsSeveral(t, b, seen, &n)
				b.Release()
				if d := l.Stats().DecodedBytes; d > 2*once {
					t.Fatalf("decoded %d bytes after %d rows, more than twice the %d bytes the columns hold: a page decoded again for each row?", d, n, once)
				}
			})
			if n != rows {
				t.Fatalf("%d rows of %d", n, rows)
			}
			st := l.Stats()
			t.Logf("decoded %d bytes (the columns hold %d), %d pages, %d from the page cache", st.DecodedBytes, once, st.Pages, st.PageCacheHits)
		})
	}
}

// checkRowsSeveral checks a batch of id, tokens, text and score
// (writeOnePagePerChunkCols): row-aligned, each row's values its id's,
// each id new.
func checkRowsSeveral(t *testing.T, b *Batch, seen []bool, n *int) {
	t.Helper()
	if len(b.Columns) != 4 {
		t.Fatalf("%d columns", len(b.Columns))
	}
	for i, a := range b.Columns[0].Arrays {
		ids := a.(*array.Int64)
		toks := b.Columns[1].Arrays[i].(*array.List)
		text := b.Columns[2].Arrays[i].(*array.String)
		score := b.Columns[3].Arrays[i].(*array.Float64)
		if toks.Len() != ids.Len() || text.Len() != ids.Len() || score.Len() != ids.Len() {
			t.Fatalf("chunk %d: %d ids, %d token lists, %d texts, %d scores", i, ids.Len(), toks.Len(), text.Len(), score.Len())
		}
		vals := toks.ListValues().(*array.Int32)
		for r := range ids.Len() {
			id := ids.Value(r)
			if seen[id] {
				t.Fatalf("id %d twice", id)
			}
			seen[id] = true
			*n++
			lo, hi := toks.ValueOffsets(r)
			if hi-lo != id%50+1 || vals.Value(int(lo)) != int32(id*7) || vals.Value(int(hi-1)) != int32(id*7+hi-lo-1) {
				t.Fatalf("id %d: tokens %v", id, vals.Int32Values()[lo:hi])
			}
			if text.Value(r) != rowText(id) || score.Value(r) != float64(id)/2 {
				t.Fatalf("id %d: text %q score %v", id, text.Value(r), score.Value(r))
			}
		}
	}
}

// TestRowShuffleSharedSidePageCorrupt: row shuffle of four columns over
// one page per column chunk, with the id page of one row group corrupt
// (a page every row of that group waits for, read by one of them): with
// SkipBadPages each of those rows is skipped and counted and every other
// row arrives once with its values; without it Next fails with a
// corruption error (the rows parked on the page are woken, nothing hangs).
func TestRowShuffleSharedSidePageCorrupt(t *testing.T) {
	const rows, rg = 12000, 4000
	path := filepath.Join(t.TempDir(), "duck.parquet")
	writeOnePagePerChunkCols(t, path, rows, rg)
	ix, err := index.Build(context.Background(), []string{path}, index.Options{NoSidecar: true, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	if ks := ix.Lookup("id"); len(ks) != 1 || ks[0] != 0 {
		t.Fatalf("id is column %v, not 0", ks)
	}
	// The page's compressed bytes, past its header (the index walks
	// the headers of a file without an offset index).
	loc := ix.Locate(0, ix.Chunk(0, 1).FirstPage)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("\xff\xff\xff\xff\xff\xff\xff\xff"), loc.Offset+int64(loc.Size)/2); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if ix, err = index.Build(context.Background(), []string{path}, index.Options{NoSidecar: true, Logf: func(string, ...any) {}}); err != nil {
		t.Fatal(err)
	}
	cols := []string{"id", "tokens", "text", "score"}
	for _, fetch := range []Fetch{Unordered, Ordered} {
		t.Run(fmt.Sprint(fetch), func(t *testing.T) {
			cfg := Config{Paths: []string{path}, Columns: cols, Shuffle: ShuffleRow, World: 1, SharedIndex: ix, Fetch: fetch,
				SkipBadPages: true, Logf: func(string, ...any) {}}
			l := openT(t, cfg)
			seen := make([]bool, rows)
			n := 0
			eachBatch(t, l, func(b *Batch) {
				checkRowsSeveral(t, b, seen, &n)
				b.Release()
			})
			if st := l.Stats(); n != rows-rg || st.SkippedPages != rg {
				t.Fatalf("%d rows and %d skipped, want %d and the bad page's %d", n, st.SkippedPages, rows-rg, rg)
			}
			for id := rg; id < 2*rg; id++ {
				if seen[id] {
					t.Fatalf("id %d of the bad page delivered", id)
				}
			}
			cfg.SkipBadPages = false
			l = openT(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for {
				b, err := l.Next(ctx)
				if err != nil {
					if !IsCorruption(err) {
						t.Fatalf("Next: %v, want a corruption error", err)
					}
					return
				}
				b.Release()
			}
		})
	}
}

// TestRowShuffleCacheTooSmallSaysSo: when MemoryLimit leaves row
// shuffle's page cache less than the dataset's decoded pages, pages are
// let go and read again (every row still arrives once, with its values),
// and the loader says so once, with the MemoryLimit that would read each
// page once; at the defaults it holds them all and says nothing.
func TestRowShuffleCacheTooSmallSaysSo(t *testing.T) {
	const rows = 20000
	path := filepath.Join(t.TempDir(), "duck.parquet")
	writeOnePagePerChunkCols(t, path, rows, 2000)
	cols := []string{"id", "tokens", "text", "score"}
	for _, tc := range []struct {
		name  string
		limit int64
		warn  bool
	}{
		{"defaults", 0, false},
		{"small limit", 5 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var said []string
			logf := func(f string, a ...any) {
				mu.Lock()
				defer mu.Unlock()
				if m := fmt.Sprintf(f, a...); strings.Contains(m, "page cache") {
					said = append(said, m)
				}
			}
			cfg := Config{Paths: []string{path}, Columns: cols, Shuffle: ShuffleRow, World: 1, MemoryLimit: tc.limit, Logf: logf}
			l := openT(t, cfg)
			seen := make([]bool, rows)
			n := 0
			for n < rows {
				b, err := l.Next(context.Background())
				if err != nil {
					t.Fatalf("after %d rows: %v", n, err)
				}
				checkRowsSeveral(t, b, seen, &n)
				b.Release()
			}
			if _, err := l.Next(context.Background()); err != io.EOF {
				t.Fatalf("after the epoch: %v, want io.EOF", err)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case tc.warn && len(said) != 1:
				t.Fatalf("said %q, want one notice of the page cache", said)
			case tc.warn && !strings.Contains(said[0], "read and decoded again") || tc.warn && !strings.Contains(said[0], "MemoryLimit of about"):
				t.Fatalf("notice %q", said[0])
			case !tc.warn && len(said) > 0:
				t.Fatalf("at the defaults: %q", said)
			}
			if tc.warn {
				t.Log(said[0])
			}
		})
	}
}
