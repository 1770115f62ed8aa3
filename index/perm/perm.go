// Package perm gives each epoch's unit order as a stateless, seeded
// bijection of [0, N).
//
// A Perm maps a position k in [0, N) to a page number in O(1) time and
// memory, without allocation: a 4-round Feistel network over the smallest
// power of four ≥ N (2h bits, two h-bit halves), keyed by (seed, epoch), with
// cycle walking (re-encrypt until the value falls in [0, N)) to stay in
// range. The domain is less than 4N, so a lookup averages fewer than four
// network evaluations. The round function is a one-multiply keyed
// multiply-xorshift of the half; round keys come from (seed, epoch) through
// SplitMix64's full mixer.
//
// # Positions
//
// The global position is the truth. An epoch's order is the sequence
// P.At(0), P.At(1), ..., P.At(N-1); Position inverts At, and Positions
// inverts a range of items at once, for the passes that visit every item
// of an epoch. A checkpoint names positions, so it needs no N-sized array
// to resume: the loader's epoch plan shares the positions
// among ranks and records how far each rank got.
package perm

import (
	"math/bits"
)

const rounds = 4 // Positions unrolls them

// Perm is a bijection of [0, N). The zero value is the empty permutation.
// It is a small value, safe to copy and to use concurrently.
type Perm struct {
	n    uint64
	half uint   // bits per Feistel half
	mask uint64 // (1<<half)-1
	keys [rounds]uint64
}

func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// round is the Feistel round function: a keyed multiply-xorshift, one
// multiplication, its high bits folded down so every input bit reaches
// the low bits that the mask keeps.
func round(x, k uint64) uint64 {
	x = (x ^ k) * 0xbf58476d1ce4e5b9
	return x ^ x>>29 ^ x>>47
}

// New returns the order of epoch epoch of a run seeded with seed over n
// items.
func New(n, seed, epoch uint64) Perm {
	p := Perm{n: n}
	if n > 1 {
		// smallest h with 4^h >= n
		p.half = uint(bits.Len64(n-1)+1) / 2
		p.mask = 1<<p.half - 1
	}
	k := mix(seed+0x9e3779b97f4a7c15) ^ mix(epoch^0x2545f4914f6cdd1d)
	for i := range p.keys {
		k = mix(k + 0x9e3779b97f4a7c15)
		p.keys[i] = k
	}
	return p
}

// Len returns N.
func (p Perm) Len() uint64 { return p.n }

func (p *Perm) encrypt(x uint64) uint64 {
	l, r := x>>p.half, x&p.mask
	for i := range p.keys {
		l, r = r, l^(round(r, p.keys[i])&p.mask)
	}
	return l<<p.half | r
}

func (p *Perm) decrypt(x uint64) uint64 {
	l, r := x>>p.half, x&p.mask
	for i := len(p.keys) - 1; i >= 0; i-- {
		l, r = r^(round(l, p.keys[i])&p.mask), l
	}
	return l<<p.half | r
}

// At returns the item at position k. It panics if k ≥ N.
func (p Perm) At(k uint64) uint64 {
	if k >= p.n {
		panic("perm: position out of range")
	}
	if p.n == 1 {
		return 0
	}
	x := p.encrypt(k)
	for x >= p.n {
		x = p.encrypt(x)
	}
	return x
}

// Position returns the position of item v: the inverse of At. It panics if
// v ≥ N.
func (p Perm) Position(v uint64) uint64 {
	if v >= p.n {
		panic("perm: item out of range")
	}
	if p.n == 1 {
		return 0
	}
	x := p.decrypt(v)
	for x >= p.n {
		x = p.decrypt(x)
	}
	return x
}

// Positions writes to out[i] the position of item lo+i, for len(out)
// items from lo: Position over a range, for the passes that visit every
// item of an epoch (an epoch plan counting each rank's rows). Items walk
// their cycles (about 4^half/N decryptions each) in eight interleaved
// lanes, so that the rounds' multiplications of different items overlap
// instead of waiting on one another, and a lane moves on to the next item
// without a branch (the walk's end is unpredictable). It panics if
// lo+len(out) > N.
func (p Perm) Positions(lo uint64, out []uint64) {
	if lo > p.n || uint64(len(out)) > p.n-lo {
		panic("perm: item out of range")
	}
	const lanes = 8
	m := uint64(len(out))
	n, h, mask := p.n, p.half, p.mask
	k0, k1, k2, k3 := p.keys[0], p.keys[1], p.keys[2], p.keys[3]
	// Lane j walks the cycle of item lo+at[j], now at x[j]; out[at[j]]
	// takes every step, the last one (in range) staying.
	var x, at [lanes]uint64
	for j := range uint64(lanes) {
		at[j], x[j] = j, lo+j
	}
	next := uint64(lanes)
	for n > 1 && n <= 1<<62 && next+lanes <= m {
		for j := range lanes {
			// decrypt, its rounds unrolled (rounds == 4)
			l, r := x[j]>>h, x[j]&mask
			l, r = r^(round(l, k3)&mask), l
			l, r = r^(round(l, k2)&mask), l
			l, r = r^(round(l, k1)&mask), l
			l, r = r^(round(l, k0)&mask), l
			x[j] = l<<h | r
		}
		for j := range lanes {
			out[at[j]] = x[j]
			b := (x[j] - n) >> 63 // 1 when x < n (both below 2⁶²): found
			at[j] += b * (next - at[j])
			x[j] += b * (lo + next - x[j])
			next += b
		}
	}
	// The lanes' unfinished items and the last ones, one at a time.
	for j := range lanes {
		if at[j] < m {
			out[at[j]] = p.Position(lo + at[j])
		}
	}
	for ; next < m; next++ {
		out[next] = p.Position(lo + next)
	}
}
