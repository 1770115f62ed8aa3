package rinas

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestPageTagBoundary: a completion tag names its fetch batch, unit and
// page exactly for every value a loader can have (fetch batches up to
// maxPrefetch+1, units up to the largest BatchPages, pages up to
// maxUnitPages): a row-group unit's page 65,536 once spilled into the
// unit field and completed under the next unit.
func TestPageTagBoundary(t *testing.T) {
	for _, tc := range []struct{ fb, u, k int }{
		{0, 0, 0},
		{1, 2, 1<<16 - 1},
		{1, 2, 1 << 16},
		{0, 0, maxUnitPages - 1},
		{maxPrefetch, 1<<16 - 1, maxUnitPages - 1},
		{1<<tagBatchBits - 1, 1<<tagUnitBits - 1, 1<<tagPageBits - 1},
	} {
		fb, u, k := splitTag(pageTag(tc.fb, tc.u, tc.k))
		if fb != tc.fb || u != tc.u || k != tc.k {
			t.Errorf("pageTag(%d, %d, %d) decodes to (%d, %d, %d)", tc.fb, tc.u, tc.k, fb, u, k)
		}
	}
}

// TestRowGroupUnitBound: a row group with more pages than one unit may
// hold fails Open with ErrConfig naming the file, the row group and the
// count, instead of tags that spill over or a unit that can never be in
// flight whole. (A 65,537-page chunk is not cheap to build here: the
// bound is lowered instead.)
func TestRowGroupUnitBound(t *testing.T) {
	ds := testDataset(t, "v2")
	saved := maxUnitPages
	maxUnitPages = 1
	defer func() { maxUnitPages = saved }()
	cfg := baseConfig(ds, "id")
	cfg.Shuffle = ShuffleRowGroup
	l, err := Open(context.Background(), cfg)
	if err == nil {
		l.Close()
		t.Fatal("Open accepted row groups of more than maxUnitPages pages")
	}
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "row group 0 of "+ds.paths[0]) || !strings.Contains(err.Error(), "at most 1 pages") {
		t.Fatalf("Open: %v; want ErrConfig naming row group 0 of %s", err, ds.paths[0])
	}
}
