//go:build linux

package ring

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSubmitAndWaitHeldSignal: a signal ends a held wait, as its timeout
// would, instead of a new wait of the whole timeout: the bound on how long
// the P is held stands. SIGURG (the runtime's preemption signal, which it
// ignores when it did not send it) is sent for up to 2 s or until the
// wait returns. Were EINTR retried, each retry would wait the whole 30 s
// again, and the runtime's own preemption signals to a goroutine that
// holds its P that long would keep the wait from ever ending: the test
// would hang until go test's timeout.
func TestSubmitAndWaitHeldSignal(t *testing.T) {
	r := newRing(t, 4) // locks the test goroutine to its thread
	if r.Features()&FeatExtArg == 0 {
		t.Skip("no EXT_ARG")
	}
	const timeout = 30 * time.Second
	pid, tid := unix.Getpid(), unix.Gettid()
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for range 200 {
			select {
			case <-done:
				return
			case <-tick.C:
				unix.Tgkill(pid, tid, unix.SIGURG)
			}
		}
	}()
	start := time.Now()
	n, err := r.SubmitAndWaitHeld(1, int64(timeout))
	el := time.Since(start)
	close(done)
	<-stopped
	if err != nil || n != 0 || r.Ready() != 0 || el >= timeout {
		t.Fatalf("n=%d err=%v Ready %d after %v", n, err, r.Ready(), el)
	}
}
