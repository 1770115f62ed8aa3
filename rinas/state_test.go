package rinas

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
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

// TestStateFieldsValidated: a State whose fields do not fit the loader it
// resumes (edited, corrupted, or from another configuration) fails Open
// with ErrState naming the field, instead of panicking (a token count past
// its document), wrapping around (Start + Done·World) into an empty epoch,
// or delivering rows twice.
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
		{"old tokens state resumed as arrow", true, func(s *State, c *Config) { s.Output, c.Output, c.SeqLen = "", OutputArrow, 0 }, "pending"},
		{"done wraps around", false, func(s *State, c *Config) { s.Done = 1 << 63 }, "done"},
		{"done past the shard", false, func(s *State, c *Config) { s.Done = uint64(ds.rows) }, "done"},
		{"start past the epoch", false, func(s *State, c *Config) { s.Start = 1 << 40 }, "start"},
		{"epoch past the run", false, func(s *State, c *Config) { s.Epoch = 1 }, "epoch"},
		{"epoch before the run", false, func(s *State, c *Config) { c.Epoch = 3; c.Epochs = 2 }, "epoch"},
		{"exclude of another rank", false, func(s *State, c *Config) { s.Exclude = []uint64{s.Start + (s.Done+2)*2} }, "exclude"},
		{"exclude below done", false, func(s *State, c *Config) { s.Exclude = []uint64{s.Start + 1} }, "exclude"},
		{"exclude past the epoch", false, func(s *State, c *Config) { s.Exclude = []uint64{1<<40 + 1} }, "exclude"},
		{"exclude out of order", false, func(s *State, c *Config) {
			p := s.Start + (s.Done+5)*2 + 1
			s.Exclude = []uint64{p, p - 2}
		}, "exclude"},
		{"pending row of a unit still ahead", false, func(s *State, c *Config) {
			// Rows of the shard's last page: its unit is not taken in yet.
			l := openT(t, *c)
			sh, _ := l.perm(s.Epoch).Shard(s.Start, s.Rank, s.World)
			g := sh.At(sh.Len() - 1)
			s.Pending = []RowRef{{Page: g, Row: 0}}
		}, "pending"},
		{"pending row twice", false, func(s *State, c *Config) { s.Pending = append(s.Pending, s.Pending[0]) }, "pending"},
		{"pending page past the dataset", false, func(s *State, c *Config) { s.Pending[0].Page = 1 << 40 }, "pending"},
		{"pending row past its page", false, func(s *State, c *Config) { s.Pending[0].Row = 1 << 20 }, "pending"},
		{"partly delivered row in arrow output", false, func(s *State, c *Config) { s.Pending[0].Tok = 1 }, "pending"},
		{"finished epoch with rows pending", false, func(s *State, c *Config) { s.EpochEnd = true; s.Done = 0; s.Exclude = nil }, "epoch_end"},
		{"another seed", false, func(s *State, c *Config) { s.Seed++ }, "seed"},
		{"another shuffle", false, func(s *State, c *Config) { s.Shuffle = "row" }, "shuffle"},
		{"another rank", false, func(s *State, c *Config) { s.Rank = 0 }, "rank"},
		{"another version", false, func(s *State, c *Config) { s.Version = 2 }, "version"},
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

// TestResumeStateWithoutOutput: States written before State.Output was
// recorded (no "output" field) still resume.
func TestResumeStateWithoutOutput(t *testing.T) {
	ds := testDataset(t, "v2")
	cfg := baseConfig(ds, "id")
	cfg.BatchRows, cfg.BatchPages = 50, 2
	head, _, states := drain(t, openT(t, cfg), 5)
	b, err := MarshalState(states[len(states)-1])
	if err != nil {
		t.Fatal(err)
	}
	old := strings.Replace(string(b), `,"output":"arrow"`, "", 1)
	if old == string(b) {
		t.Fatalf("state %s has no output field to drop", b)
	}
	st, err := UnmarshalState([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Resume = st
	rest, _, _ := drain(t, openT(t, cfg), -1)
	checkExactlyOnce(t, append(head, rest...), ds.rows)
}

// TestReshardRejectsOverflowingStates: a rank whose Done would wrap
// Start + Done·World, or that claims to be absurdly far ahead of the
// others, is refused at once instead of looping over the gap.
func TestReshardRejectsOverflowingStates(t *testing.T) {
	mk := func(rank int, done uint64) *State {
		return &State{Version: stateVersion, Dataset: "d", Shuffle: "page", Seed: 1, Start: 10, Rank: rank, World: 2, Done: done}
	}
	for _, tc := range []struct {
		name   string
		states []*State
	}{
		{"wraps", []*State{mk(0, 0), mk(1, 1<<63)}},
		{"far ahead", []*State{mk(0, 0), mk(1, 1<<40)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := Reshard(tc.states, 3)
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "field done:") {
					t.Fatalf("Reshard: %v, want ErrState naming field done", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Reshard still running after 5 s")
			}
		})
	}
}
