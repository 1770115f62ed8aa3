package index

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/pagefeed/pagefeed/codec"
	"github.com/pagefeed/pagefeed/engine"
	"golang.org/x/sys/unix"
)

// Options configures Build. Zero fields take the defaults of fill.
type Options struct {
	// Columns is the projection: dotted leaf paths ("input_ids.list.element")
	// or top-level field names ("input_ids", meaning all its leaves). Empty
	// means every leaf column.
	Columns []string
	// Reader does the batched reads; Build never starts an engine of its
	// own. Default: an engine.PreadReader with Parallelism goroutines.
	// Callers that index many files pass engine.OpenBatchReader's reader
	// (io_uring) or a RangeReader over their own engine.
	Reader engine.BatchReader
	// Sidecar is the sidecar file; default SidecarPath(paths, Columns).
	Sidecar string
	// NoSidecar neither reads nor writes a sidecar.
	NoSidecar bool
	// Logf gets notices (skipped files, sidecar rebuilds); default stderr.
	Logf func(format string, args ...any)
	// Parallelism bounds the reads in flight of the default reader; default
	// max(8, 2*GOMAXPROCS). Callers starting an engine.OpenBatchReader
	// for Build pass it the same figure.
	Parallelism int
	// HeaderWalk ignores offset indexes and walks page headers everywhere
	// (tests, and files whose offset indexes are suspect).
	HeaderWalk bool
	// WalkReadSize is the read issued at each expected page header during
	// a header walk; default 64 KiB. Larger headers are re-read whole.
	WalkReadSize int
	// MaxOpenFiles bounds the files Build asks its reader to hold open at
	// once. A reader keeps every file of a ReadBatch call open until the
	// call returns, so each pass (footers, offset indexes, every round of
	// a header walk) hands the reader consecutive chunks of its batch,
	// each naming at most MaxOpenFiles files and read with the reader's
	// full parallelism; the index does not depend on it. Default: a
	// quarter of the soft RLIMIT_NOFILE (256 under 1024), at least 8,
	// leaving the rest to the caller (rinas's file cache takes half).
	// The engine's readers hold one descriptor per file.
	MaxOpenFiles int
}

const (
	defaultWalkRead = 64 << 10
	maxHeaderRead   = 16 << 20                     // a page header larger than this is corrupt
	coalesceGap     = 64 << 10                     // offset indexes closer than this share a read
	coalesceMax     = engine.ReaderSlotSize - 8192 // one read of OpenBatchReader's engine
)

func (o Options) fill(paths []string) Options {
	if o.Parallelism <= 0 {
		o.Parallelism = max(8, 2*runtime.GOMAXPROCS(0))
	}
	if o.Logf == nil {
		o.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, "index: "+format+"\n", args...) }
	}
	if o.WalkReadSize <= 0 {
		o.WalkReadSize = defaultWalkRead
	}
	if o.MaxOpenFiles <= 0 {
		o.MaxOpenFiles = nofileBudget()
	}
	return o
}

// nofileBudget is MaxOpenFiles' default: a quarter of RLIMIT_NOFILE's soft
// limit (the Go runtime raises it to the hard limit at start), at least 8.
// It is read at each Build, so that a limit lowered since start counts.
func nofileBudget() int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 256
	}
	return int(min(max(rl.Cur/4, 8), 1<<20))
}

// footerTailRead is the first read at the end of each file: most footers fit
// in it. A variable for tests.
var footerTailRead = 64 << 10

// Build indexes the Parquet files named by paths (files, directories walked
// recursively, or glob patterns) for the projection opts.Columns.
//
// Files named explicitly must be Parquet; in directories, files not named
// *.parquet, *.parq or *.pq are skipped with a notice. Errors name the file
// (and the column) and wrap ErrCorrupt, ErrNotParquet, ErrUnsupported,
// ErrColumn or ErrEmpty; Build never panics on bad input.
//
// Build names at most opts.MaxOpenFiles files in any one call to its
// reader, so any number of files indexes under a low RLIMIT_NOFILE.
func Build(ctx context.Context, paths []string, opts Options) (*Index, error) {
	start := time.Now()
	opts = opts.fill(paths)
	userReader := opts.Reader != nil
	files, err := expandPaths(paths, opts.Logf)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(files))
	for i := range files {
		names[i] = files[i].Path
	}

	sidecar := "miss"
	scPath := ""
	var old *Index // a stale sidecar's index, for the files that did not change
	if !opts.NoSidecar {
		scPath = opts.Sidecar
		if scPath == "" {
			scPath = SidecarPath(names, opts.Columns)
		}
		lopts := opts
		if !userReader {
			// one footer to read: not worth starting an engine
			lopts.Reader = &engine.PreadReader{Parallelism: 1}
		}
		ix, status, err := loadSidecar(ctx, scPath, files, lopts)
		if err != nil && ix != nil {
			old = ix
		}
		if err == nil {
			ix.stats.BuildTime = time.Since(start)
			ix.stats.Sidecar = "hit"
			ix.stats.SidecarPath = scPath
			return ix, nil
		}
		sidecar = status // "written" when absent, "rebuilt" when unusable
		if status == "rebuilt" {
			opts.Logf("sidecar %s not used, rebuilding: %v", scPath, err)
		}
	}

	if !userReader {
		opts.Reader = &engine.PreadReader{Parallelism: opts.Parallelism}
	}
	b := &builder{opts: opts, files: files}
	b.reuseFrom(old)
	ix, err := b.build(ctx)
	if err != nil {
		return nil, err
	}
	if scPath != "" {
		if err := writeSidecar(scPath, ix); err != nil {
			opts.Logf("sidecar %s not written: %v", scPath, err)
			sidecar = "miss"
		}
	}
	ix.stats.Sidecar = sidecar
	ix.stats.SidecarPath = scPath
	ix.stats.BuildTime = time.Since(start)
	return ix, nil
}

