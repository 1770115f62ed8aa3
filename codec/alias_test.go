package codec

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

// decodeChecked decodes every page of cp with its continuation pages (up to
// three) and checks the rows against ref (pqarrow); it returns how many
// pages said Aliased. Each page's bytes are a private copy, so check may
// mutate them.
func decodeChecked(t *testing.T, d *Decoder, cp *chunkPages, ref arrow.Array, span bool,
	check func(pg *Page, page []byte)) (aliased int) {
	t.Helper()
	var dict *Dictionary
	if cp.dict != nil {
		var err error
		if dict, err = d.Dictionary(cp.chunk, cp.dict, cp.dOff); err != nil {
			t.Fatal(err)
		}
	}
	row := 0
	for i := range cp.pages {
		pages := make([][]byte, 0, 4)
		for k := i; k < len(cp.pages) && k < i+4 && (span || k == i); k++ {
			pages = append(pages, append([]byte(nil), cp.pages[k]...))
		}
		pg, err := d.DecodeSpan(cp.chunk, dict, pages, cp.offs[i:i+len(pages)])
		if err != nil {
			t.Fatalf("page %d: %v", i, err)
		}
		n := pg.Rows()
		m := n
		if pg.LastRowMayContinue() && n > 0 {
			m-- // its last row is cut; the next page does not hold it either
		}
		want, err := ProjectLike(array.NewSlice(ref, int64(row), int64(row+m)), pg.Array().DataType())
		if err != nil {
			t.Fatal(err)
		}
		got := array.NewSlice(pg.Array(), 0, int64(m))
		if !Equal(got, want) {
			t.Fatalf("page %d (aliased %v): rows differ from pqarrow", i, pg.Aliased())
		}
		if err := got.(*array.List).ValidateFull(); err != nil {
			t.Fatalf("page %d: %v", i, err)
		}
		got.Release()
		want.Release()
		if pg.Aliased() {
			aliased++
		}
		if check != nil {
			check(pg, pages[0])
		}
		row += n
		pg.Release()
	}
	if row != ref.Len() {
		t.Fatalf("%d rows, want %d", row, ref.Len())
	}
	return aliased
}

// TestAliasInput checks Options.AliasInput: uncompressed PLAIN list pages
// whose rows end in the page reference the caller's bytes (a mutation shows
// in the array), everything else is a copy, and the rows equal pqarrow's.
func TestAliasInput(t *testing.T) {
	tokens := tokenRows(7, 600, 3000, false)
	defer tokens.Release()
	for _, tc := range []struct {
		name   string
		o      genOpts
		span   bool
		alias  bool
		expect string // "all", "some", "none"
	}{
		{"v1 plain page", genOpts{codec: compress.Codecs.Uncompressed, pageSize: 8 << 10}, false, true, "all"},
		{"v2 plain span", genOpts{codec: compress.Codecs.Uncompressed, pageSize: 8 << 10, v2: true}, true, true, "all"},
		{"v1 plain span", genOpts{codec: compress.Codecs.Uncompressed, pageSize: 8 << 10}, true, true, "some"},
		{"v1 plain option off", genOpts{codec: compress.Codecs.Uncompressed, pageSize: 8 << 10}, false, false, "none"},
		{"v1 zstd", genOpts{codec: compress.Codecs.Zstd, pageSize: 8 << 10}, true, true, "none"},
		{"v2 snappy", genOpts{codec: compress.Codecs.Snappy, pageSize: 8 << 10, v2: true}, true, true, "none"},
		{"v1 dict", genOpts{codec: compress.Codecs.Uncompressed, pageSize: 8 << 10, dict: true}, false, true, "none"},
		{"v1 zstd short rows", genOpts{codec: compress.Codecs.Zstd, pageSize: 8 << 10}, true, true, "none"},
		{"v2 zstd short rows", genOpts{codec: compress.Codecs.Zstd, pageSize: 8 << 10, v2: true}, true, true, "none"},
		{"v1 plain short rows", genOpts{codec: compress.Codecs.Uncompressed, pageSize: 8 << 10}, false, true, "all"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := tokens
			if strings.HasSuffix(tc.name, "short rows") {
				// more rows than the room kept ahead of decompressed values
				src = tokenRows(9, 6000, 2, false)
				defer src.Release()
			}
			m := openMem(t, writeParquet(t, src, tc.o))
			cp := m.pages(t, 0, 0)
			ref := m.column(t, 0, 0)
			defer ref.Release()
			d := NewDecoder(Options{AliasInput: tc.alias})
			defer d.Close()
			spanned := 0
			aliased := decodeChecked(t, d, cp, ref, tc.span, func(pg *Page, page []byte) {
				vals := pg.Array().(*array.List).ListValues().(*array.Int32)
				if pg.Continued() > 0 && !pg.Aliased() && tc.alias {
					spanned++
				}
				if vals.Len() == 0 {
					return
				}
				// Flip every byte of the body: an aliased array sees it.
				v := vals.Value(0)
				hdr, hn, _ := ParsePageHeader(page)
				for p := hn; p < hn+int(hdr.CompressedSize); p++ {
					page[p] ^= 0xff
				}
				if changed := vals.Value(0) != v; changed != pg.Aliased() {
					t.Fatalf("mutating the input changed the array: %v, Aliased: %v", changed, pg.Aliased())
				}
			})
			switch tc.expect {
			case "all":
				if aliased != len(cp.pages) {
					t.Errorf("%d of %d pages aliased, want all", aliased, len(cp.pages))
				}
			case "some":
				if aliased == 0 || spanned == 0 {
					t.Errorf("%d of %d pages aliased, %d completed from following pages; want some of each", aliased, len(cp.pages), spanned)
				}
			case "none":
				if aliased != 0 {
					t.Errorf("%d pages aliased, want none", aliased)
				}
			}
		})
	}
}

