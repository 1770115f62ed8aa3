package rinas

import (
	"context"
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// readListLengths reads the input_ids column of one file with pqarrow.
func readListLengths(t *testing.T, path string) []int {
	t.Helper()
	var out []int
	withColumn(t, path, "input_ids", func(l *array.List) { out = appendLengths(out, l) })
	return out
}

// withColumn reads a list column of one file with pqarrow and calls fn on
// each chunk.
func withColumn(t *testing.T, path, col string, fn func(*array.List)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pr, err := file.NewParquetReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	idx := pr.MetaData().Schema.Root().FieldIndexByName(col)
	cr, err := fr.GetColumn(context.Background(), idx)
	if err != nil {
		t.Fatal(err)
	}
	rgs := make([]int, pr.NumRowGroups())
	for i := range rgs {
		rgs[i] = i
	}
	chunked, err := fr.ReadColumn(rgs, cr)
	if err != nil {
		t.Fatal(err)
	}
	defer chunked.Release()
	for _, c := range chunked.Chunks() {
		fn(c.(*array.List))
	}
}
