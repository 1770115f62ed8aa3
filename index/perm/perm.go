// Package perm gives each epoch's page order as a stateless, seeded
// bijection of [0, N), and splits it among ranks.
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
// # Positions, ranks and checkpoints
//
// The global position is the truth. An epoch's order is the sequence
// P.At(0), P.At(1), ..., P.At(N-1). A Shard hands rank r of W the positions
// Start+r, Start+r+W, Start+r+2W, ...: round-robin from Start, so the ranks'
// shares are disjoint and together cover every position ≥ Start exactly
// once, also when fewer than W positions remain (the later ranks then get
// none).
//
// # Equal shares
//
// Synchronous data-parallel training needs every rank to take the same
// number of steps. Shard.End bounds the positions a shard covers: with
// End = ⌊N/W⌋·W (EvenEnd with pad false) the last N mod W positions are
// dropped and every rank gets ⌊N/W⌋ items; with End = ⌈N/W⌉·W (pad true)
// the positions from N on wrap around to the start of the order (position
// p ≥ N is item At(p mod N)), as PyTorch's DistributedSampler pads, and
// every rank gets ⌈N/W⌉. A caller may also set a per-rank End (ranks whose
// items differ in weight, e.g. rows per page): Len and At follow it.
//
// A Cursor (seed, epoch, position) says that every position below Position
// has been consumed and none at or above it. After each rank has consumed j
// items of its shard (a step barrier, as synchronous data-parallel training
// has), the cursor is Shard.Checkpoint(j): Position = Start + j·W, clamped to
// N. Resuming from a cursor, with the same or any other world size, starts
// new shards at Position and so reproduces exactly the rest of the order.
// Where ranks stop at different j, checkpoint the smallest j: positions that
// faster ranks had consumed beyond it are served again after resume.
package perm

import (
	"errors"
	"fmt"
	"math/bits"
)

// ErrShard reports an invalid rank or world size.
var ErrShard = errors.New("perm: invalid shard")

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

// Shard is one rank's share of an epoch's positions from Start: the j-th
// item of the shard is at global position Start + j·World + Rank, for the
// positions below End. Positions at or beyond N wrap: position p is item
// At(p mod N) (padding; see "Equal shares").
type Shard struct {
	Perm  Perm
	Start uint64
	End   uint64 // positions covered are below End; N by default
	Rank  int
	World int
}

// EvenEnd returns the end position that gives each of world ranks the same
// number of the n positions: ⌊n/world⌋·world (the remainder dropped) or,
// with pad, ⌈n/world⌉·world (the shortfall repeated from the start).
func EvenEnd(n uint64, world int, pad bool) uint64 {
	w := uint64(max(world, 1))
	if pad {
		return (n + w - 1) / w * w
	}
	return n / w * w
}

// WithEnd returns the shard covering the positions below end instead.
func (s Shard) WithEnd(end uint64) Shard {
	s.End = max(end, s.Start)
	return s
}

// Shard returns rank's share of the positions from start on, for a world
// of world ranks.
func (p Perm) Shard(start uint64, rank, world int) (Shard, error) {
	if world < 1 || rank < 0 || rank >= world {
		return Shard{}, fmt.Errorf("%w: rank %d of world %d", ErrShard, rank, world)
	}
	return Shard{Perm: p, Start: min(start, p.n), End: p.n, Rank: rank, World: world}, nil
}

// Len returns the number of items of the shard.
func (s Shard) Len() uint64 {
	first := s.Start + uint64(s.Rank)
	if first >= s.End {
		return 0
	}
	return (s.End-first-1)/uint64(s.World) + 1
}

// Pos returns the global position of the shard's j-th item.
func (s Shard) Pos(j uint64) uint64 { return s.Start + j*uint64(s.World) + uint64(s.Rank) }

// At returns the shard's j-th item. It panics if j ≥ Len().
func (s Shard) At(j uint64) uint64 { return s.Perm.At(s.Wrap(s.Pos(j))) }

// Wrap maps a position to the one in [0, N) it repeats: p mod N.
func (s Shard) Wrap(p uint64) uint64 {
	if p < s.Perm.n {
		return p
	}
	return p % s.Perm.n
}

// Checkpoint returns the cursor of the whole world after every rank has
// consumed done items of its shard: position Start + done·World, at most
// End.
func (s Shard) Checkpoint(seed, epoch, done uint64) Cursor {
	pos := s.End
	if d := s.End - s.Start; done < d/uint64(s.World)+1 {
		pos = min(s.Start+done*uint64(s.World), s.End)
	}
	return Cursor{Seed: seed, Epoch: epoch, Position: pos}
}

// Cursor is a resumable point in a run: every position below Position of
// epoch Epoch has been consumed, none at or above it.
type Cursor struct {
	Seed     uint64
	Epoch    uint64
	Position uint64
}

// Perm returns the cursor's epoch order over n items.
func (c Cursor) Perm(n uint64) Perm { return New(n, c.Seed, c.Epoch) }

// Shard returns rank's share of what remains of the cursor's epoch over n
// items, for a world of world ranks (any world size).
func (c Cursor) Shard(n uint64, rank, world int) (Shard, error) {
	return c.Perm(n).Shard(c.Position, rank, world)
}

// Done reports whether the cursor's epoch is finished for n items.
func (c Cursor) Done(n uint64) bool { return c.Position >= n }

// NextEpoch returns the cursor at the start of the following epoch.
func (c Cursor) NextEpoch() Cursor { return Cursor{Seed: c.Seed, Epoch: c.Epoch + 1} }
