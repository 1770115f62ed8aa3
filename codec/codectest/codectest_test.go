package codectest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/pagefeed/pagefeed/codec"
)

// tinyFile writes 100 int64 rows (value 10*i) in pages of about 20 rows.
func tinyFile(t *testing.T) (*bytes.Reader, *file.Reader) {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := 0; i < 100; i++ {
		b.Append(int64(10 * i))
	}
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecord(sc, []arrow.Array{col}, 100)
	defer rec.Release()
	tbl := array.NewTableFromRecords(sc, []arrow.Record{rec})
	defer tbl.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithDataPageSize(160), parquet.WithDictionaryDefault(false), parquet.WithBatchSize(20))
	if err := pqarrow.WriteTable(tbl, &buf, 100, props, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	r := bytes.NewReader(buf.Bytes())
	rdr, err := file.NewParquetReader(r)
	if err != nil {
		t.Fatal(err)
	}
	return r, rdr
}

// TestCheck: the rows as written pass in any order; a reference that
// differs at row 57 is a *Mismatch at row 57.
func TestCheck(t *testing.T) {
	r, rdr := tinyFile(t)
	defer rdr.Close()
	c, err := ReadChunk(r, "tiny.parquet", rdr.MetaData(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Pages) < 3 {
		t.Fatalf("%d pages: the test wants several", len(c.Pages))
	}
	d := codec.NewDecoder(codec.Options{})
	defer d.Close()
	ref := func(bad int) arrow.Array {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		for i := 0; i < 100; i++ {
			v := int64(10 * i)
			if i == bad {
				v = -1
			}
			b.Append(v)
		}
		return b.NewArray()
	}
	good := ref(-1)
	defer good.Release()
	order := make([]int, len(c.Pages))
	for i := range order {
		order[i] = len(order) - 1 - i
	}
	for _, o := range [][]int{nil, order} {
		if rows, err := Check(d, c, good, o); err != nil || rows != 100 {
			t.Fatalf("order %v: %d rows, %v", o, rows, err)
		}
	}
	if rows, err := Check(d, c, nil, nil); err != nil || rows != 100 {
		t.Fatalf("no reference: %d rows, %v", rows, err)
	}
	bad := ref(57)
	defer bad.Release()
	_, err = Check(d, c, bad, order)
	var m *Mismatch
	if !errors.As(err, &m) || m.Row != 57 {
		t.Fatalf("wrong reference: %v, want a mismatch at row 57", err)
	}
	short := array.NewSlice(good, 0, 90)
	defer short.Release()
	if _, err := Check(d, c, short, nil); !errors.As(err, &m) {
		t.Fatalf("short reference: %v, want a mismatch", err)
	}
}
