package rinas

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/gen"
)

// Mixture sources, generated once: three datasets of different sizes and
// page sizes (so their units differ), and a small one to upsample.
var (
	mixOnce sync.Once
	mixDir  string
	mixErr  error
)

type mixSrc struct {
	name  string
	files int
	rows  int
	page  int64
}

var mixSrcs = []mixSrc{{"web", 2, 1500, 4096}, {"code", 1, 1200, 1024}, {"math", 1, 700, 16384}, {"tiny", 1, 90, 2048}}

func mixPaths(t testing.TB, name string) []string {
	t.Helper()
	mixOnce.Do(func() {
		if mixDir, mixErr = os.MkdirTemp("", "rinas-mix-"); mixErr != nil {
			return
		}
		for i, s := range mixSrcs {
			c := gen.Config{Dir: filepath.Join(mixDir, s.name), Files: s.files, RowsPerFile: s.rows, PageSize: s.page, RowGroupRows: 400,
				Seed: uint64(11 + i), MeanTokens: 48, PageVersion: 2, PageIndex: true, Codec: "snappy"}
			if _, mixErr = gen.Run(context.Background(), c); mixErr != nil {
				return
			}
		}
	})
	if mixErr != nil {
		t.Fatalf("generate: %v", mixErr)
	}
	m, _ := filepath.Glob(filepath.Join(mixDir, name, "*.parquet"))
	return m
}

func mixRows(name string) int {
	for _, s := range mixSrcs {
		if s.name == name {
			return s.files * s.rows
		}
	}
	return 0
}

// mixConfig is a mixture of the named sources at the weights (0: none set).
func mixConfig(t testing.TB, names []string, weights []float64) Config {
	cfg := Config{Columns: []string{"id"}, Seed: 5, World: 1,
		Index: index.Options{NoSidecar: true, Logf: func(string, ...any) {}}, Logf: func(string, ...any) {}}
	for i, n := range names {
		s := Source{Name: n, Paths: mixPaths(t, n)}
		if weights != nil {
			s.Weight = weights[i]
		}
		cfg.Sources = append(cfg.Sources, s)
	}
	return cfg
}

// mixBatch is what one batch gave: each source's ids, in order.
type mixBatch [][]int64

// splitMix splits a mixture batch's ids by source (arrow output).
func splitMix(t testing.TB, b *Batch, n int) mixBatch {
	t.Helper()
	if len(b.SourceRows) != n {
		t.Fatalf("SourceRows %v for %d sources", b.SourceRows, n)
	}
	var ids []int64
	for _, a := range b.Arrays {
		ids = append(ids, a.(*array.Int64).Int64Values()...)
	}
	if len(ids) != b.Rows {
		t.Fatalf("%d ids in a batch of %d rows", len(ids), b.Rows)
	}
	out := make(mixBatch, n)
	for i, r := range b.SourceRows {
		out[i], ids = ids[:r], ids[r:]
	}
	if len(ids) != 0 {
		t.Fatalf("SourceRows %v leave %d rows", b.SourceRows, len(ids))
	}
	return out
}

// runMix reads up to max batches (max < 0: all), the state after each.
func runMix(t testing.TB, l *Loader, n, max int) (bs []mixBatch, states []*State) {
	t.Helper()
	for k := 0; max < 0 || k < max; k++ {
		b, err := l.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		bs = append(bs, splitMix(t, b, n))
		b.Release()
		states = append(states, l.State())
	}
	return bs, states
}

// checkPrefix checks the blend's bound after every batch: no source a
// unit (row) ahead of its share of all rows so far, none behind by more
// than the others' lead, Σ_{j≠i}(1 − w_j).
func checkPrefix(t *testing.T, counts [][]int, w []float64) {
	t.Helper()
	var sum float64
	for _, x := range w {
		sum += x
	}
	g := make([]int, len(w))
	total := 0
	for k, c := range counts {
		for i := range c {
			g[i] += c[i]
			total += c[i]
		}
		var lead float64
		for i := range w {
			lead += 1 - w[i]/sum
		}
		for i := range w {
			s := w[i] / sum
			d := float64(g[i]) - s*float64(total)
			if d > 1-s+1e-9 || -d > lead-(1-s)+1e-9 {
				t.Fatalf("after batch %d: source %d has %d of %d rows, share %.2f: off by %.3f", k, i, g[i], total, s, d)
			}
		}
	}
}

