package rinas

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
)

// cutCtx is a context cut short at its (left+1)-th look: the first left
// calls of Done or Err see it live, every later one cancelled. Counting
// looks, not time, puts a cut at every point where Next checks its
// context, one by one, whatever the machine's speed.
type cutCtx struct {
	context.Context
	mu   sync.Mutex
	left int
	done chan struct{}
	cut  bool
}

func newCut(left int) *cutCtx {
	return &cutCtx{Context: context.Background(), left: left, done: make(chan struct{})}
}

func (c *cutCtx) look() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.cut {
		if c.left == 0 {
			c.cut = true
			close(c.done)
		} else {
			c.left--
		}
	}
	return c.cut
}

func (c *cutCtx) Done() <-chan struct{} {
	c.look()
	return c.done
}

func (c *cutCtx) Err() error {
	if c.look() {
		return context.Canceled
	}
	return nil
}

// mixCase is one mixture configuration the cut tests run.
type mixCase struct {
	name  string
	names []string
	cfg   func(t *testing.T) Config
}

var mixCases = []mixCase{
	// A 90-row source at a fifth of 64-row batches: its own epoch ends
	// inside mixture batches (it gives two batches to them).
	{"upsampled", []string{"web", "code", "tiny"}, func(t *testing.T) Config {
		cfg := mixConfig(t, []string{"web", "code", "tiny"}, []float64{0.5, 0.3, 0.2})
		cfg.BatchRows, cfg.EpochSize, cfg.Epochs = 64, 1600, 2
		return cfg
	}},
	{"upsampled-rowshuffle", []string{"code", "tiny"}, func(t *testing.T) Config {
		cfg := mixConfig(t, []string{"code", "tiny"}, []float64{0.6, 0.4})
		cfg.BatchRows, cfg.EpochSize, cfg.Epochs, cfg.Shuffle = 50, 1000, 2, ShuffleRow
		return cfg
	}},
	{"tokens", []string{"web", "tiny"}, func(t *testing.T) Config {
		cfg := mixConfig(t, []string{"web", "tiny"}, []float64{0.7, 0.3})
		cfg.Columns, cfg.Output, cfg.SeqLen, cfg.BatchRows, cfg.EpochSize, cfg.Epochs = []string{"input_ids"}, OutputTokens, 64, 7, 64*7*20, 2
		return cfg
	}},
	{"world3-rank1", []string{"web", "code", "tiny"}, func(t *testing.T) Config {
		cfg := mixConfig(t, []string{"web", "code", "tiny"}, []float64{0.5, 0.3, 0.2})
		cfg.World, cfg.Rank, cfg.BatchRows, cfg.EpochSize = 3, 1, 40, 2400
		return cfg
	}},
	// An epoch that does not divide into the world's batches: the last
	// step padded, or short on some ranks.
	{"world3-padlast", []string{"code", "tiny"}, func(t *testing.T) Config {
		cfg := mixConfig(t, []string{"code", "tiny"}, []float64{0.7, 0.3})
		cfg.World, cfg.Rank, cfg.BatchRows, cfg.EpochSize, cfg.PadLast, cfg.Epochs = 3, 2, 50, 1010, true, 2
		return cfg
	}},
	{"world3-keepuneven", []string{"code", "tiny"}, func(t *testing.T) Config {
		cfg := mixConfig(t, []string{"code", "tiny"}, []float64{0.7, 0.3})
		cfg.World, cfg.Rank, cfg.BatchRows, cfg.EpochSize, cfg.KeepUneven, cfg.Epochs = 3, 0, 50, 1010, true, 2
		return cfg
	}},
}

// refRun is an uninterrupted run: each batch's key (mixKey) and epoch.
func refRun(t *testing.T, cfg Config, n int) (keys []string, epochs []uint64) {
	t.Helper()
	l := openT(t, cfg)
	eachBatch(t, l, func(b *Batch) {
		keys, epochs = append(keys, mixKey(t, b, n)), append(epochs, b.Epoch)
		b.Release()
	})
	l.Close()
	return keys, epochs
}

