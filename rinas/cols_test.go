package rinas

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/gen"
	"github.com/pagefeed/pagefeed/internal/pqtest"
)

// Multi-column datasets, generated once per test binary: "idx" has V2
// pages with an offset index, dictionary-encoded columns and pages whose
// rows differ per column; "walk" has V1 pages without one, so rows of
// input_ids cross pages (the index counts each page's rows from its
// levels, and spans read the pages that finish their last row), and long
// documents split their list values over pages; "mixed"
// has page sizes that differ per column.
var (
	mcOnce sync.Once
	mcDir  string
	mcErr  error
)

const (
	mcFiles = 2
	mcRows  = 1200
)

func multiDataset(t *testing.T, kind string) []string {
	t.Helper()
	mcOnce.Do(func() {
		mcDir, mcErr = os.MkdirTemp("", "rinas-cols-")
		if mcErr != nil {
			return
		}
		for _, k := range []struct {
			name string
			cfg  gen.Config
		}{
			{"idx", gen.Config{PageVersion: 2, PageIndex: true, Codec: "snappy", Dictionary: true, PageSize: 4096, MeanTokens: 48}},
			{"walk", gen.Config{PageVersion: 1, Codec: "zstd", PageSize: 2048, MeanTokens: 96, MaxTokens: 2000}},
			// 1 KiB id and text pages beside 16 KiB token pages.
			{"mixed", gen.Config{PageVersion: 2, PageIndex: true, Codec: "zstd", Dictionary: true, PageSize: 16 << 10, ScalarPageSize: 1 << 10, MeanTokens: 48}},
		} {
			c := k.cfg
			c.Dir = filepath.Join(mcDir, k.name)
			c.Files, c.RowsPerFile, c.RowGroupRows, c.Seed = mcFiles, mcRows, 500, 11
			if _, mcErr = gen.Run(context.Background(), c); mcErr != nil {
				return
			}
		}
	})
	if mcErr != nil {
		t.Fatalf("generate dataset: %v", mcErr)
	}
	m, _ := filepath.Glob(filepath.Join(mcDir, kind, "*.parquet"))
	return m
}

// reference reads every file whole with arrow-go and returns, per file,
// each top-level field's rows as strings.
func reference(t *testing.T, paths []string) map[string]map[string][]string {
	t.Helper()
	ref := map[string]map[string][]string{}
	for _, p := range paths {
		r, err := file.OpenParquetFile(p, false)
		if err != nil {
			t.Fatal(err)
		}
		fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := fr.ReadTable(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		cols := map[string][]string{}
		for i := 0; i < int(tbl.NumCols()); i++ {
			var vals []string
			for _, ch := range tbl.Column(i).Data().Chunks() {
				for j := 0; j < ch.Len(); j++ {
					vals = append(vals, valueStr(ch, j))
				}
			}
			cols[tbl.Schema().Field(i).Name] = vals
		}
		tbl.Release()
		r.Close()
		ref[p] = cols
	}
	return ref
}

// rowKey names a row of the dataset: its file and row within the file.
type rowKey struct {
	file int
	row  int64
}

// collectRows checks every delivered row of every projected column
// against ref and returns the rows in delivery order.
func collectRows(t *testing.T, l *Loader, ref map[string]map[string][]string, b *Batch) []rowKey {
	t.Helper()
	ix := l.Index()
	if len(b.Columns) != len(l.proj) {
		t.Fatalf("batch has %d columns, want %d", len(b.Columns), len(l.proj))
	}
	var keys []rowKey
	known := true
	for _, g := range b.Pages {
		known = known && ix.Locate(l.lead, int(g)).FirstRow >= 0
	}
	for _, rr := range b.Refs {
		known = known && ix.Locate(l.lead, int(rr.Page)).FirstRow >= 0
	}
	switch {
	case !known:
		// The lead's first rows are unknown (a header walk of V1 pages):
		// a generated dataset's id column names the row.
		for _, c := range b.Columns {
			if c.Name != "id" {
				continue
			}
			for _, a := range c.Arrays {
				for _, id := range a.(*array.Int64).Int64Values() {
					keys = append(keys, rowKey{int(id / mcRows), id % mcRows})
				}
			}
		}
	case b.Refs == nil:
		for _, g := range b.Pages {
			loc := ix.Locate(l.lead, int(g))
			for r := int64(0); r < int64(loc.NumRows); r++ {
				keys = append(keys, rowKey{loc.File, loc.FirstRow + r})
			}
		}
	default:
		for _, rr := range b.Refs {
			loc := ix.Locate(l.lead, int(rr.Page))
			keys = append(keys, rowKey{loc.File, loc.FirstRow + int64(rr.Row)})
		}
	}
	if len(keys) != b.Rows {
		t.Fatalf("batch names %d rows, holds %d", len(keys), b.Rows)
	}
	for _, c := range b.Columns {
		field := strings.SplitN(c.Name, ".", 2)[0]
		n := 0
		for ai, a := range c.Arrays {
			if a.Len() != b.Columns[0].Arrays[ai].Len() {
				t.Fatalf("column %s chunk %d has %d rows, column %s %d", c.Name, ai, a.Len(), b.Columns[0].Name, b.Columns[0].Arrays[ai].Len())
			}
			for i := 0; i < a.Len(); i++ {
				k := keys[n]
				n++
				want := ref[ix.File(k.file).Path][field][k.row]
				if got := valueStr(a, i); got != want {
					t.Fatalf("column %s, %s row %d: got %.80s, want %.80s", c.Name, ix.File(k.file).Path, k.row, got, want)
				}
			}
		}
		if n != len(keys) {
			t.Fatalf("column %s holds %d rows, batch %d", c.Name, n, len(keys))
		}
	}
	return keys
}

// runAll drains l, checking every row, and returns the rows delivered.
func runAll(t *testing.T, l *Loader, ref map[string]map[string][]string, max int) []rowKey {
	t.Helper()
	var keys []rowKey
	n := 0
	for max < 0 || n < max {
		b, err := l.Next(context.Background())
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("Next: %v", err)
		}
		keys = append(keys, collectRows(t, l, ref, b)...)
		b.Release()
		n++
	}
	return keys
}

func checkOnce(t *testing.T, keys []rowKey, ix *index.Index) {
	t.Helper()
	seen := map[rowKey]bool{}
	for _, k := range keys {
		if seen[k] {
			t.Fatalf("row %d of file %d delivered twice", k.row, k.file)
		}
		seen[k] = true
	}
	if int64(len(seen)) != ix.NumRows() {
		t.Fatalf("%d rows delivered, dataset has %d", len(seen), ix.NumRows())
	}
}

func multiConfig(paths []string, cols ...string) Config {
	return Config{
		// One batch ahead, so later units find side pages that earlier
		// ones decoded (the whole epoch of these small datasets would
		// otherwise be in flight at once).
		Paths: paths, Columns: cols, Seed: 5, World: 1, BatchPages: 8, Prefetch: 1,
		Index: index.Options{NoSidecar: true, Logf: func(string, ...any) {}},
		Logf:  func(string, ...any) {},
	}
}

func TestMultiColumnModes(t *testing.T) {
	for _, kind := range []string{"idx", "walk", "mixed"} {
		paths := multiDataset(t, kind)
		ref := reference(t, paths)
		for _, tc := range []struct {
			shuffle Shuffle
			rows    int
			buffer  int
			lead    string
			fetch   Fetch
			nocache bool
		}{
			{shuffle: ShufflePage},
			{shuffle: ShufflePage, nocache: true},
			{shuffle: ShufflePage, rows: 50, buffer: 300, nocache: true},
			{shuffle: ShufflePage, lead: "id"},
			{shuffle: ShufflePage, fetch: Ordered},
			{shuffle: ShufflePage, rows: 50, buffer: 300},
			{shuffle: ShuffleRow, rows: 64},
			{shuffle: ShuffleRowGroup},
			{shuffle: ShuffleRowGroup, rows: 100},
			{shuffle: ShuffleRowGroup, fetch: Ordered},
			{shuffle: ShuffleRow, rows: 16, fetch: Ordered},
			{shuffle: ShuffleStream, rows: 32},
			{shuffle: ShuffleNone},
		} {
			name := fmt.Sprintf("%s/%s/rows%d/buf%d/lead%s/%s/nocache%v", kind, tc.shuffle, tc.rows, tc.buffer, tc.lead, tc.fetch, tc.nocache)
			t.Run(name, func(t *testing.T) {
				cfg := multiConfig(paths, "id", "input_ids", "text")
				cfg.Shuffle, cfg.BatchRows, cfg.BufferRows, cfg.LeadColumn, cfg.Fetch = tc.shuffle, tc.rows, tc.buffer, tc.lead, tc.fetch
				if tc.nocache {
					cfg.SideCacheBytes, cfg.Prefetch = -1, 0
				}
				l, err := Open(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				checkOnce(t, runAll(t, l, ref, -1), l.Index())
				st := l.Stats()
				if st.SidePages == 0 {
					t.Fatalf("no side pages read: %+v", st)
				}
				if kind == "walk" && !l.ix.SplitsRows(1) {
					t.Fatalf("no page of %s starts inside a row: the walk kind does not test rows crossing pages", l.ix.Column(1).Path)
				}
				if tc.nocache && st.SideCacheHits != 0 || !tc.nocache && tc.shuffle == ShufflePage && tc.lead == "" && kind != "walk" && st.SideCacheHits == 0 {
					t.Fatalf("side cache hits %d with the cache off=%v", st.SideCacheHits, tc.nocache)
				}
			})
		}
	}
}

func TestMultiColumnWorlds(t *testing.T) {
	paths := multiDataset(t, "idx")
	ref := reference(t, paths)
	for _, world := range []int{1, 2, 3, 8} {
		for _, sh := range []Shuffle{ShufflePage, ShuffleRowGroup} {
			var all []rowKey
			var ix *index.Index
			for rank := 0; rank < world; rank++ {
				cfg := multiConfig(paths, "id", "input_ids", "text")
				cfg.Shuffle, cfg.Rank, cfg.World = sh, rank, world
				cfg.KeepUneven = true // every row once over the ranks, uneven steps
				// With 8 ranks and fewer row groups, page batches split
				// row groups between ranks (each keeps its rows).
				l, err := Open(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, runAll(t, l, ref, -1)...)
				ix = l.Index()
				l.Close()
			}
			checkOnce(t, all, ix)
		}
	}
}

func TestMultiColumnResume(t *testing.T) {
	paths := multiDataset(t, "idx")
	ref := reference(t, paths)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		shuffle Shuffle
		rows    int
		buffer  int
	}{{ShufflePage, 0, 0}, {ShufflePage, 40, 200}, {ShuffleRow, 30, 0}, {ShuffleStream, 25, 0}} {
		for trial := 0; trial < 3; trial++ {
			cfg := multiConfig(paths, "input_ids", "text", "id")
			cfg.Shuffle, cfg.BatchRows, cfg.BufferRows = tc.shuffle, tc.rows, tc.buffer
			l, err := Open(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			stop := 1 + rng.IntN(12)
			keys := runAll(t, l, ref, stop)
			st := l.State()
			l.Close()
			if len(st.Columns) != 3 || st.Lead == "" {
				t.Fatalf("state does not name the projection: %+v", st)
			}
			b, _ := MarshalState(st)
			st2, err := UnmarshalState(b)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Resume = st2
			l2, err := Open(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, runAll(t, l2, ref, -1)...)
			checkOnce(t, keys, l2.Index())
			l2.Close()

			// Another projection refuses the state.
			cfg.Columns = []string{"input_ids", "id"}
			if _, err := Open(context.Background(), cfg); !errors.Is(err, ErrState) {
				t.Fatalf("resume with another projection: %v, want ErrState", err)
			}
		}
	}
}

func TestMultiColumnParquetTesting(t *testing.T) {
	dir := "../../shared/parquet-testing/data"
	for _, tc := range []struct {
		file string
		cols []string
	}{
		{"alltypes_tiny_pages.parquet", []string{"id", "bool_col", "string_col", "timestamp_col", "double_col"}},
		{"datapage_v2.snappy.parquet", []string{"a", "b", "c", "d", "e"}},
		{"list_columns.parquet", []string{"int64_list", "utf8_list"}},
		{"alltypes_plain.parquet", []string{"id", "string_col", "int_col"}},
	} {
		p := filepath.Join(dir, tc.file)
		if _, err := os.Stat(p); err != nil {
			t.Skipf("parquet-testing not found: %v", err)
		}
		ref := reference(t, []string{p})
		for _, sh := range []Shuffle{ShufflePage, ShuffleRowGroup, ShuffleNone} {
			if sh == ShuffleRowGroup && tc.file == "alltypes_tiny_pages.parquet" {
				continue // one row group of thousands of pages per column: more read slots than the memory limit
			}
			for _, rows := range []int{0, 7} {
				t.Run(fmt.Sprintf("%s/%s/%d", tc.file, sh, rows), func(t *testing.T) {
					cfg := multiConfig([]string{p}, tc.cols...)
					cfg.Shuffle, cfg.BatchRows = sh, rows
					l, err := Open(context.Background(), cfg)
					if err != nil {
						t.Fatal(err)
					}
					defer l.Close()
					checkOnce(t, runAll(t, l, ref, -1), l.Index())
				})
			}
		}
	}
}

func TestMultiColumnBadConfig(t *testing.T) {
	paths := multiDataset(t, "idx")
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"unknown", func(c *Config) { c.Columns = []string{"id", "nope"} }, "columns: id, input_ids, text"},
		{"lead not projected", func(c *Config) { c.Columns, c.LeadColumn = []string{"id", "text"}, "input_ids" }, "not projected"},
		{"tokens", func(c *Config) { c.Output = OutputTokens }, "cannot carry"},
	} {
		cfg := multiConfig(paths, "input_ids", "id")
		tc.mod(&cfg)
		_, err := Open(context.Background(), cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrConfig naming %q", tc.name, err, tc.want)
		}
	}
}

// TestMultiColumnRowCountMismatch opens a file whose second column's
// footer claims one value fewer than the row group has rows.
func TestMultiColumnRowCountMismatch(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "bad.parquet")
	sc := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "b", Type: arrow.PrimitiveTypes.Int64}}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	for i := 0; i < 1000; i++ {
		bld.Field(0).(*array.Int64Builder).Append(int64(i))
		bld.Field(1).(*array.Int64Builder).Append(int64(-i))
	}
	rec := bld.NewRecordBatch()
	bld.Release()
	props := parquet.NewWriterProperties(parquet.WithDictionaryDefault(false), parquet.WithStats(false))
	pqtest.WriteRecords(t, p, props, rec)
	rec.Release()
	// ColumnMetaData.codec (field 4, i32 0) then num_values (field 5,
	// i64): zigzag varint of 1000 is d0 0f; make column b's 999 (ce 0f).
	b, _ := os.ReadFile(p)
	pat := []byte{0x15, 0x00, 0x16, 0xd0, 0x0f}
	i := strings.LastIndex(string(b), string(pat))
	if i < 0 || strings.Count(string(b), string(pat)) != 2 {
		t.Fatalf("num_values not found as expected in the footer")
	}
	b[i+3] = 0xce
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := multiConfig([]string{p}, "a", "b")
	_, err := Open(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "row counts differ") {
		t.Fatalf("Open: %v, want an error naming %s and the row counts", err, p)
	}
	// One column alone still opens.
	cfg.Columns = []string{"a"}
	l, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
}