// checkEpochs checks a source's delivered ids: each run of n (its own
// epoch) a permutation of [0, n) with nothing repeated, the last run a
// part of one.
func checkEpochs(t *testing.T, name string, ids []int64, n int) {
	t.Helper()
	for e := 0; e*n < len(ids); e++ {
		run := ids[e*n : min(len(ids), (e+1)*n)]
		seen := make(map[int64]bool, len(run))
		for _, id := range run {
			if id < 0 || id >= int64(n) || seen[id] {
				t.Fatalf("source %s, its epoch %d: id %d repeated or out of [0,%d)", name, e, id, n)
			}
			seen[id] = true
		}
	}
}

// TestMixturePrefix: three sources at 0.6/0.3/0.1 with different page
// sizes, at the defaults otherwise (row batches of 1024, page shuffle,
// unordered), and Deterministic; with a batch that does not divide the
// shares; and tokens output counting rows of the token matrix.
func TestMixturePrefix(t *testing.T) {
	names := []string{"web", "code", "math"}
	w := []float64{0.6, 0.3, 0.1}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"defaults", func(*Config) {}},
		{"deterministic", func(c *Config) { c.Deterministic = true }},
		{"batch7-rowshuffle-buffer", func(c *Config) { c.BatchRows, c.Shuffle, c.BufferRows = 7, ShuffleRow, 100 }},
		{"epochs3", func(c *Config) { c.BatchRows, c.Epochs = 333, 3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mixConfig(t, names, w)
			tc.mod(&cfg)
			l := openT(t, cfg)
			defer l.Close()
			steps := l.Len()
			bs, _ := runMix(t, l, 3, -1)
			if want := steps * cfg.Epochs; len(bs) != max(want, steps) {
				t.Fatalf("%d batches, Len %d", len(bs), steps)
			}
			var counts [][]int
			per := make([][]int64, 3)
			for _, b := range bs {
				c := make([]int, 3)
				for i := range b {
					c[i] = len(b[i])
					per[i] = append(per[i], b[i]...)
				}
				counts = append(counts, c)
			}
			checkPrefix(t, counts, w)
			for i, n := range names {
				checkEpochs(t, n, per[i], mixRows(n))
			}
			st := l.Stats()
			if len(st.Sources) != 3 || st.Sources[0].Rows != int64(len(per[0])) || st.Sources[0].DiskBytes == 0 || st.Sources[0].Epochs < 1 {
				t.Fatalf("stats %+v", st.Sources)
			}
		})
	}
}

// TestMixtureDefaultsExactlyOnce: sources with paths only (each its own
// rows once: Repeat 1), nothing else set. The epoch is the sum of the
// sources and every row of every source comes once.
func TestMixtureDefaultsExactlyOnce(t *testing.T) {
	names := []string{"web", "code", "math"}
	l := openT(t, mixConfig(t, names, nil))
	defer l.Close()
	bs, _ := runMix(t, l, 3, -1)
	per := make([][]int64, 3)
	for _, b := range bs {
		for i := range b {
			per[i] = append(per[i], b[i]...)
		}
	}
	for i, n := range names {
		checkExactlyOnce(t, per[i], int64(mixRows(n)))
	}
	if want := (mixRows("web") + mixRows("code") + mixRows("math") + 1023) / 1024; len(bs) != want {
		t.Fatalf("%d batches, want %d", len(bs), want)
	}
}

// TestMixtureUpsample: a 90-row source at half the rows cycles through
// its own epochs, each a permutation of its rows.
func TestMixtureUpsample(t *testing.T) {
	cfg := mixConfig(t, []string{"code", "tiny"}, []float64{1, 1})
	cfg.BatchRows, cfg.EpochSize = 64, 2400
	l := openT(t, cfg)
	defer l.Close()
	bs, _ := runMix(t, l, 2, -1)
	var tiny []int64
	for _, b := range bs {
		tiny = append(tiny, b[1]...)
	}
	if len(tiny) < 10*90 {
		t.Fatalf("the small source gave %d rows", len(tiny))
	}
	checkEpochs(t, "tiny", tiny, 90)
	if st := l.Stats(); st.Sources[1].Epochs < 10 {
		t.Fatalf("the small source began %d epochs", st.Sources[1].Epochs)
	}
	// Each of its epochs a fresh permutation (row shuffle: its 90 rows
	// are one page, which a page shuffle keeps in order).
	cfg.Shuffle = ShuffleRow
	l2 := openT(t, cfg)
	defer l2.Close()
	bs, _ = runMix(t, l2, 2, -1)
	tiny = tiny[:0]
	for _, b := range bs {
		tiny = append(tiny, b[1]...)
	}
	checkEpochs(t, "tiny", tiny, 90)
	if slices.Equal(tiny[:90], tiny[90:180]) {
		t.Fatal("two epochs of the small source in the same order")
	}
}

