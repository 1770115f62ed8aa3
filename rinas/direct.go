package rinas

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"

	"github.com/pagefeed/pagefeed/codec"
	"github.com/pagefeed/pagefeed/engine"
)

// directReader reads a unit's contiguous byte range with one synchronous
// read through the engine (File.ReadSpan: O_DIRECT where the file system
// allows it, at the alignment statx reports) into an aligned buffer.
// Ordered fetch uses it: one read at a time, issued and consumed by the
// producer itself, as a classic map-style loader reads — no engine round
// trip, so the baseline is as fast as one-at-a-time reads can be.
// It belongs to the producer goroutine, but for modes, which
// Loader.applyModes may store from another (a mixture's consumer).
type directReader struct {
	mode   engine.Tristate
	modes  atomic.Pointer[map[string]engine.Tristate] // per path, where set (Config.IOMode); else mode
	files  map[string]*engine.File                    // at most directReaderFiles, most recent last in lru
	opened map[string]engine.Tristate                 // the mode each file was opened with
	lru    []string
	buf    []byte // aligned; grown by ReadSpan when a file needs more
}

// directReaderFiles bounds the files the synchronous reader keeps open
// (closed least recently used first): ordered fetch reads unit by unit,
// and a dataset of 10,000 files must not hold 10,000 descriptors.
const directReaderFiles = 4

func newDirectReader(size int, mode engine.Tristate) *directReader {
	return &directReader{mode: mode, files: map[string]*engine.File{}, opened: map[string]engine.Tristate{}, buf: engine.AlignedBuffer(size + 2*4096)}
}

// read returns n bytes at off of path and the bytes the read moved (the
// range rounded out to the alignment); the slice is valid until the next
// read.
func (r *directReader) read(path string, off int64, n int) ([]byte, int, error) {
	mode := r.mode
	if m := r.modes.Load(); m != nil {
		if v, ok := (*m)[path]; ok {
			mode = v
		}
	}
	f, ok := r.files[path]
	if ok && r.opened[path] != mode {
		// Its read mode changed since it was opened (a new epoch's
		// choice).
		f.Close()
		delete(r.files, path)
		r.lru = slices.DeleteFunc(r.lru, func(p string) bool { return p == path })
		ok = false
	}
	if !ok {
		if len(r.lru) >= directReaderFiles {
			old := r.lru[0]
			r.files[old].Close()
			delete(r.files, old)
			r.lru = r.lru[1:]
		}
		var err error
		if f, err = engine.OpenFile(path, mode); err != nil {
			delete(r.files, path)
			return nil, 0, err
		}
		r.files[path], r.opened[path] = f, mode
	} else {
		r.lru = slices.DeleteFunc(r.lru, func(p string) bool { return p == path })
	}
	r.lru = append(r.lru, path)
	b, moved, err := f.ReadSpan(&r.buf, off, n)
	if err == io.EOF {
		return nil, moved, pageErrorf("read", path, off, ErrFileChanged, "read %d of the page's %d bytes", len(b), n)
	}
	return b, moved, syncReadErr(path, off, err)
}

// syncReadErr returns a synchronous read's error: a file that shrank while
// it was open (engine.ErrChanged) is ErrFileChanged, as in readErr.
func syncReadErr(path string, off int64, err error) error {
	var ee *engine.Error
	if errors.Is(err, engine.ErrChanged) && errors.As(err, &ee) {
		return &PageError{Op: "read", Path: path, Off: off, Err: fmt.Errorf("%w: %w", ErrFileChanged, ee.Err)}
	}
	return err
}

func (r *directReader) close() {
	for _, f := range r.files {
		f.Close()
	}
	r.files, r.lru, r.buf = nil, nil, nil
}

