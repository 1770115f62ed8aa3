package index

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/pagefeed/pagefeed/codec"
	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/internal/gen"
)

// small is a dataset config that yields a few hundred pages quickly.
func small(pageIndex bool, version int) gen.Config {
	return gen.Config{Files: 3, RowsPerFile: 300, RowGroupRows: 100, PageSize: 512, MeanTokens: 16, PageIndex: pageIndex, PageVersion: version, Seed: 9}
}

// footerOf returns the footer bounds and the offset index location of leaf
// column col in row group 0 of a file's bytes.
func offsetIndexOf(t *testing.T, b []byte, col int) (int64, int32) {
	t.Helper()
	md, _, err := footerTail("x", int64(len(b)), b)
	if err != nil {
		t.Fatal(err)
	}
	loc, ok := md.RowGroup(0).OffsetIndexLocation(col)
	if !ok {
		t.Fatal("no offset index")
	}
	return loc.Offset, loc.Length
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	good := genDataset(t, gen.Config{Dir: filepath.Join(dir, "good"), Files: 1, RowsPerFile: 200, PageSize: 1024, MeanTokens: 16, PageIndex: true})[0]
	gb, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	n := len(gb)
	flen := int(binary.LittleEndian.Uint32(gb[n-8:]))
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	edit := func(name string, f func(b []byte) []byte) string {
		return write(name, f(append([]byte(nil), gb...)))
	}
	otherSchema := filepath.Join(dir, "other")
	os.MkdirAll(otherSchema, 0o755)
	os.WriteFile(filepath.Join(otherSchema, "a.parquet"), gb, 0o644)
	copyFrom(t, "../../shared/parquet-testing/data/alltypes_plain.parquet", filepath.Join(otherSchema, "b.parquet"))
	emptyDir := filepath.Join(dir, "empty")
	os.MkdirAll(emptyDir, 0o755)

	cases := []struct {
		name    string
		paths   []string
		columns []string
		want    error
		inMsg   []string
	}{
		{"not parquet", []string{write("text.parquet", []byte("this is plainly not a parquet file at all"))}, nil, ErrNotParquet, []string{"text.parquet"}},
		{"too small", []string{write("tiny.parquet", []byte("PAR1"))}, nil, ErrNotParquet, []string{"tiny.parquet", "too small"}},
		{"truncated file", []string{write("trunc.parquet", gb[:n-100])}, nil, ErrNotParquet, []string{"trunc.parquet"}},
		{"truncated footer", []string{edit("tfoot.parquet", func(b []byte) []byte {
			body := b[:n-8-flen]
			half := b[n-8-flen : n-8-flen/2]
			out := append(append([]byte(nil), body...), half...)
			out = binary.LittleEndian.AppendUint32(out, uint32(len(half)))
			return append(out, "PAR1"...)
		})}, nil, ErrCorrupt, []string{"tfoot.parquet", "footer"}},
		{"footer length beyond file", []string{edit("flen.parquet", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[n-8:], uint32(n))
			return b
		})}, nil, ErrCorrupt, []string{"flen.parquet", "beyond file size"}},
		{"unknown column", []string{good}, []string{"nope"}, ErrColumn, []string{good, "nope"}},
		{"schema mismatch", []string{otherSchema}, []string{"id"}, ErrColumn, []string{"b.parquet"}},
		{"empty input", nil, nil, ErrEmpty, nil},
		{"empty directory", []string{emptyDir}, nil, ErrEmpty, []string{emptyDir}},
		{"glob matching nothing", []string{filepath.Join(dir, "*.nothing")}, nil, ErrEmpty, []string{"*.nothing"}},
		{"missing file", []string{filepath.Join(dir, "missing.parquet")}, nil, os.ErrNotExist, []string{"missing.parquet"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Build(context.Background(), c.paths, Options{Columns: c.columns, NoSidecar: true, Logf: t.Logf})
			if err == nil {
				t.Fatal("Build succeeded")
			}
			if !errors.Is(err, c.want) {
				t.Errorf("error %v is not %v", err, c.want)
			}
			// Bad Parquet carries the corruption mark shared with codec;
			// a missing file or column does not.
			if got, want := codec.IsCorruption(err), c.want == ErrCorrupt; got != want {
				t.Errorf("codec.IsCorruption(%v) = %v, want %v", err, got, want)
			}
			for _, s := range c.inMsg {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
			var e *Error
			if c.want != ErrEmpty && !errors.As(err, &e) {
				t.Errorf("error %v is not an *Error", err)
			}
		})
	}
}

