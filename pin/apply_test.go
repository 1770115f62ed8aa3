//go:build linux

package pin

import (
	"errors"
	"runtime"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// onLockedThread runs f on a goroutine locked to its own OS thread and
// never unlocked: the thread exits with the goroutine, so whatever
// affinity f leaves behind cannot leak to other goroutines.
func onLockedThread(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		f()
	}()
	<-done
}

// TestApplyPinsLockedThread applies {0} and then this machine's planned
// set on a locked thread and reads both back with sched_getaffinity.
func TestApplyPinsLockedThread(t *testing.T) {
	orig, err := Current()
	if err != nil {
		t.Fatal(err)
	}
	if len(orig) < 2 || orig[0] != 0 {
		t.Skipf("needs CPU 0 and one more in the affinity mask; have %v", orig)
	}
	var plan []int
	if topo, err := Discover(""); err == nil {
		if p, err := NewPlan(topo, Options{}); err == nil {
			if g, err := p.ForLocalRank(0); err == nil && len(intersect(g.CPUs, orig)) == len(g.CPUs) {
				plan = g.CPUs
			}
		}
	}
	t.Logf("process mask %v, planned set for rank 0 %v", orig, plan)
	var got0, gotPlan, restored, other []int
	var errs []error
	onLockedThread(t, func() {
		errs = append(errs, Apply([]int{0}))
		got0, err = Current()
		errs = append(errs, err)
		// A raw read, independent of Current's decoding.
		var set unix.CPUSet
		errs = append(errs, unix.SchedGetaffinity(0, &set))
		if set.Count() != 1 || !set.IsSet(0) {
			errs = append(errs, errors.New("sched_getaffinity disagrees with Current"))
		}
		// Other threads keep the process's mask: affinity is per thread.
		ch := make(chan []int)
		go func() {
			c, _ := Current()
			ch <- c
		}()
		other = <-ch
		if plan != nil {
			errs = append(errs, Apply(plan))
			gotPlan, err = Current()
			errs = append(errs, err)
		}
		errs = append(errs, Apply(orig))
		restored, err = Current()
		errs = append(errs, err)
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got0, []int{0}) {
		t.Errorf("after Apply({0}) the thread runs on %v", got0)
	}
	if !slices.Equal(other, orig) {
		t.Errorf("another goroutine's thread runs on %v, want the process's %v", other, orig)
	}
	if plan != nil && !slices.Equal(gotPlan, plan) {
		t.Errorf("after Apply(%v) the thread runs on %v", plan, gotPlan)
	}
	if !slices.Equal(restored, orig) {
		t.Errorf("restored affinity %v, want %v", restored, orig)
	}
}

func TestApplyErrors(t *testing.T) {
	tests := []struct {
		name string
		cpus []int
		want error
	}{
		{"empty", nil, ErrBadCPUSet},
		{"negative", []int{-1}, ErrBadCPUSet},
		{"beyond CPUSet", []int{0, maxSetCPU}, ErrBadCPUSet},
		{"offline", []int{maxSetCPU - 1}, unix.EINVAL}, // no machine here has 1024 CPUs
	}
	orig, err := Current()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(orig, maxSetCPU-1) {
		tests = tests[:3]
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			var after []int
			onLockedThread(t, func() {
				err = Apply(tc.cpus)
				after, _ = Current()
			})
			var e *Error
			if !errors.Is(err, tc.want) || !errors.As(err, &e) || e.Op != "sched_setaffinity" {
				t.Fatalf("Apply(%v) = %v, want %v in an *Error", tc.cpus, err, tc.want)
			}
			if !slices.Equal(after, orig) {
				t.Errorf("a failed Apply changed the affinity to %v", after)
			}
		})
	}
}
