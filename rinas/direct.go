package rinas

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/pagefeed/pagefeed/codec"
)

// directReader reads a unit's contiguous byte range with one synchronous
// pread, O_DIRECT where the file system allows it, into an aligned buffer.
// Ordered fetch uses it: one read at a time, issued and consumed by the
// producer itself, as a classic map-style loader reads — no engine round
// trip, so the baseline is as fast as one-at-a-time reads can be.
// It belongs to the producer goroutine.
type directReader struct {
	fds   map[string]int
	buf   []byte // mmap'd, page aligned
	align int64
}

func newDirectReader(size int) (*directReader, error) {
	size = (size + 2*4096 + 4095) &^ 4095
	buf, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("rinas: map %d-byte read buffer: %w", size, err)
	}
	return &directReader{fds: map[string]int{}, buf: buf, align: 4096}, nil
}

// read returns n bytes at off of path and the bytes the read moved (the
// range rounded out to the alignment); the slice is valid until the next
// read.
func (r *directReader) read(path string, off int64, n int) ([]byte, int, error) {
	fd, ok := r.fds[path]
	if !ok {
		var err error
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|oDirect, 0)
		if errors.Is(err, unix.EINVAL) {
			fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		}
		if err != nil {
			return nil, 0, &os.PathError{Op: "open", Path: path, Err: err}
		}
		r.fds[path] = fd
	}
	start := off &^ (r.align - 1)
	end := (off + int64(n) + r.align - 1) &^ (r.align - 1)
	if end-start > int64(len(r.buf)) {
		return nil, 0, fmt.Errorf("rinas: read %s at offset %d: %d bytes exceed the %d-byte read buffer", path, off, n, len(r.buf))
	}
	b := r.buf[:end-start]
	got := 0
	for got < len(b) {
		m, err := unix.Pread(fd, b[got:], start+int64(got))
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil {
			return nil, got, fmt.Errorf("rinas: read %s at offset %d: %w", path, start+int64(got), err)
		}
		if m == 0 {
			break // end of file
		}
		got += m
	}
	lo := int(off - start)
	if lo+n > got {
		return nil, got, pageErrorf("read", path, off, ErrFileChanged, "read %d of the page's %d bytes", max(got-lo, 0), n)
	}
	return b[lo : lo+n], got, nil
}

func (r *directReader) close() {
	for _, fd := range r.fds {
		unix.Close(fd)
	}
	r.fds = nil
	if r.buf != nil {
		unix.Munmap(r.buf)
		r.buf = nil
	}
}

// fetchOrdered reads and decodes fb's units one at a time, in order, on the
// producer goroutine.
func (l *Loader) fetchOrdered(fb *fetchBatch) {
	for i := range fb.units[:fb.n] {
		u := &fb.units[i]
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
	read := func(path string, off int64, n int) ([]byte, error) {
		// Past the unit (rows longer than a page). The reader reuses its
		// buffer on every read, and a span holds several pages.
		b, _, err := l.direct.read(path, off, n)
		return slices.Clone(b), err
	}
	err = l.decodePages(l.prodD, u, u.dicts[l.leadPos], read)
	clear(u.data[:u.n])
	if err != nil || len(l.sides) == 0 {
		return err
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
	err = l.decodeSides(l.prodD, u, u.dicts, read)
	clear(u.data[:u.nr])
	return err
}

// orderedDict returns the dictionary of chunk c of column k (nil when it
// has none), read with the producer's direct reader when not cached.
func (l *Loader) orderedDict(k, c int) (*codec.Dictionary, error) {
	ci := l.ix.Chunk(k, c)
	if ci.DictSize == 0 {
		return nil, nil
	}
	key := l.key(k, c)
	if d, ok := l.dicts.lookup(key); ok {
		return d, nil
	}
	ch := l.chunks[key]
	b, moved, err := l.direct.read(ch.Path, ci.DictOffset, int(ci.DictSize))
	l.sa.disk.Add(int64(moved))
	if err != nil {
		return nil, err
	}
	l.sa.pageBytes.Add(int64(len(b)))
	l.sa.dicts.Add(1)
	d, err := l.prodD.Dictionary(ch, b, ci.DictOffset)
	if err != nil {
		return nil, err
	}
	if err := l.dicts.store(key, d, func() string { return l.chunkName(key) }); err != nil {
		return nil, err
	}
	return d, nil
}
