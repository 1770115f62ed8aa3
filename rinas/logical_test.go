package rinas

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/pagefeed/pagefeed/internal/gen"
	"github.com/pagefeed/pagefeed/internal/pqtest"
)

// wholeFileRows reads cols of every file with arrow-go's whole-file
// reader and returns one string per row, the columns' values joined by
// " | ", sorted.
func wholeFileRows(t *testing.T, files []string, cols ...string) []string {
	t.Helper()
	var out []string
	for _, f := range files {
		var per [][]string
		for _, c := range cols {
			per = append(per, wholeFileValues(t, f, c))
		}
		for r := range per[0] {
			var parts []string
			for k := range cols {
				parts = append(parts, per[k][r])
			}
			out = append(out, strings.Join(parts, " | "))
		}
	}
	slices.Sort(out)
	return out
}

// loadRows runs one epoch of cfg and returns its rows as wholeFileRows
// does (columns in projection order), sorted, and the columns' names.
func loadRows(t *testing.T, cfg Config) (rows, names []string) {
	t.Helper()
	l := openT(t, cfg)
	eachBatch(t, l, func(b *Batch) {
		if names == nil {
			for _, c := range b.Columns {
				names = append(names, c.Name)
			}
		}
		for i := range b.Columns[0].Arrays {
			for r := 0; r < b.Columns[0].Arrays[i].Len(); r++ {
				var parts []string
				for _, c := range b.Columns {
					parts = append(parts, valueStr(c.Arrays[i], r))
				}
				rows = append(rows, strings.Join(parts, " | "))
			}
		}
		b.Release()
	})
	slices.Sort(rows)
	return rows, names
}

// copyTo copies files into a new temporary directory (tests at defaults
// write a sidecar next to the dataset).
func copyTo(t *testing.T, files ...string) []string {
	t.Helper()
	dir := t.TempDir()
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.Base(f))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

var allShuffles = []Shuffle{ShufflePage, ShuffleRow, ShuffleRowGroup, ShuffleStream, ShuffleNone}

// TestLogicalColumnsAcrossWritersAtDefaults: a dataset whose files spell
// input_ids every way writers do (list.element as arrow-go and DuckDB,
// list.item as arrow-rs, two-level, bare repeated, Hive's bag, the legacy
// annotation) opens at defaults, with one column and with two, under
// every shuffle: every row once, with the values arrow-go reads from each
// file, and the columns named input_ids and id. A raw leaf path of one
// writer names the column in every file. Before, Open failed with
// "projected leaf 0 is input_ids.list.item here, input_ids.list.element
// in …".
func TestLogicalColumnsAcrossWritersAtDefaults(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i, sp := range pqtest.ListSpellings {
		p := filepath.Join(dir, fmt.Sprintf("part-%d.parquet", i))
		pqtest.WriteSpelled(t, p, sp, int64(i*1000), 300, i%2 == 0,
			parquet.NewWriterProperties(parquet.WithDataPageSize(512), parquet.WithMaxRowGroupLength(120)))
		files = append(files, p)
	}
	for _, cols := range [][]string{{"input_ids"}, {"id", "input_ids"}, {"input_ids", "id"}} {
		want := wholeFileRows(t, files, cols...)
		for _, sh := range allShuffles {
			cfg := Config{Paths: []string{dir}, Columns: cols, Shuffle: sh}
			got, names := loadRows(t, cfg)
			if d := firstDiff(got, want); d != "" {
				t.Fatalf("%v, %s: %s", cols, sh, d)
			}
			if !slices.Equal(names, cols) {
				t.Fatalf("%v, %s: columns named %v", cols, sh, names)
			}
		}
	}
	// A leaf path as one writer spells it.
	for _, raw := range []string{"input_ids.list.item", "input_ids.array"} {
		got, names := loadRows(t, Config{Paths: files, Columns: []string{"id", raw}})
		if d := firstDiff(got, wholeFileRows(t, files, "id", "input_ids")); d != "" || !slices.Equal(names, []string{"id", "input_ids"}) {
			t.Fatalf("%s: columns %v: %s", raw, names, d)
		}
	}
}

// TestRowsSplitAcrossV1PagesAtDefaults: arrow-go's V1 pages without a page
// index split long lists over pages; the index counts every page's rows
// from its levels, so every shuffle (the row shuffle too), equal steps
// with row batches and two columns led by the split one work at
// defaults. Before, the row shuffle and equal steps with row batches were
// refused (row counts unknown) and other columns were read whole per
// span.
func TestRowsSplitAcrossV1PagesAtDefaults(t *testing.T) {
	dir := t.TempDir()
	res, err := gen.Run(context.Background(), gen.Config{Dir: dir, Files: 2, RowsPerFile: 700, RowGroupRows: 350, PageSize: 2048,
		PageVersion: 1, Codec: "zstd", MeanTokens: 120, MaxTokens: 3000, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, cols := range [][]string{{"input_ids"}, {"id", "input_ids"}} {
		want := wholeFileRows(t, res.Files, cols...)
		for _, sh := range allShuffles {
			l := openT(t, Config{Paths: []string{dir}, Columns: cols, Shuffle: sh})
			if k := l.Index().Lookup("input_ids")[0]; !l.Index().SplitsRows(k) {
				t.Fatal("no page starts inside a row: the dataset does not test split rows")
			}
			if st := l.Index().Stats(); st.HeaderWalk == 0 {
				t.Fatalf("stats %+v: no header walk", st)
			}
			l.Close()
			got, _ := loadRows(t, Config{Paths: []string{dir}, Columns: cols, Shuffle: sh})
			if d := firstDiff(got, want); d != "" {
				t.Fatalf("%v, %s: %s", cols, sh, d)
			}
		}
	}
	// Equal steps with row batches over two ranks: each rank's share of
	// whole batches, none refused, every row at most once.
	total := 0
	seen := map[string]int{}
	for rank := 0; rank < 2; rank++ {
		got, _ := loadRows(t, Config{Paths: []string{dir}, Columns: []string{"id", "input_ids"}, BatchRows: 64, Rank: rank, World: 2})
		total += len(got)
		for _, r := range got {
			seen[r]++
			if seen[r] > 1 {
				t.Fatalf("row %.40s… delivered twice", r)
			}
		}
	}
	if total > 1400 || total < 1400-2*64 {
		t.Fatalf("%d rows over two ranks of 64-row batches, of 1400", total)
	}
}

// TestParquetjsAtDefaults: files written by @dsnp/parquetjs (an offset
// index whose first rows are all 0, V2 headers counting values as rows, a
// bare repeated column) open at defaults and deliver every row once with
// arrow-go's values. Before, Next failed with CorruptPageError ("page
// does not match the offset index").
func TestParquetjsAtDefaults(t *testing.T) {
	files := copyTo(t, "../index/testdata/parquetjs_v1.parquet", "../index/testdata/parquetjs_v2.parquet")
	for _, cols := range [][]string{{"tags"}, {"id", "name", "tags"}} {
		want := wholeFileRows(t, files, cols...)
		for _, sh := range allShuffles {
			got, names := loadRows(t, Config{Paths: files, Columns: cols, Shuffle: sh})
			if d := firstDiff(got, want); d != "" || !slices.Equal(names, cols) {
				t.Fatalf("%v, %s: columns %v: %s", cols, sh, names, d)
			}
		}
	}
}
