package rinas

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/pagefeed/pagefeed/codec"
	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/gen"
)

// firstRowIndexAt parses an offset index (thrift compact, as arrow-go
// writes it: a list of PageLocation{offset, compressed_page_size,
// first_row_index}) and returns, per page, the position and length of its
// first_row_index varint and its value.
func firstRowIndexAt(t *testing.T, b []byte) (pos, n []int, val []int64) {
	t.Helper()
	i := 0
	next := func() byte {
		if i >= len(b) {
			t.Fatalf("offset index ends at byte %d", i)
		}
		i++
		return b[i-1]
	}
	varint := func() (int64, int, int) {
		start := i
		var u uint64
		for s := 0; ; s += 7 {
			c := next()
			u |= uint64(c&0x7f) << s
			if c < 0x80 {
				break
			}
		}
		return int64(u>>1) ^ -int64(u&1), start, i - start
	}
	if h := next(); h != 0x19 { // field 1, list
		t.Fatalf("offset index starts with %#x, want field 1 list", h)
	}
	lh := next()
	if lh&0x0f != 12 {
		t.Fatalf("page_locations of element type %d, want struct", lh&0x0f)
	}
	size := int(lh >> 4)
	if size == 15 {
		v, _, _ := varint()
		size = int(uint64(v)<<1 ^ uint64(v>>63)) // unsigned varint: undo the zigzag
	}
	for k := 0; k < size; k++ {
		// offset (i64), compressed_page_size (i32), first_row_index (i64)
		for f, want := range []byte{0x16, 0x15, 0x16} {
			if h := next(); h != want {
				t.Fatalf("page location %d: field header %#x, want %#x", k, h, want)
			}
			v, p, l := varint()
			if f == 2 {
				pos, n, val = append(pos, p), append(n, l), append(val, v)
			}
		}
		if h := next(); h != 0 {
			t.Fatalf("page location %d: %#x after first_row_index, want stop", k, h)
		}
	}
	return pos, n, val
}

// lieAboutRows rewrites, in place, the first_row_index of page k of the
// "id" column of row group 0 in the file at path by delta rows, keeping
// the varint's length (the file's layout does not move). It returns the
// original value.
func lieAboutRows(t *testing.T, path string, k int, delta int64) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	flen := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	md, err := metadata.NewFileMetaData(b[len(b)-8-flen:len(b)-8], nil)
	if err != nil {
		t.Fatal(err)
	}
	col := md.Schema.ColumnIndexByName("id")
	loc, ok := md.RowGroup(0).OffsetIndexLocation(col)
	if !ok {
		t.Fatalf("%s: no offset index for id", path)
	}
	oi := b[loc.Offset : loc.Offset+int64(loc.Length)]
	pos, n, val := firstRowIndexAt(t, oi)
	if k >= len(val) {
		t.Fatalf("%s: %d pages in row group 0, want page %d", path, len(val), k)
	}
	v := val[k] + delta
	enc := binary.AppendUvarint(nil, uint64(v<<1)^uint64(v>>63))
	if len(enc) != n[k] {
		t.Fatalf("first_row_index %d of page %d takes %d bytes, %d needs %d", val[k], k, n[k], v, len(enc))
	}
	copy(oi[pos[k]:], enc)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return val[k]
}