// TestRedteam3MixCuts: a Deterministic mixture whose Nexts are cut short
// by their context at every point they look, one by one (the first look,
// the second, ... until one call gets through), with State taken between
// the cuts (and, a few times, resumed: the run goes on from the resumed
// loader), and batches given back with Unread (State taken then, and
// resumed a few times), themselves fetched again through cut Nexts. The
// batches delivered must be the uninterrupted run's, one for one; nothing
// panics (mixture.rewind panics where its invariant breaks). Upsampled
// tiny sources whose own epochs end inside mixture batches, row shuffle,
// tokens output, a rank of World 3. (State after Unread is not compared
// byte for byte with the one before the Next: what a Next took in stays
// taken in, as Loader.Unread says, and a source's State then lists those
// rows as pending, or names its next epoch; resuming it gives the same
// rows, which is what is checked.)
func TestRedteam3MixCuts(t *testing.T) {
	for ci, mc := range mixCases {
		t.Run(mc.name, func(t *testing.T) {
			cfg := mc.cfg(t)
			cfg.Deterministic = true
			n := len(mc.names)
			want, _ := refRun(t, cfg, n)
			if len(want) < 10 {
				t.Fatalf("%d batches", len(want))
			}
			rng := rand.New(rand.NewPCG(uint64(ci), 77))
			l := openT(t, cfg)
			cuts, states, unreads, resumes := 0, 0, 0, 0
			resume := func(at string) {
				s, err := UnmarshalState(mustMarshal(t, l.State()))
				if err != nil {
					t.Fatal(err)
				}
				l.Close()
				rcfg := cfg
				rcfg.Resume = s
				var oerr error
				if l, oerr = Open(context.Background(), rcfg); oerr != nil {
					t.Fatalf("%s: resume: %v", at, oerr)
				}
				t.Cleanup(func() { l.Close() })
				resumes++
			}
			// next delivers batch i, mostly through cut Nexts (taking
			// States between them).
			next := func(i int) *Batch {
				if rng.IntN(4) == 0 {
					b, err := l.Next(context.Background())
					if err != nil {
						t.Fatalf("batch %d: %v", i, err)
					}
					return b
				}
				for k := 0; ; k++ {
					b, err := l.Next(newCut(k))
					if err == nil {
						return b
					}
					if err == io.EOF {
						t.Fatalf("batch %d: io.EOF, want %d batches", i, len(want))
					}
					if !errors.Is(err, context.Canceled) {
						t.Fatalf("batch %d, cut at look %d: %v", i, k, err)
					}
					cuts++
					if rng.IntN(3) == 0 {
						l.State()
						states++
					}
					if resumes < 4 && rng.IntN(150) == 0 {
						resume(fmt.Sprintf("batch %d cut at look %d", i, k))
					}
					if k > 5000 {
						t.Fatalf("batch %d: still cut after %d looks", i, k)
					}
				}
			}
			for i := range want {
				b := next(i)
				for rng.IntN(3) == 0 {
					if err := l.Unread(b); err != nil {
						t.Fatalf("batch %d: Unread: %v", i, err)
					}
					unreads++
					if rng.IntN(2) == 0 {
						l.State()
						states++
					}
					if resumes < 4 && rng.IntN(8) == 0 {
						resume(fmt.Sprintf("batch %d given back", i))
					}
					b = next(i)
				}
				if got := mixKey(t, b, n); got != want[i] {
					t.Fatalf("batch %d (%d cuts, %d unreads, %d resumes so far) differs from the uninterrupted run's:\n%s\nwant\n%s", i, cuts, unreads, resumes, got, want[i])
				}
				b.Release()
			}
			if b, err := l.Next(context.Background()); err != io.EOF {
				if err == nil {
					b.Release()
				}
				t.Fatalf("after %d batches: %v, want io.EOF", len(want), err)
			}
			t.Logf("%d batches, %d cuts, %d States between cuts, %d unreads, %d resumes", len(want), cuts, states, unreads, resumes)
		})
	}
}

