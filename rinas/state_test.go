package rinas

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/pagefeed/pagefeed/rinas/plan"
)

// tokensState returns a tokens-output configuration on the v2 dataset and
// a State taken after its first batch, which holds a partly packed
// document (a pending row with Tok > 0).
func tokensState(t *testing.T) (Config, *State) {
	t.Helper()
	ds := testDataset(t, "v2")
	cfg := baseConfig(ds, "input_ids")
	cfg.Shuffle, cfg.Fetch, cfg.Output, cfg.SeqLen, cfg.BatchRows, cfg.EOS = ShuffleNone, Ordered, OutputTokens, 16, 2, -7
	l := openT(t, cfg)
	for n := 0; n < 8; n++ {
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		b.Release()
		s := l.State()
		if len(s.Pending) > 0 && s.Pending[0].Tok > 0 {
			return cfg, s
		}
	}
	t.Fatal("no state with a partly packed document in 8 batches")
	return cfg, nil
}

// cloneState deep-copies s through its encoding.
func cloneState(t *testing.T, s *State) *State {
	t.Helper()
	b, err := MarshalState(s)
	if err != nil {
		t.Fatal(err)
	}
	c, err := UnmarshalState(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// pieces returns the first n pieces (n < 0: all) of s's share not taken
// in, as cfg's loader plans them.
func pieces(t *testing.T, cfg Config, s *State, n int) []plan.Piece {
	t.Helper()
	l := openT(t, cfg)
	e := l.epochPlan(s.Epoch)
	w := e.Walk(s.Share, plan.Cursor{Done: s.Done})
	var out []plan.Piece
	for p, ok := w.Next(); ok && (n < 0 || len(out) < n); p, ok = w.Next() {
		out = append(out, p)
	}
	if n >= 0 && len(out) < n {
		t.Fatalf("%d pieces left in the share, want %d", len(out), n)
	}
	return out
}

// TestStateFieldsValidated: a State whose fields do not fit the loader it
// resumes (edited, corrupted, or from another configuration) fails Open
// with ErrState naming the field, instead of panicking (a token count past
// its document), wrapping around into an empty epoch, or delivering rows
// twice.
func TestStateFieldsValidated(t *testing.T) {
	tcfg, tst := tokensState(t)
	ds := testDataset(t, "v2")
	acfg := baseConfig(ds, "id")
	acfg.BatchRows, acfg.BatchPages, acfg.World, acfg.Rank = 50, 2, 2, 1
	// No shuffle buffer: the default one holds this small dataset's every
	// page, leaving no unit of the shard ahead to edit a state about.
	acfg.BufferRows = -1
	al := openT(t, acfg)
	var ast *State
	for n := 0; n < 40 && (ast == nil || len(ast.Pending) == 0 || ast.Done == 0); n++ {
		b, err := al.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		b.Release()
		ast = al.State()
	}
	if len(ast.Pending) == 0 || ast.Done == 0 {
		t.Fatalf("arrow state %+v: want pending rows and units done", ast)
	}
	for _, tc := range []struct {
		name   string
		tokens bool // from the tokens state, else the arrow one
		edit   func(s *State, c *Config)
		field  string
	}{
		{"token count past the document", true, func(s *State, c *Config) { s.Pending[0].Tok = 1 << 30 }, "pending"},
		{"tokens state resumed as arrow", true, func(s *State, c *Config) { c.Output, c.SeqLen = OutputArrow, 0 }, "output"},
		{"done wraps around", false, func(s *State, c *Config) { s.Done = 1 << 63 }, "done"},
		{"done past the share", false, func(s *State, c *Config) { s.Done = s.Share[0].Hi + 1 }, "done"},
		{"share of another rank", false, func(s *State, c *Config) { s.Share[0].Lo, s.Share[0].Hi = 0, s.Share[0].Hi-s.Share[0].Lo }, "share"},
		{"share past the epoch", false, func(s *State, c *Config) { s.Share[0].Hi = 1 << 40 }, "share"},
		{"epoch past the run", false, func(s *State, c *Config) { s.Epoch = 1 }, "epoch"},
		{"epoch before the run", false, func(s *State, c *Config) { c.Epoch = 3; c.Epochs = 2 }, "epoch"},
		{"another batch size", false, func(s *State, c *Config) { c.BatchRows++ }, "batch_rows"},
		{"another policy", false, func(s *State, c *Config) { c.DropLast, c.PadLast = false, true }, "policy"},
		{"another stream", false, func(s *State, c *Config) { s.Total++ }, "total"},
		{"taken outside the share", false, func(s *State, c *Config) { s.Taken = []Span{{Lo: s.Share[0].Hi + 1, Hi: s.Share[0].Hi + 9}} }, "taken"},
		{"taken below done", false, func(s *State, c *Config) { s.Taken = []Span{{Lo: s.Done - 2, Hi: s.Done - 1}} }, "taken"},
		{"taken past the epoch", false, func(s *State, c *Config) { s.Taken = []Span{{Lo: 1 << 40, Hi: 1<<40 + 1}} }, "taken"},
		{"taken out of order", false, func(s *State, c *Config) {
			p := pieces(t, *c, s, 3)
			s.Taken = []Span{{Lo: p[2].X0, Hi: p[2].X1}, {Lo: p[1].X0, Hi: p[1].X1}}
		}, "taken"},
		{"taken not a piece", false, func(s *State, c *Config) {
			p := pieces(t, *c, s, 2)
			s.Taken = []Span{{Lo: p[1].X0, Hi: p[1].X1 - 1}}
		}, "taken"},
		{"pending row of a unit still ahead", false, func(s *State, c *Config) {
			// A row of the share's last unit: not taken in yet.
			p := pieces(t, *c, s, -1)
			s.Pending = []RowRef{{Page: p[len(p)-1].Item, Row: uint32(p[len(p)-1].Lo)}}
		}, "pending"},
		{"pending row twice", false, func(s *State, c *Config) { s.Pending = append(s.Pending, s.Pending[0]) }, "pending"},
		{"pending page past the dataset", false, func(s *State, c *Config) { s.Pending[0].Page = 1 << 40 }, "pending"},
		{"pending row past its page", false, func(s *State, c *Config) { s.Pending[0].Row = 1 << 20 }, "pending"},
		{"partly delivered row in arrow output", false, func(s *State, c *Config) { s.Pending[0].Tok = 1 }, "pending"},
		{"finished epoch with rows pending", false, func(s *State, c *Config) { s.EpochEnd = true; s.Done = 0; s.Taken = nil }, "epoch_end"},
		{"another seed", false, func(s *State, c *Config) { s.Seed++ }, "seed"},
		{"another shuffle", false, func(s *State, c *Config) { s.Shuffle = "row" }, "shuffle"},
		{"another rank", false, func(s *State, c *Config) { s.Rank = 0 }, "rank"},
		{"another version", false, func(s *State, c *Config) { s.Version = 3 }, "version"},
		{"version 1", false, func(s *State, c *Config) { s.Version = 1 }, "version"},
		{"another dataset", false, func(s *State, c *Config) { s.Dataset = "x" }, "dataset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, st := acfg, cloneState(t, ast)
			if tc.tokens {
				cfg, st = tcfg, cloneState(t, tst)
			}
			tc.edit(st, &cfg)
			cfg.Resume = st
			l, err := Open(context.Background(), cfg)
			if err == nil {
				defer l.Close()
				// What the bad state would have done.
				n := 0
				for ; n < 1000; n++ {
					b, err := l.Next(context.Background())
					if err != nil {
						break
					}
					b.Release()
				}
				t.Fatalf("Open accepted the state; %d batches followed", n)
			}
			if !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "field "+tc.field+":") {
				t.Fatalf("Open: %v, want ErrState naming field %s", err, tc.field)
			}
		})
	}
}