// TestOffsetIndexRowCountsChecked: a file whose offset index misplaces a
// page's first row (the pages' bytes are intact) makes the index claim
// wrong row counts for two pages. Every mode must notice when it decodes
// them, with a corruption error naming the file and the page's offset,
// instead of reading past a page's rows (row mode) or losing rows; under
// SkipBadPages both pages are dropped and every other row arrives once.
func TestOffsetIndexRowCountsChecked(t *testing.T) {
	src := manyPages(t)
	truth := buildIndex(t, src)
	for _, delta := range []int64{+3, -3} {
		ds := copyDataset(t, src)
		victim := ds.paths[1]
		// Page 3 of row group 0 of the second file: it starts past row 64,
		// so its first_row_index is a two-byte varint either way.
		k := 3
		orig := lieAboutRows(t, victim, k, delta)
		if orig < 64 {
			t.Fatalf("page %d starts at row %d: too early for a two-byte varint", k, orig)
		}
		ix := buildIndex(t, ds)
		f := 1
		g := -1 // the global number of the lying page
		for p := 0; p < ix.NumPages(0); p++ {
			if loc := ix.Locate(0, p); loc.File == f && loc.RowGroup == 0 {
				g = p + k
				break
			}
		}
		if got, want := ix.Locate(0, g).FirstRow, orig+delta; got != want {
			t.Fatalf("page %d: the index says first row %d, want the lie %d", g, got, want)
		}
		// Rows in the two misdescribed pages, as they really are.
		lost := int64(truth.Locate(0, g-1).NumRows + truth.Locate(0, g).NumRows)
		for _, tc := range []struct {
			sh    Shuffle
			rows  int
			fetch Fetch
		}{{ShufflePage, 0, Unordered}, {ShufflePage, 0, Ordered}, {ShuffleRow, 64, Unordered}, {ShuffleRow, 64, Ordered},
			{ShuffleNone, 100, Unordered}, {ShuffleRowGroup, 0, Unordered}} {
			for _, skip := range []bool{false, true} {
				name := fmt.Sprintf("delta%+d/%v/rows%d/%v/skip=%v", delta, tc.sh, tc.rows, tc.fetch, skip)
				t.Run(name, func(t *testing.T) {
					cfg := baseConfig(ds, "id")
					cfg.SharedIndex = ix
					cfg.Shuffle, cfg.BatchRows, cfg.Fetch = tc.sh, tc.rows, tc.fetch
					cfg.SkipBadPages = skip
					ids, err := runWithin(t, cfg, nil)
					if !skip {
						var pe *PageError
						if err == nil || !errors.Is(err, ErrPageRows) || !IsCorruption(err) || !errors.As(err, &pe) {
							t.Fatalf("%d of %d rows, error %v; want ErrPageRows", len(ids), ds.rows, err)
						}
						if pe.Path != victim || (pe.Off != ix.Locate(0, g-1).Offset && pe.Off != ix.Locate(0, g).Offset) {
							t.Fatalf("error %v names %s at %d, want %s at the offset of page %d or %d", err, pe.Path, pe.Off, victim, g-1, g)
						}
						if !strings.Contains(err.Error(), victim) {
							t.Fatalf("error %q does not name %s", err, victim)
						}
						return
					}
					if err != nil {
						t.Fatalf("SkipBadPages: %v", err)
					}
					seen := make(map[int64]bool, len(ids))
					for _, id := range ids {
						if id < 0 || id >= ds.rows || seen[id] {
							t.Fatalf("id %d out of range or delivered twice", id)
						}
						seen[id] = true
					}
					want := ds.rows - lost
					if tc.sh == ShuffleRowGroup {
						ci := truth.Chunk(0, truth.Locate(0, g).Chunk)
						want = ds.rows - ci.NumRows
					}
					if int64(len(ids)) != want {
						t.Fatalf("%d rows delivered, want %d (all but the two misdescribed pages')", len(ids), want)
					}
				})
			}
		}
	}
}

