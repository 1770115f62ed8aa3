package bench

import "math/bits"

// rng is splitmix64: fast, allocation-free and good enough to pick offsets.
// The zero value is a valid generator.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// below returns a uniform value in [0, n) by Lemire's multiply-shift
// (bias below 2^-64·n, irrelevant here). n must be > 0.
func (r *rng) below(n uint64) uint64 {
	hi, _ := bits.Mul64(r.next(), n)
	return hi
}

func trailingZeros(x uint64) int { return bits.TrailingZeros64(x) }
