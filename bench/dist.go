package bench

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// DistKind is fio's random_distribution: how a random job picks its next
// block.
type DistKind int

const (
	DistRandom DistKind = iota // uniform (fio's default, "random")
	DistZipf                   // zipf:θ, θ ≠ 1 (fio's default θ 1.1; θ 0 is uniform)
	DistPareto                 // pareto:h, 0 < h < 1 (fio's default h 0.2)
	DistNormal                 // normal:σ, σ in [0, 100) percent of the blocks (default 0)
)

func (k DistKind) String() string {
	return [...]string{"random", "zipf", "pareto", "normal"}[k]
}

// Distribution is a parsed random_distribution=KIND[:P[:CENTER]]. As in
// fio, a non-uniform distribution turns the random map off (blocks may
// repeat within a pass), and hot blocks are spread over the file by a
// multiplicative hash of their rank unless a center is given.
type Distribution struct {
	Kind  DistKind
	Param float64 // θ, h or σ
	// Center, in [0, 1], places the distribution's peak at that fraction
	// of the blocks (fio's optional second value); -1: fio's default (a
	// random offset for zipf and pareto, the middle for normal).
	Center float64
}

// ParseDistribution parses fio's random_distribution value. Errors name
// the option, the value and the range fio accepts. zoned and zoned_abs
// are not supported.
func ParseDistribution(v string) (Distribution, error) {
	parts := strings.Split(v, ":")
	d := Distribution{Center: -1}
	bad := func(why string) (Distribution, error) {
		return Distribution{}, fmt.Errorf("%w: random_distribution=%s: %s", ErrBadOption, v, why)
	}
	switch parts[0] {
	case "random":
		return d, nil // fio ignores a value here
	case "zipf":
		d.Kind, d.Param = DistZipf, 1.1
	case "pareto":
		d.Kind, d.Param = DistPareto, 0.2
	case "normal":
		d.Kind = DistNormal
	case "zoned", "zoned_abs":
		return bad("zoned distributions are not supported (want random, zipf:θ, pareto:h or normal:σ)")
	default:
		return bad("want random, zipf:θ, pareto:h or normal:σ")
	}
	if len(parts) > 3 {
		return bad("too many values")
	}
	if len(parts) > 1 {
		p, err := strconv.ParseFloat(parts[1], 64)
		if err != nil || math.IsNaN(p) || math.IsInf(p, 0) {
			return bad(fmt.Sprintf("%q is not a number", parts[1]))
		}
		d.Param = p
	}
	switch {
	case d.Kind == DistZipf && d.Param == 1:
		return bad("zipf θ must be different from 1")
	case d.Kind == DistPareto && (d.Param <= 0 || d.Param >= 1):
		return bad("pareto h must be in (0, 1)")
	case d.Kind == DistNormal && (d.Param < 0 || d.Param >= 100):
		return bad("normal σ must be in [0, 100) (percent of the blocks)")
	}
	if len(parts) > 2 {
		c, err := strconv.ParseFloat(parts[2], 64)
		if err != nil || c < 0 || c > 1 {
			return bad(fmt.Sprintf("center %q must be in [0, 1]", parts[2]))
		}
		d.Center = c
	}
	return d, nil
}

func (d Distribution) String() string {
	if d.Kind == DistRandom {
		return "random"
	}
	s := d.Kind.String() + ":" + strconv.FormatFloat(d.Param, 'g', -1, 64)
	if d.Center >= 0 {
		s += ":" + strconv.FormatFloat(d.Center, 'g', -1, 64)
	}
	return s
}

// goldenRatio64 is fio's __hash_u64 multiplier: it spreads consecutive
// ranks over the file.
const goldenRatio64 = 0x61C8864680B583EB

// zipfMaxGen caps the terms of zipf's normalizing sum, as fio does.
const zipfMaxGen = 10_000_000