// TestChunkStartingInsideARowChecked: the first data page of a chunk whose
// repetition levels say it continues a row (the first level is not 0) has
// levels that belong to no row. Decoding drops them from the page's rows,
// so without a check the loader would silently lose them; it must fail
// with a corruption error naming the file and the page.
func TestChunkStartingInsideARowChecked(t *testing.T) {
	dir := t.TempDir()
	res, err := gen.Run(context.Background(), gen.Config{Dir: filepath.Join(dir, "v1"), Files: 1, RowsPerFile: 600, PageSize: 2048,
		RowGroupRows: 300, PageVersion: 1, Codec: "none", Seed: 11, MeanTokens: 32})
	if err != nil {
		t.Fatal(err)
	}
	ds := dataset{paths: res.Files, rows: res.Rows}
	path := ds.paths[0]
	ix, err := index.Build(context.Background(), ds.paths, index.Options{Columns: []string{"input_ids"}, NoSidecar: true, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	// The first page of the second chunk: make its first repetition level 1.
	g := ix.Chunk(0, 1).FirstPage
	loc := ix.Locate(0, g)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := b[loc.Offset : loc.Offset+int64(loc.Size)]
	h, hn, err := codec.ParsePageHeader(page)
	if err != nil || h.Type != codec.DataPage {
		t.Fatalf("page %d: %v, type %v; want a V1 data page", g, err, h.Type)
	}
	rep := page[hn+4:] // after the levels' 4-byte length
	run, m := binary.Uvarint(rep)
	if m <= 0 || m >= len(rep) {
		t.Fatalf("page %d: repetition levels do not start with a run header", g)
	}
	rep[m] |= 1 // bit-packed: the first level; RLE: the run's value
	if run&1 == 0 && rep[m] != 1 {
		t.Fatalf("page %d: RLE run of value %d", g, rep[m])
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// The index of the file as it is now (same pages): the loader refuses
	// a file written since its index was built.
	if ix, err = index.Build(context.Background(), ds.paths, index.Options{Columns: []string{"input_ids"}, NoSidecar: true, Logf: t.Logf}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sh    Shuffle
		rows  int
		fetch Fetch
	}{{ShufflePage, 0, Unordered}, {ShufflePage, 0, Ordered}, {ShuffleNone, 50, Unordered}, {ShuffleRowGroup, 0, Unordered}} {
		t.Run(fmt.Sprintf("%v/rows%d/%v", tc.sh, tc.rows, tc.fetch), func(t *testing.T) {
			cfg := baseConfig(ds, "input_ids")
			cfg.SharedIndex = ix
			cfg.Shuffle, cfg.BatchRows, cfg.Fetch = tc.sh, tc.rows, tc.fetch
			rows, err := countRowsWithin(t, cfg)
			var pe *PageError
			if err == nil || !errors.Is(err, ErrPageRows) || !errors.As(err, &pe) || pe.Path != path || pe.Off != loc.Offset {
				t.Fatalf("%d of %d rows, error %v; want ErrPageRows naming %s at offset %d", rows, ds.rows, err, path, loc.Offset)
			}
		})
	}
}

// countRowsWithin runs one epoch of cfg and returns the rows delivered and
// the first error, failing the test if that takes over 10 s.
func countRowsWithin(t *testing.T, cfg Config) (int, error) {
	t.Helper()
	type result struct {
		rows int
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		var r result
		defer func() { ch <- r }()
		l, err := Open(context.Background(), cfg)
		if err != nil {
			r.err = err
			return
		}
		defer l.Close()
		for {
			b, err := l.Next(context.Background())
			if err != nil {
				if err != io.EOF {
					r.err = err
				}
				return
			}
			r.rows += b.Rows
			b.Release()
		}
	}()
	select {
	case r := <-ch:
		return r.rows, r.err
	case <-time.After(2 * time.Minute):
		t.Fatal("the loader did not finish within 2 minutes (a hang)")
		return 0, nil
	}
}

// TestOffsetIndexEmptyPageIgnored: an offset index whose last page claims
// no row (its first_row_index moved to the row group's end) while the
// page holds values contradicts itself (a page past the row group's rows):
// the index walks that chunk's headers instead, so the page keeps its real
// rows, and the row shuffle, which never reads a page it believes empty,
// delivers every row once. (Before, the index took the claim and Open
// failed with ErrPageRows.)
func TestOffsetIndexEmptyPageIgnored(t *testing.T) {
	ds := copyDataset(t, manyPages(t))
	truth := buildIndex(t, ds)
	victim := ds.paths[0]
	c := truth.Chunk(0, 0)
	last := c.FirstPage + c.NumPages - 1
	loc := truth.Locate(0, last)
	lieAboutRows(t, victim, c.NumPages-1, c.NumRows-loc.FirstRow)
	ix := buildIndex(t, ds)
	if got := ix.Locate(0, last); got.NumRows != loc.NumRows || ix.Stats().OffsetIndexIgnored != 1 || ix.Chunk(0, 0).Source != index.FromBadOffsetIndex {
		t.Fatalf("page %d has %d rows (want %d), %d offset indexes ignored (want 1)", last, got.NumRows, loc.NumRows, ix.Stats().OffsetIndexIgnored)
	}
	cfg := baseConfig(ds, "id")
	cfg.SharedIndex = ix
	cfg.Shuffle, cfg.BatchRows = ShuffleRow, 64
	ids, _, _ := drain(t, openT(t, cfg), -1)
	checkExactlyOnce(t, ids, ds.rows)
}
