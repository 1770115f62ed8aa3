package rinas

import (
	"context"
	"errors"
	"fmt"
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

	cfg = base()
	cfg.MemoryLimit = need + 2<<20
	l = openT(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
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
