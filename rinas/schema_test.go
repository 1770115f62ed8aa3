package rinas

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/pqtest"
)

// mixedFile is how one file of a mixed dataset declares and writes its
// columns.
type mixedFile struct {
	name     string
	optional bool // id and the list elements OPTIONAL (with some nulls)
	dict     bool
	v2       bool
	lead     bool // a string column before the others (other leaf numbers)
}

const mixedRows = 1200

// writeMixed writes f with arrow-go's pqarrow writer. Its ids are mostly
// 0 and small numbers, so that decoding with another file's levels shows.
func writeMixed(t *testing.T, dir string, seed int, f mixedFile) string {
	t.Helper()
	mem := memory.NewGoAllocator()
	var fields []arrow.Field
	if f.lead {
		fields = append(fields, arrow.Field{Name: "name", Type: arrow.BinaryTypes.String})
	}
	fields = append(fields,
		arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: f.optional},
		arrow.Field{Name: "toks", Type: arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.PrimitiveTypes.Int32, Nullable: f.optional}), Nullable: f.optional})
	sc := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	col := 0
	if f.lead {
		nb := b.Field(0).(*array.StringBuilder)
		for r := 0; r < mixedRows; r++ {
			nb.Append(fmt.Sprintf("row-%d-%d", seed, r))
		}
		col = 1
	}
	ib := b.Field(col).(*array.Int64Builder)
	lb := b.Field(col + 1).(*array.ListBuilder)
	vb := lb.ValueBuilder().(*array.Int32Builder)
	for r := 0; r < mixedRows; r++ {
		switch {
		case f.optional && r%7 == 3:
			ib.AppendNull()
		case r%3 == 0:
			ib.Append(0)
		default:
			ib.Append(int64(seed*100000 + r%50))
		}
		if f.optional && r%11 == 5 {
			lb.AppendNull()
			continue
		}
		lb.Append(true)
		for i := 0; i < (r+seed)%6; i++ {
			if f.optional && i == 2 && r%5 == 0 {
				vb.AppendNull()
			} else {
				vb.Append(int32(r%4 + i))
			}
		}
	}
	rec := b.NewRecord()
	defer rec.Release()
	version := parquet.DataPageV1
	if f.v2 {
		version = parquet.DataPageV2
	}
	props := parquet.NewWriterProperties(
		parquet.WithDictionaryDefault(f.dict),
		parquet.WithDataPageVersion(version),
		parquet.WithDataPageSize(512),
		parquet.WithMaxRowGroupLength(500),
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithPageIndexEnabled(true),
	)
	path := filepath.Join(dir, f.name+".parquet")
	pqtest.WriteRecords(t, path, props, rec)
	return path
}

// wholeFileValues reads column col of path with arrow-go's own whole-file
// reader, as one string per row.
func wholeFileValues(t *testing.T, path, col string) []string {
	t.Helper()
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{}, memory.NewGoAllocator())
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	idx := tbl.Schema().FieldIndices(col)
	if len(idx) != 1 {
		t.Fatalf("%s: no column %s", path, col)
	}
	var out []string
	for _, a := range tbl.Column(idx[0]).Data().Chunks() {
		out = appendValues(out, a)
	}
	return out
}

func appendValues(out []string, a arrow.Array) []string {
	for i := 0; i < a.Len(); i++ {
		out = append(out, valueStr(a, i))
	}
	return out
}

// valueStr formats row i of a, nulls in lists included (a list's ValueStr
// shows whatever its null elements' slots hold).
func valueStr(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "null"
	}
	l, ok := a.(*array.List)
	if !ok {
		return a.ValueStr(i)
	}
	lo, hi := l.ValueOffsets(i)
	var sb strings.Builder
	sb.WriteByte('[')
	for j := lo; j < hi; j++ {
		if j > lo {
			sb.WriteByte(',')
		}
		sb.WriteString(valueStr(l.ListValues(), int(j)))
	}
	sb.WriteByte(']')
	return sb.String()
}

// loadValues runs one epoch of cfg and returns every delivered row.
func loadValues(t *testing.T, cfg Config) []string {
	t.Helper()
	l := openT(t, cfg)
	var out []string
	eachBatch(t, l, func(b *Batch) {
		for _, a := range b.Arrays {
			out = appendValues(out, a)
		}
		b.Release()
	})
	return out
}

