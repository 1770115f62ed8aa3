package codec

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

// TestRowsCrossPages writes list<int32> rows longer than arrow-go's 1024
// level write batch with V1 pages and no page index, so pages start and end
// mid-row, and checks that every row is delivered exactly once, whole.
func TestRowsCrossPages(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    genOpts
	}{
		{"v1 plain", genOpts{codec: compress.Codecs.Snappy, pageSize: 1 << 10}},
		{"v1 dict zstd", genOpts{codec: compress.Codecs.Zstd, pageSize: 2 << 10, dict: true}},
		{"v2", genOpts{codec: compress.Codecs.Uncompressed, pageSize: 1 << 10, v2: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			arr := tokenRows(1, 600, 5000, true)
			defer arr.Release()
			m := openMem(t, writeParquet(t, arr, tc.o))
			cp := m.pages(t, 0, 0)
			ref := m.column(t, 0, 0)
			defer ref.Release()
			if !Equal(ref, arr) {
				t.Fatal("pqarrow does not read back what was written")
			}
			d := NewDecoder(Options{})
			defer d.Close()
			if err := checkChunk(t, d, cp, ref); err != nil {
				t.Fatal(err)
			}
			// Count pages that start mid-row, and check the head is dropped.
			var dict *Dictionary
			if cp.dict != nil {
				var err error
				if dict, err = d.Dictionary(cp.chunk, cp.dict, cp.dOff); err != nil {
					t.Fatal(err)
				}
			}
			mid, rows := 0, 0
			for i := range cp.pages {
				pg, err := d.DecodePage(cp.chunk, dict, cp.pages[i], cp.offs[i])
				if err != nil {
					t.Fatal(err)
				}
				if pg.LeadingLevels() > 0 {
					mid++
				}
				if tc.o.v2 && (pg.LeadingLevels() != 0 || pg.LastRowMayContinue()) {
					t.Errorf("v2 page %d: leading %d, may continue %v", i, pg.LeadingLevels(), pg.LastRowMayContinue())
				}
				rows += pg.Rows()
				pg.Release()
			}
			if rows != arr.Len() {
				t.Errorf("pages start %d rows, want %d", rows, arr.Len())
			}
			if !tc.o.v2 && mid == 0 {
				t.Errorf("no V1 page starts mid-row among %d pages; the test does not test", len(cp.pages))
			}
			t.Logf("%d pages, %d start mid-row", len(cp.pages), mid)
		})
	}
}

// TestSpanWholeRow checks DecodeSpan on a row spanning several pages: the
// first page's last row, completed, equals the written row.
func TestSpanWholeRow(t *testing.T) {
	b := array.NewListBuilder(memory.DefaultAllocator, arrow.PrimitiveTypes.Int32)
	vb := b.ValueBuilder().(*array.Int32Builder)
	for r, l := range []int{10, 3000, 5, 2500, 0, 1, 4100} {
		b.Append(true)
		for j := 0; j < l; j++ {
			vb.Append(int32(r*10000 + j))
		}
	}
	arr := b.NewArray()
	b.Release()
	defer arr.Release()
	m := openMem(t, writeParquet(t, arr, genOpts{codec: compress.Codecs.Uncompressed, pageSize: 256}))
	cp := m.pages(t, 0, 0)
	d := NewDecoder(Options{})
	defer d.Close()
	found := false
	row := 0
	for i := range cp.pages {
		pg, err := d.DecodeSpan(cp.chunk, nil, cp.pages[i:], cp.offs[i:])
		if err != nil {
			t.Fatal(err)
		}
		if pg.Continued() >= 2 {
			found = true
		}
		want := array.NewSlice(arr, int64(row), int64(row+pg.Rows()))
		if !Equal(pg.Array(), want) {
			t.Fatalf("page %d: %s", i, firstDiff(pg.Array(), want))
		}
		want.Release()
		row += pg.Rows()
		pg.Release()
	}
	if !found {
		t.Error("no row spans three pages; the test does not test")
	}
}
