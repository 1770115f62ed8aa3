package codec

// Helpers of the in-package tests. They cannot use codectest, which
// imports codec (an in-package test importing it is a cycle), so the chunk
// splitting and the span check for generated files are kept here.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/file"
)

const testingData = "../../shared/parquet-testing/data"

func testingDir(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(testingData); err != nil {
		t.Skipf("parquet-testing data not present: %v", err)
	}
	return testingData
}

// chunkPages is one column chunk split into pages.
type chunkPages struct {
	chunk *Chunk
	dict  []byte
	dOff  int64
	pages [][]byte
	offs  []int64
	rows  int64
}

func readChunkPages(t testing.TB, path string, rdr *file.Reader, rg, col int) (*chunkPages, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return chunkPagesFrom(t, f, path, rdr, rg, col)
}

func chunkPagesFrom(t testing.TB, f io.ReaderAt, path string, rdr *file.Reader, rg, col int) (*chunkPages, error) {
	t.Helper()
	md := rdr.MetaData()
	c, err := NewChunk(md, path, rg, col)
	if err != nil {
		return nil, err
	}
	cc, err := md.RowGroup(rg).ColumnChunk(col)
	if err != nil {
		return nil, err
	}
	off, n := ChunkRange(cc)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, off); err != nil {
		return nil, fmt.Errorf("read chunk: %w", err)
	}
	refs, err := SplitChunk(buf)
	if err != nil {
		return nil, err
	}
	cp := &chunkPages{chunk: c, rows: md.RowGroup(rg).NumRows()}
	for _, r := range refs {
		b := buf[r.Off : r.Off+int64(r.Len)]
		if r.Header.Type == DictionaryPage {
			cp.dict, cp.dOff = b, off+r.Off
			continue
		}
		cp.pages = append(cp.pages, b)
		cp.offs = append(cp.offs, off+r.Off)
	}
	return cp, nil
}

// checkChunk decodes every page of a chunk on its own (with its
// continuation pages) and compares the rows with ref. It returns "" when all
// match, or the reason.
func checkChunk(t testing.TB, d *Decoder, cp *chunkPages, ref arrow.Array) error {
	t.Helper()
	var dict *Dictionary
	if cp.dict != nil {
		var err error
		dict, err = d.Dictionary(cp.chunk, cp.dict, cp.dOff)
		if err != nil {
			return err
		}
	}
	row := 0
	for i := range cp.pages {
		pg, err := d.DecodeSpan(cp.chunk, dict, cp.pages[i:], cp.offs[i:])
		if err != nil {
			return err
		}
		if pg.LastRowMayContinue() && i+1 < len(cp.pages) {
			pg.Release()
			return fmt.Errorf("page %d: last row still open with %d pages after it", i, len(cp.pages)-i-1)
		}
		if err := array.ValidateFull(pg.Array()); err != nil {
			pg.Release()
			return fmt.Errorf("page %d: invalid array: %v", i, err)
		}
		for r := 0; r < pg.Rows(); r++ {
			if js := AppendJSON(nil, pg.Array(), r); !json.Valid(js) {
				pg.Release()
				return fmt.Errorf("page %d row %d: invalid JSON %s", i, r, js)
			}
		}
		n := pg.Rows()
		if row+n > ref.Len() {
			pg.Release()
			return fmt.Errorf("page %d: %d rows past the %d of the column", i, row+n-ref.Len(), ref.Len())
		}
		want, err := ProjectLike(array.NewSlice(ref, int64(row), int64(row+n)), pg.Array().DataType())
		if err != nil {
			pg.Release()
			return err
		}
		if !Equal(pg.Array(), want) {
			msg := firstDiff(pg.Array(), want)
			pg.Release()
			want.Release()
			return fmt.Errorf("MISMATCH page %d (rows %d..%d): %s", i, row, row+n, msg)
		}
		want.Release()
		// Decoding the page alone gives the same rows, except a last row
		// that may continue.
		alone, err := d.DecodePage(cp.chunk, dict, cp.pages[i], cp.offs[i])
		if err != nil {
			pg.Release()
			return fmt.Errorf("page %d alone: %w", i, err)
		}
		m := alone.Rows()
		if alone.LastRowMayContinue() && pg.Continued() > 0 {
			m--
		}
		if m < 0 || m > n || !Equal(array.NewSlice(alone.Array(), 0, int64(m)), array.NewSlice(pg.Array(), 0, int64(m))) {
			alone.Release()
			pg.Release()
			return fmt.Errorf("MISMATCH page %d alone differs from its span", i)
		}
		alone.Release()
		pg.Release()
		row += n
	}
	if row != ref.Len() {
		return fmt.Errorf("MISMATCH pages hold %d rows, column %d", row, ref.Len())
	}
	return nil
}

func firstDiff(a, b arrow.Array) string {
	if !arrow.TypeEqual(a.DataType(), b.DataType()) {
		return fmt.Sprintf("type %s, want %s", a.DataType(), b.DataType())
	}
	if a.Len() != b.Len() {
		return fmt.Sprintf("%d rows, want %d", a.Len(), b.Len())
	}
	for i := 0; i < a.Len(); i++ {
		x, y := array.NewSlice(a, int64(i), int64(i+1)), array.NewSlice(b, int64(i), int64(i+1))
		if !Equal(x, y) {
			return fmt.Sprintf("row %d: got %v want %v", i, x, y)
		}
	}
	return "arrays differ"
}

// openParquet opens a file with arrow-go, turning its panics on odd
// schemas into errors.
func openParquet(path string) (rdr *file.Reader, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("arrow-go panicked: %v", r)
		}
	}()
	return file.OpenParquetFile(path, false)
}
