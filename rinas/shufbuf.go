package rinas

// shuffleBuffer is YOUMU's aggressive buffer shuffle (Algorithm 2): every
// arriving page's rows are inserted at random places of a fixed-capacity
// buffer, and when the buffer is over capacity random rows are emitted. The
// buffer never holds more than cap rows once a page has been absorbed;
// emission draws uniformly from everything buffered, which is what breaks
// the page-level correlation that a plain page shuffle leaves.
//
// It is deterministic for a seed and the sequence of pushes, so an exact
// resume only needs the buffered rows and the generator state.
type shuffleBuffer[T any] struct {
	items []T
	cap   int
	rng   splitmix
}

func newShuffleBuffer[T any](capacity int, seed uint64) *shuffleBuffer[T] {
	return &shuffleBuffer[T]{
		items: make([]T, 0, capacity+1),
		cap:   capacity,
		rng:   splitmix(seed),
	}
}

// push adds one row at a uniformly random position (swap-insert).
func (b *shuffleBuffer[T]) push(v T) {
	b.items = append(b.items, v)
	j := int(b.rng.next() % uint64(len(b.items)))
	last := len(b.items) - 1
	b.items[j], b.items[last] = b.items[last], b.items[j]
}

// over reports how many rows must leave before the buffer is within cap.
func (b *shuffleBuffer[T]) over() int {
	if len(b.items) > b.cap {
		return len(b.items) - b.cap
	}
	return 0
}

// pop removes and returns a uniformly random row. The buffer must not be empty.
func (b *shuffleBuffer[T]) pop() T {
	j := int(b.rng.next() % uint64(len(b.items)))
	last := len(b.items) - 1
	v := b.items[j]
	b.items[j] = b.items[last]
	var zero T
	b.items[last] = zero
	b.items = b.items[:last]
	return v
}

func (b *shuffleBuffer[T]) len() int { return len(b.items) }

// splitmix is a tiny, fast, seedable generator (SplitMix64) whose whole
// state is one word, so it checkpoints trivially.
type splitmix uint64

func (s *splitmix) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
