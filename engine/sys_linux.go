//go:build linux

package engine

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The engine's Linux system interface: O_DIRECT, statx's DIOALIGN, block
// device sizes, eventfd wakeups for io_uring, and slot memory advice.
// sys_other.go gives other systems a pread-only, buffered engine.

const (
	oDirect           = unix.O_DIRECT
	mapPopulate       = unix.MAP_POPULATE
	madvHugepage      = unix.MADV_HUGEPAGE
	madvPopulateWrite = unix.MADV_POPULATE_WRITE
)

func sysOpen(path string, flags int) (int, error) { return unix.Open(path, flags, 0) }

func newEventfd() (int, error) { return unix.Eventfd(0, unix.EFD_CLOEXEC) } // blocking: io_uring polls it

// fileStat is what Open needs to know of an open file.
type fileStat struct {
	size               int64
	isDir              bool
	offAlign, memAlign int // direct-I/O alignment
}

// statFile stats fd with statx: size (a block device's from its ioctl)
// and direct-I/O alignment.
func statFile(fd int) (fileStat, error) {
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_SIZE|unix.STATX_TYPE|unix.STATX_DIOALIGN, &stx); err != nil {
		return fileStat{}, &Error{Op: "statx", Err: err}
	}
	st := fileStat{size: int64(stx.Size), isDir: stx.Mode&unix.S_IFMT == unix.S_IFDIR}
	if stx.Mode&unix.S_IFMT == unix.S_IFBLK {
		// A block device's size is not in st_size.
		n, err := blockDeviceSize(fd)
		if err != nil {
			return fileStat{}, &Error{Op: "ioctl BLKGETSIZE64", Err: err}
		}
		st.size = n
	}
	st.offAlign, st.memAlign = dioAlign(&stx)
	return st, nil
}

// dioAlign returns the direct-I/O offset and memory alignment: statx's
// STATX_DIOALIGN, else the device's logical block size, else 4096.
func dioAlign(stx *unix.Statx_t) (off, mem int) {
	if stx.Mask&unix.STATX_DIOALIGN != 0 && stx.Dio_offset_align > 0 {
		off, mem = int(stx.Dio_offset_align), int(stx.Dio_mem_align)
		if mem <= 0 {
			mem = off
		}
		return off, mem
	}
	if lbs := logicalBlockSize(stx.Dev_major, stx.Dev_minor); lbs > 0 {
		return lbs, lbs
	}
	return 4096, 4096
}

// logicalBlockSize reads the block device's logical_block_size from sysfs
// (a partition's queue lives in its parent); 0 when unknown.
func logicalBlockSize(major, minor uint32) int {
	base := fmt.Sprintf("/sys/dev/block/%d:%d/", major, minor)
	for _, p := range []string{base + "queue/logical_block_size", base + "../queue/logical_block_size"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err == nil && n > 0 && n&(n-1) == 0 {
			return n
		}
	}
	return 0
}

// blockDeviceSize returns the size in bytes of the block device open at fd.
func blockDeviceSize(fd int) (int64, error) {
	var n uint64
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.BLKGETSIZE64, uintptr(unsafe.Pointer(&n))); e != 0 {
		return 0, e
	}
	return int64(n), nil
}
