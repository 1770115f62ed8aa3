package rinas

import (
	"os"
	"testing"
)

// TestZZReliabilityCleanup runs last (this file sorts last among the
// package's tests) and removes the reliability tests' datasets.
func TestZZReliabilityCleanup(t *testing.T) {
	relMu.Lock()
	defer relMu.Unlock()
	if relDir != "" {
		os.RemoveAll(relDir)
		relDir = ""
		clear(relSets)
	}
}
