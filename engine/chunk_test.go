package engine

import "testing"

// TestNextChunk checks the adaptive submission rule: double while the
// worker sleeps under 1/8 of a window, halve above 1/4, keep in between,
// within [2, QueueDepth] (1 at depth 1).
func TestNextChunk(t *testing.T) {
	for _, c := range []struct {
		n, limit       int
		slept, elapsed int64
		want           int
	}{
		{2, 64, 0, 1000, 4},     // never slept: saturated
		{16, 64, 100, 1000, 32}, // 10%: saturated
		{32, 64, 0, 1000, 64},
		{64, 64, 0, 1000, 64},    // capped at the depth
		{16, 64, 125, 1000, 16},  // exactly 1/8: in the band
		{16, 64, 200, 1000, 16},  // 20%: keep
		{16, 64, 250, 1000, 16},  // exactly 1/4: keep
		{16, 64, 251, 1000, 8},   // time to spare: halve
		{2, 64, 900, 1000, 2},    // floor
		{3, 64, 900, 1000, 2},    // floor
		{8, 64, 1000, 1000, 4},   // always asleep
		{1, 1, 0, 1000, 1},       // depth 1
		{48, 64, 0, 1 << 40, 64}, // long windows
	} {
		if got := nextChunk(c.n, c.limit, c.slept, c.elapsed); got != c.want {
			t.Errorf("nextChunk(%d, %d, slept %d of %d) = %d, want %d", c.n, c.limit, c.slept, c.elapsed, got, c.want)
		}
	}
}

// TestChunkerWindow checks that the chunk changes only at the end of a
// window of completions and that windows restart their counts.
func TestChunkerWindow(t *testing.T) {
	c := newChunker(32)
	if c.n != 2 || c.window != 32 {
		t.Fatalf("start: chunk %d, window %d; want 2, 32", c.n, c.window)
	}
	// A saturated worker: no sleep at all.
	for i := 0; i < 31; i++ {
		if got := c.reaped(1); got != 2 {
			t.Fatalf("chunk changed to %d after %d of 32 completions", got, i+1)
		}
	}
	if got := c.reaped(1); got != 4 {
		t.Fatalf("after a window without sleep: chunk %d, want 4", got)
	}
	if c.seen != 0 || c.slept != 0 {
		t.Fatalf("window not reset: seen %d slept %d", c.seen, c.slept)
	}
	// A worker that slept the whole window halves back.
	c.start = nanotime() - 1000
	c.waited(1 << 40)
	if got := c.reaped(32); got != 2 {
		t.Fatalf("after a window asleep: chunk %d, want 2", got)
	}
	if newChunker(4).window != 16 {
		t.Fatal("shallow rings must still average over 16 completions")
	}
	if newChunker(1).n != 1 {
		t.Fatal("depth 1: chunk above the depth")
	}
}
