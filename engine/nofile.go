package engine

import "golang.org/x/sys/unix"

// OpenFileBudget is the process's one rule for how many files a reader
// may keep open: the soft RLIMIT_NOFILE divided by share, at least 32/share
// and at most 1<<20. The loader's file cache takes share 2 (half) and an
// index build share 4 (a quarter), which leaves a quarter to the trainer,
// its sockets and the engine's rings.
//
// It reads the limit on every call and never changes it: a library must
// not change process limits. The Go runtime already raises the soft limit
// to the hard limit when a program starts; a program that lowers it gets
// smaller budgets. When the limit cannot be read, the budget is 1024/share.
func OpenFileBudget(share int) int {
	share = max(share, 1)
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 1024 / share
	}
	return int(min(max(rl.Cur/uint64(share), uint64(32/share)), 1<<20))
}
