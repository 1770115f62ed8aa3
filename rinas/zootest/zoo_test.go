package zootest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/zoo"
	"github.com/pagefeed/pagefeed/rinas"
)

// zooDecodeFactor bounds the work of an epoch: a rank that has decoded
// more than the bytes its projected columns hold uncompressed, plus this
// many times their share in the rows it has delivered or has in flight
// (Loader.Prefetch batches of 64 units ahead, counted as rows), plus
// zooDecodeSlack, fails at once instead of running for hours. Page,
// stream, rowgroup and no shuffle decode each page about once; row
// shuffle over pages of up to a few hundred rows decodes them 50 to 210
// times over an epoch (each batch of 64 rows decodes most pages again),
// under the bound; row shuffle that decodes a page of DuckDB's defaults
// (122,880 rows, 11 MB) for a batch's handful of rows is stopped after a
// few batches. The first term lets a loader decode everything up front.
const (
	zooDecodeFactor = 400
	zooDecodeSlack  = 16 << 20
)

// zooDeadline bounds one case (all its ranks): a hang guard, far above
// what any case takes.
const zooDeadline = 5 * time.Minute

// zooDataset is one dataset of the zoo cases: a fixture alone, or one
// fixture of every writer.
type zooDataset struct {
	name     string
	set      string // tokens or images
	fixtures []zoo.Fixture
}

// zooDatasets are every fixture alone and, per set, one file of every
// writer (zoo.Mix: list.item and list.element leaves, V1 and V2 pages,
// files with and without page indexes side by side).
func zooDatasets(z *zoo.Zoo) []zooDataset {
	var out []zooDataset
	for _, f := range z.Fixtures {
		out = append(out, zooDataset{name: f.Name, set: f.Set, fixtures: []zoo.Fixture{f}})
	}
	for _, set := range []string{"tokens", "images"} {
		out = append(out, zooDataset{name: "mix-" + set, set: set, fixtures: z.Mix(set)})
	}
	return out
}

// zooColumns are the projections of each set: one column (that names its
// row itself) and several (the binary column included).
var zooColumns = map[string]map[string][]string{
	"tokens": {"one": {"input_ids"}, "several": {"id", "input_ids", "text", "score"}},
	"images": {"one": {"image"}, "several": {"id", "image", "caption"}},
}

// TestZooAtDefaults runs the loader at its defaults over every file of the
// writer zoo and over a dataset mixing a file of every writer: every
// shuffle, one column and several, world 1 and every rank of world 3.
// Only the data, the projection, the shuffle and the rank are set (and
// quiet logs, and no sidecar, which change nothing delivered).
//
// World 1: every row is delivered exactly once, with exactly the values
// DuckDB reads from its file, every column row-aligned. World 3 (the
// default DropLast): no row twice over all ranks, every value DuckDB's,
// every rank as many batches as its Len and as the others, and the rows
// left out no more than the documented bound (zooDropBound) and what the
// ranks' Stats.DroppedRows say.
func TestZooAtDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("short: the zoo runs hundreds of epochs")
	}
	z := zoo.Get(t)
	expect := zoo.NewExpectations(zooExpectedFailures, zooReasons...)
	for _, ds := range zooDatasets(z) {
		for _, sh := range []rinas.Shuffle{rinas.ShufflePage, rinas.ShuffleRow, rinas.ShuffleRowGroup, rinas.ShuffleStream, rinas.ShuffleNone} {
			for _, proj := range []string{"one", "several"} {
				for _, world := range []int{1, 3} {
					name := fmt.Sprintf("%s/%s/%s/world%d", ds.name, sh, proj, world)
					t.Run(name, func(t *testing.T) {
						refs, err := zooRefsOf(ds) // loaded once per process
						if err != nil {
							t.Fatal(err)
						}
						err = runZooCase(ds, refs, sh, zooColumns[ds.set][proj], world, t.Logf)
						expect.Check(t, name, err)
					})
				}
			}
		}
	}
	expect.Finish(t)
}

// runZooCase runs one epoch of every rank of world over ds and checks it
// (TestZooAtDefaults says what), returning the first violation; logf
// hears how much it decoded.
func runZooCase(ds zooDataset, z *zooRefs, sh rinas.Shuffle, cols []string, world int, logf func(string, ...any)) error {
	ctx, cancel := context.WithTimeout(context.Background(), zooDeadline)
	defer cancel()
	var paths []string
	var rows, bytes int64
	for _, f := range ds.fixtures {
		paths = append(paths, f.Path)
		rows += f.Rows
		n, err := zoo.UncompressedBytes(f.Path, cols)
		if err != nil {
			return err
		}
		bytes += n
	}
	seen := make(map[int64]int, rows)
	var dropped, decoded int64
	var steps []int
	var bound int64
	var exact bool
	for rank := 0; rank < world; rank++ {
		var logs zooLog
		cfg := rinas.Config{
			Paths: paths, Columns: cols, Shuffle: sh, Rank: rank, World: world,
			Index: index.Options{NoSidecar: true, Logf: logs.logf},
			Logf:  logs.logf,
		}
		l, err := rinas.Open(ctx, cfg)
		if err != nil {
			return fmt.Errorf("rank %d: Open: %w%s", rank, err, logs.String())
		}
		n, err := zooEpoch(ctx, l, z, cols, seen, bytes, rows)
		st := l.Stats()
		if rank == 0 {
			bound, exact = zooDropBound(l.Index(), world)
		}
		lenSteps := l.Len()
		if cerr := l.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("Close: %w", cerr)
		}
		if err != nil {
			return fmt.Errorf("rank %d of %d after %d batches (%d of %d rows seen): %w%s", rank, world, n, len(seen), rows, err, logs.String())
		}
		if world > 1 && n != lenSteps {
			return fmt.Errorf("rank %d of %d took %d batches, its Len said %d", rank, world, n, lenSteps)
		}
		steps = append(steps, n)
		dropped += st.DroppedRows
		decoded += st.DecodedBytes
	}
	logf("%d ranks decoded %.1f times the %d bytes the columns hold", world, float64(decoded)/float64(max(bytes, 1)), bytes)
	var missing []int64
	for _, f := range ds.fixtures {
		for id := f.Base; id < f.Base+f.Rows; id++ {
			if seen[id] == 0 {
				missing = append(missing, id)
			}
		}
	}
	if world == 1 {
		if len(missing) > 0 {
			return fmt.Errorf("%d of %d rows never delivered (ids %v…)", len(missing), rows, missing[:min(5, len(missing))])
		}
		return nil
	}
	for _, s := range steps {
		if s != steps[0] {
			return fmt.Errorf("ranks took %v batches: unequal steps under DropLast", steps)
		}
	}
	m := int64(len(missing))
	switch {
	case m > bound:
		return fmt.Errorf("%d of %d rows left out over %d ranks (%.0f%%), more than the bound of %d (steps %v)", m, rows, world, 100*float64(m)/float64(rows), bound, steps)
	case exact && dropped != m:
		return fmt.Errorf("%d rows left out, the ranks' Stats.DroppedRows say %d", m, dropped)
	case dropped > m:
		return fmt.Errorf("%d rows left out, the ranks' Stats.DroppedRows say %d", m, dropped)
	}
	return nil
}

// zooDropBound is the most rows DropLast may leave out of an epoch of
// world ranks at the defaults (page batches): shares of rows, not of
// pages, the tail's units split at row granularity between ranks, so that
// only what cannot be spread evenly goes, fewer than World rows, as
// PyTorch's DistributedSampler with drop_last leaves out fewer than World
// samples. (With row batches the bound is World × BatchRows; the zoo runs
// the defaults only.) exact says whether every page's row count is known,
// so that Stats.DroppedRows must count the rows left out exactly: the
// loader counts 0 for pages whose row count it does not know.
func zooDropBound(ix *index.Index, world int) (bound int64, exact bool) {
	exact = true
	for k := 0; k < ix.NumColumns(); k++ {
		exact = exact && !slices.Contains(ix.PageRows(k), -1)
	}
	return int64(world - 1), exact
}

