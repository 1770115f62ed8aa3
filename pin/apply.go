//go:build linux

package pin

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// maxSetCPU (check.go) is what unix.CPUSet holds: a compile error here
// if they ever differ.
var _ = [1]struct{}{}[maxSetCPU-len(unix.CPUSet{})*64]

// Apply restricts the calling OS thread to cpus with sched_setaffinity.
//
// The caller must have called runtime.LockOSThread on this goroutine and
// keep it locked while the affinity matters: affinity belongs to the
// thread, and an unlocked goroutine may move to another thread (and leave
// this one, still restricted, to run other goroutines). A goroutine that
// exits while locked takes its thread with it, which is the clean way to
// end a pinned worker. cpus must be non-empty and each in [0, 1024); the
// kernel fails the call (EINVAL) when none of them is online or allowed
// by the process's cpuset.
func Apply(cpus []int) error {
	if err := CheckCPUs(cpus); err != nil {
		return err
	}
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	// pid 0 is the calling thread, not the whole process.
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return &Error{Op: "sched_setaffinity", Off: -1, Err: fmt.Errorf("cpus %s: %w", FormatCPUList(cpus), err)}
	}
	return nil
}

// Current returns the calling OS thread's allowed CPUs, sorted. Only
// meaningful on a goroutine locked to its thread.
func Current() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, &Error{Op: "sched_getaffinity", Off: -1, Err: err}
	}
	cpus := make([]int, 0, set.Count())
	for c := range maxSetCPU {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
