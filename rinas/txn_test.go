package rinas

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// tripCtx is a context that is cancelled at the k-th time Next asks for
// its Done channel: every select of Next on the context is a point where
// it may block, so counting those calls reaches each of them in turn.
type tripCtx struct {
	context.Context
	k, n int
}

var closedDone = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func newTrip(k int) *tripCtx { return &tripCtx{Context: context.Background(), k: k} }

func (c *tripCtx) Done() <-chan struct{} {
	c.n++
	if c.n >= c.k {
		return closedDone
	}
	return nil
}

func (c *tripCtx) Err() error {
	if c.n >= c.k {
		return context.Canceled
	}
	return nil
}

// batchKey digests everything a batch delivers: each column's values
// (arrow output) or the token matrix, loss mask and position ids, with
// the epoch and row count.
func batchKey(t testing.TB, b *Batch) string {
	t.Helper()
	h := fnv.New64a()
	var w [8]byte
	put := func(v uint64) {
		binary.LittleEndian.PutUint64(w[:], v)
		h.Write(w[:])
	}
	put(b.Epoch)
	put(uint64(b.Rows))
	for _, c := range b.Columns {
		h.Write([]byte(c.Name))
		for _, a := range c.Arrays {
			writeValues(t, h, put, a)
		}
	}
	for _, v := range b.Tokens {
		put(uint64(v))
	}
	for _, v := range b.Tokens64 {
		put(uint64(v))
	}
	h.Write(b.LossMask)
	for _, v := range b.PositionIDs {
		put(uint64(v))
	}
	for _, v := range b.CuSeqlens {
		put(uint64(v))
	}
	return fmt.Sprintf("%x", h.Sum64())
}

// writeValues digests the values of a's rows (nulls included).
func writeValues(t testing.TB, h io.Writer, put func(uint64), a arrow.Array) {
	put(uint64(a.Len()))
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) {
			put(^uint64(0))
			continue
		}
		switch v := a.(type) {
		case *array.Int64:
			put(uint64(v.Value(i)))
		case *array.String:
			h.Write([]byte(v.Value(i)))
			put(uint64(len(v.Value(i))))
		case *array.List:
			lo, hi := v.ValueOffsets(i)
			put(uint64(hi - lo))
			vals := v.ListValues().(*array.Int32)
			for j := lo; j < hi; j++ {
				put(uint64(vals.Value(int(j))))
			}
		default:
			t.Fatalf("batchKey: %s", a.DataType())
		}
	}
}

// txnCase is a configuration whose Next is interrupted.
type txnCase struct {
	name string
	cfg  func(ds dataset) Config
}

func txnCases() []txnCase {
	rows := func(shuffle Shuffle, cols []string, batchRows, buffer int) func(ds dataset) Config {
		return func(ds dataset) Config {
			cfg := baseConfig(ds, "id")
			cfg.Columns, cfg.Shuffle = cols, shuffle
			cfg.BatchRows, cfg.BufferRows, cfg.BatchPages = batchRows, buffer, 2
			switch {
			case batchRows >= 700:
				cfg.BatchPages = 1 // many fetch batches to a batch
			case batchRows == 0:
				cfg.BatchPages = 8
				if raceEnabled {
					cfg.BatchPages = 32
				}
			}
			if shuffle == ShuffleRow {
				cfg.BatchPages = 40
			}
			cfg.Deterministic, cfg.Epochs = true, 2
			return cfg
		}
	}
	tokens := func(batchRows, buffer int, wide bool) func(ds dataset) Config {
		return func(ds dataset) Config {
			cfg := baseConfig(ds, "input_ids")
			cfg.Output, cfg.SeqLen, cfg.BatchRows, cfg.BufferRows = OutputTokens, 256, batchRows, buffer
			cfg.BatchPages, cfg.Deterministic, cfg.Epochs, cfg.Tokens64 = 3, true, 2, wide
			return cfg
		}
	}
	cases := []txnCase{
		{"arrow/rows700", rows(ShufflePage, []string{"id"}, 700, 0)},
		{"arrow/rows700+buffer", rows(ShufflePage, []string{"id"}, 700, 300)},
		{"arrow/rows700/tokencol", rows(ShufflePage, []string{"input_ids"}, 700, 0)},
		{"arrow/rows97/cols", rows(ShufflePage, []string{"id", "input_ids", "text"}, 97, 0)},
		{"arrow/rows97/cols+buffer", rows(ShufflePage, []string{"input_ids", "id"}, 97, 90)},
		{"arrow/rowgroup", rows(ShuffleRowGroup, []string{"id", "text"}, 113, 0)},
		{"arrow/row", rows(ShuffleRow, []string{"id"}, 300, 50)},
		{"arrow/pages", rows(ShufflePage, []string{"id", "input_ids"}, 0, 0)},
		{"tokens/rows8", tokens(8, 0, false)},
		{"tokens/rows700+buffer", tokens(700, 200, true)},
		{"tokens/rows7+buffer", tokens(7, 40, false)},
	}
	if raceEnabled {
		// A representative few: row batches with a buffer over several
		// columns, tokens with a buffer, page batches (fewer, larger
		// batches: the race detector slows each call).
		return []txnCase{cases[4], cases[7], {"tokens/rows16+buffer", tokens(16, 40, false)}}
	}
	return cases
}

