package index

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/pagefeed/pagefeed/internal/gen"
)

// parquetjsFixtures are written by @dsnp/parquetjs 1.8.7
// (testdata/parquetjs.js): V1 and V2 pages of 16 rows, row groups of 50,
// an offset index whose first_row_index is 0 for every page.
var parquetjsFixtures = []string{"testdata/parquetjs_v1.parquet", "testdata/parquetjs_v2.parquet"}

// noteRecorder collects Build's notices.
type noteRecorder struct {
	mu    sync.Mutex
	notes []string
}

func (n *noteRecorder) logf(f string, a ...any) {
	n.mu.Lock()
	n.notes = append(n.notes, fmt.Sprintf(f, a...))
	n.mu.Unlock()
}

func (n *noteRecorder) String() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return strings.Join(n.notes, "\n")
}

// TestBadOffsetIndexIgnored: an offset index that does not parse or
// contradicts itself is ignored for its chunk: Build walks the chunk's
// page headers instead, gets the pages a header walk gets, counts the
// chunk in Stats.OffsetIndexIgnored and says so once per file. Before,
// Build (a corrupt or misplaced index) or the loader (parquetjs's first
// rows) refused the file.
func TestBadOffsetIndexIgnored(t *testing.T) {
	dir := t.TempDir()
	good := genDataset(t, gen.Config{Dir: filepath.Join(dir, "good"), Files: 1, RowsPerFile: 200, PageSize: 1024, MeanTokens: 16, PageIndex: true})[0]
	gb, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(name string, f func(b []byte)) string {
		b := append([]byte(nil), gb...)
		f(b)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	oiOff, oiLen := offsetIndexOf(t, gb, 1)
	cases := []struct {
		name    string
		path    string
		ignored int
		why     string
	}{
		{"unparsable", edit("ff.parquet", func(b []byte) {
			for i := oiOff; i < oiOff+int64(oiLen); i++ {
				b[i] = 0xff
			}
		}), 1, "does not parse"},
		{"another chunk's", edit("other.parquet", func(b []byte) {
			o0, l0 := offsetIndexOf(t, b, 0)
			if l0 > oiLen {
				t.Fatalf("id's offset index (%d bytes) does not fit in input_ids' (%d)", l0, oiLen)
			}
			copy(b[oiOff:], b[o0:o0+int64(l0)])
		}), 1, "outside the column chunk"},
		{"parquetjs V1", parquetjsFixtures[0], 9, "first_row_index 0 does not follow"},
		{"parquetjs V2", parquetjsFixtures[1], 9, "first_row_index 0 does not follow"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var notes noteRecorder
			ix, err := Build(context.Background(), []string{c.path}, Options{NoSidecar: true, Logf: notes.logf})
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			st := ix.Stats()
			if st.OffsetIndexIgnored != c.ignored || st.HeaderWalk < c.ignored {
				t.Fatalf("stats %+v: want %d offset indexes ignored, as many chunks walked", st, c.ignored)
			}
			if s := notes.String(); strings.Count(s, "contradicts itself") != 1 || !strings.Contains(s, c.path) || !strings.Contains(s, c.why) {
				t.Errorf("notices %q: want one naming %s and %q", s, c.path, c.why)
			}
			walked := build(t, []string{c.path}, Options{HeaderWalk: true})
			sameLocations(t, c.name, ix, walked)
			n := 0
			for k := 0; k < ix.NumColumns(); k++ {
				for ch := 0; ch < ix.NumChunks(); ch++ {
					if ix.Chunk(k, ch).Source == FromBadOffsetIndex {
						n++
					}
				}
			}
			if n != c.ignored {
				t.Errorf("%d chunks say FromBadOffsetIndex, want %d", n, c.ignored)
			}
			// The sidecar keeps the count.
			sc := filepath.Join(t.TempDir(), "sc")
			for _, want := range []string{"written", "hit"} {
				ix, err := Build(context.Background(), []string{c.path}, Options{Sidecar: sc, Logf: t.Logf})
				if err != nil || ix.Stats().Sidecar != want || ix.Stats().OffsetIndexIgnored != c.ignored {
					t.Fatalf("sidecar %s: %v, stats %+v", want, err, ix.Stats())
				}
			}
		})
	}
}

