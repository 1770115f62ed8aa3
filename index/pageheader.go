package index

import (
	"encoding/binary"
	"fmt"

	"github.com/pagefeed/pagefeed/codec"
)

// Parquet page types (parquet.thrift PageType).
const (
	pageData       = int32(codec.DataPage)
	pageDictionary = int32(codec.DictionaryPage)
	pageDataV2     = int32(codec.DataPageV2)
)

// pageHeader is the part of a page header the index needs.
type pageHeader struct {
	Type       int32
	Compressed int32 // compressed_page_size: body bytes after the header
	NumValues  int32 // data page (V1/V2) or dictionary page num_values
	NumRows    int32 // V2 only; -1 otherwise
	HeaderLen  int   // bytes of the serialized header
}

// parsePageHeader decodes the page header at the start of b with codec's
// parser, the project's one reader of Thrift page headers. Its error is
// codec's, naming the cause; it wraps codec.ErrHeaderTruncated when b ends
// inside the header (read more and retry). It never panics and does not
// allocate on success.
func parsePageHeader(b []byte) (pageHeader, error) {
	h, n, err := codec.ParsePageHeader(b)
	if err != nil {
		return pageHeader{}, err
	}
	if h.CompressedSize < 0 {
		// A walk would step backwards.
		return pageHeader{}, fmt.Errorf("page header claims %d compressed bytes", h.CompressedSize)
	}
	ph := pageHeader{Type: int32(h.Type), Compressed: h.CompressedSize, NumValues: h.NumValues(), NumRows: -1, HeaderLen: n}
	if h.Type == codec.DataPageV2 {
		ph.NumRows = h.V2.NumRows
	}
	return ph, nil
}

// le32 reads a little-endian uint32 (helper for footers).
func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }
