package index

import (
	"testing"

	"github.com/pagefeed/pagefeed/engine"
)

// readers returns every engine.BatchReader implementation, closed at cleanup.
func readers(t *testing.T) map[string]engine.BatchReader {
	t.Helper()
	out := map[string]engine.BatchReader{"pread": &engine.PreadReader{Parallelism: 3}}
	er, err := engine.StartRangeReader(engine.Options{Logf: t.Logf, SlotSize: 8192})
	if err != nil {
		t.Logf("engine reader unavailable: %v", err)
		return out
	}
	t.Cleanup(func() { er.Close() })
	out["engine"] = er
	t.Logf("engine: %+v", er.Info())
	return out
}

// TestBuildReadersAgree builds the same index through every reader.
func TestBuildReadersAgree(t *testing.T) {
	files := genDataset(t, small(false, 1))
	var ref *Index
	for name, r := range readers(t) {
		ix := build(t, files, Options{Reader: r, WalkReadSize: 4096})
		if ref == nil {
			ref = ix
			continue
		}
		sameLocations(t, name, ref, ix)
	}
	sameLocations(t, "default", ref, build(t, files, Options{}))
}
