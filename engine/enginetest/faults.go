// Package enginetest holds the engine's test support: fault injectors that
// make a healthy disk look like a failing one, for reliability tests and
// soak runs. It plays the part pebble's vfs/errorfs plays for its file
// system: production code never imports it.
//
// The engine keeps the hook itself (engine.Options.Faults, a
// FaultInjector) because its reads are io_uring submissions and pread
// calls made by its own workers, not calls through a file interface a
// wrapper could intercept; the hook sees each attempt between the kernel
// and the engine's retry logic, which is what the tests must exercise.
package enginetest

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/pagefeed/pagefeed/engine"
)

// RateFaults is an engine.FaultInjector that fails read attempts at random, at a
// configured probability per kind, and counts what it injected. The
// draws come from a counter-based generator keyed by Seed: safe for
// concurrent use, no lock, no allocation. The zero value injects nothing.
type RateFaults struct {
	// Probabilities per read attempt, each in [0, 1]; their sum should
	// stay below 1 (the kinds are drawn from one number, in this order).
	EIO, Short, EAGAIN, EINTR, ECANCELED float64
	Seed                                 uint64
	// Only, when set, limits faults to the attempts it accepts (a file, a
	// range); others pass through untouched.
	Only func(f *engine.File, off int64) bool

	n      atomic.Uint64
	counts [faultKinds]atomic.Int64
}

// Fault kinds, indexes of FaultCounts.
const (
	faultEIO = iota
	faultShort
	faultEAGAIN
	faultEINTR
	faultECANCELED
	faultKinds
)

// FaultCounts is what a RateFaults injected so far.
type FaultCounts struct {
	Attempts                             int64 // read attempts seen
	EIO, Short, EAGAIN, EINTR, ECANCELED int64
}

// Transient returns the faults the engine is expected to absorb.
func (c FaultCounts) Transient() int64 { return c.Short + c.EAGAIN + c.EINTR + c.ECANCELED }

// Total returns every fault injected.
func (c FaultCounts) Total() int64 { return c.Transient() + c.EIO }

// Counts returns what r injected so far.
func (r *RateFaults) Counts() FaultCounts {
	return FaultCounts{
		Attempts:  int64(r.n.Load()),
		EIO:       r.counts[faultEIO].Load(),
		Short:     r.counts[faultShort].Load(),
		EAGAIN:    r.counts[faultEAGAIN].Load(),
		EINTR:     r.counts[faultEINTR].Load(),
		ECANCELED: r.counts[faultECANCELED].Load(),
	}
}

// Fault implements engine.FaultInjector.
func (r *RateFaults) Fault(f *engine.File, off int64, n int, res int) int {
	i := r.n.Add(1)
	if r.Only != nil && !r.Only(f, off) {
		return res
	}
	v := mix64(r.Seed ^ i*0x9e3779b97f4a7c15)
	u := float64(v>>11) / (1 << 53) // uniform in [0, 1)
	p := [faultKinds]float64{r.EIO, r.Short, r.EAGAIN, r.EINTR, r.ECANCELED}
	for k, pk := range p {
		if u >= pk {
			u -= pk
			continue
		}
		switch k {
		case faultEIO:
			res = -int(unix.EIO)
		case faultShort:
			if res <= 1 {
				return res // nothing to shorten: not a fault
			}
			res = 1 + int(v%uint64(res-1)) // in [1, res)
		case faultEAGAIN:
			res = -int(unix.EAGAIN)
		case faultEINTR:
			res = -int(unix.EINTR)
		case faultECANCELED:
			res = -int(unix.ECANCELED)
		}
		r.counts[k].Add(1)
		return res
	}
	return res
}

// mix64 is splitmix64's finalizer: a bijective scramble of a counter.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
