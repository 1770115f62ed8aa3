package codec

import (
	"sync"
	"testing"
)

func TestPoolAllocator(t *testing.T) {
	p := &PoolAllocator{}
	tests := []struct {
		size, wantCap int
	}{{0, 64}, {1, 64}, {64, 64}, {65, 128}, {1000, 1024}, {1 << 20, 1 << 20}}
	for _, tc := range tests {
		b := p.Allocate(tc.size)
		if len(b) != tc.size || cap(b) != tc.wantCap {
			t.Errorf("Allocate(%d): len %d cap %d, want cap %d", tc.size, len(b), cap(b), tc.wantCap)
		}
		p.Free(b)
	}
	// a freed buffer comes back
	b := p.Allocate(3000)
	b[0] = 42
	p.Free(b)
	c := p.Allocate(2500)
	if &c[0] != &b[0] {
		t.Error("freed buffer not reused")
	}
	// Reallocate keeps contents
	c[1] = 7
	d := p.Reallocate(10000, c)
	if len(d) != 10000 || d[0] != 42 || d[1] != 7 {
		t.Errorf("Reallocate lost contents: len %d %v", len(d), d[:2])
	}
	if e := p.Reallocate(10, d); &e[0] != &d[0] || len(e) != 10 {
		t.Error("shrinking Reallocate moved the buffer")
	}
	// foreign buffers are dropped, not pooled
	p.Free(make([]byte, 100))
	// the per-class bound holds
	big := &PoolAllocator{MaxPerClass: 100}
	var bufs [][]byte
	for i := 0; i < 10; i++ {
		bufs = append(bufs, big.Allocate(32<<20))
	}
	for _, b := range bufs {
		big.Free(b)
	}
	if n := len(big.classes[25].free); n != 2 {
		t.Errorf("32 MiB class keeps %d buffers, want 2", n)
	}
	// an owner's byte bound replaces the 64 MiB default
	wide := &PoolAllocator{MaxPerClass: 100, MaxBytesPerClass: 256 << 20}
	for _, b := range bufs {
		wide.Free(b)
	}
	if n := len(wide.classes[25].free); n != 8 {
		t.Errorf("32 MiB class under a 256 MiB bound keeps %d buffers, want 8", n)
	}
	// concurrent use (run with -race)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				b := p.Allocate(100 + i)
				b[0] = byte(i)
				p.Free(b)
			}
		}()
	}
	wg.Wait()
}

// TestPoolAllocatorSubSlice frees sub-slices: the pool keeps only what the
// slice itself covers (a power-of-two capacity) and never hands out memory
// outside a freed slice.
func TestPoolAllocatorSubSlice(t *testing.T) {
	p := &PoolAllocator{}
	b := p.Allocate(1024)
	// b[8:] has capacity 1016: not a class, dropped
	p.Free(b[8:])
	if c := p.Allocate(1000); &c[:1][0] == &b[8] || &c[:1][0] == &b[0] {
		t.Error("a sub-slice of odd capacity was pooled")
	}
	// b[512:] covers exactly 512 bytes: reused as such, within b
	p.Free(b[512:])
	c := p.Allocate(500)
	if &c[0] != &b[512] || cap(c) != 512 {
		t.Errorf("sub-slice not reused as its own 512 bytes (cap %d)", cap(c))
	}
	// listHold frees what Allocate returned even when its Buffer holds a
	// sub-slice
	h := &listHold{mem: p, base: p.Allocate(4096)}
	base := &h.base[0]
	h.Free(h.base[3:100])
	h.Free(nil) // a second Free frees nothing
	if d := p.Allocate(4000); &d[0] != base {
		t.Error("listHold did not return its base to the pool")
	}
	if e := p.Allocate(4000); &e[0] == base {
		t.Error("base returned twice")
	}
}
