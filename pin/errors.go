package pin

import (
	"errors"
	"strconv"
)

// Sentinels; test with errors.Is.
var (
	// ErrBadCPUList: a cpulist that is not in the kernel's format.
	ErrBadCPUList = errors.New("pin: bad cpulist")
	// ErrNoCPUs: discovery found no online CPU under the sysfs root.
	ErrNoCPUs = errors.New("pin: no online CPUs found")
	// ErrTooManyRanks: more local ranks than the CPUs that can serve them.
	ErrTooManyRanks = errors.New("pin: too many ranks")
	// ErrRankOutOfRange: a local rank the plan has no group for.
	ErrRankOutOfRange = errors.New("pin: local rank out of range")
	// ErrBadCPUSet: an empty CPU set, or a CPU number affinity cannot express.
	ErrBadCPUSet = errors.New("pin: bad CPU set")
)

// Error is a failed operation on a sysfs file or on the thread's affinity.
type Error struct {
	Op   string // what was being done: "read", "parse cpulist", "sched_setaffinity", ...
	Path string // the file, when there is one
	Off  int64  // byte offset of the fault within the file or string; -1 when none
	Err  error  // the cause
}

func (e *Error) Error() string {
	s := "pin: " + e.Op
	if e.Path != "" {
		s += " " + e.Path
	}
	if e.Off >= 0 {
		s += " at byte " + strconv.FormatInt(e.Off, 10)
	}
	return s + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }
