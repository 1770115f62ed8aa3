package index

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/thrift/lib/go/thrift"
	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/internal/gen"
	"github.com/pagefeed/pagefeed/internal/pqtest"
)

// Fixtures under testdata/ are small generated files (see TestWriteFixtures).
var fixtures = []string{"testdata/v1_pageindex_dict.parquet", "testdata/v2_nopageindex.parquet"}

// memReader serves reads from memory.
type memReader map[string][]byte

func (m memReader) ReadBatch(ctx context.Context, rs []engine.Range, fn func(int, []byte, error)) error {
	for i, r := range rs {
		b, ok := m[r.Path]
		if !ok || r.Off < 0 || r.Off > int64(len(b)) {
			fn(i, nil, &Error{Op: "read", Path: r.Path, Off: r.Off, Err: os.ErrNotExist})
			continue
		}
		fn(i, b[r.Off:min(int64(len(b)), r.Off+int64(r.Len))], nil)
	}
	return ctx.Err()
}

// checkIndex asserts that every page of a built index lies inside its file.
func checkIndex(t *testing.T, ix *Index) {
	t.Helper()
	for k := 0; k < ix.NumColumns(); k++ {
		for g := 0; g < ix.NumPages(k); g++ {
			l := ix.Locate(k, g)
			if l.Offset < 0 || l.Size <= 0 || l.Offset+int64(l.Size) > ix.File(l.File).Size {
				t.Fatalf("page %d of column %d at [%d, +%d) outside file of %d bytes", g, k, l.Offset, l.Size, ix.File(l.File).Size)
			}
		}
	}
}

// FuzzFooter builds an index of a fixture's data pages followed by a fuzzed
// footer. Build must fail cleanly or produce an index inside the file.
func FuzzFooter(f *testing.F) {
	base, err := os.ReadFile(fixtures[0])
	if err != nil {
		f.Fatal(err)
	}
	n := len(base)
	flen := int(binary.LittleEndian.Uint32(base[n-8:]))
	prefix := base[:n-8-flen]
	f.Add(base[n-8-flen : n-8])
	f.Add([]byte{})
	f.Add([]byte{0x15, 0x00})
	path := filepath.Join(f.TempDir(), "fuzz.parquet")
	f.Fuzz(func(t *testing.T, footer []byte) {
		b := append(append([]byte(nil), prefix...), footer...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(footer)))
		b = append(b, "PAR1"...)
		mem := memReader{path: b}
		files := []FileInfo{{Path: path, Size: int64(len(b))}}
		for _, walk := range []bool{false, true} {
			bl := &builder{opts: Options{Reader: mem, HeaderWalk: walk, WalkReadSize: 4096}.fill(nil), files: append([]FileInfo(nil), files...)}
			ix, err := bl.build(context.Background())
			if err != nil {
				continue
			}
			checkIndex(t, ix)
		}
	})
}

// FuzzOffsetIndex feeds bytes to the recovered offset index parser and to
// the checks that follow it.
func FuzzOffsetIndex(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x19, 0x1c, 0x16, 0x08, 0x15, 0x02, 0x16, 0x00, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		locs, err := parseOffsetIndex(b)
		if err != nil {
			return
		}
		bl := &builder{
			files: []FileInfo{{Path: "x", Size: 1 << 20}},
			metas: []fileMeta{{paths: []string{"c"}, rgRows: []int64{1000}, chunks: []chunkRaw{{start: 4, end: 1 << 19}}}},
			ncols: 1, base: []int{0, 1}, res: make([]chunkPages, 1),
		}
		if err := bl.offsetIndexChunk(0, b); err != nil {
			return
		}
		if bl.res[0].source == FromBadOffsetIndex {
			if len(bl.res[0].pages) != 0 || bl.res[0].why == "" {
				t.Fatalf("ignored offset index kept %d pages, reason %q", len(bl.res[0].pages), bl.res[0].why)
			}
			return
		}
		if len(bl.res[0].pages) != len(locs) {
			t.Fatalf("%d pages from %d locations", len(bl.res[0].pages), len(locs))
		}
		for i, p := range bl.res[0].pages {
			if p.off < 4 || p.off+int64(p.size) > 1<<19 || p.row > 1000 || (i > 0 && p.row <= bl.res[0].pages[i-1].row) {
				t.Fatalf("accepted page %+v", p)
			}
		}
	})
}

