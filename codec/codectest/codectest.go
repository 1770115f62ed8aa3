// Package codectest is the conformance checker of package codec, shared by
// codec's conformance test and `pagefeed verify`.
//
// It reads a column chunk, decodes every data page on its own as the
// loader does (in any order, each with the pages after it for a row that
// continues), and compares the rows with arrow-go's pqarrow reading the
// whole column. arrow-go panics on some files; Open and Reference turn
// those panics into errors, so a checker survives any input.
package codectest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/pagefeed/pagefeed/codec"
)

// ErrFooterUnsupported marks a footer arrow-go's metadata layer panics on:
// a schema it cannot represent (a logical type newer than it knows), which
// is a limit of the reader, not a corrupt file.
var ErrFooterUnsupported = errors.New("codectest: arrow-go cannot represent its footer")

// Open opens a Parquet file with arrow-go. A panic in arrow-go's footer
// parsing returns an error wrapping ErrFooterUnsupported.
func Open(path string) (rdr *file.Reader, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrFooterUnsupported, r)
		}
	}()
	return file.OpenParquetFile(path, false)
}

// Reference is codec.ReferenceColumn with pqarrow's panics returned as
// errors. Release the result.
func Reference(fr *pqarrow.FileReader, rg, col int) (arr arrow.Array, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("pqarrow panicked: %v", r)
		}
	}()
	return codec.ReferenceColumn(fr, rg, col)
}

// Chunk is one column chunk split into its pages. Pages and Offs alias
// one buffer read from the file.
type Chunk struct {
	Chunk   *codec.Chunk
	Dict    []byte   // the dictionary page, or nil
	DictOff int64    // file offset of Dict
	Pages   [][]byte // data pages in file order, headers included
	Offs    []int64  // file offset of each page
	Rows    int64    // rows of the row group, from the footer
}

// ReadChunk reads column col of row group rg of the file md describes
// from r (path is for errors) and splits it into pages.
func ReadChunk(r io.ReaderAt, path string, md *metadata.FileMetaData, rg, col int) (*Chunk, error) {
	c, err := codec.NewChunk(md, path, rg, col)
	if err != nil {
		return nil, err
	}
	cc, err := md.RowGroup(rg).ColumnChunk(col)
	if err != nil {
		return nil, err
	}
	off, n := codec.ChunkRange(cc)
	buf := make([]byte, n)
	if _, err := r.ReadAt(buf, off); err != nil {
		return nil, fmt.Errorf("%s: read column chunk %s at %d: %w", path, c.Column, off, err)
	}
	refs, err := codec.SplitChunk(buf)
	if err != nil {
		return nil, err
	}
	cp := &Chunk{Chunk: c, Rows: md.RowGroup(rg).NumRows()}
	for _, pr := range refs {
		b := buf[pr.Off : pr.Off+int64(pr.Len)]
		if pr.Header.Type == codec.DictionaryPage {
			cp.Dict, cp.DictOff = b, off+pr.Off
			continue
		}
		cp.Pages = append(cp.Pages, b)
		cp.Offs = append(cp.Offs, off+pr.Off)
	}
	return cp, nil
}

// Mismatch is a check that found rows other than the reference's, or
// pages that disagree with each other.
type Mismatch struct {
	Page int   // data page index in file order
	Row  int64 // first differing row, counted from the chunk's first row
	Msg  string
}

func (m *Mismatch) Error() string {
	return fmt.Sprintf("MISMATCH page %d row %d: %s", m.Page, m.Row, m.Msg)
}

