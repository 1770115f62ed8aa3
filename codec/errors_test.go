package codec

import (
	"errors"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

// int32Chunk writes a small nullable int32 column and returns its first
// data page and chunk.
func int32Chunk(t *testing.T, codec compress.Compression, dict bool) (*chunkPages, arrow.Array) {
	t.Helper()
	b := array.NewInt32Builder(memory.DefaultAllocator)
	for i := 0; i < 3000; i++ {
		if i%7 == 3 {
			b.AppendNull()
		} else {
			b.Append(int32(i * 31 % 200))
		}
	}
	arr := b.NewArray()
	b.Release()
	m := openMem(t, writeParquet(t, arr, genOpts{codec: codec, pageSize: 4 << 10, dict: dict}))
	return m.pages(t, 0, 0), arr
}

// rewrite re-serializes page's header after edit, keeping (or replacing)
// the body.
func rewrite(t *testing.T, page []byte, edit func(h *PageHeader, body []byte) []byte) []byte {
	t.Helper()
	h, n, err := ParsePageHeader(page)
	if err != nil {
		t.Fatal(err)
	}
	body := append([]byte(nil), page[n:n+int(h.CompressedSize)]...)
	body = edit(&h, body)
	return append(writeHeader(t, h, nil), body...)
}

func TestBadPages(t *testing.T) {
	cp, arr := int32Chunk(t, compress.Codecs.Zstd, false)
	defer arr.Release()
	page, off := cp.pages[0], cp.offs[0]
	cp.chunk.Path = "/data/x.parquet"
	withCRC := func(h *PageHeader, body []byte) []byte {
		h.HasCRC, h.CRC = true, crc32.ChecksumIEEE(body)
		return body
	}
	tests := []struct {
		name  string
		page  []byte
		chunk func(c Chunk) Chunk
		opts  Options
		want  error // nil: decodes
	}{
		{"good", page, nil, Options{}, nil},
		{"good crc", rewrite(t, page, withCRC), nil, Options{}, nil},
		{"crc mismatch", rewrite(t, page, func(h *PageHeader, b []byte) []byte { h.HasCRC, h.CRC = true, 12345; return b }), nil, Options{}, ErrCRC},
		{"crc mismatch, unchecked", rewrite(t, page, func(h *PageHeader, b []byte) []byte { h.HasCRC, h.CRC = true, 12345; return b }), nil, Options{NoCRC: true}, nil},
		{"crc over corrupt body", func() []byte {
			p := rewrite(t, page, withCRC)
			p[len(p)-3] ^= 0x40
			return p
		}(), nil, Options{}, ErrCRC},
		{"huge uncompressed size", rewrite(t, page, func(h *PageHeader, b []byte) []byte { h.UncompressedSize = 1 << 30; return b }), nil, Options{}, ErrPageTooLarge},
		{"over MaxPageBytes", page, nil, Options{MaxPageBytes: 100}, ErrPageTooLarge},
		{"huge value count", rewrite(t, page, func(h *PageHeader, b []byte) []byte { h.Data.NumValues = 1 << 30; return b }), nil, Options{}, ErrPageTooLarge},
		{"negative size", rewrite(t, page, func(h *PageHeader, b []byte) []byte { h.UncompressedSize = -1; return b }), nil, Options{}, ErrCorrupt},
		{"wrong uncompressed size", rewrite(t, page, func(h *PageHeader, b []byte) []byte { h.UncompressedSize += 10; return b }), nil, Options{}, ErrCorrupt},
		{"truncated body", page[:len(page)-1], nil, Options{}, ErrCorrupt},
		{"truncated header", page[:3], nil, Options{}, ErrCorrupt},
		{"empty", nil, nil, Options{}, ErrCorrupt},
		{"cut zstd stream", rewrite(t, page, func(h *PageHeader, b []byte) []byte {
			b = b[:len(b)/2]
			h.CompressedSize = int32(len(b))
			return b
		}), nil, Options{}, ErrCorrupt},
		{"garbage body", rewrite(t, page, func(h *PageHeader, b []byte) []byte {
			for i := range b {
				b[i] = byte(i * 7)
			}
			return b
		}), nil, Options{}, ErrCorrupt},
		{"more values than the page holds", rewrite(t, page, func(h *PageHeader, b []byte) []byte { h.Data.NumValues *= 3; return b }), nil, Options{}, ErrCorrupt},
		{"unknown encoding", rewrite(t, page, func(h *PageHeader, b []byte) []byte { h.Data.Encoding = 42; return b }), nil, Options{}, ErrCorrupt},
		{"delta bytes on int32", rewrite(t, page, func(h *PageHeader, b []byte) []byte { h.Data.Encoding = 7; return b }), nil, Options{}, ErrUnsupported},
		{"dictionary encoding without dictionary", rewrite(t, page, func(h *PageHeader, b []byte) []byte { h.Data.Encoding = 8; return b }), nil, Options{}, ErrCorrupt},
		{"dictionary page as data page", rewrite(t, page, func(h *PageHeader, b []byte) []byte {
			h.Type, h.Dict = DictionaryPage, DictionaryPageHeader{Set: true, NumValues: 1}
			h.Data = DataPageHeader{}
			return b
		}), nil, Options{}, ErrCorrupt},
		{"index page", rewrite(t, page, func(h *PageHeader, b []byte) []byte { h.Type = IndexPage; return b }), nil, Options{}, ErrUnsupported},
		{"unknown page type", rewrite(t, page, func(h *PageHeader, b []byte) []byte { h.Type = 9; return b }), nil, Options{}, ErrCorrupt},
		{"v1 without data header", rewrite(t, page, func(h *PageHeader, b []byte) []byte { h.Data = DataPageHeader{}; return b }), nil, Options{}, ErrCorrupt},
		{"unknown codec", page, func(c Chunk) Chunk { c.Codec = 99; return c }, Options{}, ErrUnsupported},
		{"lzo", page, func(c Chunk) Chunk { c.Codec = compress.Codecs.Lzo; return c }, Options{}, ErrUnsupported},
		{"wrong codec", page, func(c Chunk) Chunk { c.Codec = compress.Codecs.Snappy; return c }, Options{}, ErrCorrupt},
		{"encrypted", page, func(c Chunk) Chunk { c.Encrypted = true; return c }, Options{}, ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := *cp.chunk
			if tc.chunk != nil {
				c = tc.chunk(c)
			}
			d := NewDecoder(tc.opts)
			defer d.Close()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			pg, err := d.DecodePage(&c, nil, tc.page, off)
			runtime.ReadMemStats(&after)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				want := array.NewSlice(arr, 0, int64(pg.Rows()))
				defer want.Release()
				if !Equal(pg.Array(), want) {
					t.Fatal(firstDiff(pg.Array(), want))
				}
				pg.Release()
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			// Corruption (CRC mismatches included) carries the mark that
			// lets a loader skip it; unsupported pages and limits do not.
			if corrupt := tc.want == ErrCorrupt || tc.want == ErrCRC; IsCorruption(err) != corrupt {
				t.Fatalf("IsCorruption(%v) = %v, want %v", err, !corrupt, corrupt)
			}
			var e *Error
			if !errors.As(err, &e) || e.Path != c.Path || e.Column != "col" || e.Off != off {
				t.Fatalf("err %#v does not name file, column and offset", err)
			}
			msg := err.Error()
			for _, s := range []string{c.Path, "col", fmt.Sprint(off)} {
				if !strings.Contains(msg, s) {
					t.Errorf("message %q lacks %q", msg, s)
				}
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
				t.Errorf("a bad page made the decoder allocate %d bytes", grew)
			}
			// The decoder stays usable after an error.
			pg, err = d.DecodePage(cp.chunk, nil, page, off)
			if err != nil && tc.opts.MaxPageBytes == 0 {
				t.Fatalf("decoder broken after error: %v", err)
			}
			if pg != nil {
				pg.Release()
			}
		})
	}
}

