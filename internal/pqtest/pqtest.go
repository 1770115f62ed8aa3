// Package pqtest writes Parquet files for tests with arrow-go's pqarrow
// writer: the set-up that tests across the tree share (make a writer, write
// the records, close), with every error failing the test and naming the file.
// It is for tests only; it never decides what a test writes: the writer
// properties and records are the caller's, so each test's file is exactly
// what it built.
package pqtest

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// WriteRecords creates (or truncates) the file at path and writes recs to
// it as one Parquet file: the schema is the first record's, each record is
// written with pqarrow.FileWriter.Write in order (a record longer than the
// properties' MaxRowGroupLength is split into row groups by the writer),
// under props (nil means parquet.NewWriterProperties()) and
// pqarrow.DefaultWriterProps(). The file is closed when WriteRecords
// returns, on failure too. Any error fails t with t.Fatalf naming path.
// recs must hold at least one record; the caller keeps ownership of them.
func WriteRecords(t testing.TB, path string, props *parquet.WriterProperties, recs ...arrow.RecordBatch) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("pqtest: %v", err)
	}
	// The Parquet writer closes f on its Close; this one covers the
	// failures before it and is a no-op error otherwise.
	defer f.Close()
	if err := write(f, props, recs); err != nil {
		t.Fatalf("pqtest: writing %s: %v", path, err)
	}
}

// Bytes is WriteRecords into memory: it returns the Parquet file that recs
// make under props, and fails t on any error.
func Bytes(t testing.TB, props *parquet.WriterProperties, recs ...arrow.RecordBatch) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := write(&buf, props, recs); err != nil {
		t.Fatalf("pqtest: writing a file in memory: %v", err)
	}
	return buf.Bytes()
}

// write writes recs to w as one Parquet file and closes the writer (which
// closes w when w is an io.Closer).
func write(w io.Writer, props *parquet.WriterProperties, recs []arrow.RecordBatch) error {
	if len(recs) == 0 {
		return errors.New("no records (the schema is the first record's)")
	}
	if props == nil {
		props = parquet.NewWriterProperties()
	}
	fw, err := pqarrow.NewFileWriter(recs[0].Schema(), w, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return err
	}
	for _, rec := range recs {
		if err := fw.Write(rec); err != nil {
			fw.Close()
			return err
		}
	}
	return fw.Close()
}