// appendOffsetIndex encodes an OffsetIndex (compact Thrift: field 1, a
// list of PageLocation{1: offset, 2: compressed_page_size, 3:
// first_row_index}).
func appendOffsetIndex(b []byte, locs []metadata.PageLocation) []byte {
	zz := func(b []byte, v int64) []byte { return binary.AppendUvarint(b, uint64(v<<1)^uint64(v>>63)) }
	b = append(b, 0x19) // field 1, list
	if len(locs) < 15 {
		b = append(b, byte(len(locs))<<4|0x0c)
	} else {
		b = binary.AppendUvarint(append(b, 0xfc), uint64(len(locs)))
	}
	for _, l := range locs {
		b = zz(append(b, 0x16), l.Offset)                    // field 1, i64
		b = zz(append(b, 0x15), int64(l.CompressedPageSize)) // field 2, i32
		b = zz(append(b, 0x16), l.FirstRowIndex)             // field 3, i64
		b = append(b, 0)
	}
	return append(b, 0)
}

// offsetIndexCases are offset indexes that contradict themselves, for a
// chunk [4, 1000) of 100 rows, with the reason each gives.
var offsetIndexCases = []struct {
	name string
	locs []metadata.PageLocation
	why  string
}{
	{"all first rows 0", []metadata.PageLocation{{Offset: 4, CompressedPageSize: 100}, {Offset: 104, CompressedPageSize: 100}}, "does not follow"},
	{"first rows decreasing", []metadata.PageLocation{{Offset: 4, CompressedPageSize: 100}, {Offset: 104, CompressedPageSize: 100, FirstRowIndex: 50}, {Offset: 204, CompressedPageSize: 100, FirstRowIndex: 40}}, "does not follow"},
	{"first row not 0", []metadata.PageLocation{{Offset: 4, CompressedPageSize: 100, FirstRowIndex: 3}}, "not 0"},
	{"beyond the rows", []metadata.PageLocation{{Offset: 4, CompressedPageSize: 100}, {Offset: 104, CompressedPageSize: 100, FirstRowIndex: 100}}, "beyond"},
	{"overlapping", []metadata.PageLocation{{Offset: 4, CompressedPageSize: 100}, {Offset: 50, CompressedPageSize: 100, FirstRowIndex: 10}}, "overlaps"},
	{"out of order", []metadata.PageLocation{{Offset: 504, CompressedPageSize: 100}, {Offset: 4, CompressedPageSize: 100, FirstRowIndex: 10}}, "overlaps or precedes"},
	{"before the chunk", []metadata.PageLocation{{Offset: 0, CompressedPageSize: 100}}, "outside"},
	{"past the chunk", []metadata.PageLocation{{Offset: 4, CompressedPageSize: 100}, {Offset: 904, CompressedPageSize: 200, FirstRowIndex: 10}}, "outside"},
	{"empty size", []metadata.PageLocation{{Offset: 4, CompressedPageSize: 0}}, "outside"},
	{"no pages for rows", nil, "no page locations"},
}

// TestOffsetIndexContradictions: each way an offset index can contradict
// itself marks its chunk for a header walk with a reason, keeping no page
// of it; a sound one is taken as it is.
func TestOffsetIndexContradictions(t *testing.T) {
	newBuilder := func() *builder {
		return &builder{
			files: []FileInfo{{Path: "x", Size: 1 << 20}},
			metas: []fileMeta{{paths: []string{"c"}, rgRows: []int64{100}, chunks: []chunkRaw{{start: 4, end: 1000}}}},
			ncols: 1, base: []int{0, 1}, res: make([]chunkPages, 1),
		}
	}
	for _, c := range offsetIndexCases {
		bl := newBuilder()
		if err := bl.offsetIndexChunk(0, appendOffsetIndex(nil, c.locs)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if r := bl.res[0]; r.source != FromBadOffsetIndex || len(r.pages) != 0 || !strings.Contains(r.why, c.why) {
			t.Errorf("%s: source %s, %d pages, reason %q; want it ignored for %q", c.name, r.source, len(r.pages), r.why, c.why)
		}
	}
	bl := newBuilder()
	sound := []metadata.PageLocation{{Offset: 4, CompressedPageSize: 100}, {Offset: 104, CompressedPageSize: 100, FirstRowIndex: 10}, {Offset: 900, CompressedPageSize: 100, FirstRowIndex: 99}}
	if err := bl.offsetIndexChunk(0, appendOffsetIndex(nil, sound)); err != nil || bl.res[0].source != FromOffsetIndex || len(bl.res[0].pages) != 3 || bl.res[0].pages[2].row != 99 {
		t.Fatalf("sound offset index: %v, %+v", err, bl.res[0])
	}
}
