//go:build !linux

package bench

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Outside Linux the package builds for development only: no O_DIRECT, no
// page-cache eviction, no block devices.

const (
	oDirect  = 0
	sysPread = unix.SYS_PREAD
)

func dropCache(fd int) {}

func dioAlign(path string) (int, string, error) { return 4096, "default; no statx here", nil }

func blockDeviceSize(path string) (int64, error) {
	return 0, &Error{Op: "ioctl BLKGETSIZE64", Path: path, Off: -1, Err: errors.New("block devices need Linux")}
}
