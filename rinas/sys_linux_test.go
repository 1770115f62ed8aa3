//go:build linux

package rinas

import "golang.org/x/sys/unix"

// dioAlignOf is path's O_DIRECT alignment from statx DIOALIGN, or 1.
func dioAlignOf(path string) int64 {
	var stx unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_DIOALIGN, &stx) == nil && stx.Mask&unix.STATX_DIOALIGN != 0 && stx.Dio_offset_align > 0 {
		return int64(max(stx.Dio_offset_align, stx.Dio_mem_align))
	}
	return 1
}
