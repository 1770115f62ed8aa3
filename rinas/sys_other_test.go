//go:build !linux

package rinas

import "time"

// dioAlignOf is 1 outside Linux: files are read buffered.
func dioAlignOf(path string) int64 { return 1 }

// cpuTime is 0 outside Linux: benchmarks report no CPU time.
func cpuTime() time.Duration { return 0 }