// TestMixtureResume: a state taken at random steps, resumed, delivers what
// the uninterrupted run delivers from there, per source (Deterministic:
// the same batches; unordered: the same rows per source), at worlds 1
// and 3.
func TestMixtureResume(t *testing.T) {
	names := []string{"web", "code", "math"}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, world := range []int{1, 3} {
		for _, det := range []bool{true, false} {
			t.Run(fmt.Sprintf("world%d-det%v", world, det), func(t *testing.T) {
				for r := 0; r < world; r++ {
					cfg := mixConfig(t, names, []float64{0.5, 0.3, 0.2})
					cfg.World, cfg.Rank, cfg.BatchRows, cfg.Epochs, cfg.Deterministic = world, r, 100, 2, det
					l := openT(t, cfg)
					all, states := runMix(t, l, 3, -1)
					l.Close()
					k := rng.IntN(len(all) - 1)
					s, err := UnmarshalState(mustJSON(t, states[k]))
					if err != nil {
						t.Fatal(err)
					}
					cfg.Resume = s
					l2 := openT(t, cfg)
					rest, _ := runMix(t, l2, 3, -1)
					l2.Close()
					if len(rest) != len(all)-k-1 {
						t.Fatalf("rank %d from step %d: %d batches, want %d", r, k, len(rest), len(all)-k-1)
					}
					for i := range names {
						var a, b []int64
						for j := range rest {
							if len(rest[j][i]) != len(all[k+1+j][i]) {
								t.Fatalf("batch %d: source %d gave %d rows, %d uninterrupted", j, i, len(rest[j][i]), len(all[k+1+j][i]))
							}
							a, b = append(a, all[k+1+j][i]...), append(b, rest[j][i]...)
						}
						if det && !slices.Equal(a, b) {
							t.Fatalf("rank %d from step %d: source %d's rows differ", r, k, i)
						}
						// Unordered: which rows a source gives first
						// follows the reads' landing, so only its epochs
						// are compared: nothing repeats within one.
						if world == 1 {
							var ids []int64
							for _, x := range all[:k+1] {
								ids = append(ids, x[i]...)
							}
							checkEpochs(t, names[i], append(ids, b...), mixRows(names[i]))
						}
					}
				}
			})
		}
	}
}

func mustJSON(t testing.TB, s *State) []byte {
	b, err := MarshalState(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMixtureNewWeights: a checkpoint resumed with other weights and a
// source removed and one added continues every kept source where it was:
// within each source's epoch nothing repeats, and the new blend holds
// from the resume on.
func TestMixtureNewWeights(t *testing.T) {
	cfg := mixConfig(t, []string{"web", "code", "math"}, []float64{0.6, 0.3, 0.1})
	cfg.BatchRows = 50
	l := openT(t, cfg)
	before, states := runMix(t, l, 3, 20)
	l.Close()
	cfg2 := mixConfig(t, []string{"code", "web", "tiny"}, []float64{0.2, 0.2, 0.6})
	cfg2.BatchRows, cfg2.EpochSize = 50, 3000
	cfg2.Resume = states[len(states)-1]
	var notes []string
	cfg2.Logf = func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) }
	l2 := openT(t, cfg2)
	defer l2.Close()
	after, _ := runMix(t, l2, 3, -1)
	web := []int64{}
	code := []int64{}
	for _, b := range before {
		web, code = append(web, b[0]...), append(code, b[1]...)
	}
	var counts [][]int
	for _, b := range after {
		web, code = append(web, b[1]...), append(code, b[0]...)
		counts = append(counts, []int{len(b[0]), len(b[1]), len(b[2])})
	}
	checkEpochs(t, "web", web, mixRows("web"))
	checkEpochs(t, "code", code, mixRows("code"))
	checkPrefix(t, counts, []float64{0.2, 0.2, 0.6})
	if len(notes) == 0 {
		t.Fatal("no notice of the changed blend")
	}
}