// isParquetName reports whether a directory entry is taken as Parquet.
func isParquetName(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	return ext == ".parquet" || ext == ".parq" || ext == ".pq"
}

// expandPaths lists the files named by paths, with their size and mtime.
func expandPaths(paths []string, logf func(string, ...any)) ([]FileInfo, error) {
	var out []FileInfo
	seen := map[string]bool{}
	add := func(p string, st fs.FileInfo) error {
		if seen[p] {
			return nil
		}
		if st == nil {
			var err error
			if st, err = os.Stat(p); err != nil {
				return &Error{Op: "stat", Path: p, Off: -1, Err: err}
			}
		}
		seen[p] = true
		out = append(out, FileInfo{Path: p, Size: st.Size(), ModTime: st.ModTime()})
		return nil
	}
	walk := func(dir string) error {
		return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return &Error{Op: "walk", Path: p, Off: -1, Err: err}
			}
			name := d.Name()
			if d.IsDir() {
				if p != dir && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
					return filepath.SkipDir
				}
				return nil
			}
			switch {
			case strings.HasPrefix(name, sidecarPrefix):
				// our own sidecars
			case !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0:
				logf("skipping %s: not a regular file", p)
			case !isParquetName(name):
				logf("skipping %s: not a parquet file name", p)
			default:
				return add(p, nil)
			}
			return nil
		})
	}
	for _, p := range paths {
		if strings.ContainsAny(p, "*?[") {
			m, err := filepath.Glob(p)
			if err != nil {
				return nil, &Error{Op: "glob", Path: p, Off: -1, Err: err}
			}
			if len(m) == 0 {
				return nil, &Error{Op: "glob", Path: p, Off: -1, Err: fmt.Errorf("%w: pattern matches nothing", ErrEmpty)}
			}
			for _, q := range m {
				st, err := os.Stat(q)
				if err != nil {
					return nil, &Error{Op: "stat", Path: q, Off: -1, Err: err}
				}
				if st.IsDir() {
					if err := walk(q); err != nil {
						return nil, err
					}
				} else if err := add(q, st); err != nil {
					return nil, err
				}
			}
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, &Error{Op: "stat", Path: p, Off: -1, Err: err}
		}
		if st.IsDir() {
			if err := walk(p); err != nil {
				return nil, err
			}
			continue
		}
		if err := add(p, st); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, &Error{Op: "list", Path: strings.Join(paths, " "), Off: -1, Err: ErrEmpty}
	}
	return out, nil
}

// chunkRaw is what a footer says about one projected column chunk.
type chunkRaw struct {
	codec     compress.Compression
	start     int64 // first byte of the chunk (dictionary page or first data page)
	end       int64
	hasDict   bool
	dataOff   int64
	numValues int64
	oiOff     int64
	oiLen     int32 // 0: no offset index
}

// fileMeta is what the index keeps of one footer.
type fileMeta struct {
	schema  *schema.Schema // kept for the first file only
	paths   []string       // resolved projection
	leaves  []int
	rgRows  []int64
	chunks  []chunkRaw // row group major: chunks[r*ncols+k]
	maxRep  []int16
	numRows int64
}

// chunkPages is the located pages of one (column, chunk).
type chunkPages struct {
	pages    []tmpPage
	dictOff  int64
	dictSize int32
	source   Source
}

type tmpPage struct {
	off  int64
	size uint32
	row  uint32
}

type builder struct {
	opts    Options
	old     *Index // stale sidecar being reused, or nil
	oldFile []int  // per file: its number in old, or -1 to index afresh
	reused  int
	files   []FileInfo
	metas   []fileMeta
	ncols   int
	res     []chunkPages // per file, row group, column: flattened via base[f]
	base    []int        // first res index of file f
}

