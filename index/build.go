package index

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/pagefeed/pagefeed/codec"
	"github.com/pagefeed/pagefeed/engine"
)

// Options configures Build. Zero fields take the defaults of fill.
type Options struct {
	// Columns is the projection: logical paths ("input_ids", "meta.lang"),
	// fields above them ("meta", meaning all its leaves) or leaf paths as
	// some file spells them ("input_ids.list.element"). Empty means every
	// leaf column.
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
	// max(8, 2*GOMAXPROCS).
	Parallelism int
	// HeaderWalk ignores offset indexes and walks page headers everywhere
	// (tests, and files whose offset indexes are suspect).
	HeaderWalk bool
	// WalkReadSize is the read issued at each expected page header during
	// a header walk; default 64 KiB. Larger headers are re-read whole.
	WalkReadSize int
	// SidecarDir, when set, keeps the sidecar in this directory (created
	// if missing) under a name derived from the files' absolute paths and
	// the projection, instead of next to the dataset. Default: next to the
	// dataset, or where its directory is not writable, the user's cache
	// directory ($XDG_CACHE_HOME/pagefeed, else ~/.cache/pagefeed).
	SidecarDir string
	// MaxFooterSize bounds the footer Build reads and parses per file: a
	// footer claiming more fails with ErrUnsupported instead of being
	// allocated on its say-so (a sparse file can claim gigabytes cheaply).
	// Default 128 MiB, far above the footers of real files (a few KiB to
	// some MiB for thousands of row groups × columns).
	MaxFooterSize int64
	// MaxOpenFiles bounds the files Build asks its reader to hold open at
	// once. A reader keeps every file of a ReadBatch call open until the
	// call returns, so each pass (footers, offset indexes, every round of
	// a header walk) hands the reader consecutive chunks of its batch,
	// each naming at most MaxOpenFiles files and read with the reader's
	// full parallelism; the index does not depend on it. Default:
	// engine.OpenFileBudget(4), a quarter of the soft RLIMIT_NOFILE (256
	// under 1024), leaving the rest to the caller.
	// The engine's readers hold one descriptor per file.
	MaxOpenFiles int
}

const (
	defaultWalkRead  = 64 << 10
	defaultMaxFooter = 128 << 20
	maxHeaderRead    = 16 << 20                     // a page header larger than this is corrupt
	coalesceGap      = 64 << 10                     // offset indexes closer than this share a read
	coalesceMax      = engine.ReaderSlotSize - 8192 // one read of OpenBatchReader's engine
)

