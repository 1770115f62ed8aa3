package codec_test

import (
	"bytes"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/pagefeed/pagefeed/codec"
)

// Decode the pages of a column chunk one by one, as a loader that fetched
// them in any order would, and print the rows of each.
func Example() {
	// A small file: one list<int32> column, zstd, tiny pages.
	b := array.NewListBuilder(memory.DefaultAllocator, arrow.PrimitiveTypes.Int32)
	for r := 0; r < 6; r++ {
		b.Append(true)
		for j := 0; j <= r; j++ {
			b.ValueBuilder().(*array.Int32Builder).Append(int32(10*r + j))
		}
	}
	arr := b.NewArray()
	sc := arrow.NewSchema([]arrow.Field{{Name: "tokens", Type: arr.DataType(), Nullable: true}}, nil)
	rec := array.NewRecordBatch(sc, []arrow.Array{arr}, int64(arr.Len()))
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithDictionaryDefault(false), parquet.WithDataPageSize(16), parquet.WithBatchSize(8))
	w, _ := pqarrow.NewFileWriter(sc, &buf, props, pqarrow.DefaultWriterProps())
	if err := w.Write(rec); err != nil {
		fmt.Println(err)
		return
	}
	w.Close()

	// The footer says where the chunk is; the bytes are split into pages.
	rdr, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		fmt.Println(err)
		return
	}
	chunk, _ := codec.NewChunk(rdr.MetaData(), "example.parquet", 0, 0)
	cc, _ := rdr.MetaData().RowGroup(0).ColumnChunk(0)
	off, n := codec.ChunkRange(cc)
	refs, err := codec.SplitChunk(buf.Bytes()[off : off+n])
	if err != nil {
		fmt.Println(err)
		return
	}

	var pages [][]byte
	var offs []int64
	for _, ref := range refs {
		pages = append(pages, buf.Bytes()[off+ref.Off:off+ref.Off+int64(ref.Len)])
		offs = append(offs, off+ref.Off)
	}

	// Pages cut rows (arrow-go writes V1 pages of 8 levels here). Each page
	// is decoded with the pages after it, so the rows that start in it
	// come out whole; its leading levels belong to the previous page's
	// last row and are not repeated.
	d := codec.NewDecoder(codec.Options{})
	defer d.Close()
	for i := range pages {
		pg, err := d.DecodeSpan(chunk, nil, pages[i:], offs[i:])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return
		}
		fmt.Printf("page %d: %d leading levels;", i, pg.LeadingLevels())
		for r := 0; r < pg.Rows(); r++ {
			fmt.Printf(" %s", codec.AppendJSON(nil, pg.Array(), r))
		}
		fmt.Println()
		pg.Release()
	}
	// Output:
	// page 0: 0 leading levels; [0] [10,11] [20,21,22] [30,31,32,33]
	// page 1: 2 leading levels; [40,41,42,43,44] [50,51,52,53,54,55]
	// page 2: 5 leading levels;
}
