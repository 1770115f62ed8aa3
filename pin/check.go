package pin

import "fmt"

// maxSetCPU is one past the largest CPU an affinity mask (the kernel's
// cpu_set_t, unix.CPUSet) can hold.
const maxSetCPU = 1024

// CheckCPUs reports whether Apply can express cpus: non-empty, each in
// [0, 1024). It returns an *Error wrapping ErrBadCPUSet otherwise, so a
// bad set fails where it is configured rather than on the thread that
// applies it. Whether the CPUs are online is the kernel's to say, in Apply.
func CheckCPUs(cpus []int) error {
	if len(cpus) == 0 {
		return &Error{Op: "sched_setaffinity", Off: -1, Err: fmt.Errorf("%w: empty", ErrBadCPUSet)}
	}
	for _, c := range cpus {
		if c < 0 || c >= maxSetCPU {
			return &Error{Op: "sched_setaffinity", Off: -1, Err: fmt.Errorf("%w: cpu %d outside [0, %d)", ErrBadCPUSet, c, maxSetCPU)}
		}
	}
	return nil
}
