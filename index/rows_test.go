package index

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pagefeed/pagefeed/codec"
	"github.com/pagefeed/pagefeed/internal/gen"
)

// splitDataset writes one file of V1 uncompressed pages without a page
// index whose long lists cross pages, and returns it with its index.
func splitDataset(t *testing.T) (string, *Index) {
	t.Helper()
	files := genDataset(t, gen.Config{Files: 1, RowsPerFile: 400, RowGroupRows: 200, PageSize: 2048, PageVersion: 1, Codec: "none", MeanTokens: 300, MaxTokens: 3000, Seed: 5})
	ix := build(t, files, Options{Columns: []string{"input_ids"}})
	if !ix.SplitsRows(0) {
		t.Fatal("no page starts inside a row")
	}
	return files[0], ix
}

// setFirstRep rewrites, in place, the first repetition level of the V1
// page at loc of path to v (0 or 1); where the levels start with an RLE
// run, the run's, when run says so.
func setFirstRep(t *testing.T, path string, loc Loc, v byte, run bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := b[loc.Offset : loc.Offset+int64(loc.Size)]
	h, hn, err := codec.ParsePageHeader(page)
	if err != nil || h.Type != codec.DataPage {
		t.Fatalf("page at %d: %v, type %v; want a V1 data page", loc.Offset, err, h.Type)
	}
	rep := page[hn+4:] // after the levels' 4-byte length
	h0, m := binary.Uvarint(rep)
	if m <= 0 {
		t.Fatal("repetition levels do not start with a run header")
	}
	if h0&1 == 1 { // bit-packed: the first level is the lowest bit
		rep[m] = rep[m]&^1 | v
	} else if h0>>1 > 1 && !run {
		t.Fatalf("page at %d starts with an RLE run of %d levels: setting its first level moves others", loc.Offset, h0>>1)
	} else {
		rep[m] = v
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCountedRowsThatDoNotAddUp: a chunk whose counted rows fall short of
// its row group's (a first page that continues a row no page began, a
// page whose levels do not decode) is indexed, with a notice, the missing
// rows given to its first bad page or its first page, so that reading
// that page fails there and SkipBadPages may skip it; pages that start
// more rows than the row group has fail the build, naming the file.
func TestCountedRowsThatDoNotAddUp(t *testing.T) {
	t.Run("first page continues a row", func(t *testing.T) {
		path, ix := splitDataset(t)
		c := ix.Chunk(0, 1)
		first := ix.Locate(0, c.FirstPage)
		setFirstRep(t, path, first, 1, false)
		var notes noteRecorder
		ix2, err := Build(context.Background(), []string{path}, Options{Columns: []string{"input_ids"}, NoSidecar: true, Logf: notes.logf})
		if err != nil {
			t.Fatal(err)
		}
		if got := ix2.Locate(0, c.FirstPage); got.NumRows != first.NumRows || got.StartsMidRow {
			t.Fatalf("first page: %+v; want its %d rows, starting a row", got, first.NumRows)
		}
		if s := notes.String(); !strings.Contains(s, "do not add up") || !strings.Contains(s, "row group 1") {
			t.Fatalf("notices %q", s)
		}
	})
	t.Run("levels that do not decode", func(t *testing.T) {
		path, ix := splitDataset(t)
		c := ix.Chunk(0, 0)
		g := c.FirstPage + 2
		loc := ix.Locate(0, g)
		b, _ := os.ReadFile(path)
		page := b[loc.Offset : loc.Offset+int64(loc.Size)]
		_, hn, _ := codec.ParsePageHeader(page)
		binary.LittleEndian.PutUint32(page[hn:], 1<<30) // levels longer than the page
		os.WriteFile(path, b, 0o644)
		var notes noteRecorder
		ix2, err := Build(context.Background(), []string{path}, Options{Columns: []string{"input_ids"}, NoSidecar: true, Logf: notes.logf})
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for h := c.FirstPage; h < c.FirstPage+c.NumPages; h++ {
			if l := ix2.Locate(0, h); h != g && (l.NumRows != ix.Locate(0, h).NumRows || l.FirstRow != ix.Locate(0, h).FirstRow) {
				t.Fatalf("page %d: %+v, before %+v", h, l, ix.Locate(0, h))
			}
			sum += int64(ix2.Locate(0, h).NumRows)
		}
		if sum != c.NumRows {
			t.Fatalf("pages hold %d rows, the row group %d", sum, c.NumRows)
		}
		if s := notes.String(); !strings.Contains(s, "levels of") || !strings.Contains(s, path) {
			t.Fatalf("notices %q", s)
		}
	})
	t.Run("more rows than the row group", func(t *testing.T) {
		path, ix := splitDataset(t)
		var mid Loc
		for g := 0; g < ix.NumPages(0); g++ {
			if l := ix.Locate(0, g); l.StartsMidRow {
				mid = l
				break
			}
		}
		setFirstRep(t, path, mid, 0, true) // one row or many more
		_, err := Build(context.Background(), []string{path}, Options{Columns: []string{"input_ids"}, NoSidecar: true, Logf: t.Logf})
		var e *Error
		if !errors.Is(err, ErrCorrupt) || !errors.As(err, &e) || e.Path != path || !strings.Contains(err.Error(), "the row group has") {
			t.Fatalf("Build: %v, want a corruption error naming %s", err, path)
		}
	})
}

// TestEveryPageCounted: V1 pages of a list column without a page index,
// which split rows, get the rows a decode of each page finds (rows that
// start in it, and whether its head continues a row), counted once: a
// sidecar load counts none again.
func TestEveryPageCounted(t *testing.T) {
	files := genDataset(t, gen.Config{Files: 2, RowsPerFile: 300, RowGroupRows: 150, PageSize: 1024, PageVersion: 1, Codec: "zstd", MeanTokens: 200, MaxTokens: 2000, Seed: 3})
	sc := filepath.Join(t.TempDir(), "sc")
	dec := codec.NewDecoder(codec.Options{})
	defer dec.Close()
	for _, want := range []string{"written", "hit"} {
		ix, err := Build(context.Background(), files, Options{Columns: []string{"input_ids"}, Sidecar: sc, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		st := ix.Stats()
		if st.Sidecar != want || st.HeaderWalk != ix.NumChunks() || (want == "written" && st.CountedPages != int64(ix.NumPages(0))) || (want == "hit" && st.CountedPages != 0) {
			t.Fatalf("%s: stats %+v", want, st)
		}
		if !ix.SplitsRows(0) {
			t.Fatal("no page starts inside a row")
		}
		for g := 0; g < ix.NumPages(0); g++ {
			l := ix.Locate(0, g)
			ci := ix.Chunk(0, l.Chunk)
			b, err := os.ReadFile(ix.File(l.File).Path)
			if err != nil {
				t.Fatal(err)
			}
			p, err := dec.DecodePage(codec.ChunkOf(ci.Descr, ci.Codec, "", nil), nil, b[l.Offset:l.Offset+int64(l.Size)], l.Offset)
			if err != nil {
				t.Fatal(err)
			}
			next := g+1 < ci.FirstPage+ci.NumPages && ix.Locate(0, g+1).StartsMidRow
			if p.Rows() != int(l.NumRows) || (p.LeadingLevels() > 0) != l.StartsMidRow || l.EndsMidRow != next {
				t.Fatalf("%s: page %d: %+v; decoded %d rows, %d leading levels", want, g, l, p.Rows(), p.LeadingLevels())
			}
			p.Release()
		}
	}
}
