package procstat

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRSSGrowsWithTouchedMemory checks RSS is positive and sees 64 MiB
// being touched.
func TestRSSGrowsWithTouchedMemory(t *testing.T) {
	before := RSS()
	if before <= 0 {
		t.Fatalf("RSS %d", before)
	}
	b := make([]byte, 64<<20)
	for i := range b {
		b[i] = 1
	}
	if after := RSS(); after-before < 32<<20 {
		t.Fatalf("RSS %d -> %d after touching 64 MiB", before, after)
	}
	_ = b[len(b)-1]
}
