//go:build !linux

package engine

import (
	"golang.org/x/sys/unix"
)

// Outside Linux the engine builds for development only: io_uring setup
// fails with ENOSYS, so Kind Auto runs the pread workers; O_DIRECT is
// refused at open (EINVAL), so Direct TryOn reads buffered and Direct On
// fails; slots get no huge-page advice.

const (
	oDirect           = 1 << 30 // no such flag here: sysOpen refuses it
	mapPopulate       = 0
	madvHugepage      = -1 // invalid advice: Madvise fails, nothing advised
	madvPopulateWrite = -1
)

func sysOpen(path string, flags int) (int, error) {
	if flags&oDirect != 0 {
		return -1, unix.EINVAL
	}
	return unix.Open(path, flags, 0)
}

func newEventfd() (int, error) { return -1, unix.ENOSYS }

// fileStat is what Open needs to know of an open file.
type fileStat struct {
	size               int64
	isDir              bool
	offAlign, memAlign int
}

func statFile(fd int) (fileStat, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fileStat{}, &Error{Op: "fstat", Err: err}
	}
	return fileStat{size: st.Size, isDir: st.Mode&unix.S_IFMT == unix.S_IFDIR, offAlign: 4096, memAlign: 4096}, nil
}
