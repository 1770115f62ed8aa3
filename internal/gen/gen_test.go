package gen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

func run(t *testing.T, c Config) Result {
	t.Helper()
	if c.Dir == "" {
		c.Dir = t.TempDir()
	}
	res, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func readAll(t *testing.T, paths []string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func TestDeterministic(t *testing.T) {
	c := Config{Files: 3, RowsPerFile: 300, PageSize: 4096, MeanTokens: 32, Seed: 5, PageIndex: true}
	a := readAll(t, run(t, c).Files)
	c.Parallelism = 3
	b := readAll(t, run(t, c).Files)
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Fatalf("file %d differs between runs", i)
		}
	}
	c.Seed = 6
	d := readAll(t, run(t, c).Files)
	if bytes.Equal(a[0], d[0]) {
		t.Fatal("another seed gave the same bytes")
	}
	if bytes.Equal(a[0], a[1]) {
		t.Fatal("two files of a dataset are identical")
	}
}

// TestReadable reads the files back with pqarrow and checks the content.
func TestReadable(t *testing.T) {
	res := run(t, Config{Files: 2, RowsPerFile: 700, RowGroupRows: 300, MeanTokens: 40, Seed: 1})
	if res.Rows != 1400 || res.Bytes <= 0 {
		t.Fatalf("result %+v", res)
	}
	var nulls, tokens int
	for fi, p := range res.Files {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := pqarrow.ReadTable(context.Background(), f, nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		sc := tbl.Schema()
		if tbl.NumRows() != 700 || sc.NumFields() != 3 || sc.Field(0).Name != "id" || !arrow.TypeEqual(sc.Field(1).Type, Schema.Field(1).Type) || sc.Field(2).Type.ID() != arrow.STRING {
			t.Fatalf("%s: %d rows, schema %v", p, tbl.NumRows(), tbl.Schema())
		}
		tr := array.NewTableReader(tbl, 0)
		row := int64(fi * 700)
		for tr.Next() {
			rec := tr.RecordBatch()
			ids := rec.Column(0).(*array.Int64)
			lists := rec.Column(1).(*array.List)
			toks := lists.ListValues().(*array.Int32)
			texts := rec.Column(2).(*array.String)
			for i := 0; i < int(rec.NumRows()); i++ {
				if ids.Value(i) != row {
					t.Fatalf("id %d, want %d", ids.Value(i), row)
				}
				s, e := lists.ValueOffsets(i)
				if e-s < 1 || e-s > 8*40 {
					t.Fatalf("row %d: %d tokens", row, e-s)
				}
				for j := s; j < e; j++ {
					if v := toks.Value(int(j)); v < 0 || v >= Vocab {
						t.Fatalf("token %d", v)
					}
				}
				tokens += int(e - s)
				if texts.IsNull(i) {
					nulls++
				}
				row++
			}
		}
		tr.Release()
		tbl.Release()
	}
	if nulls == 0 || nulls > 1400/4 {
		t.Errorf("%d null texts of 1400", nulls)
	}
	if mean := tokens / 1400; mean < 20 || mean > 120 {
		t.Errorf("mean document length %d, configured median 40", mean)
	}
}

// TestFlags checks the metadata for the codec, page version, page index,
// dictionary, row group and page size flags.
func TestFlags(t *testing.T) {
	for _, codec := range []string{"zstd", "snappy", "gzip", "lz4_raw", "brotli", "none"} {
		for _, v := range []int{1, 2} {
			for _, flags := range []struct{ pi, dict bool }{{true, false}, {false, true}} {
				name := fmt.Sprintf("%s_v%d_pi%v_dict%v", codec, v, flags.pi, flags.dict)
				t.Run(name, func(t *testing.T) {
					res := run(t, Config{RowsPerFile: 250, RowGroupRows: 100, PageSize: 2048, MeanTokens: 16, Codec: codec, PageVersion: v, PageIndex: flags.pi, Dictionary: flags.dict})
					checkFlags(t, res.Files[0], codec, v, flags.pi, flags.dict)
				})
			}
		}
	}
}

func checkFlags(t *testing.T, path, codec string, version int, pageIndex, dict bool) {
	t.Helper()
	want, _ := ParseCodec(codec)
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	md := r.MetaData()
	if md.NumRowGroups() != 3 || md.NumRows != 250 {
		t.Fatalf("%d row groups, %d rows", md.NumRowGroups(), md.NumRows)
	}
	pages := 0
	for rg := 0; rg < md.NumRowGroups(); rg++ {
		for c := 0; c < md.NumColumns(); c++ {
			cc, err := md.RowGroup(rg).ColumnChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			if cc.Compression() != want {
				t.Errorf("column %d codec %v, want %v", c, cc.Compression(), want)
			}
			if cc.HasDictionaryPage() != dict {
				t.Errorf("column %d dictionary %v, want %v", c, cc.HasDictionaryPage(), dict)
			}
			if _, ok := md.RowGroup(rg).OffsetIndexLocation(c); ok != pageIndex {
				t.Errorf("column %d offset index %v, want %v", c, ok, pageIndex)
			}
			pr, err := r.RowGroup(rg).GetColumnPageReader(c)
			if err != nil {
				t.Fatal(err)
			}
			for pr.Next() {
				typ := pr.Page().Type()
				switch {
				case typ == 2: // dictionary
				case version == 1 && typ != 0, version == 2 && typ != 3:
					t.Fatalf("column %d: page type %v for version %d", c, typ, version)
				}
				if c == 1 && typ != 2 {
					pages++
				}
			}
			if err := pr.Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// ~16 tokens × 250 rows × 4 bytes = 16 KB of tokens in 2 KB pages
	if pages < 6 {
		t.Errorf("input_ids has %d pages; page size not honoured", pages)
	}
	_ = parquet.DataPageV2
}

func TestBadConfig(t *testing.T) {
	for _, c := range []Config{
		{},
		{Dir: "x", Codec: "lzo"},
		{Dir: "x", PageVersion: 3},
		{Dir: "x", Files: -1},
		{Dir: "x", PageSize: -5},
		{Dir: "x", Prefix: "a/b"},
	} {
		if _, err := Run(context.Background(), c); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: error %v, want ErrConfig", c, err)
		}
	}
	// an unwritable directory fails with the path
	dir := filepath.Join(t.TempDir(), "f")
	os.WriteFile(dir, nil, 0o644)
	if _, err := Run(context.Background(), Config{Dir: dir}); err == nil {
		t.Error("writing under a file succeeded")
	}
}

func BenchmarkRun(b *testing.B) {
	dir := b.TempDir()
	b.ReportAllocs()
	var bytes int64
	for i := 0; i < b.N; i++ {
		res, err := Run(context.Background(), Config{Dir: dir, RowsPerFile: 2000, MeanTokens: 256, Seed: uint64(i)})
		if err != nil {
			b.Fatal(err)
		}
		bytes = res.Bytes
	}
	b.SetBytes(2000 * 256 * 4)
	b.ReportMetric(float64(bytes), "file-bytes")
}