func TestClosedDecoder(t *testing.T) {
	cp, arr := int32Chunk(t, compress.Codecs.Snappy, false)
	defer arr.Release()
	d := NewDecoder(Options{})
	d.Close()
	d.Close()
	if _, err := d.DecodePage(cp.chunk, nil, cp.pages[0], cp.offs[0]); !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}

func TestDictionaryErrors(t *testing.T) {
	cp, arr := int32Chunk(t, compress.Codecs.Snappy, true)
	defer arr.Release()
	if cp.dict == nil {
		t.Fatal("writer wrote no dictionary")
	}
	d := NewDecoder(Options{})
	defer d.Close()
	if _, err := d.Dictionary(cp.chunk, cp.pages[0], cp.offs[0]); !errors.Is(err, ErrCorrupt) {
		t.Errorf("data page as dictionary: err = %v", err)
	}
	if _, err := d.Dictionary(cp.chunk, cp.dict[:len(cp.dict)-2], cp.dOff); !errors.Is(err, ErrCorrupt) {
		t.Errorf("truncated dictionary: err = %v", err)
	}
	dict, err := d.Dictionary(cp.chunk, cp.dict, cp.dOff)
	if err != nil {
		t.Fatal(err)
	}
	row := 0
	for i := range cp.pages {
		pg, err := d.DecodePage(cp.chunk, dict, cp.pages[i], cp.offs[i])
		if err != nil {
			t.Fatal(err)
		}
		want := array.NewSlice(arr, int64(row), int64(row+pg.Rows()))
		if !Equal(pg.Array(), want) {
			t.Fatalf("page %d: %s", i, firstDiff(pg.Array(), want))
		}
		row += pg.Rows()
		want.Release()
		pg.Release()
	}
	if row != arr.Len() {
		t.Fatalf("%d rows, want %d", row, arr.Len())
	}
}

// TestLZ4Framings decodes the two deprecated-LZ4 files of parquet-testing
// (Hadoop framing, and a raw block) that pqarrow cannot read, and compares
// them with the same data written as LZ4_RAW, which pqarrow reads.
func TestLZ4Framings(t *testing.T) {
	dir := testingDir(t)
	rawPath := filepath.Join(dir, "lz4_raw_compressed.parquet")
	rawRdr, err := openParquet(rawPath)
	if err != nil {
		t.Skip(err)
	}
	defer rawRdr.Close()
	d := NewDecoder(Options{})
	defer d.Close()
	for _, name := range []string{"hadoop_lz4_compressed.parquet", "non_hadoop_lz4_compressed.parquet"} {
		path := filepath.Join(dir, name)
		rdr, err := openParquet(path)
		if err != nil {
			t.Fatal(err)
		}
		for col := 0; col < rdr.MetaData().Schema.NumColumns(); col++ {
			got := decodeAll(t, d, path, rdr, col)
			want := decodeAll(t, d, rawPath, rawRdr, col)
			if got.Len() != 4 || !Equal(got, want) {
				t.Errorf("%s column %d: %v, LZ4_RAW file has %v", name, col, got, want)
			}
			got.Release()
			want.Release()
		}
		rdr.Close()
	}
}
