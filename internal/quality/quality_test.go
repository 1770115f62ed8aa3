package quality

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

func tinyData(t *testing.T, seed uint64) DataConfig {
	t.Helper()
	return DataConfig{Dir: t.TempDir(), Topics: 4, Rows: 258, ValRows: 64, Vocab: 64, DocLen: 8, RowGroupRows: 64, PageBytes: 128, Seed: seed}
}

// TestWrite reads the file back with arrow-go and checks it holds the
// rows Write returned, sorted by topic, in small pages with a page index.
func TestWrite(t *testing.T) {
	ds, err := Write(tinyData(t, 7))
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Docs) != 258 || len(ds.ValDocs) != 64 || !slices.IsSorted(ds.Labels) {
		t.Fatalf("%d rows, %d validation rows, sorted %v", len(ds.Docs), len(ds.ValDocs), slices.IsSorted(ds.Labels))
	}
	if ds.Labels[0] != 0 || ds.Labels[257] != 3 {
		t.Fatalf("labels run %d..%d", ds.Labels[0], ds.Labels[257])
	}
	r, err := file.OpenParquetFile(ds.Path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n := r.NumRowGroups(); n != 5 {
		t.Errorf("%d row groups, want 5", n)
	}
	pages := 0
	for g := 0; g < r.NumRowGroups(); g++ {
		oi, err := r.GetPageIndexReader().RowGroup(g)
		if err != nil || oi == nil {
			t.Fatalf("row group %d: no page index: %v", g, err)
		}
		ox, err := oi.GetOffsetIndex(1)
		if err != nil || ox == nil {
			t.Fatalf("row group %d: no offset index for tokens: %v", g, err)
		}
		pages += len(ox.GetPageLocations())
	}
	if pages < 3*r.NumRowGroups() {
		t.Errorf("%d pages in %d row groups, want several per row group", pages, r.NumRowGroups())
	}
	fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	row := 0
	lc, tc := tbl.Column(0).Data().Chunks(), tbl.Column(1).Data().Chunks()
	for c := range lc {
		labels, lists := lc[c].(*array.Int32), tc[c].(*array.List)
		vals := lists.ListValues().(*array.Int32).Int32Values()
		for i := 0; i < labels.Len(); i++ {
			lo, hi := lists.ValueOffsets(i)
			if labels.Value(i) != ds.Labels[row] || !slices.Equal(vals[lo:hi], ds.Docs[row]) {
				t.Fatalf("row %d differs from what Write returned", row)
			}
			row++
		}
	}
	if row != len(ds.Docs) {
		t.Fatalf("read %d rows, want %d", row, len(ds.Docs))
	}
}

func TestWriteDeterministic(t *testing.T) {
	read := func(seed uint64) []byte {
		ds, err := Write(tinyData(t, seed))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(ds.Path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b, c := read(1), read(1), read(2)
	if !bytes.Equal(a, b) {
		t.Error("same seed, different files")
	}
	if bytes.Equal(a, c) {
		t.Error("different seeds, same file")
	}
}

func TestFillErrors(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*DataConfig)
	}{
		{"no dir", func(c *DataConfig) { c.Dir = "" }},
		{"one topic", func(c *DataConfig) { c.Topics = 1 }},
		{"rows below topics", func(c *DataConfig) { c.Rows = 3 }},
		{"small vocab", func(c *DataConfig) { c.Vocab = 7 }},
		{"short docs", func(c *DataConfig) { c.DocLen = 1 }},
		{"topical share", func(c *DataConfig) { c.Topical = 1.5 }},
		{"negative row groups", func(c *DataConfig) { c.RowGroupRows = -1 }},
		{"tiny pages", func(c *DataConfig) { c.PageBytes = 8 }},
		{"few val rows", func(c *DataConfig) { c.ValRows = 2 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tinyData(t, 1)
			tc.mod(&c)
			if _, err := Write(c); !errors.Is(err, ErrConfig) {
				t.Fatalf("err = %v, want ErrConfig", err)
			}
		})
	}
}

// TestModelLearns: shuffled SGD on the tiny dataset lowers the validation
// loss well below the untrained ln(topics).
func TestModelLearns(t *testing.T) {
	c := tinyData(t, 3)
	c.Rows, c.ValRows = 2000, 400
	ds, err := Write(c)
	if err != nil {
		t.Fatal(err)
	}
	m := NewModel(ds.Topics, ds.Vocab, 8)
	l0, _, err := m.Eval(ds.ValDocs, ds.ValLabels)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(l0-ds.UniformLoss()) > 1e-9 {
		t.Fatalf("untrained loss %v, want ln(%d)", l0, ds.Topics)
	}
	// A fixed interleaving: row i of each topic in turn.
	per := len(ds.Docs) / ds.Topics
	var docs [][]int32
	var labels []int32
	for i := 0; i < per; i++ {
		for k := 0; k < ds.Topics; k++ {
			docs = append(docs, ds.Docs[k*per+i])
			labels = append(labels, ds.Labels[k*per+i])
			if len(docs) == 16 {
				if _, err := m.Step(docs, labels); err != nil {
					t.Fatal(err)
				}
				docs, labels = docs[:0], labels[:0]
			}
		}
	}
	l1, acc, err := m.Eval(ds.ValDocs, ds.ValLabels)
	if err != nil {
		t.Fatal(err)
	}
	if l1 > 0.7*l0 || acc < 0.6 {
		t.Fatalf("after training: loss %.3f (untrained %.3f), accuracy %.3f", l1, l0, acc)
	}
}

func TestModelBadInput(t *testing.T) {
	m := NewModel(3, 10, 1)
	cases := []struct {
		name   string
		docs   [][]int32
		labels []int32
	}{
		{"label high", [][]int32{{1}}, []int32{3}},
		{"label negative", [][]int32{{1}}, []int32{-1}},
		{"token high", [][]int32{{10}}, []int32{0}},
		{"token negative", [][]int32{{-2}}, []int32{0}},
		{"mismatch", [][]int32{{1}}, nil},
		{"empty", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := m.Step(tc.docs, tc.labels); err == nil {
				t.Fatal("Step accepted bad input")
			}
			if _, _, err := m.Eval(tc.docs, tc.labels); err == nil {
				t.Fatal("Eval accepted bad input")
			}
			for _, w := range m.W {
				if w != 0 {
					t.Fatal("model changed by a rejected batch")
				}
			}
		})
	}
}

func TestSpearman(t *testing.T) {
	cases := []struct {
		name string
		xs   []int64
		want float64
	}{
		{"identity", []int64{0, 1, 2, 3, 4}, 1},
		{"reverse", []int64{4, 3, 2, 1, 0}, -1},
		{"monotone gaps", []int64{10, 20, 35, 90}, 1},
		{"swap", []int64{1, 0, 2}, 0.5},
		{"ties", []int64{0, 0, 1, 1}, 0.8944271909999159},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Spearman(tc.xs); math.Abs(got-tc.want) > 1e-12 {
				t.Fatalf("Spearman(%v) = %v, want %v", tc.xs, got, tc.want)
			}
		})
	}
	if !math.IsNaN(Spearman([]int64{1})) || !math.IsNaN(Spearman([]int64{2, 2})) {
		t.Fatal("want NaN for one row or all ties")
	}
}

func TestOrderStats(t *testing.T) {
	var s OrderStats
	s.AddBatch([]int64{3, 2}, []uint64{7, 7}, []int32{1, 1})
	s.AddBatch([]int64{1, 0}, []uint64{5, 6}, []int32{0, 2})
	if s.Rows() != 4 || s.Batches() != 2 {
		t.Fatalf("rows %d batches %d", s.Rows(), s.Batches())
	}
	if s.PagesPerBatch() != 1.5 || s.TopicsPerBatch() != 1.5 {
		t.Fatalf("pages/batch %v topics/batch %v", s.PagesPerBatch(), s.TopicsPerBatch())
	}
	if s.RankCorrelation() != -1 {
		t.Fatalf("rank correlation %v, want -1", s.RankCorrelation())
	}
}
