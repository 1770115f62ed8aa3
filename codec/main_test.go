package codec

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that Decoders leave no goroutines behind (zstd's decoder
// is closed in Decoder.Close).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