// TestCoalescedReads: a row group's pages (and a span's pages of the
// other columns) go out as fewer requests with coalescing on, and deliver
// the same rows.
func TestCoalescedReads(t *testing.T) {
	paths := multiDataset(t, "idx")
	ref := reference(t, paths)
	for _, tc := range []struct {
		shuffle Shuffle
		cols    []string
	}{{ShuffleRowGroup, []string{"input_ids"}}, {ShuffleRowGroup, []string{"id", "input_ids", "text"}}, {ShufflePage, []string{"id", "input_ids", "text"}}} {
		var reads [2]int64
		for i, coalesce := range []int{-1, 0} {
			cfg := multiConfig(paths, tc.cols...)
			cfg.Shuffle, cfg.CoalesceBytes = tc.shuffle, coalesce
			if tc.shuffle == ShufflePage {
				cfg.LeadColumn = "id" // a span of many pages of the other columns
			}
			l, err := Open(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkOnce(t, runAll(t, l, ref, -1), l.Index())
			st := l.Stats()
			l.Close()
			reads[i] = st.Reads
			if coalesce < 0 && st.CoalescedPages != 0 {
				t.Fatalf("%v: %d pages coalesced with coalescing off", tc, st.CoalescedPages)
			}
			if coalesce == 0 && (st.CoalescedPages == 0 || st.Reads+st.CoalescedPages != st.Pages) {
				t.Fatalf("%v: %d reads, %d coalesced pages, %d pages", tc, st.Reads, st.CoalescedPages, st.Pages)
			}
		}
		if reads[1] >= reads[0] {
			t.Fatalf("%v: %d reads coalesced, %d not", tc, reads[1], reads[0])
		}
		t.Logf("%v %v: %d reads without coalescing, %d with", tc.shuffle, tc.cols, reads[0], reads[1])
	}
}

// TestMultiColumnReshard: states of two ranks part way through an epoch,
// resharded to three, deliver the rest of the rows exactly once.
func TestMultiColumnReshard(t *testing.T) {
	paths := multiDataset(t, "mixed")
	ref := reference(t, paths)
	for _, rows := range []int{0, 30} {
		var keys []rowKey
		var states []*State
		for rank := 0; rank < 2; rank++ {
			cfg := multiConfig(paths, "id", "input_ids", "text")
			cfg.Rank, cfg.World, cfg.BatchRows, cfg.BufferRows = rank, 2, rows, rows*4
			cfg.KeepUneven = true
			l, err := Open(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, runAll(t, l, ref, 2+rank)...)
			states = append(states, l.State())
			l.Close()
		}
		next, err := Reshard(states, 3)
		if err != nil {
			t.Fatal(err)
		}
		var ix *index.Index
		for rank, st := range next {
			cfg := multiConfig(paths, "id", "input_ids", "text")
			cfg.Rank, cfg.World, cfg.BatchRows, cfg.BufferRows, cfg.Resume = rank, 3, rows, rows*4, st
			cfg.KeepUneven = true
			l, err := Open(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, runAll(t, l, ref, -1)...)
			ix = l.Index()
			l.Close()
		}
		checkOnce(t, keys, ix)
	}
}

// TestMultiColumnDropLast: with the default DropLast every rank of a
// world gets as many batches, no row twice, all columns matching the file.
func TestMultiColumnDropLast(t *testing.T) {
	paths := multiDataset(t, "mixed")
	ref := reference(t, paths)
	seen := map[rowKey]bool{}
	var batches []int
	for rank := 0; rank < 3; rank++ {
		cfg := multiConfig(paths, "id", "input_ids", "text")
		cfg.Rank, cfg.World = rank, 3
		l, err := Open(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			b, err := l.Next(context.Background())
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range collectRows(t, l, ref, b) {
				if seen[k] {
					t.Fatalf("row %v twice", k)
				}
				seen[k] = true
			}
			b.Release()
			n++
		}
		batches = append(batches, n)
		l.Close()
	}
	if batches[0] != batches[1] || batches[1] != batches[2] || batches[0] == 0 {
		t.Fatalf("batches per rank %v", batches)
	}
}
