package codec

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

// TestListInt32Into decodes list<int32> pages into consumer buffers and
// checks them against the general path, rows crossing pages included.
func TestListInt32Into(t *testing.T) {
	withEmpty := func() arrow.Array {
		// some empty rows: the levels then hold more than values
		b := array.NewListBuilder(memory.DefaultAllocator, arrow.PrimitiveTypes.Int32)
		defer b.Release()
		vb := b.ValueBuilder().(*array.Int32Builder)
		for r := 0; r < 300; r++ {
			b.Append(true)
			for j := 0; j < (r*37)%23*(r%3)*40; j++ {
				vb.Append(int32(r + j))
			}
		}
		return b.NewArray()
	}
	tokens := func() arrow.Array { return tokenRows(3, 400, 3000, false) }
	for _, tc := range []struct {
		name string
		arr  func() arrow.Array
		o    genOpts
	}{
		{"v1 plain", tokens, genOpts{codec: compress.Codecs.Snappy, pageSize: 4 << 10}},
		{"v1 dict", tokens, genOpts{codec: compress.Codecs.Zstd, pageSize: 4 << 10, dict: true}},
		{"v2 plain", tokens, genOpts{codec: compress.Codecs.Uncompressed, pageSize: 4 << 10, v2: true}},
		{"v1 empty lists", withEmpty, genOpts{codec: compress.Codecs.Snappy, pageSize: 4 << 10}},
		{"v1 dict empty lists", withEmpty, genOpts{codec: compress.Codecs.Zstd, pageSize: 4 << 10, dict: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			arr := tc.arr()
			defer arr.Release()
			m := openMem(t, writeParquet(t, arr, tc.o))
			cp := m.pages(t, 0, 0)
			d := NewDecoder(Options{})
			defer d.Close()
			var dict *Dictionary
			if cp.dict != nil {
				var err error
				if dict, err = d.Dictionary(cp.chunk, cp.dict, cp.dOff); err != nil {
					t.Fatal(err)
				}
			}
			// Rebuild the rows from the consumer buffers, appending each
			// page's leading values to the previous page's last row.
			var rows [][]int32
			crossed := 0
			for i := range cp.pages {
				h, _, _ := ParsePageHeader(cp.pages[i])
				n := int(h.NumValues())
				values, offsets := make([]int32, n), make([]int32, n+1)
				res, err := d.DecodeListInt32Into(cp.chunk, dict, cp.pages[i], cp.offs[i], values, offsets)
				if err != nil {
					t.Fatal(err)
				}
				if res.LeadingValues > 0 {
					crossed++
					if len(rows) == 0 {
						t.Fatal("first page starts mid-row")
					}
					rows[len(rows)-1] = append(rows[len(rows)-1], values[:res.LeadingValues]...)
				}
				if offsets[0] != int32(res.LeadingValues) || int(offsets[res.Rows]) != res.Values {
					t.Fatalf("page %d: offsets %d..%d, result %+v", i, offsets[0], offsets[res.Rows], res)
				}
				for r := 0; r < res.Rows; r++ {
					rows = append(rows, append([]int32(nil), values[offsets[r]:offsets[r+1]]...))
				}
				// the general path agrees on the page's rows
				pg, err := d.DecodePage(cp.chunk, dict, cp.pages[i], cp.offs[i])
				if err != nil {
					t.Fatal(err)
				}
				if pg.Rows() != res.Rows || pg.LeadingLevels() != res.LeadingLevels || pg.LastRowMayContinue() != res.LastRowMayContinue {
					t.Fatalf("page %d: general path %d rows lead %d cont %v, into %+v", i, pg.Rows(), pg.LeadingLevels(), pg.LastRowMayContinue(), res)
				}
				pg.Release()
			}
			if !tc.o.v2 && crossed == 0 {
				t.Error("no page continues a row; the test does not test")
			}
			list := arr.(*array.List)
			vals := list.ListValues().(*array.Int32).Int32Values()
			if len(rows) != list.Len() {
				t.Fatalf("%d rows, want %d", len(rows), list.Len())
			}
			for r := range rows {
				s, e := list.ValueOffsets(r)
				want := vals[s:e]
				if len(want) != len(rows[r]) {
					t.Fatalf("row %d: %d values, want %d", r, len(rows[r]), len(want))
				}
				for j := range want {
					if want[j] != rows[r][j] {
						t.Fatalf("row %d value %d: %d, want %d", r, j, rows[r][j], want[j])
					}
				}
			}
		})
	}
}

