package rinas

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
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
	rows := 50000
	if v := envIntB(b, "PAGEFEED_ROWS_BENCH"); v > 0 {
		rows = v
	}
	var took [2]time.Duration
	var got [2]int
	for i := 0; i < b.N; i++ {
		for k := 0; k < 2; k++ {
			side := (i + k) % 2 // 0: cache, 1: none
			cfg := Config{Paths: []string{path}, Columns: []string{"tokens"}, Shuffle: ShuffleRow, BatchRows: 64, World: 1, Seed: uint64(i),
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
				want = max(rows/100, 1)
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
