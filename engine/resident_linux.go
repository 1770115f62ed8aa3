//go:build linux

package engine

import (
	"errors"
	"slices"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// noCachestat is set once cachestat(2) was found missing (or tests force
// the mincore path).
var noCachestat atomic.Bool

// residentOf counts the cached bytes of rs (merged, within size) of the
// file open at fd: cachestat(2), else mincore(2).
func residentOf(path string, fd int, size int64, rs []Extent) (int64, error) {
	if !noCachestat.Load() {
		n, err := residentCachestat(fd, rs)
		if err == nil {
			return n, nil
		}
		if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM) {
			return 0, &Error{Op: "cachestat", Path: path, Err: err}
		}
		noCachestat.Store(true) // seccomp or an older kernel: mincore from now on
	}
	n, err := residentMincore(fd, size, rs)
	if err != nil {
		return 0, &Error{Op: "mincore", Path: path, Err: err}
	}
	return n, nil
}

func residentCachestat(fd int, rs []Extent) (int64, error) {
	var n int64
	for _, r := range rs {
		off, pages := pageSpan(r)
		cr := unix.CachestatRange{Off: uint64(off), Len: uint64(pages * pageSize)}
		var cs unix.Cachestat_t
		if err := unix.Cachestat(uint(fd), &cr, &cs, 0); err != nil {
			return 0, err
		}
		n += clampPages(int64(cs.Cache), r)
	}
	return n, nil
}

// residentMincore maps the file read-only and asks mincore(2) for each
// range's pages. Nothing is touched, so nothing faults.
func residentMincore(fd int, size int64, rs []Extent) (int64, error) {
	m, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, err
	}
	defer unix.Munmap(m)
	var vec []byte
	var n int64
	for _, r := range rs {
		off, pages := pageSpan(r)
		length := min(pages*pageSize, size-off)
		vec = slices.Grow(vec[:0], int(pages))[:pages]
		if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[off])), uintptr(length), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
			return 0, e
		}
		var cached int64
		for _, v := range vec {
			cached += int64(v & 1)
		}
		n += clampPages(cached, r)
	}
	return n, nil
}
