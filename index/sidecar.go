package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"golang.org/x/sys/unix"
)

// Sidecar format, little endian:
//
//	"PFIX" | version u32 | body | crc32c(everything before) u32
//
// body: the key (requested columns, header-walk flag, every file's path,
// size, mtime, footer hash and length, declaration number and row
// counts) then the index's arrays.
// Strings are a uvarint length and bytes. Any change to the layout bumps
// sidecarVersion.
const (
	sidecarMagic   = "PFIX"
	sidecarVersion = 3
	sidecarPrefix  = ".pagefeed-"
)

// footerSum hashes the footer at the end of tail (the file's last bytes,
// holding at least the whole footer and its 8-byte trailer): the sidecar's
// staleness check compares it, besides path, size and mtime, so that a file
// rewritten in place with its size and mtime kept is indexed again.
func footerSum(tail []byte) uint64 {
	n := len(tail)
	flen := int(le32(tail[n-8:]))
	h := fnv.New64a()
	h.Write(tail[n-8-flen:])
	return h.Sum64()
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// SidecarPath is the default sidecar of a dataset: a hidden file next to its
// first file, named after a hash of the file list and the projection, so
// that different projections keep different sidecars.
func SidecarPath(files []string, columns []string) string {
	h := fnv.New64a()
	for _, f := range files {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	h.Write([]byte{1})
	for _, c := range columns {
		h.Write([]byte(c))
		h.Write([]byte{0})
	}
	dir := "."
	if len(files) > 0 {
		dir = filepath.Dir(files[0])
	}
	return filepath.Join(dir, fmt.Sprintf("%s%016x.idx", sidecarPrefix, h.Sum64()))
}

type enc struct{ b []byte }

func (e *enc) u8(v uint8)   { e.b = append(e.b, v) }
func (e *enc) u32(v uint32) { e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *enc) i64(v int64)  { e.b = binary.LittleEndian.AppendUint64(e.b, uint64(v)) }
func (e *enc) uv(v uint64)  { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) str(s string) { e.uv(uint64(len(s))); e.b = append(e.b, s...) }
func (e *enc) u32s(a []uint32) {
	for _, v := range a {
		e.u32(v)
	}
}

// encodeSidecar serialises ix.
func encodeSidecar(ix *Index) []byte {
	var np int64
	for k := range ix.cols {
		np += int64(len(ix.cols[k].off))
	}
	e := enc{b: make([]byte, 0, 256+np*12+int64(len(ix.rgs))*int64(8+len(ix.cols)*24)+int64(len(ix.files))*64)}
	e.b = append(e.b, sidecarMagic...)
	e.u32(sidecarVersion)
	e.uv(uint64(len(ix.columns)))
	for _, c := range ix.columns {
		e.str(c)
	}
	if ix.walk {
		e.u8(1)
	} else {
		e.u8(0)
	}
	e.uv(uint64(len(ix.files)))
	for i, f := range ix.files {
		e.str(f.Path)
		e.i64(f.Size)
		e.i64(f.ModTime.UnixNano())
		e.i64(int64(ix.footSum[i]))
		e.u32(ix.footLen[i])
		e.uv(uint64(ix.fileSch[i]))
		e.uv(uint64(f.NumRowGroups))
	}
	e.uv(uint64(len(ix.rgs)))
	for _, rg := range ix.rgs {
		e.i64(rg.numRows)
	}
	e.uv(uint64(len(ix.cols)))
	for k := range ix.cols {
		col := &ix.cols[k]
		e.str(col.info.Path)
		for c, m := range col.chunks {
			e.i64(m.base)
			e.i64(m.dictOff)
			e.u32(uint32(m.dictSize))
			e.u8(uint8(m.codec))
			e.u8(uint8(m.source))
			e.u32(uint32(col.chunkPage[c+1] - col.chunkPage[c]))
		}
		e.u32s(col.off)
		e.u32s(col.size)
		e.u32s(col.row)
		if col.mid == nil {
			e.u8(0)
		} else {
			e.u8(1)
			for _, w := range col.mid {
				e.i64(int64(w))
			}
		}
	}
	e.u32(crc32.Checksum(e.b, castagnoli))
	return e.b
}

// writeSidecar writes ix to path through a temporary file renamed over it.
// The file is created with mode 0666 less the process's umask, as any
// file a program writes, and its directory is created first (mode 0700
// for the user's cache directory, as XDG asks).
func writeSidecar(path string, ix *Index, mkdir bool) error {
	if mkdir {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
	}
	b := encodeSidecar(ix)
	var tmp *os.File
	var err error
	for try := 0; try < 100; try++ {
		name := fmt.Sprintf("%s.tmp%08x", path, rand.Uint32())
		tmp, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// readSidecarFile reads the sidecar at path: opened without following a
// symbolic link and without blocking (a FIFO at its name would block an
// open for reading), and read only when it is a regular file of at most
// limit bytes.
func readSidecarFile(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("%w: %s is a symbolic link", ErrSidecar, path)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file (%s)", ErrSidecar, path, st.Mode().Type())
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%w: %s has %d bytes, more than a sidecar of this dataset can need (%d)", ErrSidecar, path, st.Size(), limit)
	}
	b := make([]byte, st.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrSidecar, path, err)
	}
	return b, nil
}

// sidecarLimit bounds the size of a sidecar for files: its page entries
// (12 bytes) and chunk entries (26 bytes per column) each stand for at
// least as many bytes of page headers and footer in the files, and its
// per-file entries for a path and 34 bytes.
func sidecarLimit(files []FileInfo, columns []string) int64 {
	n := int64(1 << 20)
	for _, c := range columns {
		n += int64(len(c)) + 10
	}
	for _, f := range files {
		n += 64 + int64(len(f.Path)) + 4*max(f.Size, 0)
	}
	return n
}

// sidecarPaths returns where Build looks for the sidecar of the dataset
// names (in order, the first that exists is read) and where it writes one.
//
// Options.Sidecar names the file; else Options.SidecarDir holds it; else
// it lies next to the dataset (SidecarPath), unless the dataset's
// directory is not writable (a shared, read-only dataset): then it is kept
// in the user's cache directory ($XDG_CACHE_HOME/pagefeed, by default
// ~/.cache/pagefeed), and one next to the dataset is read when the cache
// holds none. Sidecars outside the dataset are named by the files'
// absolute paths. mkdir says to create the written one's directory.
func sidecarPaths(names []string, opts Options) (look []string, write string, mkdir bool) {
	if opts.Sidecar != "" {
		return []string{opts.Sidecar}, opts.Sidecar, false
	}
	elsewhere := func(dir string) string {
		abs := make([]string, len(names))
		for i, n := range names {
			if a, err := filepath.Abs(n); err == nil {
				n = a
			}
			abs[i] = n
		}
		return filepath.Join(dir, filepath.Base(SidecarPath(abs, opts.Columns)))
	}
	if opts.SidecarDir != "" {
		p := elsewhere(opts.SidecarDir)
		return []string{p}, p, true
	}
	next := SidecarPath(names, opts.Columns)
	if dirWritable(filepath.Dir(next)) {
		return []string{next}, next, false
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return []string{next}, next, false
	}
	p := elsewhere(filepath.Join(cache, "pagefeed"))
	return []string{p, next}, p, true
}

// dirWritable reports whether files can be created in dir. A variable for
// tests, which run as root where permissions do not stop writes.
var dirWritable = func(dir string) bool {
	return unix.Access(dir, unix.W_OK) == nil
}

type dec struct {
	b   []byte
	err error
}

func (d *dec) need(n uint64) bool {
	if d.err != nil {
		return false
	}
	if n > uint64(len(d.b)) {
		d.err = errors.New("truncated")
		return false
	}
	return true
}

func (d *dec) u8() uint8 {
	if !d.need(1) {
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *dec) u32() uint32 {
	if !d.need(4) {
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *dec) i64() int64 {
	if !d.need(8) {
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return int64(v)
}

func (d *dec) uv() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errors.New("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a count of items of at least min bytes each, checked against
// what is left so that a bad count cannot allocate without bound.
func (d *dec) count(minBytes uint64) int {
	n := d.uv()
	if d.err == nil && n > uint64(len(d.b))/max(minBytes, 1) {
		d.err = fmt.Errorf("count %d exceeds the data", n)
		return 0
	}
	return int(n)
}

func (d *dec) str() string {
	n := d.uv()
	if !d.need(n) {
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *dec) u32s(n int64) []uint32 {
	if !d.need(uint64(n) * 4) {
		return nil
	}
	a := make([]uint32, n)
	if nativeLittle && n > 0 {
		// the file's layout is the memory's: one copy
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&a[0])), 4*n), d.b)
	} else {
		for i := range a {
			a[i] = binary.LittleEndian.Uint32(d.b[4*i:])
		}
	}
	d.b = d.b[4*n:]
	return a
}

var nativeLittle = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// decodeSidecar parses and checks a sidecar. The result has every array
// and prefix sum of an Index, and FileInfos with path, size, mtime and
// counts; column descriptors are left for the caller. It never panics:
// every count is checked against the bytes left, and every page against its
// file's size and its row group's rows.
func decodeSidecar(b []byte) (*Index, error) {
	if len(b) < 12 || string(b[:4]) != sidecarMagic {
		return nil, fmt.Errorf("%w: no sidecar magic", ErrSidecar)
	}
	if v := binary.LittleEndian.Uint32(b[4:]); v != sidecarVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrSidecar, v, sidecarVersion)
	}
	body := b[:len(b)-4]
	if want, got := binary.LittleEndian.Uint32(b[len(b)-4:]), crc32.Checksum(body, castagnoli); want != got {
		return nil, fmt.Errorf("%w: checksum %08x, want %08x", ErrSidecar, got, want)
	}
	d := dec{b: body[8:]}
	ix := &Index{}
	for n := d.count(1); n > 0; n-- {
		ix.columns = append(ix.columns, d.str())
	}
	ix.walk = d.u8() == 1
	if err := decodeSidecarFiles(&d, ix); err != nil {
		return nil, err
	}
	rows, err := decodeSidecarRowGroups(&d, ix)
	if err != nil {
		return nil, err
	}
	ncols := d.count(1)
	ix.cols = make([]column, ncols)
	for k := range ix.cols {
		if err := decodeSidecarColumn(&d, ix, k); err != nil {
			return nil, err
		}
	}
	if d.err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSidecar, d.err)
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrSidecar, len(d.b))
	}
	for k := range ix.cols {
		for c := range ix.cols[k].chunks {
			ix.stats.count(ix.cols[k].chunks[c].source)
		}
	}
	nrg := len(ix.rgs)
	ix.stats.Files = len(ix.files)
	ix.stats.RowGroups = nrg
	ix.stats.ColumnChunks = nrg * ncols
	ix.stats.Rows = rows
	return ix, nil
}

