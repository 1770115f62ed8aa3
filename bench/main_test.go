package bench

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// job's workers, sampler and engine must be waited for.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
