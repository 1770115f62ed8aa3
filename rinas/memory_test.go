package rinas

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/pagefeed/pagefeed/internal/pqtest"
)

// writeBigDicts writes a string column whose every row group has a
// dictionary of about dictBytes (distinct 1 KiB values).
func writeBigDicts(t *testing.T, path string, rowGroups, dictBytes int) {
	t.Helper()
	per := dictBytes / 1024
	b := array.NewStringBuilder(memory.NewGoAllocator())
	defer b.Release()
	pad := strings.Repeat("x", 1000)
	for r := 0; r < rowGroups*per; r++ {
		b.Append(fmt.Sprintf("%s%024d", pad, r))
	}
	a := b.NewArray()
	defer a.Release()
	sc := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	rec := array.NewRecordBatch(sc, []arrow.Array{a}, int64(a.Len()))
	defer rec.Release()
	props := parquet.NewWriterProperties(parquet.WithDictionaryDefault(true), parquet.WithDictionaryPageSizeLimit(64<<20),
		parquet.WithMaxRowGroupLength(int64(per)), parquet.WithDataPageSize(64<<10), parquet.WithCompression(compress.Codecs.Uncompressed))
	pqtest.WriteRecords(t, path, props, rec)
}

// TestDictionariesCountAgainstMemoryLimit: cached dictionaries live in
// what MemoryLimit leaves: with room for about two of twelve in the cache, the epoch
// delivers every row, evicts (reads some dictionaries again) and ends with
// the cache within its budget; a dictionary larger than all the room left
// fails with ErrMemory naming its file.
func TestDictionariesCountAgainstMemoryLimit(t *testing.T) {
	const rgs, dictBytes = 12, 2 << 20
	path := filepath.Join(t.TempDir(), "dicts.parquet")
	writeBigDicts(t, path, rgs, dictBytes)
	base := func() Config {
		cfg := baseConfig(dataset{paths: []string{path}}, "s")
		cfg.Shuffle, cfg.BatchPages, cfg.Prefetch = ShufflePage, 2, 1
		return cfg
	}
	// what the configuration needs besides dictionaries
	l := openT(t, base())
	need := l.cfg.MemoryLimit - 2*l.dicts.budget // the cache gets half of what is left
	l.Close()

	cfg := base()
	cfg.MemoryLimit = need + 10<<20
	l = openT(t, cfg)
	rows := 0
	eachBatch(t, l, func(b *Batch) {
		for _, a := range b.Arrays {
			rows += a.Len()
		}
		if n := l.dicts.cachedBytes(); n > l.dicts.budget+2*(dictBytes+dictBytes/8) {
			t.Fatalf("cache holds %d bytes, budget %d", n, l.dicts.budget)
		}
		b.Release()
	})
	if want := rgs * (dictBytes / 1024); rows != want {
		t.Fatalf("%d rows, want %d", rows, want)
	}
	if n := l.dicts.cachedBytes(); n > l.dicts.budget {
		t.Fatalf("cache ends with %d bytes, budget %d", n, l.dicts.budget)
	}
	if st := l.Stats(); st.Dictionaries <= rgs {
		t.Errorf("%d dictionaries read for %d row groups: nothing was evicted", st.Dictionaries, rgs)
	}

	// Room for less than the largest dictionary fails at Open (from the
	// dictionary page's stored size) or, at the latest, when it is read.
	cfg = base()
	cfg.MemoryLimit = need + 2<<20
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := Open(ctx, cfg)
	if err == nil {
		t.Cleanup(func() { l.Close() })
	}
	for err == nil {
		var b *Batch
		if b, err = l.Next(ctx); err == nil {
			b.Release()
		}
	}
	if !errors.Is(err, ErrMemory) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Next: %v, want ErrMemory naming %s", err, path)
	}
}

// writeOnePagePerChunk writes rows rows of (id int64, tokens list<int32>)
// in row groups of rgRows rows, each column chunk one page (as DuckDB
// writes them), zstd-compressed; each row has about meanTokens tokens.
func writeOnePagePerChunk(t testing.TB, path string, rows, rgRows, meanTokens int) {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "tokens", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)}}, nil)
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDataPageSize(256<<20),
		parquet.WithDictionaryDefault(false), parquet.WithMaxRowGroupLength(int64(rgRows)), parquet.WithBatchSize(int64(rgRows)))
	var recs []arrow.RecordBatch
	rng := rand.New(rand.NewPCG(1, 2))
	for r0 := 0; r0 < rows; r0 += rgRows {
		ib := array.NewInt64Builder(memory.DefaultAllocator)
		lb := array.NewListBuilder(memory.DefaultAllocator, arrow.PrimitiveTypes.Int32)
		vb := lb.ValueBuilder().(*array.Int32Builder)
		for r := r0; r < min(r0+rgRows, rows); r++ {
			ib.Append(int64(r))
			lb.Append(true)
			for k := rng.IntN(2 * meanTokens); k >= 0; k-- {
				vb.Append(rng.Int32N(50000))
			}
		}
		ia, la := ib.NewArray(), lb.NewArray()
		recs = append(recs, array.NewRecordBatch(sc, []arrow.Array{ia, la}, int64(ia.Len())))
		ia.Release()
		la.Release()
		ib.Release()
		lb.Release()
	}
	pqtest.WriteRecords(t, path, props, recs...)
	for _, r := range recs {
		r.Release()
	}
}