// TestMixedSchemasDecodeWithTheirOwnDescriptors: files that declare the
// same columns differently (REQUIRED or OPTIONAL, dictionary or plain, V1
// or V2 pages, another leaf order) load, in every file order, to exactly
// the values arrow-go reads from each file.
func TestMixedSchemasDecodeWithTheirOwnDescriptors(t *testing.T) {
	dir := t.TempDir()
	specs := []mixedFile{
		{name: "a", optional: false, dict: true, v2: false},
		{name: "b", optional: true, dict: false, v2: true},
		{name: "c", optional: true, dict: true, v2: false, lead: true},
		{name: "d", optional: false, dict: false, v2: true},
	}
	paths := make([]string, len(specs))
	want := map[string]map[string][]string{}
	for i, s := range specs {
		paths[i] = writeMixed(t, dir, i+1, s)
		want[paths[i]] = map[string][]string{}
		for _, col := range []string{"id", "toks"} {
			want[paths[i]][col] = wholeFileValues(t, paths[i], col)
		}
	}
	ix, err := index.Build(context.Background(), paths, index.Options{Columns: []string{"id"}, NoSidecar: true, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	if n := ix.Stats().Schemas; n != 3 {
		t.Errorf("%d distinct declarations of id, want 3", n)
	}

	// every order of the files, in file order
	var orders [][]int
	var permute func(p []int, k int)
	permute = func(p []int, k int) {
		if k == len(p) {
			orders = append(orders, slices.Clone(p))
			return
		}
		for i := k; i < len(p); i++ {
			p[k], p[i] = p[i], p[k]
			permute(p, k+1)
			p[k], p[i] = p[i], p[k]
		}
	}
	permute([]int{0, 1, 2, 3}, 0)
	for _, col := range []string{"id", "toks"} {
		for _, o := range orders {
			var ps, exp []string
			for _, i := range o {
				ps = append(ps, paths[i])
				exp = append(exp, want[paths[i]][col]...)
			}
			cfg := baseConfig(dataset{paths: ps}, col)
			cfg.Shuffle, cfg.Fetch = ShuffleNone, Ordered
			got := loadValues(t, cfg)
			if d := firstDiff(got, exp); d != "" {
				t.Fatalf("%s, files %v: %s", col, o, d)
			}
		}
	}

	// shuffled modes, including row mode's synchronous reads: the same
	// rows in another order
	for _, col := range []string{"id", "toks"} {
		var exp []string
		for _, p := range paths {
			exp = append(exp, want[p][col]...)
		}
		slices.Sort(exp)
		for _, sh := range []Shuffle{ShufflePage, ShuffleRow, ShuffleRowGroup} {
			cfg := baseConfig(dataset{paths: paths}, col)
			cfg.Shuffle, cfg.BatchRows = sh, 100
			got := loadValues(t, cfg)
			slices.Sort(got)
			if d := firstDiff(got, exp); d != "" {
				t.Fatalf("%s, %s: %s", col, sh, d)
			}
		}
	}
}

func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("row %d is %s, the file holds %s", i, got[i], want[i])
		}
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d rows, want %d", len(got), len(want))
	}
	return ""
}

// TestMixedSchemasThatCannotBeDeliveredTogether: a column of another
// physical type, or a list where another file has a scalar, fails at Open
// with an error naming both files and the difference.
func TestMixedSchemasThatCannotBeDeliveredTogether(t *testing.T) {
	dir := t.TempDir()
	base := writeMixed(t, dir, 1, mixedFile{name: "base"})
	write := func(name string, sc *arrow.Schema, fill func(b *array.RecordBuilder)) string {
		b := array.NewRecordBuilder(memory.NewGoAllocator(), sc)
		defer b.Release()
		fill(b)
		rec := b.NewRecord()
		defer rec.Release()
		path := filepath.Join(dir, name+".parquet")
		pqtest.WriteRecords(t, path, parquet.NewWriterProperties(), rec)
		return path
	}
	int32ID := write("int32id", arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}}, nil), func(b *array.RecordBuilder) {
		b.Field(0).(*array.Int32Builder).AppendValues([]int32{1, 2, 3}, nil)
	})
	scalarToks := write("scalartoks", arrow.NewSchema([]arrow.Field{{Name: "toks", Type: arrow.PrimitiveTypes.Int32}}, nil), func(b *array.RecordBuilder) {
		b.Field(0).(*array.Int32Builder).AppendValues([]int32{1, 2, 3}, nil)
	})
	nested := write("nestedtoks", arrow.NewSchema([]arrow.Field{{Name: "toks", Type: arrow.ListOf(arrow.ListOf(arrow.PrimitiveTypes.Int32))}}, nil), func(b *array.RecordBuilder) {
		lb := b.Field(0).(*array.ListBuilder)
		ib := lb.ValueBuilder().(*array.ListBuilder)
		lb.Append(true)
		ib.Append(true)
		ib.ValueBuilder().(*array.Int32Builder).Append(1)
	})
	for _, tc := range []struct {
		col   string
		other string
		diff  string
	}{
		{"id", int32ID, "physical type"},
		{"toks", scalarToks, "toks"},
		{"toks", nested, ""},
	} {
		for _, ps := range [][]string{{base, tc.other}, {tc.other, base}} {
			cfg := baseConfig(dataset{paths: ps}, tc.col)
			l, err := Open(context.Background(), cfg)
			if err == nil {
				l.Close()
				t.Fatalf("%s: %v opened", tc.col, ps)
			}
			msg := err.Error()
			if !strings.Contains(msg, ps[0]) || !strings.Contains(msg, ps[1]) || !strings.Contains(msg, tc.diff) {
				t.Errorf("%s: error %q does not name both files and %q", tc.col, msg, tc.diff)
			}
		}
	}
}