// decodeSidecarFiles decodes the files section into ix: each file's path,
// size, mtime, footer checksum and length, declaration number (in order of
// first appearance) and row group count, and the row groups' prefix sum
// (fileRG).
func decodeSidecarFiles(d *dec, ix *Index) error {
	nf := d.count(31)
	ix.files = make([]FileInfo, nf)
	ix.footSum = make([]uint64, nf)
	ix.footLen = make([]uint32, nf)
	ix.fileSch = make([]int32, nf)
	nsch := uint64(0)
	ix.fileRG = make([]int32, nf+1)
	for i := range ix.files {
		f := &ix.files[i]
		f.Path = d.str()
		f.Size = d.i64()
		f.ModTime = time.Unix(0, d.i64())
		ix.footSum[i] = uint64(d.i64())
		ix.footLen[i] = d.u32()
		// declarations are numbered in order of first appearance
		sch := d.uv()
		if sch > nsch || int64(ix.footLen[i]) > f.Size-12 {
			return fmt.Errorf("%w: file %d: footer of %d bytes, declaration %d", ErrSidecar, i, ix.footLen[i], sch)
		}
		ix.fileSch[i] = int32(sch)
		nsch = max(nsch, sch+1)
		nrg := d.uv()
		if nrg > math.MaxInt32-uint64(ix.fileRG[i]) {
			return fmt.Errorf("%w: row group count", ErrSidecar)
		}
		f.NumRowGroups = int(nrg)
		ix.fileRG[i+1] = ix.fileRG[i] + int32(nrg)
	}
	return nil
}

