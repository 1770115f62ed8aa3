// Package procstat reads this process's resource figures from /proc, for
// the benchmark and the soak.
package procstat

import (
	"os"
	"strconv"
	"strings"
)

// RSS returns the resident set size in bytes from /proc/self/statm, 0 if
// unknown.
func RSS() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}
