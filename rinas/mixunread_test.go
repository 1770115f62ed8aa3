package rinas

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
)

// mixKey is a mixture batch's content, to compare batches: each source's
// ids (arrow output) or the token matrix with its sources' rows.
func mixKey(t *testing.T, b *Batch, n int) string {
	t.Helper()
	if b.Tokens != nil || b.Tokens64 != nil {
		return fmt.Sprint(b.SourceRows, b.Tokens, b.Tokens64, b.PositionIDs, b.CuSeqlens, b.LossMask)
	}
	return fmt.Sprint(splitMix(t, b, n))
}

// TestMixtureUnread: a mixture batch given back is returned again by the
// next Next, the same rows in the same order, in arrow and tokens output;
// Stats and State until then count it as not delivered (State equals the
// one before the Next, unless that batch began an epoch), a State taken
// then resumes to the rest of the uninterrupted run, and Unread of any
// batch but the last one returned, unreleased, fails with ErrUnread.
func TestMixtureUnread(t *testing.T) {
	names := []string{"web", "code", "math"}
	for _, tokens := range []bool{false, true} {
		t.Run(fmt.Sprintf("tokens%v", tokens), func(t *testing.T) {
			cfg := mixConfig(t, names, []float64{0.6, 0.3, 0.1})
			cfg.Deterministic, cfg.BatchRows, cfg.Epochs = true, 150, 2
			if tokens {
				cfg.Columns, cfg.Output, cfg.SeqLen, cfg.BatchRows, cfg.EpochSize = []string{"input_ids"}, OutputTokens, 64, 7, 64*7*40
			}
			var want []string
			eachBatch(t, openT(t, cfg), func(b *Batch) { want = append(want, mixKey(t, b, 3)); b.Release() })
			rng := rand.New(rand.NewPCG(uint64(len(want)), 3))
			l := openT(t, cfg)
			unreads, resumes := 0, 0
			var prev *Batch
			for i := 0; ; i++ {
				st := l.State()
				before, beforeEpoch := mustMarshal(t, st), st.Mix.Epoch
				b, err := l.Next(context.Background())
				if err == io.EOF {
					if i != len(want) {
						t.Fatalf("io.EOF after %d batches, want %d", i, len(want))
					}
					if err := l.Unread(prev); !errors.Is(err, ErrUnread) {
						t.Fatalf("Unread after io.EOF: %v, want ErrUnread", err)
					}
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if prev != nil {
					if err := l.Unread(prev); !errors.Is(err, ErrUnread) {
						t.Fatalf("Unread of the batch before the last: %v, want ErrUnread", err)
					}
				}
				for rng.IntN(3) == 0 {
					s0 := l.Stats()
					if err := l.Unread(b); err != nil {
						t.Fatalf("batch %d: Unread: %v", i, err)
					}
					unreads++
					if err := l.Unread(b); !errors.Is(err, ErrUnread) {
						t.Fatalf("second Unread: %v, want ErrUnread", err)
					}
					s1 := l.Stats()
					if s1.Batches != s0.Batches-1 || s1.Rows != s0.Rows-int64(b.Rows) {
						t.Fatalf("Stats after Unread: %d batches %d rows, want %d and %d", s1.Batches, s1.Rows, s0.Batches-1, s0.Rows-int64(b.Rows))
					}
					for k := range s1.Sources {
						if s1.Sources[k].Rows > s0.Sources[k].Rows {
							t.Fatalf("source %d: %d rows after Unread, %d before", k, s1.Sources[k].Rows, s0.Sources[k].Rows)
						}
					}
					if b.Epoch == beforeEpoch {
						if after := mustMarshal(t, l.State()); string(after) != string(before) {
							t.Fatalf("batch %d: State after Unread\n%s\nwant the State before Next\n%s", i, after, before)
						}
					}
					if resumes < 3 && rng.IntN(4) == 0 {
						resumes++
						rcfg := cfg
						rcfg.Resume = l.State()
						var rest []string
						eachBatch(t, openT(t, rcfg), func(b *Batch) { rest = append(rest, mixKey(t, b, 3)); b.Release() })
						if !slices.Equal(rest, want[i:]) {
							t.Fatalf("batch %d given back: the resumed run gives %d batches, want the %d left", i, len(rest), len(want)-i)
						}
					}
					if b, err = l.Next(context.Background()); err != nil {
						t.Fatalf("batch %d again: %v", i, err)
					}
					if s := l.Stats(); s.Batches != s0.Batches || s.Rows != s0.Rows {
						t.Fatalf("Stats after the batch again: %d batches %d rows, want %d and %d", s.Batches, s.Rows, s0.Batches, s0.Rows)
					}
				}
				if got := mixKey(t, b, 3); got != want[i] {
					t.Fatalf("batch %d differs from the uninterrupted run's", i)
				}
				b.Release()
				if err := l.Unread(b); !errors.Is(err, ErrUnread) {
					t.Fatalf("Unread of a released batch: %v, want ErrUnread", err)
				}
				prev = b
			}
			t.Logf("%d batches, %d given back, %d resumed", len(want), unreads, resumes)
			if unreads == 0 {
				t.Fatal("nothing given back")
			}
			if err := l.Unread(nil); !errors.Is(err, ErrUnread) {
				t.Fatalf("Unread(nil): %v", err)
			}
			l.Close()
			if err := l.Unread(prev); !errors.Is(err, ErrClosed) {
				t.Fatalf("Unread after Close: %v, want ErrClosed", err)
			}
		})
	}
}

// TestMixtureUnreadBeforeState: at the defaults (unordered, each source
// once per epoch), the batch given back right after Next, as a binding
// does when the batch could not reach its caller, is neither lost nor
// counted by the State taken then: the rows before the checkpoint and
// after the resume are every row of every source exactly once. A Close
// with a batch given back releases it (the test's leak checks).
func TestMixtureUnreadBeforeState(t *testing.T) {
	names := []string{"web", "code", "math"}
	cfg := mixConfig(t, names, nil)
	n := (mixRows("web") + mixRows("code") + mixRows("math") + 1023) / 1024
	for _, k := range []int{0, 1, n - 1} {
		l := openT(t, cfg)
		per := make([][]int64, 3)
		add := func(b *Batch) {
			for i, ids := range splitMix(t, b, 3) {
				per[i] = append(per[i], ids...)
			}
		}
		for range k {
			b, err := l.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			add(b)
			b.Release()
		}
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unread(b); err != nil {
			t.Fatalf("batch %d: Unread: %v", k, err)
		}
		rcfg := cfg
		rcfg.Resume = l.State()
		l.Close()
		rest := 0
		eachBatch(t, openT(t, rcfg), func(b *Batch) { add(b); rest++; b.Release() })
		if rest != n-k {
			t.Fatalf("batch %d given back: %d batches after the resume, want %d", k, rest, n-k)
		}
		for i, name := range names {
			checkExactlyOnce(t, per[i], int64(mixRows(name)))
		}
	}
}

// TestMixtureReshardLen: after Reshard, a mixture's Len is the steps of
// the remainder the new world takes (the same on every rank), as for one
// dataset, and a State taken within that remainder keeps it: resharded
// again, Len is the rest of the rest. The next epoch counts whole. No row
// of any source comes twice within the epoch over the three worlds.
func TestMixtureReshardLen(t *testing.T) {
	names := []string{"web", "code", "math"}
	seen := make([]map[int64]int, 3)
	for i := range seen {
		seen[i] = map[int64]int{}
	}
	cfgOf := func(world, rank int) Config {
		cfg := mixConfig(t, names, nil)
		cfg.World, cfg.Rank, cfg.BatchRows, cfg.EpochSize, cfg.Epochs = world, rank, 40, 2800, 2
		return cfg
	}
	// run reads stop batches of epoch 0 (stop < 0: all of it), checks Len,
	// and returns the State after the last.
	run := func(world, rank, stop int, resume *State, wantLen int) *State {
		cfg := cfgOf(world, rank)
		cfg.Resume = resume
		l := openT(t, cfg)
		defer l.Close()
		if l.Len() != wantLen {
			t.Fatalf("world %d rank %d: Len %d at Open, want %d", world, rank, l.Len(), wantLen)
		}
		n := 0
		for stop < 0 || n < stop {
			b, err := l.Next(context.Background())
			if err != nil {
				t.Fatalf("world %d rank %d: %v", world, rank, err)
			}
			if b.Epoch != 0 {
				if stop >= 0 {
					t.Fatalf("world %d rank %d: epoch 0 ended after %d batches", world, rank, n)
				}
				// The next epoch counts whole.
				if full := int(2800 / (world * 40)); l.Len() != full {
					t.Fatalf("world %d rank %d: Len %d in epoch 1, want %d", world, rank, l.Len(), full)
				}
				b.Release()
				break
			}
			for i, ids := range splitMix(t, b, 3) {
				for _, id := range ids {
					if seen[i][id]++; seen[i][id] > 1 {
						t.Fatalf("source %s: row %d delivered twice in epoch 0", names[i], id)
					}
				}
			}
			b.Release()
			n++
		}
		if stop < 0 && n != wantLen {
			t.Fatalf("world %d rank %d: %d batches in the epoch, Len %d", world, rank, n, wantLen)
		}
		return l.State()
	}
	var states []*State
	for r := 0; r < 4; r++ {
		states = append(states, run(4, r, 3+r, nil, 2800/(4*40)))
	}
	// The old world delivered 3+4+5+6 = 18 batches of 40 rows: 2080 rows
	// left, 17 steps of 3 × 40.
	next, err := Reshard(states, 3)
	if err != nil {
		t.Fatal(err)
	}
	states = states[:0]
	for r := 0; r < 3; r++ {
		states = append(states, run(3, r, 5, next[r], 2080/(3*40)))
	}
	// A resumed State keeps the remainder's Len.
	cfg := cfgOf(3, 1)
	cfg.Resume = states[1]
	if l := openT(t, cfg); l.Len() != 2080/(3*40) {
		t.Fatalf("resumed within the remainder: Len %d, want %d", l.Len(), 2080/(3*40))
	}
	// Resharded again: 2080 − 15 × 40 = 1480 rows left, 18 steps of 2 × 40.
	if next, err = Reshard(states, 2); err != nil {
		t.Fatal(err)
	}
	for r := 0; r < 2; r++ {
		run(2, r, -1, next[r], 1480/(2*40))
	}
}
