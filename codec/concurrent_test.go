package codec

import (
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

// TestConcurrentDecoders runs one Decoder per goroutine over the pages of
// one chunk with a shared Dictionary, releasing arrays on another
// goroutine (as a loader hands them to its consumer), under -race.
func TestConcurrentDecoders(t *testing.T) {
	arr := tokenRows(8, 300, 1500, false)
	defer arr.Release()
	m := openMem(t, writeParquet(t, arr, genOpts{codec: compress.Codecs.Zstd, pageSize: 2 << 10, dict: true}))
	cp := m.pages(t, 0, 0)
	d0 := NewDecoder(Options{})
	dict, err := d0.Dictionary(cp.chunk, cp.dict, cp.dOff)
	d0.Close()
	if err != nil {
		t.Fatal(err)
	}
	// rows per page, decoded once serially
	want := make([]arrow.Array, len(cp.pages))
	{
		d := NewDecoder(Options{})
		for i := range cp.pages {
			pg, err := d.DecodeSpan(cp.chunk, dict, cp.pages[i:], cp.offs[i:])
			if err != nil {
				t.Fatal(err)
			}
			want[i] = pg.Array()
			want[i].Retain()
			defer want[i].Release()
			pg.Release()
		}
		d.Close()
	}
	release := make(chan arrow.Array, 64)
	var rel sync.WaitGroup
	rel.Add(1)
	go func() {
		defer rel.Done()
		for a := range release {
			a.Release()
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			d := NewDecoder(Options{})
			defer d.Close()
			for r := 0; r < 3; r++ {
				for j := range cp.pages {
					i := (j*7 + g*5 + r) % len(cp.pages)
					pg, err := d.DecodeSpan(cp.chunk, dict, cp.pages[i:], cp.offs[i:])
					if err != nil {
						errs <- err
						return
					}
					if !Equal(pg.Array(), want[i]) {
						pg.Release()
						errs <- &Error{Op: "compare", Off: cp.offs[i]}
						return
					}
					a := pg.Array()
					a.Retain()
					pg.Release()
					release <- a
				}
			}
		}(g)
	}
	wg.Wait()
	close(release)
	rel.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
