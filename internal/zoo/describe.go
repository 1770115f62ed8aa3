package zoo

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/parquet/file"
)

// Traits are what a file's writer chose, read from the file: the ways in
// which the zoo's writers differ.
type Traits struct {
	CreatedBy string
	RowGroups int
	Leaves    []LeafTraits
}

// LeafTraits describes one leaf column over all row groups.
type LeafTraits struct {
	Path       string // dotted leaf path, e.g. input_ids.list.element
	Repetition string // of its top-level field: required, optional, repeated
	Codecs     string // compression codecs, "+"-joined
	PageKinds  string // V1, V2 or V1+V2
	Dictionary bool   // some chunk has a dictionary page
	Pages      int    // data pages
	// MinPages and MaxPages are the fewest and most data pages in one
	// chunk.
	MinPages, MaxPages int
	MaxPageBytes       int  // largest data page, uncompressed
	MaxDictBytes       int  // largest dictionary page, uncompressed
	ColumnIndex        bool // every chunk has a column index
	// OffsetIndex is "none", "ok" (every chunk has one, starting at row 0
	// and increasing) or "bad: ..." (one that contradicts itself), "some"
	// when only some chunks have one.
	OffsetIndex string
}

// Describe reads the traits of the Parquet file at path: the footer, the
// offset indexes and every page header (with arrow-go's reader).
func Describe(path string) (Traits, error) {
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		return Traits{}, err
	}
	defer r.Close()
	md := r.MetaData()
	t := Traits{CreatedBy: md.GetCreatedBy(), RowGroups: r.NumRowGroups()}
	sc := md.Schema
	for c := 0; c < sc.NumColumns(); c++ {
		col := sc.Column(c)
		lt := LeafTraits{Path: col.Path(), MinPages: -1, ColumnIndex: true}
		lt.Repetition = strings.ToLower(sc.ColumnRoot(c).RepetitionType().String())
		codecs, kinds := map[string]bool{}, map[string]bool{}
		withOI, badOI := 0, ""
		for g := 0; g < r.NumRowGroups(); g++ {
			rg := r.RowGroup(g)
			cc, err := rg.MetaData().ColumnChunk(c)
			if err != nil {
				return t, err
			}
			codecs[strings.ToLower(cc.Compression().String())] = true
			lt.Dictionary = lt.Dictionary || cc.HasDictionaryPage()
			lt.ColumnIndex = lt.ColumnIndex && cc.GetColumnIndexLocation() != nil
			if cc.GetOffsetIndexLocation() != nil {
				withOI++
				if msg := checkOffsetIndex(r, g, c); msg != "" && badOI == "" {
					badOI = fmt.Sprintf("bad: row group %d: %s", g, msg)
				}
			}
			pr, err := rg.GetColumnPageReader(c)
			if err != nil {
				return t, err
			}
			pages := 0
			for pr.Next() {
				p := pr.Page()
				switch int(p.Type()) { // parquet.thrift PageType
				case 0:
					kinds["V1"] = true
				case 3:
					kinds["V2"] = true
				case 2:
					lt.MaxDictBytes = max(lt.MaxDictBytes, len(p.Data()))
					continue
				default:
					continue
				}
				pages++
				lt.MaxPageBytes = max(lt.MaxPageBytes, len(p.Data()))
			}
			if err := pr.Err(); err != nil {
				return t, fmt.Errorf("%s: %s row group %d: %w", path, col.Path(), g, err)
			}
			lt.Pages += pages
			lt.MaxPages = max(lt.MaxPages, pages)
			if lt.MinPages < 0 || pages < lt.MinPages {
				lt.MinPages = pages
			}
		}
		lt.Codecs = joinKeys(codecs)
		lt.PageKinds = joinKeys(kinds)
		switch {
		case badOI != "":
			lt.OffsetIndex = badOI
		case withOI == 0:
			lt.OffsetIndex = "none"
		case withOI < r.NumRowGroups():
			lt.OffsetIndex = "some"
		default:
			lt.OffsetIndex = "ok"
		}
		t.Leaves = append(t.Leaves, lt)
	}
	return t, nil
}

// checkOffsetIndex returns what is wrong with a chunk's offset index, or "".
func checkOffsetIndex(r *file.Reader, g, c int) string {
	rg, err := r.GetPageIndexReader().RowGroup(g)
	if err != nil {
		return err.Error()
	}
	oi, err := rg.GetOffsetIndex(c)
	if err != nil {
		return err.Error()
	}
	if oi == nil {
		return "unreadable"
	}
	locs := oi.GetPageLocations()
	for i, l := range locs {
		switch {
		case i == 0 && l.FirstRowIndex != 0:
			return fmt.Sprintf("page 0 starts at row %d", l.FirstRowIndex)
		case i > 0 && l.FirstRowIndex <= locs[i-1].FirstRowIndex:
			return fmt.Sprintf("page %d starts at row %d, page %d at row %d", i, l.FirstRowIndex, i-1, locs[i-1].FirstRowIndex)
		case i > 0 && l.Offset < locs[i-1].Offset+int64(locs[i-1].CompressedPageSize):
			return fmt.Sprintf("page %d at offset %d overlaps page %d", i, l.Offset, i-1)
		}
	}
	return ""
}

// joinKeys joins m's keys, sorted, with "+".
func joinKeys(m map[string]bool) string {
	return strings.Join(slices.Sorted(maps.Keys(m)), "+")
}

// UncompressedBytes returns the bytes that the leaves under the top-level
// columns cols hold uncompressed in the file at path (the column chunks'
// total_uncompressed_size from the footer: pages and their headers), the
// most a reader of those columns needs to decode once.
func UncompressedBytes(path string, cols []string) (int64, error) {
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	md := r.MetaData()
	var n int64
	for c := 0; c < md.Schema.NumColumns(); c++ {
		if !slices.Contains(cols, md.Schema.ColumnRoot(c).Name()) {
			continue
		}
		for g := 0; g < md.NumRowGroups(); g++ {
			cc, err := md.RowGroup(g).ColumnChunk(c)
			if err != nil {
				return 0, err
			}
			n += cc.TotalUncompressedSize()
		}
	}
	return n, nil
}
