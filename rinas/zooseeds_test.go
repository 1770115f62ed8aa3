package rinas

import (
	"errors"
	"strings"
	"testing"

	"github.com/pagefeed/pagefeed/internal/zoo"
)

// TestZooSeedsFlippedAndTruncated opens and reads one epoch, at the
// defaults, of truncated and bit-flipped copies of the writer zoo's tiny
// files (internal/zoo/testdata/seeds: one per writer): each must load or
// fail with an error that names the file (or a config or memory error),
// in time and without a panic; a truncated file must fail. (A flipped bit
// may change a value, even an id, without an error: nothing checks the
// pages' bytes where writers store no CRC.)
func TestZooSeedsFlippedAndTruncated(t *testing.T) {
	outcomes := map[string]int{}
	n := zoo.EachBadSeedCopy(t, 16, 7, func(name, p string) {
		_, err := runEpochWithin(t, defaultsConfig([]string{p}, "id", "input_ids", "text", "score"), false)
		switch {
		case err == nil && strings.HasPrefix(name, "cut"):
			t.Errorf("%s: a truncated file loads without an error", p)
		case err == nil:
			outcomes["ok"]++
		case strings.Contains(err.Error(), p) || errors.Is(err, ErrConfig) || errors.Is(err, ErrMemory):
			outcomes["error"]++
		default:
			t.Errorf("%s: error %q does not name the file", p, err)
		}
	})
	t.Logf("%d seeds: %v", n, outcomes)
}