// TestResumeFinishedRun: a State taken after the run's last epoch resumes
// as a finished loader (io.EOF at once, nothing read), not as one more
// epoch; with more epochs configured it resumes at the next one.
func TestResumeFinishedRun(t *testing.T) {
	ds := testDataset(t, "v2")
	cfg := baseConfig(ds, "id")
	cfg.BatchRows = 500
	l := openT(t, cfg)
	ids, _, _ := drain(t, l, -1)
	checkExactlyOnce(t, ids, ds.rows)
	if _, err := l.Next(context.Background()); err != io.EOF {
		t.Fatalf("Next after the run: %v", err)
	}
	st := cloneState(t, l.State())
	if !st.EpochEnd {
		t.Fatalf("final state %+v is not at an epoch's end", st)
	}
	rcfg := cfg
	rcfg.Resume = st
	r := openT(t, rcfg)
	if b, err := r.Next(context.Background()); err != io.EOF {
		rows := 0
		if b != nil {
			rows = b.Rows
			b.Release()
		}
		t.Fatalf("Next on a finished run resumed: %v (%d rows), want io.EOF", err, rows)
	}
	if s := r.State(); !s.EpochEnd || s.Epoch != st.Epoch {
		t.Fatalf("state of the resumed finished run %+v, want the same end", s)
	}
	if n := r.Stats().Pages; n != 0 {
		t.Fatalf("%d pages read for a finished run", n)
	}
	// Two epochs configured: the state resumes at the second.
	rcfg.Epochs = 2
	ids, _, _ = drain(t, openT(t, rcfg), -1)
	checkExactlyOnce(t, ids, ds.rows)
}

