package bench_test

import (
	"fmt"
	"strings"

	"github.com/pagefeed/pagefeed/bench"
)

func ExampleParseSize() {
	for _, s := range []string{"4k", "1m", "2GiB", "4096"} {
		n, _ := bench.ParseSize(s)
		fmt.Println(s, n)
	}
	// Output:
	// 4k 4096
	// 1m 1048576
	// 2GiB 2147483648
	// 4096 4096
}

func ExampleParseJobFile() {
	src := `[global]
filename=/data/f
direct=1
[rr4k]
rw=randread
bs=4k
ioengine=io_uring
iodepth=64
`
	spec, err := bench.ParseJobFile("rr.fio", strings.NewReader(src))
	if err != nil {
		fmt.Println(err)
		return
	}
	job, err := spec.Jobs[0].Resolve()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(job.Name, job.RW, job.BS, job.IOEngine, job.IODepth, job.Direct)
	// Output: rr4k randread 4096 io_uring 64 true
}
