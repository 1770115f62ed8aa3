//go:build !linux

package pin

import "errors"

// errNoAffinity is what Apply and Current return outside Linux: thread
// affinity goes through sched_setaffinity, which only Linux has.
var errNoAffinity = errors.New("pin: thread affinity needs Linux")

// Apply fails outside Linux; see the Linux build for its contract.
func Apply(cpus []int) error {
	if err := CheckCPUs(cpus); err != nil {
		return err
	}
	return &Error{Op: "sched_setaffinity", Off: -1, Err: errNoAffinity}
}

// Current fails outside Linux.
func Current() ([]int, error) {
	return nil, &Error{Op: "sched_getaffinity", Off: -1, Err: errNoAffinity}
}
