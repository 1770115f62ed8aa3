package codec

import (
	"errors"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

// fuzzChunk is a column chunk a fuzzed page is decoded as.
type fuzzChunk struct {
	cp   *chunkPages
	dict *Dictionary
}

var (
	fuzzOnce   sync.Once
	fuzzChunks []fuzzChunk
)

// fuzzCorpus writes a few small files of different shapes and codecs with
// arrow-go; their pages seed FuzzDecodePage and their chunks give fuzzed
// pages a column to be decoded as. Each file is one page of at most
// maxFuzzInput bytes (see there).
func fuzzCorpus(t testing.TB) []fuzzChunk {
	fuzzOnce.Do(func() {
		mem := memory.DefaultAllocator
		var arrs []arrow.Array
		var opts []genOpts
		add := func(a arrow.Array, o genOpts) { arrs, opts = append(arrs, a), append(opts, o) }
		add(tokenRows(5, 10, 20, true), genOpts{codec: compress.Codecs.Zstd, pageSize: 512, dict: true})
		add(tokenRows(6, 5, 12, false), genOpts{codec: compress.Codecs.Snappy, pageSize: 512})
		ib := array.NewInt32Builder(mem)
		for i := 0; i < 100; i++ {
			if i%5 == 0 {
				ib.AppendNull()
			} else {
				ib.Append(int32(i * 7))
			}
		}
		add(ib.NewArray(), genOpts{codec: compress.Codecs.Zstd, pageSize: 256, v2: true})
		sb := array.NewStringBuilder(mem)
		for i := 0; i < 150; i++ {
			if i%9 == 0 {
				sb.AppendNull()
			} else {
				sb.Append(string(rune('a' + i%26)))
			}
		}
		add(sb.NewArray(), genOpts{codec: compress.Codecs.Gzip, pageSize: 256, dict: true})
		st := arrow.StructOf(arrow.Field{Name: "x", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64), Nullable: true})
		stb := array.NewStructBuilder(mem, st)
		lb := stb.FieldBuilder(0).(*array.ListBuilder)
		fb := lb.ValueBuilder().(*array.Float64Builder)
		for i := 0; i < 60; i++ {
			if i%11 == 0 {
				stb.AppendNull()
				continue
			}
			stb.Append(true)
			if i%7 == 0 {
				lb.AppendNull()
				continue
			}
			lb.Append(true)
			for j := 0; j < i%5; j++ {
				fb.Append(float64(i) / 3)
			}
		}
		add(stb.NewArray(), genOpts{codec: compress.Codecs.Brotli, pageSize: 256})
		bb := array.NewBooleanBuilder(mem)
		for i := 0; i < 400; i++ {
			bb.Append(i%3 == 0)
		}
		add(bb.NewArray(), genOpts{codec: compress.Codecs.Lz4Raw, pageSize: 128})
		d := NewDecoder(Options{})
		defer d.Close()
		for i, a := range arrs {
			m := openMem(t, writeParquet(t, a, opts[i]))
			a.Release()
			cp := m.pages(t, 0, 0)
			fc := fuzzChunk{cp: cp}
			if cp.dict != nil {
				dict, err := d.Dictionary(cp.chunk, cp.dict, cp.dOff)
				if err != nil {
					t.Fatal(err)
				}
				fc.dict = dict
			}
			fuzzChunks = append(fuzzChunks, fc)
		}
	})
	return fuzzChunks
}

// maxFuzzInput bounds the bytes the codec's fuzz targets parse: longer
// inputs are cut to this length. A page of every shape and codec fits in
// it, and no input is slow (none of ~400,000 runs, minimization included,
// took over 0.2 s); the unit tests decode full-size pages. The bound keeps the fuzzer's minimization of each new input
// short: Go minimizes with O(n²) candidate cuts at ~0.3-1 ms a run here
// (mostly coverage bookkeeping over every instrumented package, arrow-go
// included), so pages of 1-3 KiB held both workers for the full
// -fuzzminimizetime (60 s) and the run reported 0 execs/s.
const maxFuzzInput = 256

