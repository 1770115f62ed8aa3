//go:build !linux

package rinas

// oDirect is 0 outside Linux: directReader opens files buffered there.
const oDirect = 0