// TestRedteam3MixCutsUnordered: the same cuts, States, Unreads and
// resumes at the defaults (unordered fetch, not Deterministic) with an
// upsampled tiny source: over the run, each source's rows come once per
// its own epoch (checkEpochs), and the run takes as many batches as the
// uninterrupted one.
func TestRedteam3MixCutsUnordered(t *testing.T) {
	names := []string{"web", "code", "tiny"}
	cfg := mixConfig(t, names, []float64{0.5, 0.3, 0.2})
	cfg.BatchRows, cfg.EpochSize = 64, 3000
	total := 0
	{
		l := openT(t, cfg)
		eachBatch(t, l, func(b *Batch) { total++; b.Release() })
		l.Close()
	}
	rng := rand.New(rand.NewPCG(5, 55))
	l := openT(t, cfg)
	per := make([][]int64, len(names))
	got, resumes := 0, 0
	for {
		var b *Batch
		var err error
		for k := 0; ; k++ {
			if b, err = l.Next(newCut(k)); err == nil || err == io.EOF {
				break
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
			if rng.IntN(40) == 0 {
				st := l.State()
				if resumes < 6 && rng.IntN(3) == 0 {
					l.Close()
					rcfg := cfg
					rcfg.Resume = st
					l = openT(t, rcfg)
					resumes++
				}
			}
		}
		if err == io.EOF {
			break
		}
		if rng.IntN(4) == 0 {
			if err := l.Unread(b); err != nil {
				t.Fatal(err)
			}
			if rng.IntN(3) == 0 {
				rcfg := cfg
				rcfg.Resume = l.State()
				l.Close()
				l = openT(t, rcfg)
				resumes++
			}
			continue
		}
		for i, ids := range splitMix(t, b, len(names)) {
			per[i] = append(per[i], ids...)
		}
		got++
		b.Release()
	}
	if got != total {
		t.Fatalf("%d batches, the uninterrupted run %d", got, total)
	}
	for i, name := range names {
		checkEpochs(t, name, per[i], mixRows(name))
	}
	t.Logf("%d batches, %d resumes", got, resumes)
}

// TestRedteam3MixCutStates: States taken while a batch is being assembled
// (Next cut short with some sources' rows taken) feed Reshard (World 3 to
// 2) and a resume with other weights: each source's rows still come at
// most once within its epoch, over both worlds / both runs.
func TestRedteam3MixCutStates(t *testing.T) {
	names := []string{"web", "code", "math"}
	// cutMid runs l to batch stop, then cuts Next until a cut leaves a
	// source's rows taken (or 200 tries) and returns the State.
	cutMid := func(t *testing.T, l *Loader, stop int, add func(*Batch)) *State {
		for range stop {
			b, err := l.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			add(b)
			b.Release()
		}
		for k := 0; k < 200; k++ {
			b, err := l.Next(newCut(k))
			if err == io.EOF {
				break
			}
			if err == nil {
				add(b) // the cut came after the call's last look
				b.Release()
				continue
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cut at look %d: %v", k, err)
			}
			for _, g := range l.mix.wip.got {
				if len(g) > 0 {
					return l.State()
				}
			}
		}
		return l.State()
	}
	t.Run("reshard", func(t *testing.T) {
		seen := make([]map[int64]int, 3)
		for i := range seen {
			seen[i] = map[int64]int{}
		}
		add := func(b *Batch) {
			for i, ids := range splitMix(t, b, 3) {
				for _, id := range ids {
					if seen[i][id]++; seen[i][id] > 1 {
						t.Fatalf("source %s: row %d twice", names[i], id)
					}
				}
			}
		}
		var states []*State
		for r := 0; r < 3; r++ {
			cfg := mixConfig(t, names, nil)
			cfg.World, cfg.Rank, cfg.BatchRows, cfg.EpochSize = 3, r, 40, 2700
			l := openT(t, cfg)
			states = append(states, cutMid(t, l, 4+r, add))
			l.Close()
		}
		next, err := Reshard(states, 2)
		if err != nil {
			t.Fatal(err)
		}
		steps := -1
		for r := 0; r < 2; r++ {
			cfg := mixConfig(t, names, nil)
			cfg.World, cfg.Rank, cfg.BatchRows, cfg.EpochSize = 2, r, 40, 2700
			cfg.Resume = next[r]
			l := openT(t, cfg)
			n := 0
			eachBatch(t, l, func(b *Batch) { add(b); n++; b.Release() })
			l.Close()
			if steps >= 0 && n != steps {
				t.Fatalf("rank %d takes %d steps, rank 0 %d", r, n, steps)
			}
			steps = n
		}
	})
	t.Run("weights", func(t *testing.T) {
		cfg := mixConfig(t, []string{"web", "code", "tiny"}, []float64{0.5, 0.3, 0.2})
		cfg.BatchRows, cfg.EpochSize = 64, 1500
		per := map[string][]int64{}
		add := func(ns []string) func(*Batch) {
			return func(b *Batch) {
				for i, ids := range splitMix(t, b, len(ns)) {
					per[ns[i]] = append(per[ns[i]], ids...)
				}
			}
		}
		l := openT(t, cfg)
		st := cutMid(t, l, 7, add([]string{"web", "code", "tiny"}))
		l.Close()
		cfg2 := mixConfig(t, []string{"tiny", "web", "code"}, []float64{0.1, 0.2, 0.7})
		cfg2.BatchRows, cfg2.EpochSize, cfg2.Resume = 64, 1500, st
		l2 := openT(t, cfg2)
		eachBatch(t, l2, add([]string{"tiny", "web", "code"}))
		l2.Close()
		for _, name := range []string{"web", "code", "tiny"} {
			checkEpochs(t, name, per[name], mixRows(name))
		}
	})
}

// TestRedteam3ResumeTwice: a job stopped twice. A State taken from a
// loader resumed from a State, before or after a batch, resumes exactly
// the uninterrupted run's rest (Deterministic: the same batches), and a
// just-resumed loader's State is the State it resumed from. Row batches
// through the shuffle buffer of one dataset whose first batch took in
// the whole epoch (the buffer flushed at the epoch's end: State.Flushed),
// and a mixture, whose sources are such loaders.
func TestRedteam3ResumeTwice(t *testing.T) {
	one := baseConfig(dataset{paths: mixPaths(t, "web")}, "id")
	one.Deterministic, one.BatchRows, one.BatchPages = true, 150, 2
	mix := mixConfig(t, []string{"web", "code", "tiny"}, []float64{0.5, 0.3, 0.2})
	mix.Deterministic, mix.BatchRows, mix.EpochSize = true, 64, 1600
	for _, tc := range []struct {
		name string
		cfg  Config
		key  func(*Batch) string
	}{
		{"rows", one, func(b *Batch) string { return fmt.Sprint(b.Arrays) }},
		{"mixture", mix, func(b *Batch) string { return mixKey(t, b, 3) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []string
			eachBatch(t, openT(t, tc.cfg), func(b *Batch) { want = append(want, tc.key(b)); b.Release() })
			// ops: n a batch, r a resume from State (through JSON).
			for _, ops := range []string{"nrr", "nrnr", "nnrnnr", "rnr", "nrrnr"} {
				l := openT(t, tc.cfg)
				i := 0
				for _, op := range ops {
					if op == 'n' {
						b, err := l.Next(context.Background())
						if err != nil {
							t.Fatal(err)
						}
						if tc.key(b) != want[i] {
							t.Fatalf("%s: batch %d differs", ops, i)
						}
						b.Release()
						i++
						continue
					}
					js := mustMarshal(t, l.State())
					s, err := UnmarshalState(js)
					if err != nil {
						t.Fatal(err)
					}
					l.Close()
					rcfg := tc.cfg
					rcfg.Resume = s
					l = openT(t, rcfg)
					if again := mustMarshal(t, l.State()); string(again) != string(js) {
						t.Fatalf("%s: resumed after batch %d, State is\n%s\nnot the one resumed from\n%s", ops, i, again, js)
					}
				}
				eachBatch(t, l, func(b *Batch) {
					if i >= len(want) || tc.key(b) != want[i] {
						t.Fatalf("%s: batch %d differs from the uninterrupted run's", ops, i)
					}
					i++
					b.Release()
				})
				if i != len(want) {
					t.Fatalf("%s: %d batches, want %d", ops, i, len(want))
				}
				l.Close()
			}
		})
	}
}

// TestRedteam3MixExtremeWeights: sources whose weights make their default
// shuffle buffers a sliver of one dataset's (at least one page's rows), a
// source at weight 0 beside them, and a Repeat that upsamples the small
// source twenty times, with Nexts cut short at every look: each source's
// rows come once per its own epoch, the weight-0 source gives none, and
// the batches are those of an uninterrupted run.
func TestRedteam3MixExtremeWeights(t *testing.T) {
	for _, tc := range []struct {
		name    string
		names   []string
		weights []float64
		repeat  []float64
	}{
		{"sliver", []string{"web", "tiny"}, []float64{0.995, 0.005}, nil},
		{"zero", []string{"code", "math", "tiny"}, []float64{0.7, 0, 0.3}, nil},
		{"repeat", []string{"code", "tiny"}, nil, []float64{1, 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mixConfig(t, tc.names, tc.weights)
			for i := range tc.repeat {
				cfg.Sources[i].Repeat = tc.repeat[i]
			}
			cfg.BatchRows, cfg.Deterministic = 100, true
			n := len(tc.names)
			want, _ := refRun(t, cfg, n)
			l := openT(t, cfg)
			per := make([][]int64, n)
			for i := range want {
				var b *Batch
				for k := 0; ; k++ {
					var err error
					if b, err = l.Next(newCut(k)); err == nil {
						break
					}
					if !errors.Is(err, context.Canceled) {
						t.Fatalf("batch %d: %v", i, err)
					}
				}
				if got := mixKey(t, b, n); got != want[i] {
					t.Fatalf("batch %d differs from the uninterrupted run's", i)
				}
				for s, ids := range splitMix(t, b, n) {
					per[s] = append(per[s], ids...)
				}
				b.Release()
			}
			for s, name := range tc.names {
				checkEpochs(t, name, per[s], mixRows(name))
				if tc.weights != nil && tc.weights[s] == 0 && len(per[s]) > 0 {
					t.Fatalf("source %s at weight 0 gave %d rows", name, len(per[s]))
				}
			}
			if tc.repeat != nil && len(per[1]) != 20*mixRows("tiny") {
				t.Fatalf("tiny at Repeat 20 gave %d rows, want %d", len(per[1]), 20*mixRows("tiny"))
			}
		})
	}
}