// TestFastListRetain releases a page's list and keeps its values (and the
// reverse), from another goroutine, with a checked allocator: the buffer
// from Mem goes back exactly once, after the last holder.
func TestFastListRetain(t *testing.T) {
	tokens := tokenRows(8, 300, 2000, false)
	defer tokens.Release()
	for _, codec := range []compress.Compression{compress.Codecs.Zstd, compress.Codecs.Uncompressed} {
		for _, dict := range []bool{false, true} {
			m := openMem(t, writeParquet(t, tokens, genOpts{codec: codec, pageSize: 8 << 10, dict: dict}))
			cp := m.pages(t, 0, 0)
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			d := NewDecoder(Options{Mem: mem, AliasInput: true})
			var dc *Dictionary
			if cp.dict != nil {
				var err error
				if dc, err = d.Dictionary(cp.chunk, cp.dict, cp.dOff); err != nil {
					t.Fatal(err)
				}
			}
			for i := range cp.pages {
				pg, err := d.DecodeSpan(cp.chunk, dc, cp.pages[i:min(i+3, len(cp.pages))], cp.offs[i:min(i+3, len(cp.pages))])
				if err != nil {
					t.Fatal(err)
				}
				list := pg.Array().(*array.List)
				vals := list.ListValues().(*array.Int32)
				want := append([]int32(nil), vals.Int32Values()...)
				keep := arrow.Array(vals)
				if i%2 == 1 {
					keep = list
				}
				keep.Retain()
				done := make(chan struct{})
				go func() {
					pg.Release()
					close(done)
				}()
				<-done
				got := list.ListValues().(*array.Int32).Int32Values()
				for k := range want {
					if got[k] != want[k] {
						t.Fatalf("page %d: value %d changed after the Page's Release", i, k)
					}
				}
				keep.Release()
			}
			d.Close()
			mem.AssertSize(t, 0)
		}
	}
}

// TestAllocsByShape reports the general path's allocations per page for
// common shapes and bounds each (the list<fixed-width> path at 4).
func TestAllocsByShape(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts (not under -race or -short)")
	}
	n := 20000
	i32 := array.NewInt32Builder(memory.DefaultAllocator)
	i64 := array.NewInt64Builder(memory.DefaultAllocator)
	f64 := array.NewFloat64Builder(memory.DefaultAllocator)
	str := array.NewStringBuilder(memory.DefaultAllocator)
	for i := 0; i < n; i++ {
		i32.Append(int32(i * 7 % 1000))
		i64.Append(int64(i) * 1e9)
		f64.Append(float64(i) / 3)
		str.Append("row-" + string(rune('a'+i%26)) + "-" + string(rune('a'+i/26%26)))
	}
	tokens := tokenRows(4, 2000, 2000, false)
	arrs := []struct {
		name  string
		arr   arrow.Array
		dict  bool
		codec compress.Compression
		alias bool
		max   float64
	}{
		{"list<int32> zstd", tokens, false, compress.Codecs.Zstd, false, 4},
		{"list<int32> dict zstd", tokens, true, compress.Codecs.Zstd, false, 4},
		{"list<int32> none", tokens, false, compress.Codecs.Uncompressed, false, 4},
		{"list<int32> none aliased", tokens, false, compress.Codecs.Uncompressed, true, 4},
		{"int32 zstd", i32.NewArray(), false, compress.Codecs.Zstd, false, 3},
		{"int32 dict zstd", nil, true, compress.Codecs.Zstd, false, 3},
		{"int64 zstd", i64.NewArray(), false, compress.Codecs.Zstd, false, 3},
		{"double zstd", f64.NewArray(), false, compress.Codecs.Zstd, false, 3},
		{"string zstd", str.NewArray(), false, compress.Codecs.Zstd, false, 6},
		{"string dict zstd", nil, true, compress.Codecs.Zstd, false, 7},
	}
	for k := range arrs {
		if arrs[k].arr == nil {
			arrs[k].arr = arrs[k-1].arr
		}
	}
	for _, a := range arrs {
		m := openMem(t, writeParquet(t, a.arr, genOpts{codec: a.codec, pageSize: 8 << 10, dict: a.dict}))
		cp := m.pages(t, 0, 0)
		d := NewDecoder(Options{AliasInput: a.alias})
		var dict *Dictionary
		if cp.dict != nil {
			var err error
			if dict, err = d.Dictionary(cp.chunk, cp.dict, cp.dOff); err != nil {
				t.Fatal(err)
			}
		}
		got := allocsPerPage(t, d, cp, dict)
		t.Logf("%-26s %2d pages  %v allocations per page", a.name, len(cp.pages), got)
		if got > a.max {
			t.Errorf("%s: %v allocations per page, want at most %v", a.name, got, a.max)
		}
		d.Close()
	}
	for _, a := range arrs[4:] {
		if a.arr != tokens {
			a.arr.Release()
		}
	}
	tokens.Release()
}