func copyFrom(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Skipf("fixture: %v", err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// failReader fails every read of one path.
type failReader struct {
	engine.BatchReader
	path string
}

func (f failReader) ReadBatch(ctx context.Context, rs []engine.Range, fn func(int, []byte, error)) error {
	return f.BatchReader.ReadBatch(ctx, rs, func(i int, b []byte, err error) {
		if rs[i].Path == f.path {
			fn(i, nil, &Error{Op: "read", Path: f.path, Off: rs[i].Off, Err: errors.New("input/output error")})
			return
		}
		fn(i, b, err)
	})
}

func TestUnreadableFile(t *testing.T) {
	files := genDataset(t, small(true, 1))
	_, err := Build(context.Background(), files, Options{NoSidecar: true, Reader: failReader{&engine.PreadReader{}, files[1]}, Logf: t.Logf})
	if err == nil || !strings.Contains(err.Error(), files[1]) || !strings.Contains(err.Error(), "input/output error") {
		t.Fatalf("error %v does not name the unreadable file", err)
	}
	if os.Getuid() != 0 {
		os.Chmod(files[2], 0)
		_, err := Build(context.Background(), files, Options{NoSidecar: true, Logf: t.Logf})
		if err == nil || !strings.Contains(err.Error(), files[2]) {
			t.Fatalf("error %v does not name the unreadable file", err)
		}
	}
}

// TestDirectorySkipsNonParquet walks a directory with stray files.
func TestDirectorySkipsNonParquet(t *testing.T) {
	dir := t.TempDir()
	genDataset(t, gen.Config{Dir: dir, Files: 2, RowsPerFile: 50, MeanTokens: 8})
	os.WriteFile(filepath.Join(dir, "README.txt"), []byte("hello"), 0o644)
	os.WriteFile(filepath.Join(dir, "_SUCCESS"), nil, 0o644)
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	genDataset(t, gen.Config{Dir: filepath.Join(dir, "sub"), Files: 1, RowsPerFile: 50, MeanTokens: 8, Prefix: "nested"})
	var mu sync.Mutex
	var notes []string
	ix, err := Build(context.Background(), []string{dir}, Options{NoSidecar: true, Logf: func(f string, a ...any) {
		mu.Lock()
		notes = append(notes, fmt.Sprintf(f, a...))
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if ix.NumFiles() != 3 || ix.NumRows() != 150 {
		t.Fatalf("%d files, %d rows; want 3, 150", ix.NumFiles(), ix.NumRows())
	}
	joined := strings.Join(notes, "\n")
	for _, s := range []string{"README.txt", "_SUCCESS"} {
		if !strings.Contains(joined, s) {
			t.Errorf("no notice for %s in %q", s, joined)
		}
	}
	// globs too, in order
	ix2 := build(t, []string{filepath.Join(dir, "part-*.parquet")}, Options{})
	if ix2.NumFiles() != 2 || ix2.File(1).Path != filepath.Join(dir, "part-00001.parquet") {
		t.Errorf("glob gave %d files", ix2.NumFiles())
	}
}

// TestLocate checks Locate against the chunk table and against arrow-go's
// own page reader.
func TestLocate(t *testing.T) {
	for _, v := range []int{1, 2} {
		for _, pi := range []bool{true, false} {
			t.Run(fmt.Sprintf("v%d_pageindex_%v", v, pi), func(t *testing.T) {
				c := small(pi, v)
				c.Dictionary, c.Files = true, 2
				files := genDataset(t, c)
				ix := build(t, files, Options{Columns: []string{"input_ids", "id"}})
				if ix.NumColumns() != 2 || ix.Column(0).Path != "input_ids" || ix.Column(0).Type != "list<int32>" || ix.Column(1).Path != "id" {
					t.Fatalf("columns %v %v", ix.Column(0), ix.Column(1))
				}
				if ix.Column(0).Descr == nil || ix.Column(0).Descr.MaxRepetitionLevel() != 1 {
					t.Fatal("descriptor missing")
				}
				if ix.NumChunks() != 6 || ix.NumRows() != 600 {
					t.Fatalf("%d chunks, %d rows", ix.NumChunks(), ix.NumRows())
				}
				for k := 0; k < ix.NumColumns(); k++ {
					checkColumn(t, ix, k, files, v == 2 || pi || k == 1)
				}
			})
		}
	}
}

// checkColumn asserts the invariants of column k; rowsKnown says that every
// page's first row must be known.
func checkColumn(t *testing.T, ix *Index, k int, files []string, rowsKnown bool) {
	t.Helper()
	g := 0
	for c := 0; c < ix.NumChunks(); c++ {
		ch := ix.Chunk(k, c)
		if ch.FirstPage != g {
			t.Fatalf("chunk %d first page %d, want %d", c, ch.FirstPage, g)
		}
		if ch.DictSize == 0 {
			t.Errorf("chunk %d: no dictionary page found", c)
		}
		if ix.NumChunks() <= 50 { // arrow-go re-reads the footer per chunk
			if pr := arrowPages(t, files[ch.File], ch.RowGroup, ix.Column(k).Leaf); pr != ch.NumPages {
				t.Errorf("chunk %d: %d pages, arrow-go reads %d", c, ch.NumPages, pr)
			}
		}
		var rows int64
		prevEnd := ch.DictOffset + int64(ch.DictSize)
		for i := 0; i < ch.NumPages; i++ {
			l := ix.Locate(k, g)
			if l.File != ch.File || l.RowGroup != ch.RowGroup || l.Chunk != c {
				t.Fatalf("page %d: %+v in chunk %d %+v", g, l, c, ch)
			}
			if l.Offset < prevEnd || l.Size <= 0 {
				t.Fatalf("page %d at %d+%d overlaps previous end %d", g, l.Offset, l.Size, prevEnd)
			}
			prevEnd = l.Offset + int64(l.Size)
			if rowsKnown {
				if want := ch.FirstRow - ix.File(ch.File).FirstRow + rows; l.FirstRow != want || l.NumRows < 0 {
					t.Fatalf("page %d: first row %d rows %d, want first %d", g, l.FirstRow, l.NumRows, want)
				}
				rows += int64(l.NumRows)
			}
			g++
		}
		if rowsKnown && rows != ch.NumRows {
			t.Errorf("chunk %d: pages hold %d rows, chunk %d", c, rows, ch.NumRows)
		}
	}
	if g != ix.NumPages(k) {
		t.Fatalf("chunks hold %d pages, NumPages %d", g, ix.NumPages(k))
	}
}

// arrowPages counts the data pages of a column chunk with arrow-go's reader.
func arrowPages(t *testing.T, path string, rg, col int) int {
	t.Helper()
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pr, err := r.RowGroup(rg).GetColumnPageReader(col)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for pr.Next() {
		if p := pr.Page(); p.Type() != 2 { // not a dictionary page
			n++
		}
	}
	if err := pr.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestLocateAllocsAndPanics(t *testing.T) {
	files := genDataset(t, small(true, 1))
	ix := build(t, files, Options{Columns: []string{"input_ids"}})
	n := ix.NumPages(0)
	if a := testing.AllocsPerRun(100, func() { sinkLoc = ix.Locate(0, n/2) }); a != 0 {
		t.Errorf("Locate allocates %v times", a)
	}
	for _, g := range []int{-1, n} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Locate(0, %d) did not panic", g)
				}
			}()
			ix.Locate(0, g)
		}()
	}
}

var sinkLoc Loc

func TestResidentBytesPerPage(t *testing.T) {
	files := genDataset(t, gen.Config{Files: 2, RowsPerFile: 1000, PageSize: 128, MeanTokens: 16, PageIndex: true, Codec: "none"})
	ix := build(t, files, Options{Columns: []string{"input_ids"}})
	st := ix.Stats()
	if st.Pages < 500 {
		t.Fatalf("only %d pages", st.Pages)
	}
	if per := float64(st.ResidentBytes) / float64(st.Pages); per > 16 {
		t.Errorf("%.2f bytes per page", per)
	}
}

// TestLargeFooter indexes files whose footer exceeds the first tail read.
func TestLargeFooter(t *testing.T) {
	files := genDataset(t, gen.Config{Files: 2, RowsPerFile: 200, RowGroupRows: 10, MeanTokens: 4, PageIndex: true, Dictionary: true})
	defer func(n int) { footerTailRead = n }(footerTailRead)
	footerTailRead = 1024
	b, _ := os.ReadFile(files[0])
	if flen := binary.LittleEndian.Uint32(b[len(b)-8:]); int(flen) <= footerTailRead {
		t.Fatalf("footer of %d bytes fits the first read", flen)
	}
	ix := build(t, files, Options{Columns: []string{"input_ids"}})
	if ix.NumChunks() != 40 || ix.NumRows() != 400 || ix.File(1).NumRowGroups != 20 {
		t.Fatalf("%d chunks, %d rows", ix.NumChunks(), ix.NumRows())
	}
	checkColumn(t, ix, 0, files, true)
}