// FuzzSidecar loads arbitrary sidecars: the loader must reject or yield an
// index whose every page lies inside its file.
func FuzzSidecar(f *testing.F) {
	if seeds, err := filepath.Glob("testdata/*.idx"); err == nil {
		for _, s := range seeds {
			b, err := os.ReadFile(s)
			if err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte("PFIX\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Let mutations past the checksum so the decoder proper is fuzzed.
		if len(b) >= 12 {
			b = append([]byte(nil), b...)
			binary.LittleEndian.PutUint32(b[len(b)-4:], crcOf(b[:len(b)-4]))
		}
		ix, err := decodeSidecar(b)
		if err != nil {
			return
		}
		checkIndex(t, ix)
		for k := 0; k < ix.NumColumns(); k++ {
			for c := 0; c < ix.NumChunks(); c++ {
				ix.Chunk(k, c)
			}
		}
	})
}

// maxWalkInput bounds the bytes FuzzPageHeaderWalk walks: longer inputs are
// cut to this length. The parser and the walk are linear, and a chunk of a
// few small pages (with a header longer than WalkReadSize) fits in it. The
// bound keeps the fuzzer's minimization of each new input short: Go
// minimizes with O(n²) candidate cuts at ~0.3 ms a run here (coverage
// bookkeeping over every instrumented package), so the 8 KiB fixture seeds
// and their children held both workers for the full -fuzzminimizetime
// (60 s) and the run reported 0 execs/s.
const maxWalkInput = 256

// compactHeader encodes a page header in Thrift's compact protocol: type,
// both sizes (body bytes), and either a data page header (V1, with nv
// values), a dictionary page header or a V2 header (nv values and rows); pad
// adds an unknown binary field of that many bytes, which readers skip.
func compactHeader(typ int32, body []byte, nv int32, pad int) []byte {
	zz := func(v int32) []byte { return binary.AppendUvarint(nil, uint64(uint32(v<<1)^uint32(v>>31))) }
	i32 := func(b []byte, delta byte, v int32) []byte { return append(append(b, delta<<4|5), zz(v)...) }
	b := i32(nil, 1, typ)
	b = i32(b, 1, int32(len(body)))
	b = i32(b, 1, int32(len(body)))
	last := byte(3)
	switch typ {
	case pageData:
		b = append(b, 2<<4|12) // field 5
		b = i32(b, 1, nv)
		b = i32(i32(i32(b, 1, 0), 1, 3), 1, 3)
		b, last = append(b, 0), 5
	case pageDictionary:
		b = append(b, 4<<4|12) // field 7
		b = i32(i32(b, 1, nv), 1, 0)
		b, last = append(b, 0), 7
	case pageDataV2:
		b = append(b, 5<<4|12) // field 8: values, nulls, rows, encoding, level lengths
		b = i32(i32(i32(i32(i32(i32(b, 1, nv), 1, 0), 1, nv), 1, 0), 1, 0), 1, 0)
		b, last = append(b, 0), 8
	}
	if pad > 0 {
		b = append(b, (9-last)<<4|8) // field 9, binary
		b = binary.AppendUvarint(b, uint64(pad))
		b = append(b, bytes.Repeat([]byte{'p'}, pad)...)
	}
	return append(append(b, 0), body...)
}

// walkChunk walks b as the one column chunk of a file, reading 64 bytes at
// a time at first: a flat int32 column, or (rep) a list<int32>, whose V1
// pages' rows the walk counts from their levels.
func walkChunk(b []byte, rep ...bool) (*builder, error) {
	bl := &builder{
		opts:  Options{Reader: memReader{"c": b}, HeaderWalk: true, WalkReadSize: 64}.fill(nil),
		files: []FileInfo{{Path: "c", Size: int64(len(b))}},
		metas: []fileMeta{{paths: []string{"c"}, maxRep: []int16{0}, rgRows: []int64{1 << 40}, chunks: []chunkRaw{{start: 0, end: int64(len(b))}}}},
		ncols: 1, base: []int{0, 1}, res: make([]chunkPages, 1),
	}
	if len(rep) > 0 && rep[0] {
		bl.metas[0].maxRep[0] = 1
		bl.sets = []schemaSet{{descr: []*schema.Column{rootOf(pqtest.ListSpellings[0].Node("c")).Column(0)}}}
		bl.fileSch = []int32{0}
	}
	defer bl.decs.close()
	return bl, bl.walkHeaders(context.Background())
}

// TestWalkSmallPages walks FuzzPageHeaderWalk's hand-made seeds: each is a
// whole chunk (so the fuzzer starts from inputs the walk accepts), and the
// page whose header outgrows the first read is found.
func TestWalkSmallPages(t *testing.T) {
	chunk := bytes.Join([][]byte{
		compactHeader(pageDictionary, []byte("dic"), 3, 0),
		compactHeader(pageData, []byte("ab"), 2, 0),
		compactHeader(pageData, []byte("c"), 1, 80),
		compactHeader(pageData, []byte("de"), 2, 0),
	}, nil)
	if len(chunk) > maxWalkInput {
		t.Fatalf("seed of %d bytes, over maxWalkInput", len(chunk))
	}
	bl, err := walkChunk(chunk)
	if err != nil {
		t.Fatal(err)
	}
	res := bl.res[0]
	if res.dictOff != 0 || res.dictSize <= 0 || len(res.pages) != 3 || res.pages[2].off+int64(res.pages[2].size) != int64(len(chunk)) {
		t.Fatalf("dictionary %d bytes at %d, pages %+v of a %d-byte chunk", res.dictSize, res.dictOff, res.pages, len(chunk))
	}
	for i, n := range []int64{2, 1, 2} {
		if res.pages[i].n != n {
			t.Fatalf("page %d holds %d rows, want %d", i, res.pages[i].n, n)
		}
	}
}

// FuzzPageHeaderWalk walks fuzzed column chunk bytes; whatever the parser
// accepts as a header, Thrift's own compact decoder must skip the same
// bytes as one struct.
func FuzzPageHeaderWalk(f *testing.F) {
	for _, fx := range fixtures {
		b, err := os.ReadFile(fx)
		if err != nil {
			f.Fatal(err)
		}
		// the first pages of the file, from the first header, cut to
		// maxWalkInput by the target
		f.Add(b[4:min(len(b), 4+8192)])
	}
	f.Add([]byte{0x15, 0x00, 0x15, 0x02, 0x15, 0x02, 0x00, 0xff})
	// whole chunks of small pages: dictionary and V1 pages, one with a
	// header longer than WalkReadSize; V2 pages
	f.Add(bytes.Join([][]byte{
		compactHeader(pageDictionary, []byte("dic"), 3, 0),
		compactHeader(pageData, []byte("ab"), 2, 0),
		compactHeader(pageData, []byte("c"), 1, 80),
		compactHeader(pageData, []byte("de"), 2, 0),
	}, nil))
	f.Add(bytes.Join([][]byte{
		compactHeader(pageDataV2, []byte("abc"), 3, 0),
		compactHeader(pageDataV2, []byte("d"), 1, 0),
	}, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		b = b[:min(len(b), maxWalkInput)]
		h, err := parsePageHeader(b)
		if err == nil {
			if h.HeaderLen <= 0 || h.HeaderLen > len(b) {
				t.Fatalf("header length %d of %d bytes", h.HeaderLen, len(b))
			}
			tr := thrift.NewTMemoryBufferLen(len(b))
			tr.Write(b)
			p := thrift.NewTCompactProtocolConf(tr, nil)
			if err := p.Skip(context.Background(), thrift.STRUCT); err == nil {
				if used := len(b) - tr.Len(); used != h.HeaderLen {
					t.Fatalf("parser took %d bytes, thrift %d", h.HeaderLen, used)
				}
			}
		}
		// and the walk over the bytes as one column chunk, of a list
		// column too (its V1 pages' rows counted from their levels)
		if bl, err := walkChunk(b, true); err == nil {
			for _, p := range bl.res[0].pages {
				if p.off+int64(p.size) > int64(len(b)) || p.n < -1 {
					t.Fatalf("list walk: page %+v of a %d-byte chunk", p, len(b))
				}
			}
		}
		bl, err := walkChunk(b)
		if err != nil {
			return
		}
		end := int64(0)
		for _, p := range bl.res[0].pages {
			if p.off < end || p.off+int64(p.size) > int64(len(b)) {
				t.Fatalf("page %+v overlaps %d or leaves %d bytes", p, end, len(b))
			}
			end = p.off + int64(p.size)
		}
	})
}

// TestWriteFixtures regenerates testdata/ when PAGEFEED_WRITE_FIXTURES is
// set; otherwise it checks that the fixtures are still what the generator
// writes (the generator is deterministic).
func TestWriteFixtures(t *testing.T) {
	write := os.Getenv("PAGEFEED_WRITE_FIXTURES") != ""
	dir := t.TempDir()
	cfgs := []gen.Config{
		{Files: 1, RowsPerFile: 60, PageSize: 512, MeanTokens: 8, PageIndex: true, Dictionary: true, Codec: "snappy", Seed: 1, Prefix: "a"},
		{Files: 1, RowsPerFile: 60, PageSize: 512, MeanTokens: 8, PageVersion: 2, Codec: "zstd", Seed: 2, Prefix: "b"},
	}
	for i, c := range cfgs {
		c.Dir = dir
		res, err := gen.Run(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(res.Files[0])
		if write {
			os.WriteFile(fixtures[i], got, 0o644)
			continue
		}
		want, err := os.ReadFile(fixtures[i])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what the generator writes now", fixtures[i])
		}
	}
	if write {
		ix, err := Build(context.Background(), fixtures, Options{Sidecar: "testdata/fixtures.idx", Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("fixtures: %+v", ix.Stats())
		// seed corpora in testdata/fuzz
		seed := func(name string, b []byte) {
			d := filepath.Join("testdata", "fuzz", name)
			os.MkdirAll(d, 0o755)
			os.WriteFile(filepath.Join(d, fmt.Sprintf("seed-%x", crcOf(b))), []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)), 0o644)
		}
		footer := func(b []byte) []byte {
			n := len(b)
			flen := int(binary.LittleEndian.Uint32(b[n-8:]))
			return b[n-8-flen : n-8]
		}
		for _, fx := range fixtures {
			b, _ := os.ReadFile(fx)
			seed("FuzzFooter", footer(b))
		}
		// Offset indexes: the fixtures' own, parquetjs's (first rows all
		// 0) and every contradiction TestOffsetIndexContradictions checks.
		for _, fx := range append([]string{fixtures[0]}, parquetjsFixtures...) {
			b, _ := os.ReadFile(fx)
			md, _, _ := footerTail("x", int64(len(b)), b)
			for c := 0; c < md.NumColumns(); c++ {
				if loc, ok := md.RowGroup(0).OffsetIndexLocation(c); ok {
					seed("FuzzOffsetIndex", b[loc.Offset:loc.Offset+int64(loc.Length)])
				}
			}
		}
		for _, c := range offsetIndexCases {
			seed("FuzzOffsetIndex", appendOffsetIndex(nil, c.locs))
		}
		// Footers of legacy list and map schemas, and of groups that
		// claim a LIST or MAP they do not hold.
		for _, fx := range parquetjsFixtures {
			b, _ := os.ReadFile(fx)
			seed("FuzzFooter", footer(b))
		}
		for i, sp := range pqtest.ListSpellings {
			p := filepath.Join(dir, fmt.Sprintf("spelled%d.parquet", i))
			writeSpelled(t, p, sp, 20, true)
			b, _ := os.ReadFile(p)
			seed("FuzzFooter", footer(b))
		}
		for i, root := range []*schema.GroupNode{
			grp("schema", req, listOf("a", opt, i32("x", rpt), i32("y", rpt))),
			grp("schema", req, listOf("a", opt, i32("x", opt))),
			grp("schema", req, conv("m", opt, schema.ConvertedTypes.MapKeyValue, grp("map", rpt, str("key", req), i32("value", opt)))),
			grp("schema", req, listOf("points", opt, grp("array", rpt, i32("x", opt)))),
		} {
			p := filepath.Join(dir, fmt.Sprintf("odd%d.parquet", i))
			writeLeaves(t, p, root, 10)
			b, _ := os.ReadFile(p)
			seed("FuzzFooter", footer(b))
		}
	}
}
