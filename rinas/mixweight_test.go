package rinas

import (
	"testing"
)

// TestMixtureZeroWeight: in a weighted mixture a source whose Weight is
// 0 (in Go the same as a Weight left out) gives no rows, as Source's doc
// says: the blend never picks it, the default epoch is the sum of the
// other weighted sources' rows (the weightless one's would only upsample
// them), and its State goes on in every
// checkpoint, so that a resume that weighs it again starts it where it
// was (nothing delivered yet) and gives each of its rows once per its
// epoch, the other sources going on where they were.
func TestMixtureZeroWeight(t *testing.T) {
	names := []string{"web", "code", "math"}
	cfg := mixConfig(t, names, []float64{1, 1, 0})
	cfg.BatchRows = 100
	l := openT(t, cfg)
	total := mixRows("web") + mixRows("code")
	if want := total / 100; l.Len() != want {
		t.Fatalf("Len %d, want %d: the epoch is the weighted sources' rows, not the weightless one's", l.Len(), want)
	}
	before, states := runMix(t, l, 3, 20)
	var counts [][]int
	per := make([][]int64, 3)
	for k, b := range before {
		if len(b[2]) != 0 {
			t.Fatalf("batch %d: the weightless source gave %d rows", k, len(b[2]))
		}
		counts = append(counts, []int{len(b[0]), len(b[1]), 0})
		for i := range b {
			per[i] = append(per[i], b[i]...)
		}
	}
	checkPrefix(t, counts, []float64{1, 1, 0})
	st := states[len(states)-1]
	if len(st.Mix.Sources) != 3 || st.Mix.Sources[2].Name != "math" || st.Mix.Sources[2].State == nil {
		t.Fatalf("the checkpoint's sources %+v: want the weightless one's state too", st.Mix.Sources)
	}
	if s := l.Stats().Sources[2]; s.Rows != 0 {
		t.Fatalf("the weightless source counted %d rows", s.Rows)
	}
	l.Close()

	// A later stage weighs it.
	cfg2 := mixConfig(t, names, []float64{1, 1, 2})
	cfg2.BatchRows, cfg2.Resume = 100, st
	l2 := openT(t, cfg2)
	after, _ := runMix(t, l2, 3, -1)
	counts = nil
	for _, b := range after {
		counts = append(counts, []int{len(b[0]), len(b[1]), len(b[2])})
		for i := range b {
			per[i] = append(per[i], b[i]...)
		}
	}
	checkPrefix(t, counts, []float64{1, 1, 2})
	if len(per[2]) < mixRows("math") {
		t.Fatalf("the source weighed again gave %d rows, fewer than its %d", len(per[2]), mixRows("math"))
	}
	for i, n := range names {
		checkEpochs(t, n, per[i], mixRows(n))
	}
}