func (o Options) fill(paths []string) Options {
	if o.Parallelism <= 0 {
		o.Parallelism = max(8, 2*runtime.GOMAXPROCS(0))
	}
	if o.Logf == nil {
		o.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, "index: "+format+"\n", args...) }
	}
	if o.MaxFooterSize <= 0 {
		o.MaxFooterSize = defaultMaxFooter
	}
	if o.WalkReadSize <= 0 {
		o.WalkReadSize = defaultWalkRead
	}
	if o.MaxOpenFiles <= 0 {
		o.MaxOpenFiles = engine.OpenFileBudget(4)
	}
	return o
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
	files, err := ExpandPaths(paths, opts.Logf)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(files))
	for i := range files {
		names[i] = files[i].Path
	}

	sidecar := "miss"
	scPath := ""
	mkdir := false
	var old *Index // the sidecar's index, for the files that did not change
	if !opts.NoSidecar {
		var look []string
		look, scPath, mkdir = sidecarPaths(names, opts)
		for _, p := range look {
			ix, status, err := loadSidecar(p, files, opts)
			if status == "written" && p != look[len(look)-1] {
				continue // none here; look further
			}
			sidecar = status
			if err == nil {
				old = ix
			} else if status == "rebuilt" {
				opts.Logf("sidecar %s not used, rebuilding: %v", p, err)
			}
			break
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
	switch {
	case b.hit:
		sidecar = "hit"
	case old != nil:
		sidecar = "rebuilt"
		opts.Logf("sidecar %s not used whole, rebuilding: %v", scPath, b.stale)
	}
	if scPath != "" && !b.hit {
		if err := writeSidecar(scPath, ix, mkdir); err != nil {
			opts.Logf("sidecar %s not written: %v", scPath, err)
			sidecar = "miss"
		}
	}
	ix.stats.Sidecar = sidecar
	ix.stats.SidecarPath = scPath
	if !b.hit {
		ix.stats.Reused = b.reused
		ix.stats.CountedPages, ix.stats.CountedBytes = b.counted.pages.Load(), b.counted.read.Load()
	}
	ix.stats.BuildTime = time.Since(start)
	return ix, nil
}

// isParquetName reports whether a directory entry is taken as Parquet.
func isParquetName(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	return ext == ".parquet" || ext == ".parq" || ext == ".pq"
}

// ExpandPaths lists the files named by paths, with their size and mtime,
// as Build reads them: a file named explicitly is taken whatever its name;
// a directory is walked recursively for files named *.parquet, *.parq or
// *.pq, skipping folders whose names start with "." or "_", our sidecars,
// and (with a notice to logf, which may be nil) other names; a glob
// pattern expands to files and directories, and matching nothing is an
// error wrapping ErrEmpty. A file named twice is listed once, where it is
// first named.
//
// Only regular files are read. Every check is a stat, which never blocks
// (opening a FIFO for reading would wait for a writer): a path named
// explicitly that is a FIFO, a socket or a device (block devices
// included: a device has no size or modification time to key the index
// on) fails with an error wrapping ErrNotFile that names it and its kind,
// and so does a symbolic link that loops. In a directory or among a
// glob's matches such entries are skipped with a notice, as other
// entries that are not Parquet are; a symbolic link there is followed,
// and one that dangles or loops fails as a named file would.
func ExpandPaths(paths []string, logf func(string, ...any)) ([]FileInfo, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	var out []FileInfo
	seen := map[string]bool{}
	// add lists p, stat'ed as st (following links); explicit says the
	// user named it, so that another kind of file is an error rather than
	// a skipped entry.
	add := func(p string, st fs.FileInfo, explicit bool) error {
		if seen[p] {
			return nil
		}
		if st == nil {
			var err error
			if st, err = statPath(p); err != nil {
				return err
			}
		}
		if !st.Mode().IsRegular() {
			if explicit {
				return &Error{Op: "stat", Path: p, Off: -1, Err: fmt.Errorf("%w: %s", ErrNotFile, kindOf(st.Mode()))}
			}
			logf("skipping %s: not a regular file (%s)", p, kindOf(st.Mode()))
			return nil
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
				logf("skipping %s: not a regular file (%s)", p, kindOf(d.Type()))
			case !isParquetName(name):
				logf("skipping %s: not a parquet file name", p)
			default:
				return add(p, nil, false)
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
				st, err := statPath(q)
				if err != nil {
					return nil, err
				}
				if st.IsDir() {
					if err := walk(q); err != nil {
						return nil, err
					}
				} else if err := add(q, st, false); err != nil {
					return nil, err
				}
			}
			continue
		}
		st, err := statPath(p)
		if err != nil {
			return nil, err
		}
		if st.IsDir() {
			if err := walk(p); err != nil {
				return nil, err
			}
			continue
		}
		if err := add(p, st, true); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, &Error{Op: "list", Path: strings.Join(paths, " "), Off: -1, Err: ErrEmpty}
	}
	return out, nil
}

// statPath stats p, following symbolic links; a link that loops fails
// with ErrNotFile (and the ELOOP cause), naming p.
func statPath(p string) (fs.FileInfo, error) {
	st, err := os.Stat(p)
	if errors.Is(err, syscall.ELOOP) {
		return nil, &Error{Op: "stat", Path: p, Off: -1, Err: fmt.Errorf("%w: a symbolic link loop (%w)", ErrNotFile, syscall.ELOOP)}
	}
	if err != nil {
		return nil, &Error{Op: "stat", Path: p, Off: -1, Err: err}
	}
	return st, nil
}

// kindOf names the kind of file a mode describes, for errors and notices.
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m.IsRegular():
		return "a regular file"
	}
	return "an irregular file"
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
	oiLen     int32  // 0: no offset index (or one ignored: oiBad)
	oiBad     string // why the footer's offset index location is ignored
}

// fileMeta is what the index keeps of one footer.
type fileMeta struct {
	schema  *schema.Schema // dropped once its schema set is known
	sum     uint64         // hash of the footer (sidecar staleness check)
	flen    uint32         // footer length
	paths   []string       // resolved projection: logical paths
	shapes  []string       // their nesting (logicalLeaf.shape)
	types   []string       // their logical types, for messages
	leaves  []int
	rgRows  []int64
	chunks  []chunkRaw // row group major: chunks[r*ncols+k]
	maxRep  []int16
	numRows int64
	// resolved maps each projected name to the logical paths it matched.
	resolved map[string][]string
	// A footer where some projected names match nothing (missing) is kept
	// whole (md) until resolveNames has translated them; missingErr is the
	// error when nothing does.
	md         *metadata.FileMetaData
	missing    []string
	missingErr error
}

// chunkPages is the located pages of one (column, chunk).
type chunkPages struct {
	pages    []tmpPage
	dictOff  int64
	dictSize int32
	source   Source
	why      string // FromBadOffsetIndex: why the offset index was ignored
}

type tmpPage struct {
	off  int64
	size uint32
	row  uint32 // first row within the chunk (finishRows sets it)
	n    int64  // rows that start in the page; -1 until known
	mid  bool   // its first levels continue a row an earlier page began
	// counted: n comes from the page's levels; bad: they do not decode
	// (n stays -1 and finishRows gives it the rows the others leave).
	counted, bad bool
}