// zooEpoch drains l, checking every row of every batch against DuckDB's
// reading and counting it in seen (a row seen twice is an error), and
// returns the number of batches. It stops with an error once l has
// decoded more than zooDecodeFactor allows, bytes being what the projected
// columns of the dataset's rows hold.
func zooEpoch(ctx context.Context, l *rinas.Loader, z *zooRefs, cols []string, seen map[int64]int, bytes, rows int64) (int, error) {
	var buf []byte
	batches := 0
	for {
		b, err := l.Next(ctx)
		if errors.Is(err, io.EOF) {
			return batches, nil
		}
		if err != nil {
			return batches, fmt.Errorf("Next: %w", err)
		}
		batches++
		buf, err = zooCheckBatch(b, z, cols, seen, buf)
		b.Release()
		if err != nil {
			return batches, err
		}
		st := l.Stats()
		ahead := int64(l.Prefetch()+1) * 64
		share := float64(bytes) * float64(min(rows, st.Rows+ahead)) / float64(rows)
		if d := st.DecodedBytes; float64(d) > float64(bytes)+zooDecodeFactor*share+zooDecodeSlack {
			return batches, fmt.Errorf("decoded %.1f MB for %d rows, more than the %.2f MB the projected columns hold, %d times the %.3f MB of the rows delivered and in flight, and %d MB: a page decoded again for each row?",
				float64(d)/1e6, st.Rows, float64(bytes)/1e6, zooDecodeFactor, share/1e6, zooDecodeSlack>>20)
		}
	}
}

// zooCheckBatch checks one batch: every projected column present and
// row-aligned, every row's id new (counted in seen; nil: not counted),
// every value DuckDB's.
func zooCheckBatch(b *rinas.Batch, z *zooRefs, cols []string, seen map[int64]int, buf []byte) ([]byte, error) {
	if len(b.Columns) != len(cols) {
		return buf, fmt.Errorf("batch has %d columns, want %d (%v)", len(b.Columns), len(cols), cols)
	}
	idCol := 0
	for c, col := range b.Columns {
		if strings.SplitN(col.Name, ".", 2)[0] == "id" {
			idCol = c
		}
		if want := cols[c]; strings.SplitN(col.Name, ".", 2)[0] != want {
			return buf, fmt.Errorf("column %d is %s, want %s", c, col.Name, want)
		}
		if len(col.Arrays) != len(b.Columns[0].Arrays) {
			return buf, fmt.Errorf("column %s has %d chunks, %s %d", col.Name, len(col.Arrays), b.Columns[0].Name, len(b.Columns[0].Arrays))
		}
	}
	n := 0
	for k, a := range b.Columns[idCol].Arrays {
		for _, col := range b.Columns {
			if col.Arrays[k].Len() != a.Len() {
				return buf, fmt.Errorf("chunk %d: column %s has %d rows, %s %d: not row-aligned", k, col.Name, col.Arrays[k].Len(), b.Columns[idCol].Name, a.Len())
			}
		}
		for i := 0; i < a.Len(); i++ {
			id, ok := zoo.RowID(a, i)
			if !ok {
				return buf, fmt.Errorf("chunk %d row %d of %s names no row", k, i, b.Columns[idCol].Name)
			}
			ref := z.ref(id)
			if ref == nil {
				return buf, fmt.Errorf("id %d is in no file of the dataset", id)
			}
			if seen != nil {
				if seen[id]++; seen[id] > 1 {
					return buf, fmt.Errorf("id %d (%s) delivered twice", id, ref.Path)
				}
			}
			for _, col := range b.Columns {
				var err error
				if buf, err = zoo.AppendCanonical(buf[:0], col.Arrays[k], i); err != nil {
					return buf, err
				}
				if err := ref.Check(id, col.Name, buf); err != nil {
					return buf, err
				}
			}
			n++
		}
	}
	if n != b.Rows {
		return buf, fmt.Errorf("batch says %d rows, holds %d", b.Rows, n)
	}
	return buf, nil
}

// zooRefs finds the reference of a row by its id.
type zooRefs struct {
	fixtures []zoo.Fixture
	refs     []*zoo.Reference
}

func (z *zooRefs) ref(id int64) *zoo.Reference {
	for i, f := range z.fixtures {
		if id >= f.Base && id < f.Base+f.Rows {
			return z.refs[i]
		}
	}
	return nil
}

func zooRefsOf(ds zooDataset) (*zooRefs, error) {
	z := &zooRefs{fixtures: ds.fixtures}
	for _, f := range ds.fixtures {
		r, err := f.Reference()
		if err != nil {
			return nil, err
		}
		z.refs = append(z.refs, r)
	}
	return z, nil
}

// zooLog keeps a loader's notices for a failure's message.
type zooLog struct {
	mu    sync.Mutex
	lines []string
}

func (g *zooLog) logf(format string, args ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.lines) < 20 {
		g.lines = append(g.lines, fmt.Sprintf(format, args...))
	}
}

func (g *zooLog) String() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.lines) == 0 {
		return ""
	}
	return "\n\tnotices: " + strings.Join(slices.Clone(g.lines), "\n\t")
}