// FuzzDecodePage decodes arbitrary bytes as a page of one of a few real
// column chunks: no panic, no allocation beyond the Options caps, no hang,
// errors of this package's kinds only; where the consumer-buffer path also
// decodes the page, both paths agree.
func FuzzDecodePage(f *testing.F) {
	chunks := fuzzCorpus(f)
	for i, fc := range chunks {
		for _, p := range fc.cp.pages {
			f.Add(uint8(i), p)
		}
	}
	f.Fuzz(func(t *testing.T, sel uint8, page []byte) {
		page = page[:min(len(page), maxFuzzInput)]
		fc := chunks[int(sel)%len(chunks)]
		d := NewDecoder(Options{MaxPageBytes: 1 << 20, MaxPageValues: 1 << 16})
		defer d.Close()
		rows, cont, rerr := d.RowStarts(fc.cp.chunk, page, 100)
		if rerr != nil {
			var e *Error
			if !errors.As(rerr, &e) || e.Off != 100 || !(errors.Is(rerr, ErrCorrupt) || errors.Is(rerr, ErrUnsupported) ||
				errors.Is(rerr, ErrCRC) || errors.Is(rerr, ErrPageTooLarge)) {
				t.Fatalf("RowStarts: unexpected error %v", rerr)
			}
		}
		pg, err := d.DecodePage(fc.cp.chunk, fc.dict, page, 100)
		if err == nil && rerr == nil && (rows != pg.Rows() || cont != (pg.LeadingLevels() > 0)) {
			t.Fatalf("RowStarts: %d rows, continues %v; decoded %d rows, %d leading levels", rows, cont, pg.Rows(), pg.LeadingLevels())
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Off != 100 || !(errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnsupported) ||
				errors.Is(err, ErrCRC) || errors.Is(err, ErrPageTooLarge)) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		defer pg.Release()
		if err := array.ValidateFull(pg.Array()); err != nil {
			t.Fatalf("invalid array: %v", err)
		}
		// as the head of a span, followed by itself and a real page
		sp, err := d.DecodeSpan(fc.cp.chunk, fc.dict, [][]byte{page, page, fc.cp.pages[len(fc.cp.pages)-1]}, []int64{100, 200, 300})
		if err == nil {
			if err := array.ValidateFull(sp.Array()); err != nil {
				t.Fatalf("invalid span array: %v", err)
			}
			if sp.Rows() != pg.Rows() {
				t.Fatalf("span has %d rows, page alone %d", sp.Rows(), pg.Rows())
			}
			sp.Release()
		}
		// the consumer-buffer path, where it applies, agrees
		h, _, _ := ParsePageHeader(page)
		n := int(h.NumValues())
		values, offsets := make([]int32, n), make([]int32, n+1)
		res, err := d.DecodeListInt32Into(fc.cp.chunk, fc.dict, page, 100, values, offsets)
		if err != nil {
			return
		}
		list, ok := pg.Array().(*array.List)
		if !ok || res.Rows != list.Len() || res.LeadingLevels != pg.LeadingLevels() {
			t.Fatalf("into: %+v, general: %d rows lead %d", res, pg.Rows(), pg.LeadingLevels())
		}
		elems := list.ListValues().(*array.Int32)
		for r := 0; r < res.Rows; r++ {
			s, e := list.ValueOffsets(r)
			if int64(offsets[r+1]-offsets[r]) != e-s {
				t.Fatalf("row %d: %d values, general %d", r, offsets[r+1]-offsets[r], e-s)
			}
			for j := int64(0); j < e-s; j++ {
				if values[int64(offsets[r])+j] != elems.Value(int(s+j)) {
					t.Fatalf("row %d value %d differs", r, j)
				}
			}
		}
	})
}
