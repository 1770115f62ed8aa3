package engine

// chunker chooses how many queued reads one io_uring_enter submits when
// Options.BatchSubmit is 0.
//
// The trade is between the device and the worker's CPU. A read submitted
// alone reaches the device at once, and while the device is the bottleneck
// that is what keeps it busy: the worker has time to spare for one enter
// per read. Once the worker itself is the bottleneck (completions are
// ready whenever it would wait), every enter it saves is time given back
// to reaping and resubmitting, so reads should share enters. Which of the
// two holds depends on the device, the kernel, the load on the CPUs and
// what the handlers do, and changes while a program runs; so the chunk is
// not a constant but follows the worker's measured share of time asleep
// in io_uring_enter, over windows of a ring's worth of completions:
//
//   - asleep less than 1/8 of the window: saturated; double the chunk
//     (at most QueueDepth);
//   - asleep more than 1/4 of it: it has time to spare; halve the chunk
//     (at least 2, or 1 at depth 1);
//   - in between: keep it (the band keeps the chunk from flapping between
//     two sizes on a steady load).
//
// The floor is 2, not fio's 1: io_uring plugs the block layer only for an
// enter of more than two SQEs, so a pair reaches the device as soon as two
// single submissions would, for one syscall less. It starts at the floor.
// The counters are the worker goroutine's own; nothing here is shared.
type chunker struct {
	n      int   // the chunk: reads per enter, 1..max
	max    int   // QueueDepth
	window int   // completions per window
	seen   int   // completions reaped in this window
	start  int64 // nanotime at the window's start
	slept  int64 // ns spent in waiting enters during the window
}

func newChunker(depth int) chunker {
	return chunker{n: min(chunkFloor, depth), max: depth, window: max(depth, 16), start: nanotime()}
}

// chunkFloor is the smallest adaptive chunk: the most SQEs io_uring
// submits without plugging the block layer.
const chunkFloor = 2

// waited records one waiting enter of ns nanoseconds.
func (c *chunker) waited(ns int64) { c.slept += ns }

// reaped records n completions and, at the end of a window, adjusts the
// chunk. It returns the chunk to use.
func (c *chunker) reaped(n int) int {
	c.seen += n
	if c.seen < c.window {
		return c.n
	}
	now := nanotime()
	if el := now - c.start; el > 0 {
		c.n = nextChunk(c.n, c.max, c.slept, el)
	}
	c.seen, c.slept, c.start = 0, 0, now
	return c.n
}

// nextChunk is the rule above: the chunk after a window of elapsed ns of
// which slept were spent asleep waiting for completions.
func nextChunk(n, limit int, slept, elapsed int64) int {
	switch {
	case slept*8 < elapsed:
		return min(n*2, limit)
	case slept*4 > elapsed:
		return max(n/2, min(chunkFloor, limit))
	}
	return n
}
