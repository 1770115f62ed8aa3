//go:build linux

package rinas

import (
	"time"

	"golang.org/x/sys/unix"
)

// dioAlignOf is path's O_DIRECT alignment from statx DIOALIGN, or 1.
func dioAlignOf(path string) int64 {
	var stx unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_DIOALIGN, &stx) == nil && stx.Mask&unix.STATX_DIOALIGN != 0 && stx.Dio_offset_align > 0 {
		return int64(max(stx.Dio_offset_align, stx.Dio_mem_align))
	}
	return 1
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