// TestOnePagePerChunkAtDefaults: a file whose every column chunk is one
// page (DuckDB's layout: 20,000 rows of token lists in five row groups,
// pages of about 4.4 MB decoded) opens at the default configuration, plans
// no more than twice the dataset's decoded size, and delivers every row
// once, with one column and with two.
func TestOnePagePerChunkAtDefaults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "duck.parquet")
	writeOnePagePerChunk(t, path, 20000, 4000, 270)
	for _, cols := range [][]string{{"tokens"}, {"id", "tokens"}} {
		t.Run(strings.Join(cols, ","), func(t *testing.T) {
			cfg := Config{Paths: []string{path}, Columns: cols, Logf: t.Logf, World: 1}
			l := openT(t, cfg)
			rows := 0
			seen := map[int64]bool{}
			eachBatch(t, l, func(b *Batch) {
				rows += b.Rows
				if len(cols) == 2 {
					for _, a := range b.Columns[0].Arrays {
						for _, id := range a.(*array.Int64).Int64Values() {
							if seen[id] {
								t.Fatalf("id %d twice", id)
							}
							seen[id] = true
						}
					}
				}
				b.Release()
			})
			st := l.Stats()
			if rows != 20000 {
				t.Fatalf("%d rows, want 20000", rows)
			}
			// Twice the decoded data for one column; the other column's
			// reads take slots sized for the largest page, so a little
			// more for two.
			limit := 2 * st.DecodedBytes
			if len(cols) == 2 {
				limit = 5 * st.DecodedBytes / 2
			}
			if p := l.PlannedBytes(); p > limit {
				t.Errorf("Open planned %d bytes for a dataset of %d bytes decoded (%d pages)", p, st.DecodedBytes, st.Pages)
			}
			t.Logf("%d pages, %d bytes decoded, %d planned, batches of %d, prefetch %d, %d workers", st.Pages, st.DecodedBytes, l.PlannedBytes(), l.BatchPages(), l.Prefetch(), l.Workers())
		})
	}
}

// TestHugeBinaryRowsAtDefaults: rows of 300 KB binaries, 40 to a page of
// 12 MB (an image-and-caption dataset), load with the default
// configuration, page and row batches; under a MemoryLimit that holds a
// few of their pages the batch shrinks to fit instead of failing Open.
func TestHugeBinaryRowsAtDefaults(t *testing.T) {
	const rows, per, size = 400, 40, 300 << 10
	path := filepath.Join(t.TempDir(), "images.parquet")
	writeBinaryRows(t, path, rows, per, size)
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"defaults", func(*Config) {}},
		{"row batches", func(c *Config) { c.BatchRows = 8 }},
		{"160 MiB", func(c *Config) { c.MemoryLimit = 160 << 20 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var notes []string
			cfg := Config{Paths: []string{path}, Columns: []string{"id", "image"}, World: 1,
				Logf: func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) }}
			tc.edit(&cfg)
			l := openT(t, cfg)
			seen := map[int64]bool{}
			eachBatch(t, l, func(b *Batch) {
				ids := b.Columns[0].Arrays
				for i, a := range ids {
					imgs := b.Columns[1].Arrays[i].(*array.Binary)
					for j, id := range a.(*array.Int64).Int64Values() {
						v := imgs.Value(j)
						if seen[id] || len(v) != size || int64(v[0])|int64(v[1])<<8 != id {
							t.Fatalf("row %d: twice %v, image of %d bytes for id %d", id, seen[id], len(v), int64(v[0])|int64(v[1])<<8)
						}
						seen[id] = true
					}
				}
				b.Release()
			})
			if len(seen) != rows {
				t.Fatalf("%d rows, want %d", len(seen), rows)
			}
			if l.PlannedBytes() > cfg.MemoryLimit && cfg.MemoryLimit > 0 {
				t.Errorf("planned %d bytes over the limit %d", l.PlannedBytes(), cfg.MemoryLimit)
			}
			t.Logf("batches of %d, prefetch %d, planned %d MiB; %q", l.BatchPages(), l.Prefetch(), l.PlannedBytes()>>20, notes)
		})
	}
}

// writeBinaryRows writes rows rows of (id int64, image binary) to path,
// each image size bytes starting with its id's two low bytes, per rows to
// an uncompressed page, five pages to a row group.
func writeBinaryRows(t testing.TB, path string, rows, per, size int) {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "image", Type: arrow.BinaryTypes.Binary}}, nil)
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Uncompressed), parquet.WithDataPageSize(int64(per*size)),
		parquet.WithDictionaryDefault(false), parquet.WithBatchSize(int64(per)), parquet.WithMaxRowGroupLength(int64(5*per)))
	img := make([]byte, size)
	var recs []arrow.RecordBatch
	for r0 := 0; r0 < rows; r0 += per {
		ib := array.NewInt64Builder(memory.DefaultAllocator)
		bb := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
		for r := r0; r < min(r0+per, rows); r++ {
			ib.Append(int64(r))
			img[0], img[1] = byte(r), byte(r>>8)
			bb.Append(img)
		}
		ia, ba := ib.NewArray(), bb.NewArray()
		recs = append(recs, array.NewRecordBatch(sc, []arrow.Array{ia, ba}, int64(ia.Len())))
		ia.Release()
		ba.Release()
		ib.Release()
		bb.Release()
	}
	pqtest.WriteRecords(t, path, props, recs...)
	for _, r := range recs {
		r.Release()
	}
}