// footerTail decodes a footer from the last len(tail) bytes of a file of
// size size. need > 0 asks for a read of the last need bytes instead.
func footerTail(path string, size int64, tail []byte) (md *metadata.FileMetaData, need int, err error) {
	if size < 12 || len(tail) < 8 {
		return nil, 0, &Error{Op: "footer", Path: path, Off: 0, Err: fmt.Errorf("%w: %d bytes is too small", ErrNotParquet, size)}
	}
	n := len(tail)
	switch string(tail[n-4:]) {
	case "PAR1":
	case "PARE":
		return nil, 0, &Error{Op: "footer", Path: path, Off: size - 4, Err: fmt.Errorf("%w: encrypted footer", ErrUnsupported)}
	default:
		return nil, 0, &Error{Op: "footer", Path: path, Off: size - 4, Err: fmt.Errorf("%w: no PAR1 magic at end", ErrNotParquet)}
	}
	if int64(n) == size && string(tail[:4]) != "PAR1" {
		return nil, 0, &Error{Op: "footer", Path: path, Off: 0, Err: fmt.Errorf("%w: no PAR1 magic at start", ErrNotParquet)}
	}
	flen := int64(le32(tail[n-8:]))
	if flen > size-12 {
		return nil, 0, corrupt("footer", path, "", size-8, "footer length %d beyond file size %d", flen, size)
	}
	if flen+8 > int64(n) {
		return nil, int(flen + 8), nil
	}
	off := size - 8 - flen
	md, err = parseFileMetaData(tail[int64(n)-8-flen : n-8])
	if err != nil {
		return nil, 0, &Error{Op: "footer", Path: path, Off: off, Err: fmt.Errorf("%w: %v", ErrCorrupt, err)}
	}
	return md, 0, nil
}

// parseFileMetaData is metadata.NewFileMetaData with panics turned into
// errors: arrow-go's thrift and schema code panics on some bad input.
func parseFileMetaData(b []byte) (md *metadata.FileMetaData, err error) {
	defer func() {
		if r := recover(); r != nil {
			md, err = nil, fmt.Errorf("footer does not parse: %v", r)
		}
	}()
	// copy: the metadata outlives the read buffer
	return metadata.NewFileMetaData(append([]byte(nil), b...), nil)
}

// parseOffsetIndex is metadata.NewOffsetIndex with its panics recovered.
func parseOffsetIndex(b []byte) (locs []*metadata.PageLocation, err error) {
	defer func() {
		if r := recover(); r != nil {
			locs, err = nil, fmt.Errorf("offset index does not parse: %v", r)
		}
	}()
	oi := metadata.NewOffsetIndex(b, nil, nil)
	if oi == nil {
		return nil, errors.New("offset index does not parse")
	}
	return oi.GetPageLocations(), nil
}