// Check decodes every data page of c on its own (Decoder.DecodeSpan with
// the pages after it), in the given order of page indexes (nil: file
// order), and checks that each page's array is valid, renders every row
// as valid JSON, leaves a row open only at the chunk's end, and agrees
// with the page decoded alone (DecodePage) except for a last row that may
// continue. Then, in file order, the pages' rows must equal ref (after
// codec.ProjectLike to the decoded type) and number c.Rows. A nil ref
// checks everything but the values.
//
// It returns the rows decoded. An error of the codec is returned as is
// (errors.Is(err, codec.ErrUnsupported) for what it refuses); a difference
// is a *Mismatch.
func Check(d *codec.Decoder, c *Chunk, ref arrow.Array, order []int) (rows int64, err error) {
	var dict *codec.Dictionary
	if c.Dict != nil {
		if dict, err = d.Dictionary(c.Chunk, c.Dict, c.DictOff); err != nil {
			return 0, err
		}
	}
	if order == nil {
		order = make([]int, len(c.Pages))
		for i := range order {
			order[i] = i
		}
	}
	decoded := make([]arrow.Array, len(c.Pages))
	defer func() {
		for _, a := range decoded {
			if a != nil {
				a.Release()
			}
		}
	}()
	for _, i := range order {
		a, err := checkPage(d, c, dict, i)
		if err != nil {
			return 0, err
		}
		decoded[i] = a
	}
	var at int64
	for i, a := range decoded {
		if a == nil {
			return at, &Mismatch{Page: i, Row: at, Msg: "page not in the order given"}
		}
		n := int64(a.Len())
		if ref != nil {
			if at+n > int64(ref.Len()) {
				return at + n, &Mismatch{Page: i, Row: min(at, int64(ref.Len())),
					Msg: fmt.Sprintf("%d rows past the %d of the column", at+n-int64(ref.Len()), ref.Len())}
			}
			want, err := codec.ProjectLike(array.NewSlice(ref, at, at+n), a.DataType())
			if err != nil {
				return at + n, &Mismatch{Page: i, Row: at, Msg: "reference: " + err.Error()}
			}
			row, msg := firstDiff(a, want)
			want.Release()
			if row >= 0 {
				return at + n, &Mismatch{Page: i, Row: at + int64(row), Msg: msg}
			}
		}
		at += n
	}
	if at != c.Rows {
		return at, &Mismatch{Page: len(decoded), Row: at, Msg: fmt.Sprintf("pages hold %d rows, row group %d", at, c.Rows)}
	}
	if ref != nil && at != int64(ref.Len()) {
		return at, &Mismatch{Page: len(decoded), Row: at, Msg: fmt.Sprintf("pages hold %d rows, column %d", at, ref.Len())}
	}
	return at, nil
}

// checkPage decodes page i of c with its continuation pages and checks it
// on its own; it returns its array, retained.
func checkPage(d *codec.Decoder, c *Chunk, dict *codec.Dictionary, i int) (arrow.Array, error) {
	pg, err := d.DecodeSpan(c.Chunk, dict, c.Pages[i:], c.Offs[i:])
	if err != nil {
		return nil, err
	}
	defer pg.Release()
	bad := func(format string, args ...any) error {
		return &Mismatch{Page: i, Row: -1, Msg: fmt.Sprintf(format, args...)}
	}
	if pg.LastRowMayContinue() && i+1 < len(c.Pages) {
		return nil, bad("last row still open with %d pages after it", len(c.Pages)-i-1)
	}
	if err := array.ValidateFull(pg.Array()); err != nil {
		return nil, bad("invalid array: %v", err)
	}
	var js []byte
	for r := 0; r < pg.Rows(); r++ {
		if js = codec.AppendJSON(js[:0], pg.Array(), r); !json.Valid(js) {
			return nil, bad("row %d: invalid JSON %s", r, js)
		}
	}
	// The page decoded alone gives the same rows, except a last row that
	// may continue.
	alone, err := d.DecodePage(c.Chunk, dict, c.Pages[i], c.Offs[i])
	if err != nil {
		return nil, fmt.Errorf("page %d alone: %w", i, err)
	}
	defer alone.Release()
	m := alone.Rows()
	if alone.LastRowMayContinue() && pg.Continued() > 0 {
		m--
	}
	if m < 0 || m > pg.Rows() {
		return nil, bad("alone holds %d rows, its span %d", m, pg.Rows())
	}
	x := array.NewSlice(alone.Array(), 0, int64(m))
	y := array.NewSlice(pg.Array(), 0, int64(m))
	eq := codec.Equal(x, y)
	x.Release()
	y.Release()
	if !eq {
		return nil, bad("decoded alone it differs from its span")
	}
	a := pg.Array()
	a.Retain()
	return a, nil
}

// firstDiff returns the first row where a and b differ, with what differs,
// or -1 when they are equal.
func firstDiff(a, b arrow.Array) (int, string) {
	if codec.Equal(a, b) {
		return -1, ""
	}
	if !arrow.TypeEqual(a.DataType(), b.DataType()) {
		return 0, fmt.Sprintf("type %s, want %s", a.DataType(), b.DataType())
	}
	for i := 0; i < min(a.Len(), b.Len()); i++ {
		x, y := array.NewSlice(a, int64(i), int64(i+1)), array.NewSlice(b, int64(i), int64(i+1))
		eq := codec.Equal(x, y)
		msg := fmt.Sprintf("got %v want %v", x, y)
		x.Release()
		y.Release()
		if !eq {
			return i, msg
		}
	}
	return min(a.Len(), b.Len()), fmt.Sprintf("%d rows, want %d", a.Len(), b.Len())
}
