package codec

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// PoolAllocator is a memory.Allocator that keeps freed buffers in
// power-of-two size classes and hands them out again, so decoding page
// after page does not make the Go runtime zero and return fresh memory for
// every array. Buffers come back through Release of the arrays built on
// them; arrays never released are collected as usual. Memory handed out is
// not zeroed. Safe for concurrent use (arrays are often released on another
// goroutine than the one that decoded them).
type PoolAllocator struct {
	classes [maxClass + 1]poolClass
	// MaxPerClass bounds how many free buffers each class keeps; 0 means
	// 32. A class also keeps at most MaxBytesPerClass bytes of them (and
	// at least 2 buffers).
	MaxPerClass int
	// MaxBytesPerClass bounds the bytes of free buffers a class keeps; 0
	// means 64 MiB. An owner that holds a known window of decoded pages
	// sets it to that window: a burst of releases beyond the bound is
	// dropped, and the refill that follows is allocated and zeroed afresh.
	MaxBytesPerClass int64
}

const (
	minClass = 6  // 64 B
	maxClass = 28 // 256 MiB
)

type poolClass struct {
	mu   sync.Mutex
	free [][]byte
}

// DefaultAllocator is the PoolAllocator Decoders use when Options.Mem is
// nil.
var DefaultAllocator = &PoolAllocator{}

var _ memory.Allocator = (*PoolAllocator)(nil)

func class(size int) int {
	if size <= 1<<minClass {
		return minClass
	}
	return bits.Len(uint(size - 1))
}

// Allocate returns a buffer of size bytes (capacity rounded up to a power of
// two).
func (p *PoolAllocator) Allocate(size int) []byte {
	if size < 0 {
		panic("codec: negative allocation")
	}
	c := class(size)
	if c > maxClass {
		return make([]byte, size)
	}
	pc := &p.classes[c]
	pc.mu.Lock()
	if n := len(pc.free); n > 0 {
		b := pc.free[n-1]
		pc.free[n-1] = nil
		pc.free = pc.free[:n-1]
		pc.mu.Unlock()
		return b[:size]
	}
	pc.mu.Unlock()
	return make([]byte, size, 1<<c)
}

// Reallocate grows or shrinks b to size, keeping its contents.
func (p *PoolAllocator) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		return b[:size]
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

// Free returns b to its size class. Buffers not from Allocate are dropped.
// Only the memory b covers up to its capacity is reused: a sub-slice whose
// capacity is a power of two is kept as a buffer of that size, any other
// sub-slice is dropped (the garbage collector frees it), so freeing a
// sub-slice never hands out memory outside it.
func (p *PoolAllocator) Free(b []byte) {
	c := cap(b)
	if c < 1<<minClass || c&(c-1) != 0 {
		return
	}
	k := bits.Len(uint(c)) - 1
	if k > maxClass {
		return
	}
	max := p.MaxPerClass
	if max <= 0 {
		max = 32
	}
	maxBytes := p.MaxBytesPerClass
	if maxBytes <= 0 {
		maxBytes = 64 << 20
	}
	if byBytes := int(min(maxBytes>>k, 1<<30)); byBytes < max {
		max = byBytes
		if max < 2 {
			max = 2
		}
	}
	pc := &p.classes[k]
	pc.mu.Lock()
	if len(pc.free) < max {
		pc.free = append(pc.free, b[:c])
	}
	pc.mu.Unlock()
}