type builder struct {
	opts    Options
	old     *Index // stale sidecar being reused, or nil
	oldFile []int  // per file: its number in old, or -1 to index afresh
	reused  int
	stale   error // why the sidecar in old is not used whole
	hit     bool  // old is used whole: every file unchanged, in order
	files   []FileInfo
	metas   []fileMeta
	ncols   int
	res     []chunkPages // per file, row group, column: flattened via base[f]
	base    []int        // first res index of file f
	sets    []schemaSet  // the declarations (schemaSets)
	fileSch []int32      // per file: its declaration
	decs    decoderPool  // for counting rows (countRows)
	counted countStats
	badMu   sync.Mutex
	bad     map[int]string // flattened chunk → why its rows are not sound
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
	// Thrift preallocates containers from their claimed counts: check
	// every claim against the bytes first.
	if _, err := codec.CheckThrift(b); err != nil {
		return nil, fmt.Errorf("footer does not parse: %w", err)
	}
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
	if _, err := codec.CheckThrift(b); err != nil {
		return nil, fmt.Errorf("offset index does not parse: %w", err)
	}
	oi := metadata.NewOffsetIndex(b, nil, nil)
	if oi == nil {
		return nil, errors.New("offset index does not parse")
	}
	return oi.GetPageLocations(), nil
}

// resolveColumns maps a projection to leaf indexes of sc, whose leaves
// are named ll (logicalLeaves). A name means the leaf whose logical path
// or raw leaf path it is, or every leaf under it (a prefix followed by a
// dot). It returns the leaves in projection order, what each name matched
// (its logical paths) and the names that match nothing here.
func resolveColumns(sc *schema.Schema, ll []logicalLeaf, names []string) (leaves []int, resolved map[string][]string, missing []string) {
	seen := map[int]bool{}
	add := func(i int) {
		if !seen[i] {
			seen[i] = true
			leaves = append(leaves, i)
		}
	}
	if len(names) == 0 {
		for i := 0; i < sc.NumColumns(); i++ {
			add(i)
		}
		return leaves, nil, nil
	}
	resolved = make(map[string][]string, len(names))
	for _, name := range names {
		var got []string
		for i := 0; i < sc.NumColumns(); i++ {
			if matchesColumn(name, ll[i].path, sc.Column(i).Path()) {
				add(i)
				got = append(got, ll[i].path)
			}
		}
		if len(got) == 0 {
			missing = append(missing, name)
			continue
		}
		resolved[name] = got
	}
	return leaves, resolved, missing
}

// matchesColumn reports whether a projected name means the leaf of logical
// path logical and raw leaf path raw: either path, or a field above it.
func matchesColumn(name, logical, raw string) bool {
	under := func(p string) bool {
		return p != "" && (p == name || (len(p) > len(name) && p[len(name)] == '.' && p[:len(name)] == name))
	}
	return under(logical) || under(raw)
}

// missingColumn is the error for a name that matches no leaf of sc.
func missingColumn(path string, sc *schema.Schema, ll []logicalLeaf, name string) error {
	cols := make([]string, sc.NumColumns())
	for i := range cols {
		cols[i] = ll[i].path
	}
	return &Error{Op: "schema", Path: path, Off: -1, Err: fmt.Errorf("%w: no column %q in schema (columns: %s)", ErrColumn, name, strings.Join(cols, ", "))}
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
	ll, err := logicalLeaves(sc)
	if err != nil {
		return fm, corrupt("footer", path, "", size-8-int64(md.Size()), "schema: %v", err)
	}
	leaves, resolved, missing := resolveColumns(sc, ll, names)
	if len(missing) > 0 {
		// Perhaps another file's raw leaf path (input_ids.list.item where
		// this file says element): resolveNames translates it.
		return fileMeta{md: md, missing: missing, resolved: resolved, missingErr: missingColumn(path, sc, ll, missing[0])}, nil
	}
	fm.schema = sc
	fm.leaves = leaves
	fm.resolved = resolved
	for _, l := range leaves {
		fm.paths = append(fm.paths, ll[l].path)
		fm.shapes = append(fm.shapes, ll[l].shape)
		fm.types = append(fm.types, ll[l].typ)
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
			// A flat column holds one value (or null) per row: a chunk
			// whose count differs cannot be delivered row-aligned beside
			// the projection's other columns.
			if len(leaves) > 1 && fm.maxRep[k] == 0 && cc.NumValues() != rows {
				return fm, corrupt("footer", path, col, -1, "row group %d: column %s has %d values for %d rows: the projected columns' row counts differ", r, col, cc.NumValues(), rows)
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
					// The pages are still there to walk.
					c.oiBad = fmt.Sprintf("its location [%d, +%d) is outside the file's data", loc.Offset, loc.Length)
				} else {
					c.oiOff, c.oiLen = loc.Offset, loc.Length
				}
			}
			fm.chunks = append(fm.chunks, c)
		}
	}
	return fm, nil
}

