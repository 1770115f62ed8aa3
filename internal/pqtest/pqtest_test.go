package pqtest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ints(t *testing.T, name string, vs ...int64) arrow.RecordBatch {
	t.Helper()
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(vs, nil)
	a := b.NewArray()
	defer a.Release()
	sc := arrow.NewSchema([]arrow.Field{{Name: name, Type: arrow.PrimitiveTypes.Int64}}, nil)
	return array.NewRecordBatch(sc, []arrow.Array{a}, int64(a.Len()))
}

// TestWriteRecords: every record lands in the file, in order, one row
// group each under props, and Bytes makes the same file in memory.
func TestWriteRecords(t *testing.T) {
	r1, r2 := ints(t, "id", 1, 2, 3), ints(t, "id", 4, 5)
	defer r1.Release()
	defer r2.Release()
	props := parquet.NewWriterProperties(parquet.WithDictionaryDefault(false))
	path := filepath.Join(t.TempDir(), "a.parquet")
	WriteRecords(t, path, props, r1, r2)
	onDisk, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onDisk, Bytes(t, props, r1, r2)) {
		t.Errorf("WriteRecords and Bytes wrote different files")
	}
	rdr, err := file.NewParquetReader(bytes.NewReader(onDisk))
	if err != nil {
		t.Fatal(err)
	}
	if rdr.NumRows() != 5 || rdr.NumRowGroups() != 2 || rdr.MetaData().Schema.Column(0).Name() != "id" {
		t.Fatalf("%d rows in %d row groups, column %q; want 5 in 2, id", rdr.NumRows(), rdr.NumRowGroups(), rdr.MetaData().Schema.Column(0).Name())
	}
	var got []int64
	for g := 0; g < rdr.NumRowGroups(); g++ {
		cr, err := rdr.RowGroup(g).Column(0)
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]int64, 8)
		_, n, err := cr.(*file.Int64ColumnChunkReader).ReadBatch(8, vals, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, vals[:n]...)
	}
	if want := []int64{1, 2, 3, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("values %v, want %v", got, want)
	}
}

// fatalTB records the first Fatalf and stops the helper as t.Fatalf does.
type fatalTB struct {
	testing.TB
	msg string
}

type stopped struct{}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(stopped{})
}

func failure(t *testing.T, fn func(tb testing.TB)) string {
	t.Helper()
	tb := &fatalTB{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(stopped); !ok {
					panic(r)
				}
			}
		}()
		fn(tb)
	}()
	if tb.msg == "" {
		t.Fatalf("no failure")
	}
	return tb.msg
}

// TestFailuresNameTheFile: records whose schemas differ, no records, and
// an uncreatable path fail the test with the path in the message.
func TestFailuresNameTheFile(t *testing.T) {
	a, b := ints(t, "a", 1), ints(t, "b", 2)
	defer a.Release()
	defer b.Release()
	dir := t.TempDir()
	for _, tc := range []struct {
		name, path string
		recs       []arrow.RecordBatch
		want       string
	}{
		{"schemas differ", filepath.Join(dir, "mixed.parquet"), []arrow.RecordBatch{a, b}, "schema does not match"},
		{"no records", filepath.Join(dir, "empty.parquet"), nil, "no records"},
		{"no directory", filepath.Join(dir, "missing", "x.parquet"), []arrow.RecordBatch{a}, "no such file"},
	} {
		msg := failure(t, func(tb testing.TB) { WriteRecords(tb, tc.path, nil, tc.recs...) })
		if !strings.Contains(msg, tc.path) || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %q, want the path and %q", tc.name, msg, tc.want)
		}
	}
	if msg := failure(t, func(tb testing.TB) { Bytes(tb, nil, a, b) }); !strings.Contains(msg, "schema does not match") {
		t.Errorf("Bytes: %q", msg)
	}
}
