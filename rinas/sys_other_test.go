//go:build !linux

package rinas

// dioAlignOf is 1 outside Linux: files are read buffered.
func dioAlignOf(path string) int64 { return 1 }