// preadFile reads n bytes at off of path on the calling goroutine (the
// slow paths: resume, rows longer than a page, header samples), buffered
// as these small, rare reads always were, through the engine's
// synchronous read. A file shorter than the index says fails with
// ErrFileChanged.
func preadFile(path string, off int64, n int) ([]byte, error) {
	b, err := engine.ReadRange(path, off, n, engine.Off)
	if err == io.EOF {
		return nil, pageErrorf("read", path, off, ErrFileChanged, "read %d of the page's %d bytes", len(b), n)
	}
	return b, syncReadErr(path, off, err)
}

// fetchOrdered reads and decodes fb's units one at a time, in order, on the
// producer goroutine.
func (l *Loader) fetchOrdered(fb *fetchBatch) {
	use := l.usesPageCache()
	for i := range fb.units[:fb.n] {
		u := &fb.units[i]
		// Row shuffle's page cache (rowcache.go), one unit at a time: a
		// unit finds each of its pages or reads it (and caches it for
		// the next), never waits (the pages it claims are resolved
		// before the next lookup), and units land in plan order.
		u.rc = false
		if use && l.lookup(fb, u) {
			l.completeRow(fb, u)
			continue
		}
		l.finishUnit(fb, u, l.readUnitSync(u))
	}
}

func (l *Loader) readUnitSync(u *unit) error {
	ch := l.chunks[l.key(l.lead, u.chunk)]
	if len(u.dicts) < len(l.proj) {
		u.dicts = make([]*codec.Dictionary, len(l.proj))
	}
	for i, k := range l.proj {
		var err error
		if u.dicts[i], err = l.orderedDict(k, u.chunk); err != nil {
			return err
		}
	}
	read := func(path string, off int64, n int) ([]byte, error) {
		// Past the unit (rows longer than a page). The reader reuses its
		// buffer on every read, and a span holds several pages.
		b, _, err := l.direct.read(path, off, n)
		return slices.Clone(b), err
	}
	if !u.leadCached() {
		first := l.ix.Locate(l.lead, u.first)
		last := l.ix.Locate(l.lead, u.first+u.n-1)
		span, moved, err := l.direct.read(ch.Path, first.Offset, int(last.Offset+int64(last.Size)-first.Offset))
		l.sa.disk.Add(int64(moved))
		if err != nil {
			return err
		}
		l.sa.pageBytes.Add(int64(len(span)))
		for k := 0; k < u.n; k++ {
			loc := l.ix.Locate(l.lead, u.first+k)
			lo := loc.Offset - first.Offset
			u.data[k], u.offs[k] = span[lo:lo+int64(loc.Size)], loc.Offset
		}
		err = l.decodePages(l.prodD, u, u.dicts[l.leadPos], read)
		clear(u.data[:u.n])
		if err != nil || len(l.sides) == 0 {
			return err
		}
	}
	// The other columns' pages, one read each into their own buffers.
	for s, k := range l.sides {
		sp := &u.side[s]
		for j := 0; j < sp.n; j++ {
			loc := l.ix.Locate(k, sp.first+j)
			b, moved, err := l.direct.read(ch.Path, loc.Offset, int(loc.Size))
			l.sa.disk.Add(int64(moved))
			if err != nil {
				return err
			}
			l.sa.pageBytes.Add(int64(len(b)))
			u.data[sp.base+j], u.offs[sp.base+j] = slices.Clone(b), loc.Offset
		}
	}
	err := l.decodeSides(l.prodD, u, u.dicts, read)
	clear(u.data[:u.nr])
	return err
}

// orderedDict returns the dictionary of chunk c of column k (nil when it
// has none), read with the producer's direct reader when not cached.
func (l *Loader) orderedDict(k, c int) (*codec.Dictionary, error) {
	return l.cachedDict(k, c, l.prodD, func(path string, off int64, n int) ([]byte, error) {
		b, moved, err := l.direct.read(path, off, n)
		l.sa.disk.Add(int64(moved))
		if err != nil {
			return nil, err
		}
		l.sa.pageBytes.Add(int64(len(b)))
		l.sa.dicts.Add(1)
		return b, nil
	})
}
