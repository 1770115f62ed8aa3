package codec

import (
	"context"
	"errors"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// PageRef locates one page inside a column chunk's bytes.
type PageRef struct {
	Off    int64 // offset of the page header from the start of the chunk bytes
	Len    int   // header and body length
	Header PageHeader
}

// ChunkRange returns the file offset and length of a column chunk's pages
// (dictionary page included) from its metadata. Writers disagree about
// dictionary_page_offset (some write 0 for "none"), so the dictionary offset
// is used only when it is a possible page offset (past the leading magic)
// and precedes the first data page or the data page offset is impossible.
func ChunkRange(cc *metadata.ColumnChunkMetaData) (off, n int64) {
	off = cc.DataPageOffset()
	if cc.HasDictionaryPage() {
		if d := cc.DictionaryPageOffset(); d >= 4 && (d < off || off < 4) {
			off = d
		}
	}
	return off, cc.TotalCompressedSize()
}

// SplitChunk walks the page headers of a column chunk's bytes and returns
// where each page is. It stops at the end of chunk; a header or body that
// runs past it is ErrCorrupt (as an *Error with Op "split", Off relative to
// the chunk start).
func SplitChunk(chunk []byte) ([]PageRef, error) {
	var refs []PageRef
	var pos int64
	for pos < int64(len(chunk)) {
		h, n, err := ParsePageHeader(chunk[pos:])
		if err != nil {
			return refs, &Error{Op: "split", Off: pos, Err: err}
		}
		if h.CompressedSize < 0 || int64(h.CompressedSize) > int64(len(chunk))-pos-int64(n) {
			return refs, &Error{Op: "split", Off: pos, Err: kindf(ErrCorrupt, "page body of %d bytes runs past the chunk", h.CompressedSize)}
		}
		l := n + int(h.CompressedSize)
		refs = append(refs, PageRef{Off: pos, Len: l, Header: h})
		pos += int64(l)
	}
	return refs, nil
}

// ProjectLike reshapes ref, an array read by pqarrow for a whole top-level
// field, to the shape of a Page's array of type like: structs keep only the
// fields like names, maps become lists of entry structs. It is how a page's
// rows are compared with a whole-column read. The result shares ref's
// buffers; Release it.
func ProjectLike(ref arrow.Array, like arrow.DataType) (arrow.Array, error) {
	d, err := projectData(ref.Data(), like)
	if err != nil {
		return nil, err
	}
	a := array.MakeFromData(d)
	d.Release()
	return a, nil
}

func projectData(d arrow.ArrayData, like arrow.DataType) (arrow.ArrayData, error) {
	switch lt := like.(type) {
	case *arrow.ListType:
		switch d.DataType().ID() {
		case arrow.LIST, arrow.MAP:
		default:
			return nil, kindf(ErrUnsupported, "cannot project %s to %s", d.DataType(), like)
		}
		child, err := projectData(d.Children()[0], lt.Elem())
		if err != nil {
			return nil, err
		}
		out := array.NewData(like, d.Len(), d.Buffers(), []arrow.ArrayData{child}, d.NullN(), d.Offset())
		child.Release()
		return out, nil
	case *arrow.LargeListType:
		if d.DataType().ID() != arrow.LARGE_LIST {
			return nil, kindf(ErrUnsupported, "cannot project %s to %s", d.DataType(), like)
		}
		child, err := projectData(d.Children()[0], lt.Elem())
		if err != nil {
			return nil, err
		}
		out := array.NewData(like, d.Len(), d.Buffers(), []arrow.ArrayData{child}, d.NullN(), d.Offset())
		child.Release()
		return out, nil
	case *arrow.StructType:
		st, ok := d.DataType().(*arrow.StructType)
		if !ok {
			return nil, kindf(ErrUnsupported, "cannot project %s to %s", d.DataType(), like)
		}
		children := make([]arrow.ArrayData, 0, lt.NumFields())
		release := func() {
			for _, c := range children {
				c.Release()
			}
		}
		for _, f := range lt.Fields() {
			i, ok := st.FieldIdx(f.Name)
			if !ok {
				release()
				return nil, kindf(ErrUnsupported, "field %q not in %s", f.Name, st)
			}
			c, err := projectData(d.Children()[i], f.Type)
			if err != nil {
				release()
				return nil, err
			}
			children = append(children, c)
		}
		out := array.NewData(like, d.Len(), d.Buffers()[:1], children, d.NullN(), d.Offset())
		release()
		return out, nil
	}
	d.Retain()
	return d, nil
}

// Equal reports whether two arrays hold the same values, treating NaNs as
// equal and floats exactly otherwise.
func Equal(a, b arrow.Array) bool {
	if array.Equal(a, b) {
		return true
	}
	return array.ApproxEqual(a, b, array.WithNaNsEqual(true), array.WithAbsTolerance(0))
}

// ReferenceColumn reads leaf col of row group rg with arrow-go's pqarrow,
// as the whole top-level field restricted to that leaf: the reference a
// page's rows are compared with (after ProjectLike). It does not recover
// pqarrow's panics; callers that must survive them recover. Release the
// result.
func ReferenceColumn(fr *pqarrow.FileReader, rg, col int) (arrow.Array, error) {
	leaf, err := fr.Manifest.GetColumnField(col)
	if err != nil {
		return nil, err
	}
	top := leaf
	for p := fr.Manifest.GetParent(top); p != nil; p = fr.Manifest.GetParent(top) {
		top = p
	}
	idx := -1
	for i := range fr.Manifest.Fields {
		if &fr.Manifest.Fields[i] == top {
			idx = i
		}
	}
	if idx < 0 {
		return nil, errors.New("top-level field not found")
	}
	cr, err := fr.GetFieldReader(context.Background(), idx, map[int]bool{col: true}, []int{rg})
	if err != nil {
		return nil, err
	}
	defer cr.Release()
	ch, err := fr.ReadColumn([]int{rg}, cr)
	if err != nil {
		return nil, err
	}
	defer ch.Release()
	if len(ch.Chunks()) == 1 {
		a := ch.Chunk(0)
		a.Retain()
		return a, nil
	}
	return array.Concatenate(ch.Chunks(), memory.DefaultAllocator)
}
