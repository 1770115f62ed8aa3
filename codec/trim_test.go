package codec

import (
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

// TestScratchShrinksAfterAHugePage: a page with a huge value count grows a
// long-lived Decoder's scratch; once later pages are small again the
// scratch goes back to their size instead of keeping the high-water mark.
func TestScratchShrinksAfterAHugePage(t *testing.T) {
	ints := func(n int) *chunkPages {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		defer b.Release()
		for i := 0; i < n; i++ {
			if i%5 == 0 {
				b.AppendNull()
			} else {
				b.Append(int64(i))
			}
		}
		a := b.NewArray()
		defer a.Release()
		m := openMem(t, writeParquet(t, a, genOpts{codec: compress.Codecs.Snappy, pageSize: 1 << 30}))
		return m.pages(t, 0, 0)
	}
	huge, small := ints(1<<20), ints(1000)
	if len(huge.pages) != 1 || len(small.pages) != 1 {
		t.Fatalf("%d and %d pages, want 1 each", len(huge.pages), len(small.pages))
	}
	d := NewDecoder(Options{})
	defer d.Close()
	decode := func(cp *chunkPages) {
		t.Helper()
		p, err := d.DecodePage(cp.chunk, nil, cp.pages[0], cp.offs[0])
		if err != nil {
			t.Fatal(err)
		}
		p.Release()
	}
	decode(huge)
	grown := d.ScratchBytes()
	if grown < 8<<20 {
		t.Fatalf("scratch %d bytes after a page of 2^20 values: the test does not grow it", grown)
	}
	for i := 0; i < 2*trimEvery; i++ {
		decode(small)
	}
	if got := d.ScratchBytes(); got > 2*trimFloor*8 {
		t.Fatalf("scratch still %d bytes after %d small pages (%d after the huge one)", got, 2*trimEvery, grown)
	}
	// steady small pages then keep their scratch: no regrowth each window
	allocs := testing.AllocsPerRun(trimEvery, func() { decode(small) })
	t.Logf("scratch %d → %d bytes; %.1f allocations per small page", grown, d.ScratchBytes(), allocs)
}

// TestStateDictBytesBound: the column readers a Decoder caches keep their
// dictionaries alive; MaxStateDictBytes bounds them (the one in use kept).
func TestStateDictBytesBound(t *testing.T) {
	var chunks []*chunkPages
	var dicts []*Dictionary
	for f := 0; f < 4; f++ {
		b := array.NewStringBuilder(memory.DefaultAllocator)
		for i := 0; i < 2000; i++ {
			b.Append(strings.Repeat("v", 200) + strconv.Itoa(f*10000+i%500))
		}
		a := b.NewArray()
		b.Release()
		m := openMem(t, writeParquet(t, a, genOpts{codec: compress.Codecs.Snappy, pageSize: 1 << 20, dict: true}))
		a.Release()
		cp := m.pages(t, 0, 0)
		if cp.dict == nil {
			t.Fatal("no dictionary page")
		}
		chunks = append(chunks, cp)
	}
	for _, limit := range []int64{0, 1} {
		d := NewDecoder(Options{MaxStateDictBytes: limit})
		dicts = dicts[:0]
		for _, cp := range chunks {
			dict, err := d.Dictionary(cp.chunk, cp.dict, cp.dOff)
			if err != nil {
				t.Fatal(err)
			}
			dicts = append(dicts, dict)
			p, err := d.DecodePage(cp.chunk, dict, cp.pages[0], cp.offs[0])
			if err != nil {
				t.Fatal(err)
			}
			p.Release()
		}
		held := 0
		for _, st := range d.states {
			if st.dict != nil {
				held++
			}
		}
		want := len(chunks)
		if limit > 0 {
			want = 1
		}
		if held != want {
			t.Errorf("MaxStateDictBytes %d: %d readers hold a dictionary, want %d", limit, held, want)
		}
		d.Close()
	}
}
