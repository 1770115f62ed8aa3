package codec

import (
	"bytes"
	"context"
	"math"
	"math/rand"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/pagefeed/pagefeed/internal/pqtest"
)

// tokenRows makes n rows of token ids: Zipf over a GPT-2 sized vocabulary,
// heavy-tailed lengths (most rows short, a few over maxLen/2), the shape of
// tokenized text. Deterministic for a seed.
func tokenRows(seed int64, n, maxLen int, nulls bool) arrow.Array {
	r := rand.New(rand.NewSource(seed))
	zipf := rand.NewZipf(r, 1.1, 1, 50256)
	b := array.NewListBuilder(memory.DefaultAllocator, arrow.PrimitiveTypes.Int32)
	defer b.Release()
	vb := b.ValueBuilder().(*array.Int32Builder)
	for i := 0; i < n; i++ {
		if nulls && i%17 == 5 {
			b.AppendNull()
			continue
		}
		// Pareto-like length: short mostly, long tail up to maxLen.
		l := int(8 / math.Pow(1-r.Float64(), 1/1.2))
		if l > maxLen {
			l = maxLen
		}
		b.Append(true)
		for j := 0; j < l; j++ {
			vb.Append(int32(zipf.Uint64()))
		}
	}
	return b.NewArray()
}

type genOpts struct {
	codec    compress.Compression
	v2       bool
	pageSize int64
	dict     bool
	index    bool
}

// writeParquet writes one column col of type arr.DataType() with arrow-go's
// writer and returns the file bytes.
func writeParquet(t testing.TB, arr arrow.Array, o genOpts) []byte {
	t.Helper()
	ver := parquet.DataPageV1
	if o.v2 {
		ver = parquet.DataPageV2
	}
	props := parquet.NewWriterProperties(
		parquet.WithCompression(o.codec),
		parquet.WithDataPageVersion(ver),
		parquet.WithDataPageSize(o.pageSize),
		parquet.WithDictionaryDefault(o.dict),
		parquet.WithPageIndexEnabled(o.index),
		parquet.WithMaxRowGroupLength(1<<30),
		parquet.WithStats(false),
	)
	sc := arrow.NewSchema([]arrow.Field{{Name: "col", Type: arr.DataType(), Nullable: true}}, nil)
	rec := array.NewRecordBatch(sc, []arrow.Array{arr}, int64(arr.Len()))
	defer rec.Release()
	return pqtest.Bytes(t, props, rec)
}

// memFile is a parquet file in memory, opened with arrow-go.
type memFile struct {
	b   []byte
	rdr *file.Reader
	fr  *pqarrow.FileReader
}

func openMem(t testing.TB, b []byte) *memFile {
	t.Helper()
	rdr, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	return &memFile{b: b, rdr: rdr, fr: fr}
}

func (m *memFile) pages(t testing.TB, rg, col int) *chunkPages {
	t.Helper()
	cp, err := chunkPagesFrom(t, bytes.NewReader(m.b), "mem.parquet", m.rdr, rg, col)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func (m *memFile) column(t testing.TB, rg, col int) arrow.Array {
	t.Helper()
	a, err := ReferenceColumn(m.fr, rg, col)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

var _ = context.Background

// decodeAll decodes every page of column col of row group 0 with d and
// concatenates the rows.
func decodeAll(t testing.TB, d *Decoder, path string, rdr *file.Reader, col int) arrow.Array {
	t.Helper()
	cp, err := readChunkPages(t, path, rdr, 0, col)
	if err != nil {
		t.Fatal(err)
	}
	var dict *Dictionary
	if cp.dict != nil {
		if dict, err = d.Dictionary(cp.chunk, cp.dict, cp.dOff); err != nil {
			t.Fatal(err)
		}
	}
	var parts []arrow.Array
	for i := range cp.pages {
		pg, err := d.DecodeSpan(cp.chunk, dict, cp.pages[i:], cp.offs[i:])
		if err != nil {
			t.Fatal(err)
		}
		a := pg.Array()
		a.Retain()
		parts = append(parts, a)
		pg.Release()
	}
	out, err := array.Concatenate(parts, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		p.Release()
	}
	return out
}