// TestMixtureReshard: four ranks stop at a step, their states are dealt
// to three, and the three finish the epoch: every source's rows come at
// most once over both worlds, and the three take equal steps.
func TestMixtureReshard(t *testing.T) {
	names := []string{"web", "code", "math"}
	var states []*State
	seen := make([]map[int64]int, 3)
	for i := range seen {
		seen[i] = map[int64]int{}
	}
	add := func(bs []mixBatch) {
		for _, b := range bs {
			for i := range b {
				for _, id := range b[i] {
					seen[i][id]++
				}
			}
		}
	}
	total := 0
	for r := 0; r < 4; r++ {
		cfg := mixConfig(t, names, nil)
		cfg.World, cfg.Rank, cfg.BatchRows, cfg.EpochSize = 4, r, 40, 2800
		l := openT(t, cfg)
		bs, st := runMix(t, l, 3, 5+r) // ranks stop at different steps
		l.Close()
		add(bs)
		states = append(states, st[len(st)-1])
		for _, b := range bs {
			total += len(b[0]) + len(b[1]) + len(b[2])
		}
	}
	next, err := Reshard(states, 3)
	if err != nil {
		t.Fatal(err)
	}
	steps := -1
	for r := 0; r < 3; r++ {
		cfg := mixConfig(t, names, nil)
		cfg.World, cfg.Rank, cfg.BatchRows, cfg.EpochSize = 3, r, 40, 2800
		cfg.Resume = next[r]
		l := openT(t, cfg)
		bs, _ := runMix(t, l, 3, -1)
		l.Close()
		if steps >= 0 && len(bs) != steps {
			t.Fatalf("rank %d takes %d steps, rank 0 %d", r, len(bs), steps)
		}
		steps = len(bs)
		add(bs)
		for _, b := range bs {
			total += len(b[0]) + len(b[1]) + len(b[2])
		}
	}
	for i, n := range names {
		for id, c := range seen[i] {
			if c > 1 {
				t.Fatalf("source %s: row %d delivered %d times", n, id, c)
			}
		}
	}
	if total > 2800 || total < 2800-4*40-3*40 {
		t.Fatalf("%d rows over both worlds for an epoch of 2800", total)
	}
}

// TestMixtureBadConfig: bad weights, mixed kinds, empty and conflicting
// sources fail at Open with ErrConfig naming the source.
func TestMixtureBadConfig(t *testing.T) {
	p := mixPaths(t, "web")
	q := mixPaths(t, "code")
	for _, tc := range []struct {
		name string
		srcs []Source
		mod  func(*Config)
		want string
	}{
		{"negative", []Source{{Name: "a", Paths: p, Weight: 1}, {Name: "b", Paths: q, Weight: -1}}, nil, `source "b": weight -1`},
		{"nan", []Source{{Name: "a", Paths: p, Weight: nan()}}, nil, `source "a": weight NaN`},
		{"allzero", []Source{{Name: "a", Paths: p, Choose: 0, Repeat: 0}, {Name: "b", Paths: q, Repeat: 0}}, func(c *Config) {
			c.Sources[0].Choose = 0
		}, ""},
		{"mixed", []Source{{Name: "a", Paths: p, Weight: 1, Choose: 5}}, nil, `source "a" sets weight with repeat or choose`},
		{"mixedkinds", []Source{{Name: "a", Paths: p, Weight: 1}, {Name: "b", Paths: q, Repeat: 2}}, nil, `source "b" sets repeat or choose where other sources set weights`},
		{"empty", []Source{{Name: "a", Paths: p, Weight: 1}, {Name: "e", Weight: 1}}, nil, `source "e" has no paths`},
		{"nofiles", []Source{{Name: "a", Paths: p, Weight: 1}, {Name: "g", Paths: []string{filepath.Join(t.TempDir(), "none*.parquet")}, Weight: 1}}, nil, `source "g"`},
		{"dup", []Source{{Name: "a", Paths: p}, {Name: "a", Paths: q}}, nil, `two sources are named "a"`},
		{"types", []Source{{Name: "a", Paths: p}, {Name: "b", Paths: q, Columns: []string{"text"}}}, nil, `of source "a" is INT64`},
		{"paths", []Source{{Name: "a", Paths: p}}, func(c *Config) { c.Paths = q }, "not both"},
		{"small", []Source{{Name: "a", Paths: p}}, func(c *Config) { c.EpochSize, c.World = 10, 2 }, "does not fill one batch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mixConfig(t, nil, nil)
			cfg.Sources = tc.srcs
			if tc.mod != nil {
				tc.mod(&cfg)
			}
			l, err := Open(context.Background(), cfg)
			if err == nil {
				l.Close()
				if tc.want == "" {
					return // all-zero repeats read as Repeat 1: valid
				}
				t.Fatal("opened")
			}
			if (!errors.Is(err, ErrConfig) && tc.name != "nofiles") || !contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrConfig with %q", err, tc.want)
			}
		})
	}
}