// decodeSidecarRowGroups decodes the row groups section into ix (each row
// group's rows, and the files' first rows, first chunks and row counts),
// checked against the files' row group counts, and returns the rows in all.
func decodeSidecarRowGroups(d *dec, ix *Index) (int64, error) {
	nf := len(ix.files)
	nrg := d.count(8)
	if d.err == nil && nrg != int(ix.fileRG[nf]) {
		return 0, fmt.Errorf("%w: %d row groups, files say %d", ErrSidecar, nrg, ix.fileRG[nf])
	}
	ix.rgs = make([]rgInfo, nrg)
	var rows int64
	for f := 0; f < nf && d.err == nil; f++ {
		ix.files[f].FirstRow = rows
		ix.files[f].FirstChunk = int(ix.fileRG[f])
		var inFile int64
		for c := ix.fileRG[f]; c < ix.fileRG[f+1]; c++ {
			n := d.i64()
			if n < 0 || n > math.MaxInt64/4-rows {
				return 0, fmt.Errorf("%w: row count %d", ErrSidecar, n)
			}
			ix.rgs[c] = rgInfo{file: int32(f), rg: c - ix.fileRG[f], firstRow: rows, numRows: n, fileRowBase: inFile}
			rows += n
			inFile += n
		}
		ix.files[f].NumRows = inFile
	}
	return rows, nil
}

