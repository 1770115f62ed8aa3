package codec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

// checkRowStarts compares RowStarts with a decode of every page of cp:
// the rows that start in it and whether its head continues a row.
func checkRowStarts(t *testing.T, name string, d *Decoder, cp *chunkPages) (split int) {
	t.Helper()
	var dict *Dictionary
	if cp.dict != nil {
		var err error
		if dict, err = d.Dictionary(cp.chunk, cp.dict, cp.dOff); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	total := 0
	for i := range cp.pages {
		rows, cont, err := d.RowStarts(cp.chunk, cp.pages[i], cp.offs[i])
		if err != nil {
			t.Fatalf("%s page %d: %v", name, i, err)
		}
		pg, err := d.DecodePage(cp.chunk, dict, cp.pages[i], cp.offs[i])
		if err != nil {
			t.Fatalf("%s page %d: decode: %v", name, i, err)
		}
		if rows != pg.Rows() || cont != (pg.LeadingLevels() > 0) {
			t.Fatalf("%s page %d: RowStarts %d rows, continues %v; decoded %d rows, %d leading levels", name, i, rows, cont, pg.Rows(), pg.LeadingLevels())
		}
		if cont {
			split++
		}
		total += rows
		pg.Release()
	}
	if int64(total) != cp.rows {
		t.Fatalf("%s: pages start %d rows, the row group has %d", name, total, cp.rows)
	}
	return split
}

// TestRowStartsMatchesDecode: over lists long enough to cross V1 pages,
// nested lists, nulls and flat columns, in V1 and V2 pages, compressed
// or not, RowStarts agrees with decoding each page.
func TestRowStartsMatchesDecode(t *testing.T) {
	mem := memory.DefaultAllocator
	lists := func(n, maxLen int, nulls bool) arrow.Array {
		b := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int32)
		defer b.Release()
		vb := b.ValueBuilder().(*array.Int32Builder)
		for r := 0; r < n; r++ {
			if nulls && r%9 == 4 {
				b.AppendNull()
				continue
			}
			b.Append(true)
			for i := 0; i < (r*37)%maxLen; i++ {
				if nulls && i%13 == 7 {
					vb.AppendNull()
				} else {
					vb.Append(int32(r + i))
				}
			}
		}
		return b.NewArray()
	}
	nested := func(n int) arrow.Array {
		b := array.NewListBuilder(mem, arrow.ListOf(arrow.PrimitiveTypes.Int64))
		defer b.Release()
		ib := b.ValueBuilder().(*array.ListBuilder)
		vb := ib.ValueBuilder().(*array.Int64Builder)
		for r := 0; r < n; r++ {
			b.Append(true)
			for j := 0; j < r%4; j++ {
				ib.Append(true)
				for i := 0; i < (r*j)%300; i++ {
					vb.Append(int64(i))
				}
			}
		}
		return b.NewArray()
	}
	flat := func(n int) arrow.Array {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		for r := 0; r < n; r++ {
			b.Append(int64(r))
		}
		return b.NewArray()
	}
	d := NewDecoder(Options{})
	defer d.Close()
	splits := 0
	for _, a := range []struct {
		name string
		arr  arrow.Array
	}{
		{"long lists", lists(300, 2000, false)},
		{"lists with nulls", lists(800, 200, true)},
		{"nested", nested(300)},
		{"flat", flat(3000)},
	} {
		for _, o := range []genOpts{
			{codec: compress.Codecs.Uncompressed, pageSize: 1024},
			{codec: compress.Codecs.Snappy, pageSize: 4096, dict: true},
			{codec: compress.Codecs.Zstd, pageSize: 2048, v2: true},
			{codec: compress.Codecs.Gzip, pageSize: 8192, v2: true, dict: true},
			// V1 pages of the streaming codecs: only their level heads
			// are decompressed
			{codec: compress.Codecs.Zstd, pageSize: 2048},
			{codec: compress.Codecs.Gzip, pageSize: 8192},
			{codec: compress.Codecs.Brotli, pageSize: 4096, dict: true},
			{codec: compress.Codecs.Lz4Raw, pageSize: 1024},
		} {
			m := openMem(t, writeParquet(t, a.arr, o))
			for rg := 0; rg < m.rdr.NumRowGroups(); rg++ {
				splits += checkRowStarts(t, a.name, d, m.pages(t, rg, 0))
			}
		}
		a.arr.Release()
	}
	if splits == 0 {
		t.Fatal("no page started inside a row: the test does not cover V1 pages that split rows")
	}
	t.Logf("%d pages start inside a row", splits)
}

