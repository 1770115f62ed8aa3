package rinas

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/pagefeed/pagefeed/internal/pqtest"
)

// writeTokenFile writes docs as one list column "toks" of element type dt
// (V2 pages with an offset index) and returns its path.
func writeTokenFile(t *testing.T, dt arrow.DataType, docs [][]int64) string {
	t.Helper()
	lb := array.NewListBuilder(memory.DefaultAllocator, dt)
	defer lb.Release()
	for _, d := range docs {
		lb.Append(true)
		for _, v := range d {
			switch vb := lb.ValueBuilder().(type) {
			case *array.Int32Builder:
				vb.Append(int32(v))
			case *array.Int64Builder:
				vb.Append(v)
			case *array.Uint16Builder:
				vb.Append(uint16(v))
			case *array.Uint32Builder:
				vb.Append(uint32(v))
			}
		}
	}
	la := lb.NewArray()
	defer la.Release()
	sc := arrow.NewSchema([]arrow.Field{{Name: "toks", Type: la.DataType(), Nullable: true}}, nil)
	rec := array.NewRecordBatch(sc, []arrow.Array{la}, int64(la.Len()))
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "toks.parquet")
	props := parquet.NewWriterProperties(parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithDataPageSize(256),
		parquet.WithCompression(compress.Codecs.Snappy), parquet.WithPageIndexEnabled(true), parquet.WithMaxRowGroupLength(40))
	pqtest.WriteRecords(t, path, props, rec)
	return path
}

// tokenDocs returns n documents of lengths 0..3·seqLen with ids 1..60000
// (never 0, so EOS 0 and Pad 0 are recognisable).
func tokenDocs(n, seqLen int) [][]int64 {
	docs := make([][]int64, n)
	for i := range docs {
		d := make([]int64, (i*7919)%(3*seqLen))
		for k := range d {
			d[k] = int64(1 + (i*131+k*17)%60000)
		}
		docs[i] = d
	}
	return docs
}

// TestPackingOptions: every token type, int32 and int64 output, EOS 0 and
// Pad 0, split and truncated documents. The stream of document tokens
// between EOS matches the documents; position ids restart at every
// segment of CuSeqlens, each row's segments sum to SeqLen, every EOS ends
// a segment, and the loss mask is 0 exactly on padding.
func TestPackingOptions(t *testing.T) {
	const seqLen = 32
	docs := tokenDocs(120, seqLen)
	for _, dt := range []arrow.DataType{arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32} {
		path := writeTokenFile(t, dt, docs)
		for _, wide := range []bool{false, true} {
			for _, truncate := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/int64=%v/truncate=%v", dt, wide, truncate), func(t *testing.T) {
					cfg := baseConfig(dataset{paths: []string{path}}, "toks")
					cfg.Shuffle, cfg.Output, cfg.SeqLen, cfg.BatchRows = ShuffleNone, OutputTokens, seqLen, 3
					cfg.EOS, cfg.ExplicitEOS, cfg.Pad, cfg.ExplicitPad = 0, true, 0, true
					cfg.Tokens64, cfg.Truncate, cfg.Deterministic = wide, truncate, true
					var got [][]int64
					var cur []int64
					eachBatch(t, openT(t, cfg), func(b *Batch) {
						n := len(b.Tokens)
						if wide {
							n = len(b.Tokens64)
						}
						tok := func(k int) int64 {
							if wide {
								return b.Tokens64[k]
							}
							return int64(b.Tokens[k])
						}
						if n != 3*seqLen || len(b.PositionIDs) != n || len(b.LossMask) != n {
							t.Fatalf("%d tokens, %d positions, %d mask", n, len(b.PositionIDs), len(b.LossMask))
						}
						cu := b.CuSeqlens
						if cu[0] != 0 || int(cu[len(cu)-1]) != n {
							t.Fatalf("cu_seqlens %v", cu)
						}
						seg := 0
						for k := 0; k < n; k++ {
							if k%seqLen == 0 && !slices.Contains(cu, int32(k)) {
								t.Fatalf("row start %d is no boundary in %v", k, cu)
							}
							for int(cu[seg+1]) <= k {
								seg++
							}
							if want := int32(k) - cu[seg]; b.PositionIDs[k] != want {
								t.Fatalf("position id %d at %d, want %d (cu %v)", b.PositionIDs[k], k, want, cu)
							}
							if b.LossMask[k] == 0 {
								if tok(k) != 0 {
									t.Fatalf("masked token %d at %d is not Pad 0", tok(k), k)
								}
								continue
							}
							if tok(k) == 0 { // EOS: ends a segment
								if !slices.Contains(cu, int32(k+1)) {
									t.Fatalf("EOS at %d ends no segment of %v", k, cu)
								}
								got = append(got, cur)
								cur = nil
								continue
							}
							cur = append(cur, tok(k))
						}
						b.Release()
					})
					if len(cur) > 0 {
						t.Fatalf("%d tokens after the last EOS", len(cur))
					}
					if len(got) != len(docs) {
						t.Fatalf("%d documents, want %d", len(got), len(docs))
					}
					for i, d := range docs {
						want := d
						if truncate {
							want = d[:min(len(d), seqLen-1)]
						}
						if !slices.Equal(got[i], want) {
							t.Fatalf("document %d: %d tokens, want %d", i, len(got[i]), len(want))
						}
					}
				})
			}
		}
	}
}

// TestPackingInt32Range: an int64 token beyond int32 fails the int32
// output with an error naming the file; Tokens64 delivers it.
func TestPackingInt32Range(t *testing.T) {
	path := writeTokenFile(t, arrow.PrimitiveTypes.Int64, [][]int64{{1, 2}, {1 << 40}})
	cfg := baseConfig(dataset{paths: []string{path}}, "toks")
	cfg.Output, cfg.SeqLen, cfg.BatchRows, cfg.Shuffle = OutputTokens, 8, 1, ShuffleNone
	l := openT(t, cfg)
	var err error
	for err == nil {
		var b *Batch
		if b, err = l.Next(t.Context()); err == nil {
			b.Release()
		}
	}
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v does not name %s", err, path)
	}
	cfg.Tokens64 = true
	found := false
	eachBatch(t, openT(t, cfg), func(b *Batch) {
		found = found || slices.Contains(b.Tokens64, 1<<40)
		b.Release()
	})
	if !found {
		t.Fatal("Tokens64 lost the large id")
	}
}
