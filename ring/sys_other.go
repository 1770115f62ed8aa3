//go:build !linux

package ring

import "golang.org/x/sys/unix"

// io_uring is Linux's: elsewhere every ring system call fails with ENOSYS,
// so New fails and the engine reads with its pread workers.
const (
	sysSetup = iota
	sysEnter
	sysRegister
	mapPopulate = 0
)

func syscall6(trap, a1, a2, a3, a4, a5, a6 uintptr) (r1, r2 uintptr, err unix.Errno) {
	return 0, 0, unix.ENOSYS
}
