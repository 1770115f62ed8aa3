package engine

import "testing"

// TestIdleWorkersShareEnters: two workers reading cached pages buffered,
// fed a batch of reads at a time by Submit and idle between batches (as a
// loader's workers are when the page cache serves its reads faster than
// its consumer takes batches), still put many reads in each enter. Before,
// each sleeping worker was woken by the first read of a batch and took it
// alone, and the time idle between batches counted as time waiting on the
// device, which kept the chunk at its floor of 2: about 2 reads an enter.
func TestIdleWorkersShareEnters(t *testing.T) {
	const size, batch, batches = 1 << 20, 32, 200
	e, f := cachedFile(t, size, Options{Kind: IOUring, Workers: 2, QueueDepth: 64, Direct: Off, SlotsPerWorker: batch, SlotSize: 8 << 10})
	q := e.NewQueue(QueueOptions{Handler: func(c *Completion) {
		if c.Err != nil {
			t.Error(c.Err)
		}
		c.Release()
	}})
	reqs := make([]Request, batch)
	for b := 0; b < batches; b++ {
		for i := range reqs {
			reqs[i] = Request{File: f, Off: int64((b*batch+i)*4096) % size, Len: 4096, Worker: i % 2}
		}
		if err := q.Submit(testCtx(t), reqs); err != nil {
			t.Fatal(err)
		}
		if err := q.Settle(testCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	st := e.Stats()
	if st.Reaped != batch*batches {
		t.Fatalf("reaped %d of %d", st.Reaped, batch*batches)
	}
	if per := float64(st.Reaped) / float64(st.Enters); per < 4 {
		t.Fatalf("%d reads in %d enters: %.1f an enter, want at least 4", st.Reaped, st.Enters, per)
	}
	t.Logf("%d reads in %d enters", st.Reaped, st.Enters)
}