// resolveColumns maps a projection to leaf indexes of sc.
func resolveColumns(sc *schema.Schema, names []string) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	add := func(i int) {
		if !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	if len(names) == 0 {
		for i := 0; i < sc.NumColumns(); i++ {
			add(i)
		}
		return out, nil
	}
	for _, name := range names {
		if i := sc.ColumnIndexByName(name); i >= 0 {
			add(i)
			continue
		}
		found := false
		for i := 0; i < sc.NumColumns(); i++ {
			if strings.HasPrefix(sc.Column(i).Path(), name+".") {
				add(i)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: no column %q in schema", ErrColumn, name)
		}
	}
	return out, nil
}

// extract pulls what the index needs out of a footer. Bad metadata can make
// arrow-go's accessors panic; those become corruption errors.
func extract(path string, size int64, md *metadata.FileMetaData, names []string) (fm fileMeta, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = corrupt("footer", path, "", -1, "bad metadata: %v", r)
		}
	}()
	sc := md.Schema
	if sc == nil {
		return fm, corrupt("footer", path, "", -1, "no schema")
	}
	leaves, err := resolveColumns(sc, names)
	if err != nil {
		return fm, &Error{Op: "schema", Path: path, Off: -1, Err: err}
	}
	fm.schema = sc
	fm.leaves = leaves
	for _, l := range leaves {
		fm.paths = append(fm.paths, sc.Column(l).Path())
		fm.maxRep = append(fm.maxRep, sc.Column(l).MaxRepetitionLevel())
	}
	nrg := md.NumRowGroups()
	fm.rgRows = make([]int64, nrg)
	fm.chunks = make([]chunkRaw, 0, nrg*len(leaves))
	limit := size - 8 - int64(md.Size())
	for r := 0; r < nrg; r++ {
		rg := md.RowGroup(r)
		rows := rg.NumRows()
		if rows < 0 {
			return fm, corrupt("footer", path, "", -1, "row group %d has %d rows", r, rows)
		}
		fm.rgRows[r] = rows
		fm.numRows += rows
		if rg.NumColumns() != sc.NumColumns() {
			return fm, corrupt("footer", path, "", -1, "row group %d has %d columns, schema %d", r, rg.NumColumns(), sc.NumColumns())
		}
		for k, l := range leaves {
			col := fm.paths[k]
			cc, err := rg.ColumnChunk(l)
			if err != nil {
				return fm, &Error{Op: "footer", Path: path, Column: col, Off: -1, Err: fmt.Errorf("%w: row group %d: %v", ErrCorrupt, r, err)}
			}
			if cc.FilePath() != "" {
				return fm, &Error{Op: "footer", Path: path, Column: col, Off: -1, Err: fmt.Errorf("%w: column chunk in external file %q", ErrUnsupported, cc.FilePath())}
			}
			c := chunkRaw{
				codec:     cc.Compression(),
				dataOff:   cc.DataPageOffset(),
				numValues: cc.NumValues(),
				hasDict:   cc.HasDictionaryPage(),
			}
			c.start = c.dataOff
			// Some writers store dictionary_page_offset 0 for a dictionary
			// that in fact starts at data_page_offset.
			// Others store data_page_offset 0 for a chunk that is only a
			// dictionary page.
			if d := cc.DictionaryPageOffset(); c.hasDict && d > 0 && (d < c.start || c.start < 4) {
				c.start = d
			}
			total := cc.TotalCompressedSize()
			c.end = c.start + total
			if c.start < 4 || total < 0 || c.end > limit || c.end < c.start {
				return fm, corrupt("footer", path, col, c.start, "row group %d: column chunk [%d, +%d) outside the data of a %d-byte file", r, c.start, total, size)
			}
			if loc, ok := rg.OffsetIndexLocation(l); ok {
				if loc.Offset < 4 || loc.Length <= 0 || loc.Offset+int64(loc.Length) > limit {
					return fm, corrupt("footer", path, col, loc.Offset, "row group %d: offset index [%d, +%d) outside the file", r, loc.Offset, loc.Length)
				}
				c.oiOff, c.oiLen = loc.Offset, loc.Length
			}
			fm.chunks = append(fm.chunks, c)
		}
	}
	return fm, nil
}

// reuseFrom takes from old (a stale sidecar's index for the same
// projection) every file whose path, size and mtime are unchanged, so that
// only the others are read again. The first file's footer is read in any
// case, for the column descriptors.
func (b *builder) reuseFrom(old *Index) {
	if old == nil || len(old.cols) == 0 {
		return
	}
	byPath := make(map[string]int, len(old.files))
	for i, f := range old.files {
		byPath[f.Path] = i
	}
	b.metas = make([]fileMeta, len(b.files))
	b.oldFile = make([]int, len(b.files))
	paths := colPaths(old)
	for f := range b.files {
		b.oldFile[f] = -1
		of, ok := byPath[b.files[f].Path]
		if !ok || old.files[of].Size != b.files[f].Size || !old.files[of].ModTime.Equal(b.files[f].ModTime) {
			continue
		}
		b.oldFile[f] = of
		b.reused++
		m := fileMeta{paths: paths, numRows: old.files[of].NumRows}
		for c := old.fileRG[of]; c < old.fileRG[of+1]; c++ {
			m.rgRows = append(m.rgRows, old.rgs[c].numRows)
			for k := range old.cols {
				cm := &old.cols[k].chunks[c]
				m.chunks = append(m.chunks, chunkRaw{codec: cm.codec, start: cm.base})
			}
		}
		b.metas[f] = m
	}
	b.old = old
	b.opts.Logf("re-indexing %d of %d files; %d unchanged since the sidecar", len(b.files)-b.reused, len(b.files), b.reused)
}

// isReused reports whether file f comes from the stale sidecar.
func (b *builder) isReused(f int) bool { return b.oldFile != nil && b.oldFile[f] >= 0 }

// fillReused copies the pages of reused files into b.res.
func (b *builder) fillReused() {
	for f := range b.files {
		if !b.isReused(f) {
			continue
		}
		of := b.oldFile[f]
		j := 0
		for c := b.old.fileRG[of]; c < b.old.fileRG[of+1]; c++ {
			for k := range b.old.cols {
				col := &b.old.cols[k]
				cm := &col.chunks[c]
				res := &b.res[b.base[f]+j]
				j++
				res.dictOff, res.dictSize, res.source = cm.dictOff, cm.dictSize, cm.source
				for g := col.chunkPage[c]; g < col.chunkPage[c+1]; g++ {
					res.pages = append(res.pages, tmpPage{off: cm.base + int64(col.off[g]), size: col.size[g], row: col.row[g]})
				}
			}
		}
	}
}

