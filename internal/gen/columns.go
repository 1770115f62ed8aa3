package gen

import (
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// columnWriter writes row groups column by column with arrow-go's file
// writer, cutting the id and text columns' pages at about scalarPage
// bytes (their column writers flush a page whenever that many bytes of
// values went in) while input_ids pages follow the file's page size.
type columnWriter struct {
	w          *file.Writer
	scalarPage int64
}

// pageFlusher is the part of arrow-go's column writers that ends a page.
type pageFlusher interface{ FlushCurrentPage() error }

func newColumnWriter(sink io.Writer, props *parquet.WriterProperties, scalarPage int64) (*columnWriter, error) {
	sc, err := pqarrow.ToParquet(Schema, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, err
	}
	w, err := file.NewParquetWriterWithError(sink, sc.Root(), file.WithWriterProps(props))
	if err != nil {
		return nil, err
	}
	return &columnWriter{w: w, scalarPage: scalarPage}, nil
}

// writeRowGroup writes rec (id, input_ids, text) as one row group.
func (cw *columnWriter) writeRowGroup(rec arrow.RecordBatch) error {
	ctx := pqarrow.NewArrowWriteContext(context.Background(), nil)
	rgw, err := cw.w.AppendRowGroupChecked()
	if err != nil {
		return err
	}
	n := int(rec.NumRows())
	// id: required int64, no levels.
	ids := rec.Column(0)
	c, err := rgw.NextColumn()
	if err != nil {
		return err
	}
	step := max(1, int(cw.scalarPage/8))
	for lo := 0; lo < n; lo += step {
		s := array.NewSlice(ids, int64(lo), int64(min(lo+step, n)))
		err = pqarrow.WriteArrowToColumn(ctx, c, s, nil, nil, false)
		s.Release()
		if err == nil {
			err = c.(pageFlusher).FlushCurrentPage()
		}
		if err != nil {
			return err
		}
	}
	if err := c.Close(); err != nil {
		return err
	}
	// input_ids: required list of optional int32 (no empty lists, no
	// null elements): definition level 2, repetition 0 at a row's start.
	lists := rec.Column(1).(*array.List)
	vals := lists.ListValues()
	defs := make([]int16, vals.Len())
	reps := make([]int16, vals.Len())
	for r := 0; r < n; r++ {
		lo, hi := lists.ValueOffsets(r)
		if hi == lo {
			return fmt.Errorf("gen: empty document")
		}
		for j := lo; j < hi; j++ {
			defs[j], reps[j] = 2, 1
		}
		reps[lo] = 0
	}
	if c, err = rgw.NextColumn(); err != nil {
		return err
	}
	lo, _ := lists.ValueOffsets(0)
	_, hi := lists.ValueOffsets(n - 1)
	v := array.NewSlice(vals, lo, hi)
	err = pqarrow.WriteArrowToColumn(ctx, c, v, defs[lo:hi], reps[lo:hi], true)
	v.Release()
	if err != nil {
		return err
	}
	if err := c.Close(); err != nil {
		return err
	}
	// text: optional string, definition level 1 where present; a page
	// ends once about scalarPage bytes of strings went in.
	texts := rec.Column(2).(*array.String)
	tdefs := make([]int16, n)
	if c, err = rgw.NextColumn(); err != nil {
		return err
	}
	start, bytes := 0, int64(0)
	for r := 0; r < n; r++ {
		if texts.IsValid(r) {
			tdefs[r] = 1
			bytes += int64(texts.ValueLen(r)) + 4
		}
		if bytes < cw.scalarPage && r+1 < n {
			continue
		}
		s := array.NewSlice(texts, int64(start), int64(r+1))
		err = pqarrow.WriteArrowToColumn(ctx, c, s, tdefs[start:r+1], nil, true)
		s.Release()
		if err == nil {
			err = c.(pageFlusher).FlushCurrentPage()
		}
		if err != nil {
			return err
		}
		start, bytes = r+1, 0
	}
	if err := c.Close(); err != nil {
		return err
	}
	return rgw.Close()
}

func (cw *columnWriter) close() error { return cw.w.Close() }
