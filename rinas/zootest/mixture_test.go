package zootest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/zoo"
	"github.com/pagefeed/pagefeed/rinas"
)

// TestZooMixtureAtDefaults runs a mixture (Config.Sources) whose sources
// are different writers' files, one source per writer, at the defaults
// otherwise (row batches of 1024, page shuffle, unordered fetch, auto
// reads): three writers at weights 0.5/0.3/0.2 (DuckDB's one page per
// chunk and no offset index, arrow-rs's list.item leaves and
// dictionaries, parquetjs's offset index whose pages all claim row 0),
// and every writer with no weights (each source's rows once per epoch).
// The tokens set's columns, the list column input_ids among them; world
// 1 and every rank of world 3.
//
// Checked: every value is DuckDB's, every column row-aligned; each
// batch's rows per source (Batch.SourceRows) are that source's, and after
// every batch each source's rows are within plan.Blend's prefix bound of
// its share (never a row ahead, at most Σ_{j≠i}(1 − w_j) rows behind);
// within each source's own epochs (its rows less fewer than World, dealt
// evenly to the ranks) no row comes twice over all ranks; every rank
// takes as many batches as its Len and as the others; Stats says the
// read mode chosen over all sources' files and each source's part.
func TestZooMixtureAtDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("short: the zoo runs hundreds of epochs")
	}
	z := zoo.Get(t)
	mix := z.Mix("tokens")
	pick := func(writers ...string) []zoo.Fixture {
		var out []zoo.Fixture
		for _, w := range writers {
			i := slices.IndexFunc(mix, func(f zoo.Fixture) bool { return f.Writer == w })
			if i < 0 {
				t.Fatalf("the zoo's tokens set has no fixture of %s", w)
			}
			out = append(out, mix[i])
		}
		return out
	}
	if len(mix) < 5 {
		t.Fatalf("the zoo's tokens mix has %d writers", len(mix))
	}
	for _, tc := range []struct {
		name     string
		fixtures []zoo.Fixture
		weights  []float64
	}{
		{"weights", pick("duckdb", "arrowrs", "parquetjs"), []float64{0.5, 0.3, 0.2}},
		{"defaults", mix, nil},
	} {
		for _, world := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/world%d", tc.name, world), func(t *testing.T) {
				err := runZooMixture(tc.fixtures, tc.weights, zooColumns["tokens"]["several"], world, t.Logf)
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// runZooMixture runs one mixture epoch of every rank of world, one source
// per fixture, and checks it (TestZooMixtureAtDefaults says what).
func runZooMixture(fixtures []zoo.Fixture, weights []float64, cols []string, world int, logf func(string, ...any)) error {
	ctx, cancel := context.WithTimeout(context.Background(), zooDeadline)
	defer cancel()
	refs, err := zooRefsOf(zooDataset{fixtures: fixtures})
	if err != nil {
		return err
	}
	n := len(fixtures)
	// The blend's weights: as given, or each source's rows (Repeat 1).
	w := slices.Clone(weights)
	if w == nil {
		for _, f := range fixtures {
			w = append(w, float64(f.Rows))
		}
	}
	got := make([][][]int64, n) // per source, per rank: ids in delivery order
	for i := range got {
		got[i] = make([][]int64, world)
	}
	var steps []int
	var delivered int64
	for rank := 0; rank < world; rank++ {
		var logs zooLog
		cfg := rinas.Config{Columns: cols, Rank: rank, World: world,
			Index: index.Options{NoSidecar: true, Logf: logs.logf}, Logf: logs.logf}
		for i, f := range fixtures {
			s := rinas.Source{Name: f.Name, Paths: []string{f.Path}}
			if weights != nil {
				s.Weight = weights[i]
			}
			cfg.Sources = append(cfg.Sources, s)
		}
		l, err := rinas.Open(ctx, cfg)
		if err != nil {
			return fmt.Errorf("rank %d: Open: %w%s", rank, err, logs.String())
		}
		k, err := zooMixEpoch(ctx, l, refs, cols, w, got, rank)
		st := l.Stats()
		lenSteps := l.Len()
		if cerr := l.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("Close: %w", cerr)
		}
		if err != nil {
			return fmt.Errorf("rank %d of %d after %d batches: %w%s", rank, world, k, err, logs.String())
		}
		if k != lenSteps || k == 0 {
			return fmt.Errorf("rank %d of %d took %d batches, its Len said %d", rank, world, k, lenSteps)
		}
		steps = append(steps, k)
		delivered += st.Rows
		if err := zooMixIOStats(st, n); err != nil {
			return fmt.Errorf("rank %d: %w", rank, err)
		}
	}
	for _, s := range steps {
		if s != steps[0] {
			return fmt.Errorf("ranks took %v batches: unequal steps under DropLast", steps)
		}
	}
	// Each source's own epochs: every rank takes Rows/World of its rows
	// in each (fewer than World left out); over the world none twice in
	// one.
	for i, f := range fixtures {
		per := int(f.Rows) / world
		for e := 0; ; e++ {
			seen := make(map[int64]bool, f.Rows)
			more := false
			for r := range world {
				ids := got[i][r]
				if e*per >= len(ids) {
					continue
				}
				more = true
				for _, id := range ids[e*per : min(len(ids), (e+1)*per)] {
					if seen[id] {
						return fmt.Errorf("source %s, its epoch %d: id %d delivered twice", f.Name, e, id)
					}
					seen[id] = true
				}
			}
			if !more {
				break
			}
		}
	}
	var rows int64
	for _, f := range fixtures {
		rows += f.Rows
	}
	// The mixture's epoch is the sum of the sources (the default
	// EpochSize); DropLast leaves out fewer than a batch per rank.
	if left := rows - delivered; left < 0 || left >= int64(world)*1024 {
		return fmt.Errorf("%d rows delivered of an epoch of %d", delivered, rows)
	}
	logf("%d sources, world %d: %d steps per rank, %d of %d rows delivered", n, world, steps[0], delivered, rows)
	return nil
}