func (b *builder) build(ctx context.Context) (*Index, error) {
	if err := b.readFooters(ctx); err != nil {
		return nil, err
	}
	if b.isReused(0) {
		// read afresh for its schema; its pages still come from the sidecar
		first := &b.metas[0]
		if !equalStrings(first.paths, colPaths(b.old)) {
			return nil, &Error{Op: "schema", Path: b.files[0].Path, Off: -1, Err: fmt.Errorf("%w: projection resolves to other columns than in the sidecar", ErrColumn)}
		}
	}
	// Every file must resolve the projection to the same leaves, of the
	// same physical type, as the first.
	first := &b.metas[0]
	b.ncols = len(first.paths)
	for i := 1; i < len(b.metas); i++ {
		m := &b.metas[i]
		if len(m.paths) != b.ncols {
			return nil, &Error{Op: "schema", Path: b.files[i].Path, Off: -1, Err: fmt.Errorf("%w: projection has %d leaves here, %d in %s", ErrColumn, len(m.paths), b.ncols, b.files[0].Path)}
		}
		for k := range m.paths {
			if m.paths[k] != first.paths[k] {
				return nil, &Error{Op: "schema", Path: b.files[i].Path, Column: first.paths[k], Off: -1, Err: fmt.Errorf("%w: found %q in its place", ErrColumn, m.paths[k])}
			}
			if m.schema == nil {
				continue // reused: checked when it was indexed
			}
			if a, c := m.schema.Column(m.leaves[k]).PhysicalType(), first.schema.Column(first.leaves[k]).PhysicalType(); a != c {
				return nil, &Error{Op: "schema", Path: b.files[i].Path, Column: first.paths[k], Off: -1, Err: fmt.Errorf("%w: physical type %s, %s in %s", ErrColumn, a, c, b.files[0].Path)}
			}
		}
		m.schema = nil
	}
	b.base = make([]int, len(b.files)+1)
	for i := range b.metas {
		b.base[i+1] = b.base[i] + len(b.metas[i].chunks)
	}
	b.res = make([]chunkPages, b.base[len(b.files)])
	b.fillReused()
	if err := b.readOffsetIndexes(ctx); err != nil {
		return nil, err
	}
	if err := b.walkHeaders(ctx); err != nil {
		return nil, err
	}
	return b.assemble()
}

// readBatch is Reader.ReadBatch over at most opts.MaxOpenFiles files at a
// time: a batch naming more is read in consecutive chunks, each with the
// reader's full parallelism. fn gets indexes into rs, and every error lands
// where one unchunked call would put it, so the index and the first error
// do not depend on the chunking. Build's batches keep the ranges of a file
// adjacent; a file named again further on counts again, so no chunk names
// more files than the budget. When a chunk cannot be attempted (ctx done,
// reader closed), the ranges after it get its error and readBatch returns.
func (b *builder) readBatch(ctx context.Context, rs []engine.Range, fn func(i int, data []byte, err error)) error {
	budget := b.opts.MaxOpenFiles
	if budget <= 0 {
		budget = nofileBudget() // a builder made without fill
	}
	for lo := 0; ; {
		hi, nfiles := lo, 0
		for ; hi < len(rs); hi++ {
			if hi == lo || rs[hi].Path != rs[hi-1].Path {
				if nfiles == budget {
					break
				}
				nfiles++
			}
		}
		if lo == 0 && hi == len(rs) {
			return b.opts.Reader.ReadBatch(ctx, rs, fn) // within budget: one call
		}
		base := lo
		err := b.opts.Reader.ReadBatch(ctx, rs[lo:hi], func(i int, data []byte, err error) { fn(base+i, data, err) })
		if err != nil {
			for i := hi; i < len(rs); i++ {
				fn(i, nil, err)
			}
			return err
		}
		if hi == len(rs) {
			return nil
		}
		lo = hi
	}
}

