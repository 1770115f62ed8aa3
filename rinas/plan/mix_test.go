package plan

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBlendBound checks the bound Blend's doc states, after every unit,
// over random weights (some zero), source counts and unit sizes (each
// source its own sizes, up to its largest, U_i).
func TestBlendBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 400; trial++ {
		s := 1 + rng.IntN(8)
		ws := make([]float64, s)
		umax := make([]uint64, s)
		for i := range ws {
			if rng.IntN(6) > 0 || i == 0 {
				ws[i] = rng.Float64() * 10
			}
			umax[i] = 1 + uint64(rng.IntN(1+rng.IntN(3000)))
		}
		b, err := NewBlend(ws)
		if err != nil {
			t.Fatal(err)
		}
		seen := make([]uint64, s) // the largest unit given so far
		for step := 0; step < 3000; step++ {
			i := b.Next()
			if b.Share(i) == 0 {
				t.Fatalf("trial %d: source %d of weight 0 picked", trial, i)
			}
			u := 1 + uint64(rng.Uint64N(umax[i]))
			seen[i] = max(seen[i], u)
			b.Add(i, u)
			checkBound(t, b, seen)
		}
	}
}

func checkBound(t *testing.T, b *Blend, u []uint64) {
	t.Helper()
	g, T := b.Given(), float64(b.Total())
	var lead float64 // Σ (1 − w_j)·U_j
	for j := range g {
		lead += (1 - b.Share(j)) * float64(u[j])
	}
	const eps = 1e-6
	for i := range g {
		w := b.Share(i)
		ahead := float64(g[i]) - w*T
		if ahead > (1-w)*float64(u[i])+eps*math.Max(1, T) {
			t.Fatalf("source %d (share %.3f) is %.3f ahead of its target after %v (largest unit %d)", i, w, ahead, g, u[i])
		}
		behind := -ahead
		if bound := lead - (1-w)*float64(u[i]); behind > bound+eps*math.Max(1, T) {
			t.Fatalf("source %d (share %.3f) is %.3f behind its target after %v, bound %.3f", i, w, behind, g, bound)
		}
	}
}

// TestBlendTakeRows checks the row bound batch by batch: 3 sources at
// 0.6/0.3/0.1 and random batch sizes, never a row ahead, less than two
// behind.
func TestBlendTakeRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	b, err := NewBlend([]float64{0.6, 0.3, 0.1})
	if err != nil {
		t.Fatal(err)
	}
	total := make([]uint64, 3)
	for k := 0; k < 2000; k++ {
		n := 1 + rng.Uint64N(300)
		c := make([]uint64, 3)
		b.Take(n, c)
		var sum uint64
		for i := range c {
			total[i] += c[i]
			sum += c[i]
		}
		if sum != n {
			t.Fatalf("batch %d: %v for %d rows", k, c, n)
		}
		checkBound(t, b, []uint64{1, 1, 1})
		for i, w := range []float64{0.6, 0.3, 0.1} {
			if d := math.Abs(float64(total[i]) - w*float64(b.Total())); d >= 2 {
				t.Fatalf("batch %d: source %d off its target by %.2f rows", k, i, d)
			}
		}
	}
}

// TestBlendRestore: a blend restored from another's counters picks what
// the other would.
func TestBlendRestore(t *testing.T) {
	a, _ := NewBlend([]float64{5, 2, 2, 1})
	for i := 0; i < 77; i++ {
		a.Add(a.Next(), 1+uint64(i%5))
	}
	b, _ := NewBlend([]float64{5, 2, 2, 1})
	if err := b.Restore(a.Given()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500; i++ {
		x, y := a.Next(), b.Next()
		if x != y {
			t.Fatalf("step %d: %d vs %d", i, x, y)
		}
		a.Add(x, uint64(i%7+1))
		b.Add(y, uint64(i%7+1))
	}
	if err := b.Restore([]uint64{1}); err == nil {
		t.Fatal("restored 1 counter for 4 sources")
	}
	z, _ := NewBlend([]float64{1, 0})
	if err := z.Restore([]uint64{1, 1}); err == nil {
		t.Fatal("restored a count for a source of weight 0")
	}
}
