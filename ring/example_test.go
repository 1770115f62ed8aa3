package ring_test

import (
	"fmt"
	"runtime"

	"github.com/pagefeed/pagefeed/ring"
)

// A NOP round trip: prepare, submit and wait in one io_uring_enter, then
// reap every ready completion and advance the CQ head once.
func Example() {
	runtime.LockOSThread() // SINGLE_ISSUER rings belong to their thread
	defer runtime.UnlockOSThread()
	r, err := ring.New(8)
	if err != nil {
		fmt.Println("io_uring unavailable:", err)
		return
	}
	defer r.Close()
	for i := uint64(1); i <= 3; i++ {
		r.GetSQE().PrepNop(i)
	}
	if _, err := r.SubmitAndWait(3); err != nil {
		fmt.Println(err)
		return
	}
	cqes := make([]ring.CQE, 8)
	n := r.Reap(cqes)
	sum := uint64(0)
	for _, c := range cqes[:n] {
		sum += c.UserData
	}
	fmt.Println(n, "completions, user_data sum", sum)
	// Output: 3 completions, user_data sum 6
}