// maxResumes bounds the loaders a test opens from States taken mid-run
// (each reads the rest of the run).
var maxResumes = map[bool]int{false: 4, true: 1}[raceEnabled]

// reference returns the keys of every batch of cfg's uninterrupted run.
func referenceKeys(t *testing.T, cfg Config) []string {
	t.Helper()
	var keys []string
	eachBatch(t, openT(t, cfg), func(b *Batch) {
		keys = append(keys, batchKey(t, b))
		b.Release()
	})
	return keys
}

// TestNextCancelledAtEveryPoint: a Next whose context is cancelled at its
// k-th blocking point, for every k of every batch, returns the context's
// error and leaves the loader as if it had not been called: the batches
// that follow are exactly those of the uninterrupted run (rows, values,
// token offsets, across both epochs), and a State taken right after the
// cancelled call resumes to exactly the rest of that run.
func TestNextCancelledAtEveryPoint(t *testing.T) {
	ds := testDataset(t, "v2")
	for _, tc := range txnCases() {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg(ds)
			want := referenceKeys(t, cfg)
			rng := rand.New(rand.NewPCG(uint64(len(want)), 7))
			l := openT(t, cfg)
			resumes, total := 0, 0
			defer func() { t.Logf("%d batches, %d cancelled calls, %d resumed", len(want), total, resumes) }()
			for i := 0; ; i++ {
				var b *Batch
				var err error
				cancels := 0
				// Each failed call has taken in what it could before its
				// point, so cancelling early again and again reaches every
				// point of the batch; k grows slowly so that a wait that is
				// never ready at once does not cancel forever.
				for a := 0; ; a++ {
					k := 1 + a/3
					b, err = l.Next(newTrip(k))
					if !errors.Is(err, context.Canceled) {
						break
					}
					cancels++
					total++
					if resumes < maxResumes && rng.IntN(60) == 0 {
						// The rest of the run from a State taken here.
						resumes++
						rcfg := cfg
						rcfg.Resume = l.State()
						var rest []string
						eachBatch(t, openT(t, rcfg), func(b *Batch) { rest = append(rest, batchKey(t, b)); b.Release() })
						if fmt.Sprint(rest) != fmt.Sprint(want[i:]) {
							t.Fatalf("batch %d, cancelled at point %d: resumed run gives %d batches, want the %d left of the uninterrupted run (first differs at %d)",
								i, k, len(rest), len(want)-i, firstDifference(rest, want[i:]))
						}
					}
				}
				if err == io.EOF {
					if i != len(want) {
						t.Fatalf("io.EOF after %d batches, want %d", i, len(want))
					}
					break
				}
				if err != nil {
					t.Fatalf("batch %d: %v", i, err)
				}
				if i >= len(want) {
					t.Fatalf("batch %d beyond the uninterrupted run's %d", i, len(want))
				}
				if got := batchKey(t, b); got != want[i] {
					t.Fatalf("batch %d after %d cancelled calls differs from the uninterrupted run's", i, cancels)
				}
				b.Release()
			}
		})
	}
}

// TestNextCancelledUnordered: with unordered assembly on rank 2 of 3,
// Next cancelled again and again at its early points delivers, over the
// run, exactly the rows of the uninterrupted run, each once per epoch.
func TestNextCancelledUnordered(t *testing.T) {
	ds := testDataset(t, "v2")
	for _, tc := range txnCases() {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg(ds)
			cfg.Rank, cfg.World, cfg.Deterministic = 2, 3, false
			if cfg.BatchRows >= 700 && cfg.Output == OutputTokens {
				cfg.SeqLen = 64 // three ranks fill their batches
			}
			var want, got []string
			eachBatch(t, openT(t, cfg), func(b *Batch) { want = append(want, rowKeys(b)...); b.Release() })
			l := openT(t, cfg)
			for {
				var b *Batch
				var err error
				for a := 0; ; a++ {
					if b, err = l.Next(newTrip(1 + a/3)); !errors.Is(err, context.Canceled) {
						break
					}
				}
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, rowKeys(b)...)
				b.Release()
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("%d rows with cancelled calls, %d uninterrupted", len(got), len(want))
			}
		})
	}
}

// rowKeys names each row (page batches: each unit) of b with its epoch.
func rowKeys(b *Batch) []string {
	var keys []string
	for _, r := range b.Refs {
		keys = append(keys, fmt.Sprintf("%d/%d/%d", b.Epoch, r.Page, r.Row))
	}
	if b.Refs == nil {
		for _, p := range b.Pages {
			keys = append(keys, fmt.Sprintf("%d/%d", b.Epoch, p))
		}
	}
	return keys
}

