package rinas

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Decoded pages, rows and row batches live on the Go heap, and the Go
// collector lets the heap grow to twice what is live before it collects
// (GOGC=100): a loader holding its MemoryLimit would reach twice it. So
// while loaders are open, and unless the program set a soft memory limit
// of its own (GOMEMLIMIT or debug.SetMemoryLimit), the loaders set one:
// the Go memory in use when the first of them opened, plus each open
// loader's MemoryLimit less what it holds outside the Go heap (read slots
// and token buffers are mapped memory), plus goMemSlack. The collector
// then runs as often as that bound needs. When the last loader closes,
// the limit the program had (none) comes back, unless something else
// changed it meanwhile.
var goMem struct {
	mu      sync.Mutex
	loaders int
	base    int64 // Go memory in use when the first open loader opened
	heap    int64 // the open loaders' heap shares
	set     int64 // the limit we set (0: none)
	prev    int64 // the limit before we set ours
}

// goMemSlack is the room the soft limit leaves for the Go runtime and the
// program besides the loaders' shares.
const goMemSlack = 32 << 20

// goMemLimit registers a loader that may hold heap bytes of Go heap and
// returns what its Close calls.
func goMemLimit(heap int64) func() {
	goMem.mu.Lock()
	defer goMem.mu.Unlock()
	cur := debug.SetMemoryLimit(-1)
	if goMem.loaders == 0 {
		if _, env := os.LookupEnv("GOMEMLIMIT"); env || cur != math.MaxInt64 {
			return func() {} // the program chose a limit: keep it
		}
		goMem.base, goMem.prev, goMem.set, goMem.heap = goMemInUse(), cur, 0, 0
	} else if goMem.set == 0 || cur != goMem.set {
		return func() {} // not ours to move
	}
	goMem.loaders++
	goMem.heap = satAdd(goMem.heap, heap)
	goMem.set = satAdd(goMem.base, goMem.heap, goMemSlack)
	debug.SetMemoryLimit(goMem.set)
	var once sync.Once
	return func() {
		once.Do(func() {
			goMem.mu.Lock()
			defer goMem.mu.Unlock()
			goMem.loaders--
			goMem.heap -= heap
			if debug.SetMemoryLimit(-1) != goMem.set {
				goMem.loaders, goMem.set = 0, 0 // changed by someone else: theirs now
				return
			}
			if goMem.loaders == 0 {
				debug.SetMemoryLimit(goMem.prev)
				goMem.set = 0
				return
			}
			goMem.set = satAdd(goMem.base, goMem.heap, goMemSlack)
			debug.SetMemoryLimit(goMem.set)
		})
	}
}

// goMemInUse returns the Go runtime's memory in use (what its soft limit
// counts): mapped and not released to the OS.
func goMemInUse() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

// goHeapFree returns the Go heap's mapped bytes that hold no object (free
// or returned to the OS): the heap grows into them before it maps more.
func goHeapFree() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	var n int64
	for _, x := range s {
		if x.Value.Kind() == metrics.KindUint64 {
			n += int64(x.Value.Uint64())
		}
	}
	return n
}
