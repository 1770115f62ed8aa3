package bench_test

import (
	"fmt"

	"github.com/pagefeed/pagefeed/bench"
)

// The queue depths and block sizes of a tune grid, and a knee.
func ExampleParseGridList() {
	depths, _ := bench.ParseGridList("1,2,4,...,64", 1, bench.MaxIODepth, bench.ParseSize)
	sizes, _ := bench.ParseGridList("4k,16k,...,1m", 512, 1<<30, bench.ParseSize)
	fmt.Println(depths)
	fmt.Println(sizes)
	_, err := bench.ParseGridList("1,2,4,...,100", 1, bench.MaxIODepth, bench.ParseSize)
	fmt.Println(err)

	bw := []float64{100, 180, 330, 390, 400, 401, 399} // MB/s at depths 1..64
	knee, best := bench.KneeIndex(bw, bench.KneeFraction)
	fmt.Printf("knee at depth %d, best at depth %d\n", depths[knee], depths[best])
	// Output:
	// [1 2 4 8 16 32 64]
	// [4096 16384 65536 262144 1048576]
	// bench: bad option: "100" is not on the sequence 2,4,... (it reaches 64)
	// knee at depth 8, best at depth 32
}