// reuseFrom marks as candidates for reuse the files of old (a sidecar's
// index for the same projection) whose path, size and mtime are unchanged.
// Every footer is read in any case, for the column descriptors and the
// footer hash: checkReuse drops the candidates whose footer changed, so that
// only the others keep their pages from old.
func (b *builder) reuseFrom(old *Index) {
	if old == nil || len(old.cols) == 0 {
		return
	}
	byPath := make(map[string]int, len(old.files))
	for i, f := range old.files {
		byPath[f.Path] = i
	}
	b.oldFile = make([]int, len(b.files))
	for f := range b.files {
		b.oldFile[f] = -1
		of, ok := byPath[b.files[f].Path]
		switch {
		case !ok:
			b.stalef("%s is not in it", b.files[f].Path)
		case old.files[of].Size != b.files[f].Size || !old.files[of].ModTime.Equal(b.files[f].ModTime):
			b.stalef("%s changed since it was indexed (size %d→%d, mtime %s→%s)", b.files[f].Path, old.files[of].Size, b.files[f].Size,
				old.files[of].ModTime.Format(time.RFC3339Nano), b.files[f].ModTime.Format(time.RFC3339Nano))
		default:
			b.oldFile[f] = of
			b.reused++
		}
	}
	if len(old.files) != len(b.files) {
		b.stalef("written for %d files, now %d", len(old.files), len(b.files))
	}
	b.old = old
}

// stalef records the first reason the sidecar is not used whole.
func (b *builder) stalef(format string, args ...any) {
	if b.stale == nil {
		b.stale = fmt.Errorf("%w: "+format, append([]any{ErrSidecar}, args...)...)
	}
}

// checkReuse runs once every footer is read: a candidate whose footer hash,
// resolved projection or row groups differ from the sidecar's is read
// again. It sets b.hit when the sidecar's index can be used whole.
func (b *builder) checkReuse() {
	if b.old == nil {
		return
	}
	paths := colPaths(b.old)
	for f := range b.files {
		of := b.oldFile[f]
		if of < 0 {
			continue
		}
		m := &b.metas[f]
		o := &b.old.files[of]
		if m.sum != b.old.footSum[of] || len(m.rgRows) != o.NumRowGroups || m.numRows != o.NumRows || !equalStrings(m.paths, paths) {
			b.stalef("%s changed since it was indexed (its footer differs)", b.files[f].Path)
			b.oldFile[f] = -1
			b.reused--
			continue
		}
		if of != f {
			b.stalef("written for the files in another order")
		}
	}
	if b.stale == nil {
		b.hit = true
		return
	}
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
					l := b.old.Locate(k, int(g))
					res.pages = append(res.pages, tmpPage{off: l.Offset, size: uint32(l.Size), row: col.row[g], n: int64(l.NumRows), mid: l.StartsMidRow})
				}
			}
		}
	}
}

