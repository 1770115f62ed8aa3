package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them. Run
// with $PAGEBENCH_TEST_AS_MAIN=1 the test binary is pagebench itself: the
// regime tests run their children so.
func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}

const asMainEnv = "PAGEBENCH_TEST_AS_MAIN"
