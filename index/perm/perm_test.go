package perm

import (
	"fmt"
	"math/rand"
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

// TestShardsExactlyOnce checks that the ranks' shares are disjoint and
// cover every position from Start on, also when N < W.
func TestShardsExactlyOnce(t *testing.T) {
	for _, n := range []uint64{0, 1, 2, 5, 63, 64, 65, 1000, 4099} {
		for _, w := range []int{1, 2, 3, 7, 8, 64} {
			for _, start := range []uint64{0, 1, n / 3, n} {
				p := New(n, 1, 2)
				seen := make([]int, n)
				var total uint64
				for r := 0; r < w; r++ {
					s, err := p.Shard(start, r, w)
					if err != nil {
						t.Fatal(err)
					}
					total += s.Len()
					for j := uint64(0); j < s.Len(); j++ {
						seen[s.At(j)]++
					}
				}
				if want := n - min(start, n); total != want {
					t.Fatalf("n=%d w=%d start=%d: shards hold %d items, want %d", n, w, start, total, want)
				}
				for k := start; k < n; k++ {
					if c := seen[p.At(k)]; c != 1 {
						t.Fatalf("n=%d w=%d start=%d: position %d served %d times", n, w, start, k, c)
					}
				}
			}
		}
	}
}

func TestShardErrors(t *testing.T) {
	p := New(10, 0, 0)
	for _, c := range [][2]int{{0, 0}, {-1, 2}, {2, 2}, {0, -1}} {
		if _, err := p.Shard(0, c[0], c[1]); err == nil {
			t.Errorf("Shard(rank %d, world %d) accepted", c[0], c[1])
		}
	}
}

// TestResume checkpoints at random steps and resumes with another world
// size: the positions served after resume are exactly the rest of the order.
func TestResume(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for trial := 0; trial < 200; trial++ {
		n := uint64(rng.Intn(5000))
		seed, epoch := rng.Uint64(), uint64(rng.Intn(5))
		w1, w2 := 1+rng.Intn(9), 1+rng.Intn(9)
		p := New(n, seed, epoch)
		s0, _ := p.Shard(0, 0, w1)
		done := uint64(rng.Intn(int(s0.Len()) + 2))
		// The order as consumed by w1 ranks in lockstep, then by w2.
		var before []uint64
		for j := uint64(0); j < done; j++ {
			for r := 0; r < w1; r++ {
				s, _ := p.Shard(0, r, w1)
				if j < s.Len() {
					before = append(before, s.Pos(j))
				}
			}
		}
		c := s0.Checkpoint(seed, epoch, done)
		if c.Position != uint64(len(before)) {
			t.Fatalf("n=%d w=%d done=%d: checkpoint position %d, %d consumed", n, w1, done, c.Position, len(before))
		}
		got := map[uint64]bool{}
		for r := 0; r < w2; r++ {
			s, err := c.Shard(n, r, w2)
			if err != nil {
				t.Fatal(err)
			}
			for j := uint64(0); j < s.Len(); j++ {
				v := s.At(j)
				if got[v] {
					t.Fatalf("item %d served twice after resume", v)
				}
				got[v] = true
				if want := p.At(s.Pos(j)); v != want {
					t.Fatalf("resumed item %d, order says %d", v, want)
				}
			}
		}
		for k := uint64(0); k < n; k++ {
			if (k >= c.Position) != got[p.At(k)] {
				t.Fatalf("n=%d pos %d (cursor %d): served after resume = %v", n, k, c.Position, got[p.At(k)])
			}
		}
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

func TestCursorDone(t *testing.T) {
	c := Cursor{Seed: 1, Epoch: 3, Position: 10}
	if !c.Done(10) || c.Done(11) {
		t.Error("Done")
	}
	if nc := c.NextEpoch(); nc != (Cursor{Seed: 1, Epoch: 4}) {
		t.Errorf("NextEpoch = %+v", nc)
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
	s, _ := p.Shard(0, 1, 4) // rank 1 of 4 takes positions 1, 5, 9
	fmt.Println(len(seen), s.Len(), s.Pos(0), s.Pos(1), s.Pos(2))
	// Output: 10 3 1 5 9
}

// TestEvenShares: with EvenEnd every rank gets the same count; dropping
// loses only the last N mod W positions, padding repeats the first ones.
func TestEvenShares(t *testing.T) {
	for _, n := range []uint64{1, 2, 7, 10, 64, 101} {
		for _, w := range []int{1, 2, 3, 7, 8} {
			p := New(n, 3, 1)
			for _, pad := range []bool{false, true} {
				end := EvenEnd(n, w, pad)
				seen := make([]int, n)
				var lens []uint64
				for r := 0; r < w; r++ {
					s, err := p.Shard(0, r, w)
					if err != nil {
						t.Fatal(err)
					}
					s = s.WithEnd(end)
					lens = append(lens, s.Len())
					for j := uint64(0); j < s.Len(); j++ {
						seen[s.At(j)]++
					}
				}
				for _, l := range lens {
					if l != lens[0] {
						t.Fatalf("n=%d w=%d pad=%v: shard lengths %v differ", n, w, pad, lens)
					}
				}
				total := 0
				for v, c := range seen {
					total += c
					switch {
					case !pad && c > 1, pad && c == 0:
						t.Fatalf("n=%d w=%d pad=%v: item %d seen %d times", n, w, pad, v, c)
					}
				}
				if uint64(total) != end {
					t.Fatalf("n=%d w=%d pad=%v: %d items, want %d", n, w, pad, total, end)
				}
				if !pad && n-end >= uint64(w) || pad && end-n >= uint64(w) {
					t.Fatalf("n=%d w=%d pad=%v: end %d", n, w, pad, end)
				}
			}
		}
	}
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