// decodeSidecarColumn decodes column k's section into ix.cols[k]: its
// chunks and its pages' offsets, sizes and first rows, every page checked
// to lie within its file and its first rows to rise within its row group's.
func decodeSidecarColumn(d *dec, ix *Index, k int) error {
	nf, nrg := len(ix.files), len(ix.rgs)
	col := &ix.cols[k]
	col.info.Path = d.str()
	col.chunks = make([]chunkMeta, nrg)
	col.chunkPage = make([]int64, nrg+1)
	col.filePage = make([]int64, nf+1)
	for c := range col.chunks {
		m := &col.chunks[c]
		m.base = d.i64()
		m.dictOff = d.i64()
		m.dictSize = int32(d.u32())
		m.codec = compress.Compression(d.u8())
		m.source = Source(d.u8())
		np := int64(d.u32())
		if d.err != nil {
			return fmt.Errorf("%w: %v", ErrSidecar, d.err)
		}
		if np*12 > int64(len(d.b)) {
			return fmt.Errorf("%w: page count %d exceeds the data", ErrSidecar, np)
		}
		col.chunkPage[c+1] = col.chunkPage[c] + np
	}
	for f := 0; f < nf; f++ {
		col.filePage[f+1] = col.chunkPage[ix.fileRG[f+1]]
	}
	np := col.chunkPage[nrg]
	col.off = d.u32s(np)
	col.size = d.u32s(np)
	col.row = d.u32s(np)
	switch d.u8() {
	case 0:
	case 1:
		nw := (np + 63) / 64
		if !d.need(uint64(nw) * 8) {
			break
		}
		col.mid = make([]uint64, nw)
		for i := range col.mid {
			col.mid[i] = uint64(d.i64())
		}
	default:
		d.err = errors.New("bad mid-row flag")
	}
	if d.err != nil {
		return fmt.Errorf("%w: %v", ErrSidecar, d.err)
	}
	for c := range col.chunks {
		m := &col.chunks[c]
		size := ix.files[ix.rgs[c].file].Size
		if m.base < 0 || m.base > size || m.dictSize < 0 || m.dictOff < 0 || m.dictOff+int64(m.dictSize) > size || m.source > FromBadOffsetIndex {
			return fmt.Errorf("%w: chunk %d of column %d out of its file", ErrSidecar, c, k)
		}
		for g := col.chunkPage[c]; g < col.chunkPage[c+1]; g++ {
			if m.base+int64(col.off[g])+int64(col.size[g]) > size || col.size[g] > math.MaxInt32 {
				return fmt.Errorf("%w: page %d of column %d out of its file", ErrSidecar, g, k)
			}
			if r := col.row[g]; int64(r) > ix.rgs[c].numRows || (g > col.chunkPage[c] && r < col.row[g-1]) || (g == col.chunkPage[c] && r != 0) {
				return fmt.Errorf("%w: page %d of column %d has bad first row %d", ErrSidecar, g, k, r)
			}
			if g == col.chunkPage[c] && col.midRow(g) {
				return fmt.Errorf("%w: page %d of column %d starts its chunk inside a row", ErrSidecar, g, k)
			}
		}
	}
	ix.stats.Pages += np
	return nil
}

// loadSidecar reads the sidecar at path and checks it is sound and for
// this projection. status is "written" when there is none and "rebuilt"
// when there is one that cannot be used (err says why). Whether its files
// are unchanged is the builder's check (reuseFrom, checkReuse), which
// reads every footer anyway, for the descriptors.
func loadSidecar(path string, files []FileInfo, opts Options) (ix *Index, status string, err error) {
	b, err := readSidecarFile(path, sidecarLimit(files, opts.Columns))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "written", err
	}
	if err != nil {
		return nil, "rebuilt", err
	}
	ix, err = decodeSidecar(b)
	if err != nil {
		return nil, "rebuilt", err
	}
	if !equalStrings(ix.columns, opts.Columns) || ix.walk != opts.HeaderWalk {
		return nil, "rebuilt", fmt.Errorf("%w: written for another projection", ErrSidecar)
	}
	return ix, "", nil
}

func colPaths(ix *Index) []string {
	out := make([]string, len(ix.cols))
	for k := range ix.cols {
		out[k] = ix.cols[k].info.Path
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func crcOf(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