// TestRowStartsTestingData: RowStarts agrees with a decode on every chunk
// of parquet-testing that decodes.
func TestRowStartsTestingData(t *testing.T) {
	dir := testingDir(t)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	d := NewDecoder(Options{})
	defer d.Close()
	checked := 0
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".parquet") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		rdr, err := openParquet(path)
		if err != nil {
			continue
		}
		for rg := 0; rg < rdr.NumRowGroups(); rg++ {
			for col := 0; col < rdr.MetaData().NumColumns(); col++ {
				cp, err := readChunkPages(t, path, rdr, rg, col)
				if err != nil || cp.chunk.Encrypted {
					continue
				}
				if !decodes(d, cp) {
					continue
				}
				checkRowStarts(t, e.Name(), d, cp)
				checked++
			}
		}
		rdr.Close()
	}
	t.Logf("%d chunks checked", checked)
}

// decodes reports whether every page of cp decodes.
func decodes(d *Decoder, cp *chunkPages) bool {
	var dict *Dictionary
	if cp.dict != nil {
		var err error
		if dict, err = d.Dictionary(cp.chunk, cp.dict, cp.dOff); err != nil {
			return false
		}
	}
	for i := range cp.pages {
		pg, err := d.DecodePage(cp.chunk, dict, cp.pages[i], cp.offs[i])
		if err != nil {
			return false
		}
		pg.Release()
	}
	return true
}

// BenchmarkRowStarts counts the rows of V1 list<int32> pages (zstd, as
// arrow-go writes them without a page index), small and large, against
// decoding the pages whole: the work an index build adds per page it
// counts.
func BenchmarkRowStarts(b *testing.B) {
	for _, size := range []int64{8 << 10, 1 << 20} {
		bld := array.NewListBuilder(memory.DefaultAllocator, arrow.PrimitiveTypes.Int32)
		vb := bld.ValueBuilder().(*array.Int32Builder)
		for r := 0; r < 20000; r++ {
			bld.Append(true)
			for i := 0; i < (r*37)%700; i++ {
				vb.Append(int32(r*31 + i*7))
			}
		}
		arr := bld.NewArray()
		bld.Release()
		m := openMem(b, writeParquet(b, arr, genOpts{codec: compress.Codecs.Zstd, pageSize: size}))
		arr.Release()
		cp := m.pages(b, 0, 0)
		var bytes int64
		for _, p := range cp.pages {
			bytes += int64(len(p))
		}
		d := NewDecoder(Options{})
		for _, mode := range []string{"RowStarts", "DecodePage"} {
			b.Run(fmt.Sprintf("page%dKiB/%s", size>>10, mode), func(b *testing.B) {
				b.SetBytes(bytes)
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					for j, p := range cp.pages {
						if mode == "RowStarts" {
							if _, _, err := d.RowStarts(cp.chunk, p, cp.offs[j]); err != nil {
								b.Fatal(err)
							}
							continue
						}
						pg, err := d.DecodePage(cp.chunk, nil, p, cp.offs[j])
						if err != nil {
							b.Fatal(err)
						}
						pg.Release()
					}
				}
				b.ReportMetric(float64(len(cp.pages)), "pages/op")
			})
		}
		d.Close()
	}
}