// TestOldStateRefused: a State of the format before shares (version 1,
// shard positions) is refused with ErrState naming the version.
func TestOldStateRefused(t *testing.T) {
	old := `{"version":1,"dataset":"d","shuffle":"page","seed":0,"epoch":0,"start":0,"rank":0,"world":2,"done":3,"rng":1}`
	_, err := UnmarshalState([]byte(old))
	if !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "field version:") {
		t.Fatalf("UnmarshalState of a version 1 state: %v", err)
	}
	if _, err := Reshard([]*State{{Version: 1, World: 1}}, 2); !errors.Is(err, ErrState) {
		t.Fatalf("Reshard of a version 1 state: %v", err)
	}
}

// TestReshardRejectsBadStates: states whose shares run past any stream,
// whose progress lies outside their share, or that ask for an absurd
// world, are refused at once, before anything is allocated for them.
func TestReshardRejectsBadStates(t *testing.T) {
	mk := func(rank int, share Span, done uint64) *State {
		return &State{Version: stateVersion, Dataset: "d", Shuffle: "page", Output: "arrow", Seed: 1, Rank: rank, World: 2,
			BatchRows: 8, Policy: "drop", Total: 100, Share: []Span{share}, Done: done}
	}
	for _, tc := range []struct {
		name   string
		states []*State
		world  int
	}{
		{"share past any stream", []*State{mk(0, Span{Lo: 0, Hi: 40}, 0), mk(1, Span{Lo: 40, Hi: 1 << 63}, 40)}, 3},
		{"done outside the share", []*State{mk(0, Span{Lo: 0, Hi: 40}, 0), mk(1, Span{Lo: 40, Hi: 80}, 1<<40)}, 3},
		{"world of 2^40", []*State{mk(0, Span{Lo: 0, Hi: 40}, 0), mk(1, Span{Lo: 40, Hi: 80}, 40)}, 1 << 40},
		{"a missing rank", []*State{mk(0, Span{Lo: 0, Hi: 40}, 0), mk(0, Span{Lo: 40, Hi: 80}, 40)}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := Reshard(tc.states, tc.world)
				done <- err
			}()
			select {
			case err := <-done:
				// A world out of range is the caller's argument, not the states'.
				if want := map[bool]error{false: ErrState, true: ErrConfig}[tc.world > maxWorld]; !errors.Is(err, want) {
					t.Fatalf("Reshard: %v, want %v", err, want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Reshard still running after 5 s")
			}
		})
	}
}