// readFooters reads and parses every footer: one tail read per file, and a
// second, exact one for footers longer than the tail.
func (b *builder) readFooters(ctx context.Context) error {
	n := len(b.files)
	if b.metas == nil {
		b.metas = make([]fileMeta, n)
	}
	errs := make([]error, n)
	need := make([]int, n)
	var rs []engine.Range
	var sel []int // files whose footers are read
	for i, f := range b.files {
		if i > 0 && b.isReused(i) {
			continue
		}
		l := int64(footerTailRead)
		l = min(l, f.Size)
		rs = append(rs, engine.Range{Path: f.Path, Off: f.Size - l, Len: int(l)})
		sel = append(sel, i)
	}
	parse := func(i int, r engine.Range, data []byte, err error) {
		f := &b.files[i]
		if err != nil {
			errs[i] = err
			return
		}
		if len(data) != r.Len {
			errs[i] = &Error{Op: "footer", Path: f.Path, Off: r.Off, Err: fmt.Errorf("%w: file shrank while indexing", ErrCorrupt)}
			return
		}
		md, nd, err := footerTail(f.Path, f.Size, data)
		if err != nil {
			errs[i] = err
			return
		}
		if nd > 0 {
			need[i] = nd
			return
		}
		b.metas[i], errs[i] = extract(f.Path, f.Size, md, b.opts.Columns)
	}
	err := b.readBatch(ctx, rs, func(j int, data []byte, err error) { parse(sel[j], rs[j], data, err) })
	if err != nil {
		return err
	}
	var again []engine.Range
	var idx []int
	for i, nd := range need {
		if nd > 0 && errs[i] == nil {
			f := b.files[i]
			again = append(again, engine.Range{Path: f.Path, Off: f.Size - int64(nd), Len: nd})
			idx = append(idx, i)
		}
	}
	if len(again) > 0 {
		err := b.readBatch(ctx, again, func(j int, data []byte, err error) {
			i := idx[j]
			need[i] = 0
			parse(i, again[j], data, err)
			if need[i] > 0 && errs[i] == nil {
				errs[i] = corrupt("footer", b.files[i].Path, "", b.files[i].Size-8, "footer does not fit its own length")
			}
		})
		if err != nil {
			return err
		}
	}
	for i := range errs {
		if errs[i] != nil {
			return errs[i]
		}
		b.files[i].NumRows = b.metas[i].numRows
		b.files[i].NumRowGroups = len(b.metas[i].rgRows)
	}
	return nil
}

// readOffsetIndexes reads every projected chunk's offset index, coalescing
// nearby ones of a file into one read, and turns them into pages.
func (b *builder) readOffsetIndexes(ctx context.Context) error {
	if b.opts.HeaderWalk {
		return nil
	}
	type group struct {
		file   int
		off    int64
		end    int64
		chunks []int // indexes into b.res
	}
	var groups []group
	for f := range b.metas {
		if b.isReused(f) {
			continue
		}
		var g *group
		for j, c := range b.metas[f].chunks {
			if c.oiLen == 0 {
				continue
			}
			ci := b.base[f] + j
			end := c.oiOff + int64(c.oiLen)
			if g != nil && c.oiOff >= g.off && c.oiOff <= g.end+coalesceGap && max(end, g.end)-g.off <= coalesceMax {
				g.end = max(g.end, end)
				g.chunks = append(g.chunks, ci)
				continue
			}
			groups = append(groups, group{file: f, off: c.oiOff, end: end, chunks: []int{ci}})
			g = &groups[len(groups)-1]
		}
	}
	if len(groups) == 0 {
		return nil
	}
	rs := make([]engine.Range, len(groups))
	for i, g := range groups {
		rs[i] = engine.Range{Path: b.files[g.file].Path, Off: g.off, Len: int(g.end - g.off)}
	}
	errs := make([]error, len(groups))
	err := b.readBatch(ctx, rs, func(i int, data []byte, err error) {
		g := &groups[i]
		if err != nil {
			errs[i] = err
			return
		}
		if len(data) != rs[i].Len {
			errs[i] = corrupt("offset_index", b.files[g.file].Path, "", g.off, "offset index runs past the end of the file")
			return
		}
		for _, ci := range g.chunks {
			if err := b.offsetIndexChunk(g.file, ci, data[b.rawOf(ci).oiOff-g.off:][:b.rawOf(ci).oiLen]); err != nil {
				errs[i] = err
				return
			}
		}
	})
	if err != nil {
		return err
	}
	return firstErr(errs)
}

