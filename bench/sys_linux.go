//go:build linux

package bench

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The benchmarks' Linux system interface; sys_other.go lets the package
// build elsewhere, with buffered reads and default alignments.

const (
	oDirect  = unix.O_DIRECT
	sysPread = unix.SYS_PREAD64
)

// dropCache writes back and drops the page cache of the file open at fd.
func dropCache(fd int) {
	_ = unix.Fdatasync(fd)
	_ = unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED)
}

// dioAlign returns the O_DIRECT offset alignment of path from statx
// STATX_DIOALIGN, or 4096 where the kernel or file system does not say.
func dioAlign(path string) (int, string, error) {
	var stx unix.Statx_t
	err := unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_DIOALIGN, &stx)
	if err != nil || stx.Mask&unix.STATX_DIOALIGN == 0 {
		return 4096, "default; statx DIOALIGN unavailable", nil
	}
	if stx.Dio_offset_align == 0 {
		return 0, "", &Error{Op: "open", Path: path, Off: -1,
			Err: fmt.Errorf("%w: the file system does not support O_DIRECT here (statx DIOALIGN is 0); use --direct=0", ErrAlignment)}
	}
	a := int(max(stx.Dio_offset_align, stx.Dio_mem_align))
	return a, "statx DIOALIGN", nil
}

// blockDeviceSize returns the size of the block device at path.
func blockDeviceSize(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, &Error{Op: "open", Path: path, Off: -1, Err: err}
	}
	defer f.Close()
	var n uint64
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.BLKGETSIZE64, uintptr(unsafe.Pointer(&n))); e != 0 {
		return 0, &Error{Op: "ioctl BLKGETSIZE64", Path: path, Off: -1, Err: e}
	}
	return int64(n), nil
}