// zooMixEpoch drains l, a mixture of refs' fixtures in order: it checks
// every batch's values (DuckDB's) and that each source's rows are its
// own, appends them to got[source][rank], checks the blend's prefix bound
// over weights w after every batch, and returns the batches.
func zooMixEpoch(ctx context.Context, l *rinas.Loader, refs *zooRefs, cols []string, w []float64, got [][][]int64, rank int) (int, error) {
	var buf []byte
	n := len(w)
	g := make([]int64, n)
	var total int64
	idCol := slices.Index(cols, "id")
	for k := 0; ; k++ {
		b, err := l.Next(ctx)
		if errors.Is(err, io.EOF) {
			return k, nil
		}
		if err != nil {
			return k, fmt.Errorf("Next: %w", err)
		}
		buf, err = zooCheckBatch(b, refs, cols, nil, buf)
		if err == nil && len(b.SourceRows) != n {
			err = fmt.Errorf("SourceRows %v for %d sources", b.SourceRows, n)
		}
		var ids []int64
		if err == nil {
			for _, a := range b.Columns[idCol].Arrays {
				for i := 0; i < a.Len(); i++ {
					id, _ := zoo.RowID(a, i) // zooCheckBatch checked it
					ids = append(ids, id)
				}
			}
		}
		at := 0
		for i := 0; err == nil && i < n; i++ {
			r := b.SourceRows[i]
			f := refs.fixtures[i]
			for _, id := range ids[at : at+r] {
				if id < f.Base || id >= f.Base+f.Rows {
					err = fmt.Errorf("batch %d: id %d among source %s's rows", k, id, f.Name)
				}
			}
			got[i][rank] = append(got[i][rank], ids[at:at+r]...)
			g[i] += int64(r)
			total += int64(r)
			at += r
		}
		b.Release()
		if err == nil {
			err = zooBlendBound(g, total, w)
		}
		if err != nil {
			return k + 1, fmt.Errorf("batch %d: %w", k, err)
		}
	}
}

// zooBlendBound checks plan.Blend's prefix bound with units of one row:
// source i, given g[i] of total rows at share s_i (its weight over all),
// is at most 1 − s_i rows ahead of s_i·total and at most Σ_{j≠i}(1 − s_j)
// behind.
func zooBlendBound(g []int64, total int64, w []float64) error {
	var sum, lead float64
	for _, x := range w {
		sum += x
	}
	for _, x := range w {
		lead += 1 - x/sum
	}
	for i := range w {
		s := w[i] / sum
		d := float64(g[i]) - s*float64(total)
		if d > 1-s+1e-9 || -d > lead-(1-s)+1e-9 {
			return fmt.Errorf("source %d has %d of %d rows at share %.3f: %+.3f rows off, outside the blend's bound", i, g[i], total, s, d)
		}
	}
	return nil
}

// zooMixIOStats checks that a mixture's Stats say how its files are read:
// the choice over all sources' files, and each source's part of it.
func zooMixIOStats(st rinas.Stats, n int) error {
	if st.IOMode == "" || st.IOReason == "" || len(st.Sources) != n {
		return fmt.Errorf("Stats: io mode %q, reason %q, %d sources", st.IOMode, st.IOReason, len(st.Sources))
	}
	files := 0
	for _, s := range st.Sources {
		if s.IOMode == "" || s.DirectFiles+s.BufferedFiles != 1 || (st.IOMode != "mixed" && s.IOMode != st.IOMode) {
			return fmt.Errorf("source %s reads %q (%d direct, %d buffered files), the mixture %q", s.Name, s.IOMode, s.DirectFiles, s.BufferedFiles, st.IOMode)
		}
		files += s.DirectFiles + s.BufferedFiles
	}
	if st.DirectFiles+st.BufferedFiles != files {
		return fmt.Errorf("Stats: %d direct and %d buffered files, the sources %d", st.DirectFiles, st.BufferedFiles, files)
	}
	return nil
}
