package perm

import (
	"fmt"
	"testing"
)

// checkBijection asserts that p.At is a bijection of [0, n) and Position
// its inverse.
func checkBijection(t *testing.T, p Perm) {
	t.Helper()
	n := p.Len()
	seen := make([]bool, n)
	for k := uint64(0); k < n; k++ {
		v := p.At(k)
		if v >= n {
			t.Fatalf("n=%d: At(%d) = %d out of range", n, k, v)
		}
		if seen[v] {
			t.Fatalf("n=%d: At(%d) = %d repeats", n, k, v)
		}
		seen[v] = true
		if k%97 == 0 {
			if got := p.Position(v); got != k {
				t.Fatalf("n=%d: Position(At(%d)) = %d", n, k, got)
			}
		}
	}
}

func TestBijection(t *testing.T) {
	ns := []uint64{1, 2, 3, 4, 5, 7, 13, 101, 257, 7919, 65521, 1_000_003}
	for k := uint(1); k <= 20; k += 3 {
		ns = append(ns, 1<<k-1, 1<<k, 1<<k+1)
	}
	ns = append(ns, 1_000_000)
	for _, n := range ns {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			checkBijection(t, New(n, 42, 7))
		})
	}
}

func TestEpochsAndSeedsDiffer(t *testing.T) {
	const n = 10000
	base := New(n, 5, 0)
	for _, p := range []Perm{New(n, 5, 1), New(n, 5, 2), New(n, 6, 0)} {
		same := 0
		for k := uint64(0); k < n; k++ {
			if p.At(k) == base.At(k) {
				same++
			}
		}
		// a random permutation has about one fixed point relative to another
		if same > 20 {
			t.Errorf("orders agree at %d of %d positions", same, n)
		}
	}
	if New(n, 5, 0) != base {
		t.Error("same (seed, epoch) gave another order")
	}
}

// TestSpearman checks that position and page are uncorrelated.
func TestSpearman(t *testing.T) {
	const n = 100_000
	for _, epoch := range []uint64{0, 1, 2} {
		p := New(n, 11, epoch)
		var d2 float64
		for k := uint64(0); k < n; k++ {
			d := float64(k) - float64(p.At(k))
			d2 += d * d
		}
		rho := 1 - 6*d2/(float64(n)*(float64(n)*float64(n)-1))
		if rho < -0.05 || rho > 0.05 {
			t.Errorf("epoch %d: Spearman rho = %.4f", epoch, rho)
		}
		// neighbours in position should not be neighbours in page
		var adj int
		for k := uint64(1); k < n; k++ {
			if a, b := p.At(k-1), p.At(k); a+1 == b || b+1 == a {
				adj++
			}
		}
		if adj > 20 {
			t.Errorf("epoch %d: %d adjacent positions hold adjacent pages", epoch, adj)
		}
	}
}

func TestAtOutOfRangePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("At(N) did not panic")
		}
	}()
	New(3, 0, 0).At(3)
}

func BenchmarkAt(b *testing.B) {
	for _, n := range []uint64{1_000_000, 1<<20 + 1} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			p := New(n, 1, 1)
			b.ReportAllocs()
			b.SetBytes(8)
			var s uint64
			k := uint64(0)
			for i := 0; i < b.N; i++ {
				s += p.At(k)
				k++
				if k == n {
					k = 0
				}
			}
			sink = s
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/at")
		})
	}
}

var sink uint64

func ExamplePerm() {
	p := New(10, 42, 0)
	seen := map[uint64]bool{}
	for k := uint64(0); k < p.Len(); k++ {
		seen[p.At(k)] = true
	}
	fmt.Println(len(seen), p.Position(p.At(7)))
	// Output: 10 7
}

// TestPositionsMatchesPosition: the batch inverse equals Position for every
// item, over sizes around powers of four (where the Feistel domain grows)
// and ranges starting anywhere.
func TestPositionsMatchesPosition(t *testing.T) {
	for _, n := range []uint64{1, 2, 3, 4, 5, 15, 16, 17, 63, 64, 65, 1000, 1 << 12, 1<<12 + 1, 99991} {
		for _, seed := range []uint64{0, 7} {
			p := New(n, seed, seed+3)
			for _, lo := range []uint64{0, n / 3, n - 1} {
				out := make([]uint64, n-lo)
				p.Positions(lo, out)
				for i, pos := range out {
					if want := p.Position(lo + uint64(i)); pos != want {
						t.Fatalf("n %d seed %d: Positions(%d)[%d] = %d, Position = %d", n, seed, lo, i, pos, want)
					}
				}
			}
			p.Positions(n, nil) // empty range at the end
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Positions past N did not panic")
		}
	}()
	New(10, 1, 1).Positions(5, make([]uint64, 6))
}

func BenchmarkPositions(b *testing.B) {
	p := New(1<<20+1<<16, 1, 1) // 4^half/N ≈ 3.8, as a 1M-page index has
	buf := make([]uint64, 256)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p.Positions(uint64(i*256)&(1<<20-1), buf)
	}
	b.SetBytes(256) // items per op, as "bytes"
}

func BenchmarkPosition(b *testing.B) {
	p := New(1<<20+1<<16, 1, 1)
	var s uint64
	for i := 0; i < b.N; i++ {
		s += p.Position(uint64(i) & (1<<20 - 1))
	}
	_ = s
}
