package engine

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestOpenFileBudget(t *testing.T) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		t.Skip(err)
	}
	want := func(share int) int { return int(min(max(rl.Cur/uint64(share), uint64(32/share)), 1<<20)) }
	for _, share := range []int{1, 2, 4} {
		if got := OpenFileBudget(share); got != want(share) {
			t.Errorf("share %d: %d, want %d (soft limit %d)", share, got, want(share), rl.Cur)
		}
	}
	if OpenFileBudget(0) != OpenFileBudget(1) {
		t.Error("share 0 is not taken as 1")
	}
	var after unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &after); err != nil || after != rl {
		t.Errorf("limit changed from %+v to %+v", rl, after)
	}
}
