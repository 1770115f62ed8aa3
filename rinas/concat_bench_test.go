package rinas

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkConcatRows builds row batches of token ids the way nextRows
// does: 1024 rows (and 341, a mixture source's third) drawn at random
// from 16 pages of 256 rows of 1 to 1,000 tokens each. It reports
// tokens/s.
func BenchmarkConcatRows(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	var pages []arrow.Array
	for range 16 {
		lb := array.NewListBuilder(memory.DefaultAllocator, arrow.PrimitiveTypes.Int32)
		vb := lb.ValueBuilder().(*array.Int32Builder)
		for range 256 {
			lb.Append(true)
			for range 1 + rng.IntN(1000) {
				vb.Append(rng.Int32())
			}
		}
		pages = append(pages, lb.NewArray())
		lb.Release()
	}
	defer func() {
		for _, p := range pages {
			p.Release()
		}
	}()
	for _, n := range []int{1024, 341} {
		b.Run(map[int]string{1024: "batch1024", 341: "batch341"}[n], func(b *testing.B) {
			rows := make([]rowItem, n)
			toks := 0
			for i := range rows {
				p := pages[rng.IntN(len(pages))]
				rows[i] = rowItem{arr: p, i: rng.IntN(p.Len())}
				lo, hi := p.(*array.List).ValueOffsets(rows[i].i)
				toks += int(hi - lo)
			}
			b.ResetTimer()
			for range b.N {
				a, err := concatRows(rows)
				if err != nil {
					b.Fatal(err)
				}
				a.Release()
			}
			b.ReportMetric(float64(toks)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