func nan() float64 { var z float64; return z / z }

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestMixtureBadState: a one-dataset state and a mixture's refuse each
// other; a source whose file changed is refused naming it.
func TestMixtureBadState(t *testing.T) {
	cfg := mixConfig(t, []string{"web", "code"}, []float64{1, 1})
	cfg.BatchRows = 64
	l := openT(t, cfg)
	_, st := runMix(t, l, 2, 3)
	l.Close()
	one := baseConfig(dataset{paths: mixPaths(t, "web")}, "id")
	one.Resume = st[2]
	if _, err := Open(context.Background(), one); !errors.Is(err, ErrState) {
		t.Fatalf("a mixture's state on one dataset: %v", err)
	}
	one.Resume = nil
	one.BatchRows = 64
	l1 := openT(t, one)
	l1.Next(context.Background())
	s1 := l1.State()
	l1.Close()
	cfg.Resume = s1
	if _, err := Open(context.Background(), cfg); !errors.Is(err, ErrState) {
		t.Fatalf("one dataset's state on a mixture: %v", err)
	}
	// The same state on other files for source "code".
	cfg.Resume = st[2]
	cfg.Sources[1].Paths = mixPaths(t, "math")
	_, err := Open(context.Background(), cfg)
	if !errors.Is(err, ErrState) || !contains(err.Error(), `source "code"`) {
		t.Fatalf("changed source: %v", err)
	}
}

// TestMixtureTokens: tokens output blends rows of the token matrix (each
// SeqLen tokens): the prefix bound holds in them, and each batch is a
// whole matrix whose segments cover it.
func TestMixtureTokens(t *testing.T) {
	w := []float64{0.6, 0.3, 0.1}
	cfg := mixConfig(t, []string{"web", "code", "math"}, w)
	cfg.Columns, cfg.Output, cfg.SeqLen, cfg.BatchRows, cfg.EpochSize = []string{"input_ids"}, OutputTokens, 64, 7, 64*7*60
	l := openT(t, cfg)
	defer l.Close()
	if l.Len() != 60 {
		t.Fatalf("Len %d, want 60", l.Len())
	}
	var counts [][]int
	n := 0
	for {
		b, err := l.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Tokens) != 7*64 || len(b.LossMask) != 7*64 || b.CuSeqlens[len(b.CuSeqlens)-1] != 7*64 {
			t.Fatalf("batch %d: %d tokens, cu %v", n, len(b.Tokens), b.CuSeqlens)
		}
		counts = append(counts, slices.Clone(b.SourceRows))
		b.Release()
		n++
	}
	if n != 60 {
		t.Fatalf("%d batches", n)
	}
	checkPrefix(t, counts, w)
	st := l.Stats()
	for i, s := range st.Sources {
		if s.Tokens <= 0 || s.Rows <= 0 {
			t.Fatalf("source %d: %+v", i, s)
		}
	}
}