func (b *builder) build(ctx context.Context) (*Index, error) {
	if err := b.readFooters(ctx); err != nil {
		return nil, err
	}
	b.checkReuse()
	sets, fileSch, err := b.schemaSets()
	if err != nil {
		return nil, err
	}
	b.sets, b.fileSch = sets, fileSch
	defer b.decs.close()
	if b.hit {
		ix := b.old
		for f := range ix.files {
			ix.files[f].ModTime = b.files[f].ModTime // the live stat's location
		}
		ix.attach(sets, fileSch, b.metas)
		return ix, nil
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
	b.noteIgnored()
	if err := b.countRows(ctx); err != nil {
		return nil, err
	}
	ix, err := b.assemble()
	if err != nil {
		return nil, err
	}
	ix.attach(sets, fileSch, b.metas)
	return ix, nil
}

// schemaSets groups the files by how they declare the projected columns,
// and checks that every declaration lets their values be delivered with
// the first file's. Files may differ in nullability, logical annotations
// and the leaves' positions; the leaves' paths, physical types (and fixed
// lengths) and repetition levels must be the first file's. A file reused
// from the sidecar without parsing its footer (m.schema nil) gets the
// declaration of the parsed file the sidecar grouped it with. Each schema
// is dropped once grouped, so only one per declaration stays resident.
func (b *builder) schemaSets() (sets []schemaSet, fileSch []int32, err error) {
	first := &b.metas[0]
	f0 := b.files[0].Path
	b.ncols = len(first.paths)
	fileSch = make([]int32, len(b.metas))
	setFile := []int{} // per set: the first file with it
	byKey := map[string]int32{}
	byOld := map[int32]int32{} // the sidecar's declaration → set
	for i := range b.metas {
		m := &b.metas[i]
		if m.schema == nil {
			continue
		}
		key := schemaKey(m)
		s, ok := byKey[key]
		if !ok {
			s = int32(len(sets))
			byKey[key] = s
			set := schemaSet{leaves: m.leaves, shapes: m.shapes, types: m.types}
			for _, l := range m.leaves {
				set.descr = append(set.descr, m.schema.Column(l))
			}
			sets = append(sets, set)
			setFile = append(setFile, i)
		}
		fileSch[i] = s
		if b.isReused(i) {
			byOld[b.old.fileSch[b.oldFile[i]]] = s
		}
	}
	for i := range b.metas {
		if b.metas[i].schema != nil {
			continue
		}
		s, ok := byOld[b.old.fileSch[b.oldFile[i]]]
		if !ok { // readFooters parses one file per declaration
			return nil, nil, &Error{Op: "schema", Path: b.files[i].Path, Off: -1, Err: fmt.Errorf("%w: no parsed footer declares its columns", ErrSidecar)}
		}
		fileSch[i] = s
		if int(s) == len(setFile) {
			setFile = append(setFile, i)
		} else if setFile[s] > i {
			setFile[s] = i
		}
	}
	ref := sets[fileSch[0]]
	for s, set := range sets {
		for k := range set.descr {
			// Names, nullability and annotations may differ; what is
			// stored and how it nests may not: no silent cast.
			a, c := set.descr[k], ref.descr[k]
			switch {
			case a.PhysicalType() != c.PhysicalType():
				err = fmt.Errorf("%w: %s here (physical type %s), %s in %s (physical type %s)", ErrColumn, set.types[k], a.PhysicalType(), ref.types[k], f0, c.PhysicalType())
			case a.PhysicalType() == parquet.Types.FixedLenByteArray && a.TypeLength() != c.TypeLength():
				err = fmt.Errorf("%w: %s here, %s in %s: fixed length %d here, %d there", ErrColumn, set.types[k], ref.types[k], f0, a.TypeLength(), c.TypeLength())
			case set.shapes[k] != ref.shapes[k] || a.MaxRepetitionLevel() != c.MaxRepetitionLevel():
				err = fmt.Errorf("%w: %s here, %s in %s: they nest differently", ErrColumn, set.types[k], ref.types[k], f0)
			}
			if err != nil {
				return nil, nil, &Error{Op: "schema", Path: b.files[setFile[s]].Path, Column: first.paths[k], Off: -1, Err: err}
			}
		}
	}
	for i := range b.metas {
		b.metas[i].schema = nil
	}
	return sets, fileSch, nil
}

// schemaKey says how m declares the projected columns, as far as decoding
// depends on it: files with equal keys decode with one descriptor.
func schemaKey(m *fileMeta) string {
	var sb strings.Builder
	for _, l := range m.leaves {
		c := m.schema.Column(l)
		fmt.Fprintf(&sb, "%d %s %d %d %d|", l, c.PhysicalType(), c.TypeLength(), c.MaxDefinitionLevel(), c.MaxRepetitionLevel())
		for n := c.SchemaNode(); n != nil && n.Parent() != nil; n = n.Parent() {
			fmt.Fprintf(&sb, "%q %d %d", n.Name(), n.RepetitionType(), n.ConvertedType())
			if lt := n.LogicalType(); lt != nil {
				sb.WriteString(" " + lt.String())
			}
			if p, ok := n.(*schema.PrimitiveNode); ok {
				fmt.Fprintf(&sb, " %v", p.DecimalMetadata())
			}
			sb.WriteByte(';')
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

// attach sets the per-file descriptors and footer hashes.
func (ix *Index) attach(sets []schemaSet, fileSch []int32, metas []fileMeta) {
	ix.schemas, ix.fileSch = sets, fileSch
	ix.footSum = make([]uint64, len(metas))
	ix.footLen = make([]uint32, len(metas))
	for f := range metas {
		ix.footSum[f], ix.footLen[f] = metas[f].sum, metas[f].flen
	}
	for k := range ix.cols {
		ix.cols[k].info.Descr = sets[fileSch[0]].descr[k]
		ix.cols[k].info.Leaf = sets[fileSch[0]].leaves[k]
		ix.cols[k].info.Type = sets[fileSch[0]].types[k]
	}
	ix.stats.Schemas = len(sets)
	ix.stats.ResidentBytes = ix.ResidentBytes()
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
		budget = engine.OpenFileBudget(4) // a builder made without fill
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

// readFooters reads every footer. Files that a sidecar may reuse (path,
// size and mtime unchanged) are read exactly (the sidecar knows their
// footer length) and only hashed: checkReuse compares the hash, and their
// footer data comes from the sidecar. The others are parsed: one tail read
// per file, and a second, exact one for footers longer than the tail. One
// reused file per declaration the sidecar saw is parsed too, for the
// descriptors (another, if that one changed).
func (b *builder) readFooters(ctx context.Context) error {
	n := len(b.files)
	if b.metas == nil {
		b.metas = make([]fileMeta, n)
	}
	parse := make([]bool, n)
	var check []int
	rep := map[int32]int{} // the sidecar's declaration → the file parsed for it
	for i := range b.files {
		of := -1
		if b.oldFile != nil {
			of = b.oldFile[i]
		}
		if of < 0 || b.old.footLen[of] == 0 {
			parse[i] = true
			continue
		}
		if _, ok := rep[b.old.fileSch[of]]; !ok {
			rep[b.old.fileSch[of]] = i
			parse[i] = true
			continue
		}
		check = append(check, i)
	}
	if err := b.hashFooters(ctx, check, parse); err != nil {
		return err
	}
	for todo := parse; ; {
		var sel []int
		for i, p := range todo {
			if p {
				sel = append(sel, i)
			}
		}
		if len(sel) == 0 {
			break
		}
		if err := b.parseFooters(ctx, sel); err != nil {
			return err
		}
		// A declaration whose parsed file changed needs another.
		todo = make([]bool, n)
		for cls, r := range rep {
			if of := b.oldFile[r]; b.metas[r].sum == b.old.footSum[of] {
				continue
			}
			for _, i := range check {
				if of := b.oldFile[i]; b.old.fileSch[of] == cls && b.metas[i].schema == nil && b.metas[i].sum == b.old.footSum[of] {
					rep[cls] = i
					todo[i] = true
					break
				}
			}
		}
	}
	if err := b.resolveNames(); err != nil {
		return err
	}
	if err := b.alignProjection(); err != nil {
		return err
	}
	for i := range b.files {
		b.files[i].NumRows = b.metas[i].numRows
		b.files[i].NumRowGroups = len(b.metas[i].rgRows)
	}
	return nil
}

// resolveNames projects again the files where some projected names
// matched nothing, each name replaced by the logical paths it matched in
// another file: a raw leaf path of one writer (input_ids.list.item) means
// the same logical column in a file of another (input_ids.list.element).
// A name that matches nothing anywhere fails, naming the first file
// without it.
func (b *builder) resolveNames() error {
	var trans map[string][]string
	for i := range b.metas {
		m := &b.metas[i]
		if m.md == nil {
			continue
		}
		if trans == nil {
			trans = map[string][]string{}
			for j := range b.metas {
				for n, ls := range b.metas[j].resolved {
					if _, ok := trans[n]; !ok {
						trans[n] = ls
					}
				}
			}
		}
		var names []string
		for _, n := range b.opts.Columns {
			if ls, ok := trans[n]; ok {
				names = append(names, ls...)
			} else {
				names = append(names, n)
			}
		}
		f := &b.files[i]
		fm, err := extract(f.Path, f.Size, m.md, names)
		if err != nil {
			return err
		}
		if fm.md != nil {
			return m.missingErr
		}
		fm.sum, fm.flen = m.sum, m.flen
		*m = fm
	}
	return nil
}

// alignProjection puts every file's projected leaves in one order: the
// sidecar's where files are reused from it, else the first file's. Files
// may order their fields differently; a file whose projection holds other
// logical columns fails, naming both files.
func (b *builder) alignProjection() error {
	ref, refFile := b.metas[0].paths, b.files[0].Path
	for i := range b.files {
		if b.isReused(i) {
			ref, refFile = colPaths(b.old), "the sidecar's files"
			break
		}
	}
	for i := range b.metas {
		m := &b.metas[i]
		if equalStrings(m.paths, ref) {
			continue
		}
		pos := make(map[string]int, len(m.paths))
		for k, p := range m.paths {
			pos[p] = k
		}
		perm := make([]int, len(ref))
		for k, p := range ref {
			j, ok := pos[p]
			if !ok || len(m.paths) != len(ref) || m.schema == nil {
				return &Error{Op: "schema", Path: b.files[i].Path, Off: -1, Err: fmt.Errorf("%w: the projection is %s here, %s in %s",
					ErrColumn, strings.Join(m.paths, ", "), strings.Join(ref, ", "), refFile)}
			}
			perm[k] = j
		}
		m.paths = permute(m.paths, perm)
		m.shapes = permute(m.shapes, perm)
		m.types = permute(m.types, perm)
		m.leaves = permute(m.leaves, perm)
		m.maxRep = permute(m.maxRep, perm)
		n := len(perm)
		for r := 0; r*n < len(m.chunks); r++ {
			copy(m.chunks[r*n:], permute(m.chunks[r*n:(r+1)*n], perm))
		}
	}
	return nil
}

// permute returns a[perm[0]], a[perm[1]], ...
func permute[T any](a []T, perm []int) []T {
	out := make([]T, len(perm))
	for k, j := range perm {
		out[k] = a[j]
	}
	return out
}

// hashFooters reads the footers of files sel (reuse candidates) exactly,
// hashes them, and takes their footer data from the sidecar; a footer
// that differs from the sidecar's is marked for parsing instead.
func (b *builder) hashFooters(ctx context.Context, sel []int, parse []bool) error {
	if len(sel) == 0 {
		return nil
	}
	rs := make([]engine.Range, len(sel))
	for j, i := range sel {
		f := &b.files[i]
		l := int64(b.old.footLen[b.oldFile[i]]) + 8
		rs[j] = engine.Range{Path: f.Path, Off: f.Size - l, Len: int(l)}
	}
	errs := make([]error, len(sel))
	err := b.readBatch(ctx, rs, func(j int, data []byte, err error) {
		i := sel[j]
		of := b.oldFile[i]
		switch {
		case err != nil:
			errs[j] = err
		case len(data) != rs[j].Len || string(data[len(data)-4:]) != "PAR1" || int(le32(data[len(data)-8:])) != len(data)-8:
			parse[i] = true // changed after all
		case footerSum(data) != b.old.footSum[of]:
			parse[i] = true
		default:
			b.metas[i] = b.oldMeta(of)
			b.metas[i].sum = b.old.footSum[of]
			b.metas[i].flen = b.old.footLen[of]
		}
	})
	if err != nil {
		return err
	}
	return firstErr(errs)
}

// oldMeta is the footer data of the sidecar's file of: enough to lay out
// its reused pages.
func (b *builder) oldMeta(of int) fileMeta {
	old := b.old
	m := fileMeta{paths: colPaths(old), numRows: old.files[of].NumRows}
	for c := old.fileRG[of]; c < old.fileRG[of+1]; c++ {
		m.rgRows = append(m.rgRows, old.rgs[c].numRows)
		for k := range old.cols {
			cm := &old.cols[k].chunks[c]
			m.chunks = append(m.chunks, chunkRaw{codec: cm.codec, start: cm.base})
		}
	}
	return m
}

// parseFooters reads and parses the footers of files sel.
func (b *builder) parseFooters(ctx context.Context, sel []int) error {
	errs := make([]error, len(b.files))
	need := make([]int, len(b.files))
	rs := make([]engine.Range, len(sel))
	for j, i := range sel {
		f := &b.files[i]
		l := min(int64(footerTailRead), f.Size)
		rs[j] = engine.Range{Path: f.Path, Off: f.Size - l, Len: int(l)}
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
			limit := b.opts.MaxFooterSize
			if limit <= 0 {
				limit = defaultMaxFooter // a builder made without fill
			}
			if int64(nd-8) > limit {
				errs[i] = &Error{Op: "footer", Path: f.Path, Off: f.Size - 8, Err: fmt.Errorf("%w: footer of %d bytes, more than Options.MaxFooterSize (%d)", ErrUnsupported, nd-8, limit)}
				return
			}
			need[i] = nd
			return
		}
		b.metas[i], errs[i] = extract(f.Path, f.Size, md, b.opts.Columns)
		b.metas[i].sum = footerSum(data)
		b.metas[i].flen = le32(data[len(data)-8:])
	}
	err := b.readBatch(ctx, rs, func(j int, data []byte, err error) { parse(sel[j], rs[j], data, err) })
	if err != nil {
		return err
	}
	var again []engine.Range
	var idx []int
	for _, i := range sel {
		if nd := need[i]; nd > 0 && errs[i] == nil {
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
	return firstErr(errs)
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
			if err := b.offsetIndexChunk(ci, data[b.rawOf(ci).oiOff-g.off:][:b.rawOf(ci).oiLen]); err != nil {
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

// fileOf returns the file of flattened chunk ci: the last file whose
// first chunk is at or before it (a file without chunks starts where the
// next does).
func (b *builder) fileOf(ci int) int {
	i, _ := slices.BinarySearch(b.base[:len(b.files)], ci+1)
	return i - 1
}

// colOf names the column of flattened chunk ci, for errors.
func (b *builder) colOf(ci int) (path string, k, r int) {
	f := b.fileOf(ci)
	j := ci - b.base[f]
	k, r = j%b.ncols, j/b.ncols
	return b.metas[f].paths[k], k, r
}

// offsetIndexChunk turns flattened chunk ci's offset index (its bytes in
// data) into pages. An offset index that does not parse or contradicts
// itself (locations overlapping, out of order or outside the chunk, first
// rows not increasing from 0 or beyond the row group) is not trusted: the
// chunk is marked for a header walk (FromBadOffsetIndex) and the reason
// kept for the notice. Writers do produce such indexes (one writes
// first_row_index 0 for every page), and the pages themselves are fine.
func (b *builder) offsetIndexChunk(ci int, data []byte) error {
	f := b.fileOf(ci)
	path := b.files[f].Path
	col, _, r := b.colOf(ci)
	raw := b.rawOf(ci)
	res := &b.res[ci]
	locs, err := parseOffsetIndex(data)
	if err != nil {
		res.ignore(err.Error())
		return nil
	}
	rows := b.metas[f].rgRows[r]
	if len(locs) == 0 && rows > 0 {
		res.ignore(fmt.Sprintf("no page locations for %d rows", rows))
		return nil
	}
	res.source = FromOffsetIndex
	res.pages = make([]tmpPage, len(locs))
	prevRow := int64(-1)
	prevEnd := raw.start
	for i, l := range locs {
		switch {
		case l == nil || l.CompressedPageSize <= 0 || l.Offset < raw.start || l.Offset+int64(l.CompressedPageSize) > raw.end:
			res.ignore(fmt.Sprintf("page %d lies outside the column chunk [%d, %d)", i, raw.start, raw.end))
			return nil
		case l.Offset < prevEnd:
			res.ignore(fmt.Sprintf("page %d at offset %d overlaps or precedes the page before it", i, l.Offset))
			return nil
		case i == 0 && l.FirstRowIndex != 0:
			res.ignore(fmt.Sprintf("first page's first_row_index is %d, not 0", l.FirstRowIndex))
			return nil
		case i > 0 && l.FirstRowIndex <= prevRow:
			// Every page starts a row where an offset index exists, so
			// first rows rise strictly.
			res.ignore(fmt.Sprintf("page %d's first_row_index %d does not follow the page before it (%d)", i, l.FirstRowIndex, prevRow))
			return nil
		case i > 0 && l.FirstRowIndex >= rows:
			res.ignore(fmt.Sprintf("page %d's first_row_index %d is beyond the row group's %d rows", i, l.FirstRowIndex, rows))
			return nil
		}
		if rows > math.MaxInt32 {
			return &Error{Op: "offset_index", Path: path, Column: col, Off: raw.oiOff, Err: fmt.Errorf("%w: row group of %d rows", ErrUnsupported, rows)}
		}
		if i > 0 {
			res.pages[i-1].n = l.FirstRowIndex - prevRow
		}
		prevRow = l.FirstRowIndex
		prevEnd = l.Offset + int64(l.CompressedPageSize)
		res.pages[i] = tmpPage{off: l.Offset, size: uint32(l.CompressedPageSize), row: uint32(l.FirstRowIndex), n: rows - l.FirstRowIndex}
	}
	// Only a dictionary page may precede the first data page; writers do
	// not always set dictionary_page_offset for it.
	if len(locs) > 0 && raw.start < locs[0].Offset {
		res.dictOff = raw.start
		res.dictSize = int32(locs[0].Offset - raw.start)
	}
	return nil
}

// ignore drops what an offset index said of a chunk: it will be walked.
func (res *chunkPages) ignore(why string) {
	*res = chunkPages{source: FromBadOffsetIndex, why: why}
}

// noteIgnored tells, once per file, which chunks' offset indexes were
// ignored and why (the first reason).
func (b *builder) noteIgnored() {
	for f := range b.files {
		if b.isReused(f) {
			continue
		}
		n, first := 0, ""
		for ci := b.base[f]; ci < b.base[f+1]; ci++ {
			if b.res[ci].source != FromBadOffsetIndex {
				continue
			}
			if n == 0 {
				col, _, r := b.colOf(ci)
				first = fmt.Sprintf("row group %d column %s: %s", r, col, b.res[ci].why)
			}
			n++
		}
		if n > 0 {
			b.opts.Logf("%s: the offset index of %d column chunk(s) contradicts itself (%s); walking their page headers instead", b.files[f].Path, n, first)
		}
	}
}

// walk is the state of one column chunk's header walk.
type walk struct {
	ci       int
	pos, end int64
	readLen  int
	rep      bool         // the column is repeated: V1 pages need their levels counted
	chunk    *codec.Chunk // to count rows with (rep)
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
		switch {
		case raw.oiBad != "":
			b.res[ci].ignore(raw.oiBad)
		case b.res[ci].source == FromBadOffsetIndex:
		case raw.oiLen != 0 && !b.opts.HeaderWalk:
			continue
		default:
			b.res[ci].source = FromHeaderWalk
		}
		_, k, _ := b.colOf(ci)
		f := b.fileOf(ci)
		if raw.end > raw.start {
			w := &walk{ci: ci, pos: raw.start, end: raw.end, readLen: b.opts.WalkReadSize, rep: b.metas[f].maxRep[k] > 0}
			if w.rep {
				w.chunk = codec.ChunkOf(b.sets[b.fileSch[f]].descr[k], raw.codec, b.files[f].Path, nil)
			}
			ws = append(ws, w)
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
			pg := tmpPage{off: w.pos, size: uint32(total), n: -1}
			switch {
			case h.Type == pageDataV2 && h.NumRows >= 0:
				// V2 pages start and end at row boundaries; the header's
				// count is checked against the row group's in countRows.
				pg.n = int64(h.NumRows)
			case !w.rep && h.NumValues >= 0:
				pg.n = int64(h.NumValues) // one level per row
			case w.rep && p+int(total) <= len(data):
				// The read holds the whole page: count its rows now
				// rather than read it again.
				if err := b.countPage(w.chunk, w.ci, &pg, data[p:p+int(total)]); err != nil {
					return err
				}
			}
			res.pages = append(res.pages, pg)
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
		col.info = ColumnInfo{Path: first.paths[k]} // descriptors: attach
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
					if p.mid {
						col.setMid(int(g) + i)
					}
				}
				col.chunks[c] = m
				ix.stats.count(m.source)
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
