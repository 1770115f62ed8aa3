package quality

import (
	"testing"
)

// BenchmarkModelStep measures one SGD step on a 32-row batch of the
// default dataset's shape (8 topics, 512 tokens, 16-token documents).
func BenchmarkModelStep(b *testing.B) {
	c := DataConfig{Dir: b.TempDir(), Rows: 1024, ValRows: 64}
	if err := c.Fill(); err != nil {
		b.Fatal(err)
	}
	src := newSource(&c, 1)
	docs := make([][]int32, 32)
	labels := make([]int32, 32)
	tokens := 0
	for i := range docs {
		labels[i] = int32(i % c.Topics)
		docs[i] = src.doc(int(labels[i]))
		tokens += len(docs[i])
	}
	m := NewModel(c.Topics, c.Vocab, 8)
	b.SetBytes(int64(4 * tokens))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := m.Step(docs, labels); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*32/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkSpearman measures the rank correlation of a 16384-row order.
func BenchmarkSpearman(b *testing.B) {
	xs := make([]int64, 16384)
	for i := range xs {
		xs[i] = int64((i * 7919) % len(xs))
	}
	b.SetBytes(int64(8 * len(xs)))
	b.ReportAllocs()
	for range b.N {
		Spearman(xs)
	}
	b.ReportMetric(float64(b.N)*float64(len(xs))/b.Elapsed().Seconds(), "rows/s")
}