// sampler draws block numbers in [0, n) from a Distribution, with fio's
// generators (lib/zipf.c, lib/gauss.c) over this package's rng. It does
// not allocate after newSampler.
type sampler struct {
	d     Distribution
	n     uint64
	off   uint64 // fio's rand_off
	hash  bool
	zetan float64 // zipf
	zeta2 float64
	alpha float64
	eta   float64
	pow   float64 // pareto
	sd    int64   // normal: fio's stddev in blocks
}

func newSampler(d Distribution, n uint64, r *rng) *sampler {
	s := &sampler{d: d, n: n, hash: true}
	switch d.Kind {
	case DistZipf, DistPareto:
		s.off = r.next()
		if d.Center >= 0 {
			s.off, s.hash = uint64(float64(n)*d.Center), false
		}
	case DistNormal:
		if d.Param != 0 {
			s.sd = int64(math.Ceil(float64(n) * d.Param / 100))
			s.sd = min(s.sd, int64(n/2))
		}
		if d.Center >= 0 {
			s.off, s.hash = uint64(int64(float64(n)*(d.Center-0.5))+int64(n))%n, false
		}
	}
	switch d.Kind {
	case DistZipf:
		th := d.Param
		for i := range min(n, zipfMaxGen) {
			s.zetan += math.Pow(1/float64(i+1), th)
		}
		s.zeta2 = 1 + math.Pow(0.5, th)
		s.alpha = 1 / (1 - th)
		s.eta = (1 - math.Pow(2/float64(n), 1-th)) / (1 - s.zeta2/s.zetan)
	case DistPareto:
		s.pow = math.Log(d.Param) / math.Log(1-d.Param)
	}
	return s
}

// unit returns a uniform float in [0, 1).
func unit(r *rng) float64 { return float64(r.next()>>11) / (1 << 53) }

// next returns the next block.
func (s *sampler) next(r *rng) uint64 {
	n := s.n
	var v uint64
	switch s.d.Kind {
	case DistZipf:
		u := unit(r)
		z := u * s.zetan
		switch {
		case z < 1:
			v = 1
		case z < 1+math.Pow(0.5, s.d.Param):
			v = 2
		default:
			v = 1 + uint64(float64(n)*math.Pow(s.eta*u-s.eta+1, s.alpha))
		}
		v--
	case DistPareto:
		v = uint64(float64(n-1) * math.Pow(unit(r), s.pow))
	case DistNormal:
		var sum uint64
		for range 12 {
			sum += r.below(n + 1)
		}
		sum = (sum + 11) / 12
		if s.sd > 0 {
			dev := int64(r.below(uint64(s.sd))) - s.sd/2
			// fio halves the deviation until it fits; a zero one ends the
			// loop (sum itself may be n, which the modulo below wraps).
			for dev != 0 && dev+int64(sum) >= int64(n) {
				dev /= 2
			}
			sum = uint64(max(int64(sum)+dev, 0))
		}
		v = sum
	default:
		return r.below(n)
	}
	if s.hash {
		v *= goldenRatio64
	}
	return (v + s.off) % n
}

// randomMap is fio's random map: in a pass over a file every block is
// read once. A drawn block already read this pass gives way to the next
// unread one after it (wrapping), as fio's axmap_next_free does; when
// every block was read the map clears for the next pass. One bit per
// block.
type randomMap struct {
	bits []uint64
	left uint64
	n    uint64
}

func newRandomMap(n uint64) *randomMap {
	return &randomMap{bits: make([]uint64, (n+63)/64), left: n, n: n}
}

// take marks blk, or the next unread block after it, and returns it.
func (m *randomMap) take(blk uint64) uint64 {
	if m.left == 0 {
		clear(m.bits)
		m.left = m.n
	}
	for m.bits[blk/64]&(1<<(blk%64)) != 0 {
		// Skip whole words that are full.
		w := blk / 64
		rest := ^m.bits[w] &^ (1<<(blk%64) - 1)
		if rest != 0 {
			blk = w*64 + uint64(trailingZeros(rest))
			if blk < m.n {
				continue
			}
		}
		blk = (w + 1) * 64
		if blk >= m.n {
			blk = 0
		}
	}
	m.bits[blk/64] |= 1 << (blk % 64)
	m.left--
	return blk
}
