//go:build linux

package ring

import "golang.org/x/sys/unix"

const (
	sysSetup    = unix.SYS_IO_URING_SETUP
	sysEnter    = unix.SYS_IO_URING_ENTER
	sysRegister = unix.SYS_IO_URING_REGISTER
	mapPopulate = unix.MAP_POPULATE
)

func syscall6(trap, a1, a2, a3, a4, a5, a6 uintptr) (r1, r2 uintptr, err unix.Errno) {
	return unix.Syscall6(trap, a1, a2, a3, a4, a5, a6)
}
