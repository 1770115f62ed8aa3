package rinas

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/gen"
)

// batchDigest hashes every batch's rows (list lengths and values, in
// delivery order) and tokens.
func batchDigest(t *testing.T, cfg Config) string {
	h := sha256.New()
	eachBatch(t, openT(t, cfg), func(b *Batch) {
		for _, a := range b.Arrays {
			la := a.(*array.List)
			for r := 0; r < la.Len(); r++ {
				lo, hi := la.ValueOffsets(r)
				binary.Write(h, binary.LittleEndian, int64(hi-lo))
				binary.Write(h, binary.LittleEndian, la.ListValues().(*array.Int32).Int32Values()[lo:hi])
			}
		}
		binary.Write(h, binary.LittleEndian, b.Tokens)
		fmt.Fprintf(h, "|")
		b.Release()
	})
	return fmt.Sprintf("%x", h.Sum(nil))
}

// TestDeterministicSameBytes: with Deterministic, two runs of the same
// seed give identical batches (unordered fetch, two workers, deep
// prefetch, so landing order varies); another seed gives others.
func TestDeterministicSameBytes(t *testing.T) {
	ds := testDataset(t, "v2")
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"pages", func(c *Config) { c.BatchPages = 16 }},
		{"rows+buffer", func(c *Config) { c.BatchRows, c.BufferRows = 50, 200 }},
		{"tokens", func(c *Config) { c.Output, c.SeqLen, c.BatchRows = OutputTokens, 256, 4 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig(ds, "input_ids")
			cfg.Deterministic, cfg.Prefetch = true, 4
			cfg.Engine.Workers = 2
			tc.mod(&cfg)
			a, b := batchDigest(t, cfg), batchDigest(t, cfg)
			if a != b {
				t.Fatalf("same seed, different bytes: %s vs %s", a, b)
			}
			cfg.Seed++
			if c := batchDigest(t, cfg); c == a {
				t.Fatal("another seed gave the same bytes")
			}
		})
	}
}

// BenchmarkDeterministic compares plan-order assembly with landing-order
// assembly: page batches of 64 uncompressed 8 KiB pages of input_ids,
// unordered fetch, a whole epoch per iteration (pages/s reported).
func BenchmarkDeterministic(b *testing.B) {
	dir := b.TempDir()
	res, err := gen.Run(context.Background(), gen.Config{Dir: dir, Files: 4, RowsPerFile: 20000, PageSize: 8 << 10,
		Codec: "none", PageIndex: true, PageVersion: 2, MeanTokens: 256, Seed: 3})
	if err != nil {
		b.Fatal(err)
	}
	ix, err := index.Build(context.Background(), res.Files, index.Options{Columns: []string{"input_ids"}, NoSidecar: true, Logf: func(string, ...any) {}})
	if err != nil {
		b.Fatal(err)
	}
	for _, det := range []bool{false, true} {
		b.Run(fmt.Sprintf("deterministic=%v", det), func(b *testing.B) {
			cfg := Config{SharedIndex: ix, World: 1, BatchPages: 64, Deterministic: det, Logf: func(string, ...any) {}}
			pages := 0
			for i := 0; i < b.N; i++ {
				cfg.Epoch = uint64(i)
				l, err := Open(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				eachBatch(b, l, func(bt *Batch) { pages += len(bt.Pages); bt.Release() })
				l.Close()
			}
			b.ReportMetric(float64(pages)/b.Elapsed().Seconds(), "pages/s")
		})
	}
}