// TestMixtureInterrupted: Next cut short by its context, again and again,
// keeps the batch it was assembling and goes on: the batches are those of
// an uninterrupted run (Deterministic), and a State taken between the
// cuts resumes after the last batch returned.
func TestMixtureInterrupted(t *testing.T) {
	cfg := mixConfig(t, []string{"web", "code", "math"}, []float64{0.6, 0.3, 0.1})
	cfg.Deterministic, cfg.BatchRows = true, 150
	l := openT(t, cfg)
	want, _ := runMix(t, l, 3, -1)
	l.Close()
	// Whether a cut lands while some sources' rows are taken depends on
	// timing: run the interrupted epoch until one does (each run is
	// checked whole), a few times at most.
	var mid *State
	midAt := -1
	for try := 0; try < 8 && mid == nil; try++ {
		mid, midAt = interruptedMix(t, cfg, want)
	}
	if mid == nil {
		t.Fatal("no cut in the middle of a batch in 8 runs")
	}
	cfg.Resume = mid
	l2 := openT(t, cfg)
	defer l2.Close()
	rest, _ := runMix(t, l2, 3, -1)
	if len(rest) != len(want)-midAt {
		t.Fatalf("resumed: %d batches, want %d", len(rest), len(want)-midAt)
	}
	for k := range rest {
		for i := range rest[k] {
			if !slices.Equal(want[midAt+k][i], rest[k][i]) {
				t.Fatalf("resumed batch %d, source %d differs", k, i)
			}
		}
	}
}

// interruptedMix runs an epoch of cfg whose Next calls are cut short by
// their context, again and again, checking it delivers want; it returns
// a State taken after a cut that had some sources' rows taken, and the
// batches delivered before it (nil, -1 when no cut did).
func interruptedMix(t *testing.T, cfg Config, want []mixBatch) (*State, int) {
	t.Helper()
	l := openT(t, cfg)
	defer l.Close()
	var got []mixBatch
	var mid *State
	midAt := -1
	cuts, partial := 0, 0
	for {
		ctx, cancel := context.WithCancel(context.Background())
		if cuts%3 != 2 {
			cancel() // cut before or during the wait
		}
		b, err := l.Next(ctx)
		cancel()
		if err == io.EOF {
			break
		}
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
			cuts++
			for _, g := range l.mix.wip.got {
				if len(g) > 0 {
					partial++ // cut with some sources' rows taken
					break
				}
			}
			if mid == nil && len(got) >= 5 && partial > 0 {
				mid, midAt = l.State(), len(got)
			}
			continue
		}
		cuts++
		got = append(got, splitMix(t, b, 3))
		b.Release()
	}
	if len(got) != len(want) {
		t.Fatalf("%d batches, want %d", len(got), len(want))
	}
	for k := range want {
		for i := range want[k] {
			if !slices.Equal(want[k][i], got[k][i]) {
				t.Fatalf("batch %d, source %d differs", k, i)
			}
		}
	}
	if partial == 0 {
		return nil, -1
	}
	return mid, midAt
}

// TestMixtureSourceBuffers: at the defaults each source's shuffle buffer
// holds its weight's share of the pages one dataset's default buffer
// holds (so the sources together buffer what one dataset would, and a
// mixture batch's rows span as many pages per row), never less than one
// page's rows; a buffer set in the Config applies to every source as set.
func TestMixtureSourceBuffers(t *testing.T) {
	names := []string{"web", "code", "math"}
	weights := []float64{0.6, 0.3, 0.1}
	cfg := mixConfig(t, names, weights)
	cfg.Columns = []string{"input_ids"} // pages of a few rows: the buffers are not the sources' whole rows
	l := openT(t, cfg)
	defer l.Close()
	below := 0
	for i, sl := range l.mix.srcs {
		rpp := float64(sl.space.Total()) / float64(sl.ix.NumPages(sl.lead))
		want := min(int(math.Ceil(max(defaultBufferPages*weights[i], 1)*rpp)), int(sl.space.Total()))
		if got := sl.BufferRows(); got != want {
			t.Errorf("source %q (weight %v, %.1f rows a page): buffer of %d rows, want %d", names[i], weights[i], rpp, got, want)
		}
		if want < int(sl.space.Total()) {
			below++
		}
	}
	if below == 0 {
		t.Fatal("every source's buffer holds all its rows: the test sees no share")
	}
	cfg.BufferRows = 100
	l2 := openT(t, cfg)
	defer l2.Close()
	for i, sl := range l2.mix.srcs {
		if got := sl.BufferRows(); got != 100 {
			t.Errorf("source %q: buffer of %d rows, want the 100 set", names[i], got)
		}
	}
}