func firstErr(errs []error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// rawOf returns the footer data of flattened chunk ci.
func (b *builder) rawOf(ci int) *chunkRaw {
	f := b.fileOf(ci)
	return &b.metas[f].chunks[ci-b.base[f]]
}

func (b *builder) fileOf(ci int) int {
	lo, hi := 0, len(b.files)
	for hi-lo > 1 {
		m := (lo + hi) / 2
		if b.base[m] <= ci {
			lo = m
		} else {
			hi = m
		}
	}
	return lo
}

// colOf names the column of flattened chunk ci, for errors.
func (b *builder) colOf(ci int) (path string, k, r int) {
	f := b.fileOf(ci)
	j := ci - b.base[f]
	k, r = j%b.ncols, j/b.ncols
	return b.metas[f].paths[k], k, r
}

func (b *builder) offsetIndexChunk(f, ci int, data []byte) error {
	path := b.files[f].Path
	col, _, r := b.colOf(ci)
	raw := b.rawOf(ci)
	locs, err := parseOffsetIndex(data)
	if err != nil {
		return &Error{Op: "offset_index", Path: path, Column: col, Off: raw.oiOff, Err: fmt.Errorf("%w: %v", ErrCorrupt, err)}
	}
	rows := b.metas[f].rgRows[r]
	res := &b.res[ci]
	res.source = FromOffsetIndex
	res.pages = make([]tmpPage, len(locs))
	prevRow := int64(-1)
	prevEnd := raw.start
	for i, l := range locs {
		if l == nil || l.Offset < prevEnd || l.CompressedPageSize <= 0 || l.Offset+int64(l.CompressedPageSize) > raw.end {
			return corrupt("offset_index", path, col, raw.oiOff, "row group %d page %d: location outside column chunk [%d, %d)", r, i, raw.start, raw.end)
		}
		// Pages begin on row boundaries: the first at row 0, then
		// non-decreasing (an empty page repeats its successor's row).
		if (i == 0 && l.FirstRowIndex != 0) || l.FirstRowIndex < prevRow || l.FirstRowIndex > rows {
			return corrupt("offset_index", path, col, raw.oiOff, "row group %d page %d: first_row_index %d out of order or beyond %d rows", r, i, l.FirstRowIndex, rows)
		}
		if l.FirstRowIndex >= int64(rowUnknown) {
			return &Error{Op: "offset_index", Path: path, Column: col, Off: raw.oiOff, Err: fmt.Errorf("%w: row group of %d rows", ErrUnsupported, rows)}
		}
		prevRow = l.FirstRowIndex
		prevEnd = l.Offset + int64(l.CompressedPageSize)
		res.pages[i] = tmpPage{off: l.Offset, size: uint32(l.CompressedPageSize), row: uint32(l.FirstRowIndex)}
	}
	// Only a dictionary page may precede the first data page; writers do
	// not always set dictionary_page_offset for it.
	if len(locs) > 0 && raw.start < locs[0].Offset {
		res.dictOff = raw.start
		res.dictSize = int32(locs[0].Offset - raw.start)
	}
	return nil
}

// walk is the state of one column chunk's header walk.
type walk struct {
	ci       int
	pos, end int64
	readLen  int
	rows     int64 // rows seen so far; -1 once unknown
	values   int64
	v1rows   bool // V1 num_values counts rows (no repetition)
}

// walkHeaders locates the pages of every chunk without an offset index by
// reading at each expected header position, all chunks at once per round.
func (b *builder) walkHeaders(ctx context.Context) error {
	var ws []*walk
	for ci := range b.res {
		if b.isReused(b.fileOf(ci)) {
			continue
		}
		raw := b.rawOf(ci)
		if raw.oiLen != 0 && !b.opts.HeaderWalk {
			continue
		}
		_, k, _ := b.colOf(ci)
		f := b.fileOf(ci)
		b.res[ci].source = FromHeaderWalk
		if raw.end > raw.start {
			ws = append(ws, &walk{ci: ci, pos: raw.start, end: raw.end, readLen: b.opts.WalkReadSize, v1rows: b.metas[f].maxRep[k] == 0})
		}
	}
	var rs []engine.Range
	for len(ws) > 0 {
		rs = rs[:0]
		for _, w := range ws {
			rs = append(rs, engine.Range{Path: b.files[b.fileOf(w.ci)].Path, Off: w.pos, Len: int(min(int64(w.readLen), w.end-w.pos))})
		}
		errs := make([]error, len(ws))
		err := b.readBatch(ctx, rs, func(i int, data []byte, err error) {
			if err != nil {
				errs[i] = err
				return
			}
			errs[i] = b.walkStep(ws[i], data, rs[i].Len)
		})
		if err != nil {
			return err
		}
		if err := firstErr(errs); err != nil {
			return err
		}
		live := ws[:0]
		for _, w := range ws {
			if w.pos < w.end {
				live = append(live, w)
			}
		}
		ws = live
	}
	return nil
}

// walkStep parses every whole page header in data, read at w.pos.
func (b *builder) walkStep(w *walk, data []byte, asked int) error {
	f := b.fileOf(w.ci)
	path := b.files[f].Path
	col, _, r := b.colOf(w.ci)
	res := &b.res[w.ci]
	if len(data) < asked {
		return corrupt("header_walk", path, col, w.pos, "file ends inside column chunk")
	}
	p := 0
	for p < len(data) && w.pos < w.end {
		h, err := parsePageHeader(data[p:])
		if errors.Is(err, codec.ErrHeaderTruncated) {
			if p > 0 {
				return nil // read again from here
			}
			if w.readLen >= maxHeaderRead || int64(w.readLen) >= w.end-w.pos {
				return corrupt("header_walk", path, col, w.pos, "row group %d: page header truncated by end of column chunk", r)
			}
			w.readLen *= 4
			return nil
		}
		if err != nil {
			return corrupt("header_walk", path, col, w.pos, "row group %d: %v", r, err)
		}
		total := int64(h.HeaderLen) + int64(h.Compressed)
		if w.pos+total > w.end {
			return corrupt("header_walk", path, col, w.pos, "row group %d: page of %d bytes runs past the column chunk end %d", r, total, w.end)
		}
		if total > int64(^uint32(0)>>1) {
			return &Error{Op: "header_walk", Path: path, Column: col, Off: w.pos, Err: fmt.Errorf("%w: page of %d bytes", ErrUnsupported, total)}
		}
		switch h.Type {
		case pageDictionary:
			if len(res.pages) > 0 || res.dictSize != 0 {
				return corrupt("header_walk", path, col, w.pos, "row group %d: dictionary page after data pages", r)
			}
			res.dictOff, res.dictSize = w.pos, int32(total)
		case pageData, pageDataV2:
			row := rowUnknown
			if w.rows >= 0 {
				if w.rows >= int64(rowUnknown) {
					return &Error{Op: "header_walk", Path: path, Column: col, Off: w.pos, Err: fmt.Errorf("%w: too many rows in a row group", ErrUnsupported)}
				}
				row = uint32(w.rows)
			}
			res.pages = append(res.pages, tmpPage{off: w.pos, size: uint32(total), row: row})
			switch {
			case w.rows < 0:
			case h.Type == pageDataV2 && h.NumRows >= 0:
				w.rows += int64(h.NumRows)
			case h.Type == pageData && w.v1rows && h.NumValues >= 0:
				w.rows += int64(h.NumValues)
			default:
				w.rows = -1
			}
		}
		w.pos += total
		p += int(total)
	}
	return nil
}

// assemble lays the located pages out as the Index's struct of arrays.
func (b *builder) assemble() (*Index, error) {
	nf := len(b.files)
	ix := &Index{files: b.files, columns: b.opts.Columns, walk: b.opts.HeaderWalk}
	ix.fileRG = make([]int32, nf+1)
	for f := range b.metas {
		ix.fileRG[f+1] = ix.fileRG[f] + int32(len(b.metas[f].rgRows))
	}
	nrg := int(ix.fileRG[nf])
	ix.rgs = make([]rgInfo, 0, nrg)
	var rows int64
	for f := range b.metas {
		ix.files[f].FirstRow = rows
		ix.files[f].FirstChunk = int(ix.fileRG[f])
		var inFile int64
		for r, n := range b.metas[f].rgRows {
			ix.rgs = append(ix.rgs, rgInfo{file: int32(f), rg: int32(r), firstRow: rows, numRows: n, fileRowBase: inFile})
			rows += n
			inFile += n
		}
	}
	first := &b.metas[0]
	ix.cols = make([]column, b.ncols)
	for k := range ix.cols {
		col := &ix.cols[k]
		col.info = ColumnInfo{Path: first.paths[k], Descr: first.schema.Column(first.leaves[k]), Leaf: first.leaves[k]}
		col.filePage = make([]int64, nf+1)
		col.chunkPage = make([]int64, nrg+1)
		col.chunks = make([]chunkMeta, nrg)
		c := 0
		for f := range b.metas {
			for r := range b.metas[f].rgRows {
				ci := b.base[f] + r*b.ncols + k
				col.chunkPage[c+1] = col.chunkPage[c] + int64(len(b.res[ci].pages))
				c++
			}
			col.filePage[f+1] = col.chunkPage[c]
		}
		np := col.chunkPage[nrg]
		col.off = make([]uint32, np)
		col.size = make([]uint32, np)
		col.row = make([]uint32, np)
		c = 0
		for f := range b.metas {
			for r := range b.metas[f].rgRows {
				ci := b.base[f] + r*b.ncols + k
				res := &b.res[ci]
				raw := b.rawOf(ci)
				m := chunkMeta{base: raw.start, dictOff: res.dictOff, dictSize: res.dictSize, codec: raw.codec, source: res.source}
				for _, p := range res.pages {
					m.base = min(m.base, p.off)
				}
				if res.dictSize > 0 {
					m.base = min(m.base, res.dictOff)
				}
				g := col.chunkPage[c]
				for i, p := range res.pages {
					rel := p.off - m.base
					if rel >= 1<<32 {
						return nil, &Error{Op: "index", Path: b.files[f].Path, Column: col.info.Path, Off: p.off, Err: fmt.Errorf("%w: column chunk over 4 GiB", ErrUnsupported)}
					}
					col.off[g+int64(i)] = uint32(rel)
					col.size[g+int64(i)] = p.size
					col.row[g+int64(i)] = p.row
				}
				col.chunks[c] = m
				if m.source == FromHeaderWalk {
					ix.stats.HeaderWalk++
				} else {
					ix.stats.OffsetIndex++
				}
				res.pages = nil
				c++
			}
		}
		ix.stats.Pages += np
	}
	ix.stats.Files = nf
	ix.stats.RowGroups = nrg
	ix.stats.ColumnChunks = nrg * b.ncols
	ix.stats.Rows = rows
	ix.stats.Reused = b.reused
	ix.stats.ResidentBytes = ix.ResidentBytes()
	return ix, nil
}
