package pin_test

import (
	"fmt"

	"github.com/pagefeed/pagefeed/pin"
)

// Plan the ranks of a two-socket machine without GPUs (a fixture tree)
// and look up the group of local rank 1.
func ExampleNewPlan() {
	topo, err := pin.Discover("testdata/nogpu")
	if err != nil {
		panic(err)
	}
	plan, err := pin.NewPlan(topo, pin.Options{})
	if err != nil {
		panic(err)
	}
	g, err := plan.ForLocalRank(1)
	if err != nil {
		panic(err)
	}
	fmt.Println("rank", g.Rank, "node", g.Node, "cpus", pin.FormatCPUList(g.CPUs), "local", g.NVMeLocal)
	fmt.Println("trainer", pin.FormatCPUList(plan.Trainer))
	// Output:
	// rank 1 node 1 cpus 9-15 local [nvme0]
	// trainer 0,8
}

func ExampleParseCPUList() {
	cpus, err := pin.ParseCPUList("0-3,8-11:2\n")
	fmt.Println(cpus, err, pin.FormatCPUList(cpus))
	// Output: [0 1 2 3 8 10] <nil> 0-3,8,10
}