func TestInt32Into(t *testing.T) {
	b := array.NewInt32Builder(memory.DefaultAllocator)
	for i := 0; i < 5000; i++ {
		b.Append(int32(i*i) % 1000)
	}
	arr := b.NewArray()
	b.Release()
	defer arr.Release()
	m := openMem(t, writeParquet(t, arr, genOpts{codec: compress.Codecs.Zstd, pageSize: 4 << 10, dict: true}))
	cp := m.pages(t, 0, 0)
	d := NewDecoder(Options{})
	defer d.Close()
	dict, err := d.Dictionary(cp.chunk, cp.dict, cp.dOff)
	if err != nil {
		t.Fatal(err)
	}
	var got []int32
	for i := range cp.pages {
		dst := make([]int32, 1<<16)
		res, err := d.DecodeInt32Into(cp.chunk, dict, cp.pages[i], cp.offs[i], dst)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, dst[:res.Values]...)
		if _, err := d.DecodeInt32Into(cp.chunk, dict, cp.pages[i], cp.offs[i], dst[:res.Values-1]); !errors.Is(err, ErrShortBuffer) {
			t.Fatalf("short buffer: err = %v", err)
		}
	}
	want := arr.(*array.Int32).Int32Values()
	if len(got) != len(want) {
		t.Fatalf("%d values, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("value %d: %d, want %d", i, got[i], want[i])
		}
	}
	// Nulls and other shapes fall back with ErrUnsupported.
	nb := array.NewInt32Builder(memory.DefaultAllocator)
	nb.AppendValues([]int32{1, 2, 3}, []bool{true, false, true})
	nulls := nb.NewArray()
	nb.Release()
	defer nulls.Release()
	cn := openMem(t, writeParquet(t, nulls, genOpts{codec: compress.Codecs.Uncompressed, pageSize: 1 << 10})).pages(t, 0, 0)
	if _, err := d.DecodeInt32Into(cn.chunk, nil, cn.pages[0], cn.offs[0], make([]int32, 8)); !errors.Is(err, ErrUnsupported) {
		t.Errorf("nulls: err = %v, want ErrUnsupported", err)
	}
	lists := tokenRows(1, 10, 10, false)
	defer lists.Release()
	cl := openMem(t, writeParquet(t, lists, genOpts{codec: compress.Codecs.Uncompressed, pageSize: 1 << 10})).pages(t, 0, 0)
	if _, err := d.DecodeInt32Into(cl.chunk, nil, cl.pages[0], cl.offs[0], make([]int32, 1000)); !errors.Is(err, ErrUnsupported) {
		t.Errorf("list column: err = %v, want ErrUnsupported", err)
	}
	if _, err := d.DecodeListInt32Into(cp.chunk, dict, cp.pages[0], cp.offs[0], make([]int32, 1<<16), make([]int32, 1<<16)); !errors.Is(err, ErrUnsupported) {
		t.Errorf("flat column as list: err = %v, want ErrUnsupported", err)
	}
	_ = arrow.PrimitiveTypes.Int32
}

// TestIntoAllocs checks the consumer-buffer path allocates nothing per page
// once warm, for PLAIN and RLE_DICTIONARY pages.
func TestIntoAllocs(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts (not under -race or -short)")
	}
	for _, dictEnc := range []bool{false, true} {
		arr := tokenRows(4, 2000, 2000, false)
		m := openMem(t, writeParquet(t, arr, genOpts{codec: compress.Codecs.Zstd, pageSize: 8 << 10, dict: dictEnc}))
		arr.Release()
		cp := m.pages(t, 0, 0)
		d := NewDecoder(Options{})
		var dict *Dictionary
		if cp.dict != nil {
			var err error
			if dict, err = d.Dictionary(cp.chunk, cp.dict, cp.dOff); err != nil {
				t.Fatal(err)
			}
		}
		values, offsets := make([]int32, 1<<16), make([]int32, 1<<16+1)
		i := 0
		run := func() {
			if _, err := d.DecodeListInt32Into(cp.chunk, dict, cp.pages[i%len(cp.pages)], cp.offs[i%len(cp.pages)], values, offsets); err != nil {
				t.Fatal(err)
			}
			i++
		}
		for range cp.pages {
			run()
		}
		if a := testing.AllocsPerRun(200, run); a != 0 {
			t.Errorf("dictionary %v: %v allocations per page", dictEnc, a)
		}
		d.Close()
	}
}

// TestGeneralAllocs bounds the general path's allocations per list<int32>
// page: the Arrow arrays themselves (data, buffers, array values), nothing
// per value.
func TestGeneralAllocs(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts (not under -race or -short)")
	}
	arr := tokenRows(4, 2000, 2000, false)
	m := openMem(t, writeParquet(t, arr, genOpts{codec: compress.Codecs.Zstd, pageSize: 8 << 10}))
	arr.Release()
	cp := m.pages(t, 0, 0)
	d := NewDecoder(Options{})
	defer d.Close()
	if a := allocsPerPage(t, d, cp, nil); a > 4 {
		t.Errorf("%v allocations per page, want at most 4", a)
	}
}

// allocsPerPage decodes cp's pages round and round through DecodePage and
// returns the steady-state allocations per page (after one warm-up pass).
func allocsPerPage(t *testing.T, d *Decoder, cp *chunkPages, dict *Dictionary) float64 {
	t.Helper()
	i := 0
	run := func() {
		pg, err := d.DecodePage(cp.chunk, dict, cp.pages[i%len(cp.pages)], cp.offs[i%len(cp.pages)])
		if err != nil {
			t.Fatal(err)
		}
		pg.Release()
		i++
	}
	for range cp.pages {
		run()
	}
	return testing.AllocsPerRun(200, run)
}