func mustMarshal(t *testing.T, s *State) []byte {
	t.Helper()
	b, err := MarshalState(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func firstDifference(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestUnread: a batch given back at random steps is delivered again by
// the next Next, identical; State taken in between resumes to exactly the
// rest of the uninterrupted run from that batch on; Stats and the epoch's
// step count forget it. Misuse is an error, never a panic.
func TestUnread(t *testing.T) {
	ds := testDataset(t, "v2")
	for _, tc := range txnCases() {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg(ds)
			want := referenceKeys(t, cfg)
			rng := rand.New(rand.NewPCG(uint64(len(want)), 11))
			l := openT(t, cfg)
			resumes, unreads := 0, 0
			var prev *Batch
			for i := 0; ; i++ {
				var before []byte
				var beforeEpoch uint64
				if cfg.BatchRows == 0 {
					st := l.State()
					before, beforeEpoch = mustMarshal(t, st), st.Epoch
				}
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
				for rng.IntN(4) == 0 {
					st := l.Stats()
					if err := l.Unread(b); err != nil {
						t.Fatalf("batch %d: Unread: %v", i, err)
					}
					unreads++
					if err := l.Unread(b); !errors.Is(err, ErrUnread) {
						t.Fatalf("second Unread: %v, want ErrUnread", err)
					}
					if s := l.Stats(); s.Batches != st.Batches-1 || s.Rows != st.Rows-int64(b.Rows) {
						t.Fatalf("Stats after Unread: %d batches %d rows, want %d and %d", s.Batches, s.Rows, st.Batches-1, st.Rows-int64(b.Rows))
					}
					if before != nil && b.Epoch == beforeEpoch {
						// (A batch that began an epoch leaves the State at
						// that epoch's start, the same point as the last's
						// end.)
						if after := mustMarshal(t, l.State()); string(after) != string(before) {
							t.Fatalf("batch %d: State after Unread\n%s\nwant the State before Next\n%s", i, after, before)
						}
					}
					if resumes < maxResumes && rng.IntN(8) == 0 {
						resumes++
						rcfg := cfg
						rcfg.Resume = l.State()
						var rest []string
						eachBatch(t, openT(t, rcfg), func(b *Batch) { rest = append(rest, batchKey(t, b)); b.Release() })
						if fmt.Sprint(rest) != fmt.Sprint(want[i:]) {
							t.Fatalf("batch %d given back: resumed run gives %d batches, want the %d left (first differs at %d)",
								i, len(rest), len(want)-i, firstDifference(rest, want[i:]))
						}
					}
					if b, err = l.Next(context.Background()); err != nil {
						t.Fatalf("batch %d again: %v", i, err)
					}
				}
				if got := batchKey(t, b); got != want[i] {
					t.Fatalf("batch %d differs from the uninterrupted run's", i)
				}
				b.Release()
				if err := l.Unread(b); !errors.Is(err, ErrUnread) {
					t.Fatalf("Unread of a released batch: %v, want ErrUnread", err)
				}
				prev = b
			}
			t.Logf("%d batches, %d given back, %d resumed", len(want), unreads, resumes)
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

// TestUnreadBeforeState: the batch given back right after Next, as a
// binding does when the batch could not reach its caller, is neither lost
// nor counted by the State taken then: with unordered assembly on rank 1
// of 3, the rows before the checkpoint and after the resume are those of
// the uninterrupted run, each once per epoch.
func TestUnreadBeforeState(t *testing.T) {
	ds := testDataset(t, "v2")
	for _, tc := range txnCases() {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg(ds)
			cfg.Rank, cfg.World, cfg.Deterministic = 1, 3, false
			if cfg.BatchRows >= 700 && cfg.Output == OutputTokens {
				cfg.SeqLen = 64 // three ranks fill their batches
			}
			rng := rand.New(rand.NewPCG(5, uint64(len(tc.name))))
			var full []string
			n := 0
			eachBatch(t, openT(t, cfg), func(b *Batch) { full = append(full, rowKeys(b)...); n++; b.Release() })
			slices.Sort(full)
			for trial := 0; trial < min(3, maxResumes+1); trial++ {
				k := rng.IntN(n)
				l := openT(t, cfg)
				var got []string
				for range k {
					b, err := l.Next(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, rowKeys(b)...)
					b.Release()
				}
				b, err := l.Next(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if err := l.Unread(b); err != nil {
					t.Fatal(err)
				}
				rcfg := cfg
				rcfg.Resume = l.State()
				l.Close()
				eachBatch(t, openT(t, rcfg), func(b *Batch) { got = append(got, rowKeys(b)...); b.Release() })
				slices.Sort(got)
				if !slices.Equal(got, full) {
					t.Fatalf("batch %d given back before the checkpoint: %d rows before and after it, the uninterrupted run %d", k, len(got), len(full))
				}
			}
		})
	}
}
