package engine

import (
	"fmt"
	"io"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Synchronous reads. The engine's queues are for many reads in flight; a
// caller that needs one range now (a resume, a slow path, ordered fetch, a
// baseline) reads it on its own goroutine with File.ReadAt or
// File.ReadSpan, which own the same alignment rules as the queues: on a
// direct file the aligned superset of the range is read into aligned
// memory. Synchronous reads do not pass through Options.Faults.

// Close closes f: a file from OpenFile, or one from Engine.Open (then it is
// Engine.CloseFile).
func (f *File) Close() error {
	if f == nil {
		return &Error{Op: "close", Err: os.ErrInvalid}
	}
	if f.e != nil {
		return f.e.CloseFile(f)
	}
	if f.closing.Swap(true) {
		return &Error{Op: "close", Path: f.path, Err: os.ErrClosed}
	}
	if err := unix.Close(f.fd); err != nil {
		return &Error{Op: "close", Path: f.path, Err: err}
	}
	return nil
}

// SpanLen returns the scratch ReadSpan needs for n bytes at off: the range
// rounded out to f's offset alignment (n itself on a buffered file).
func (f *File) SpanLen(off int64, n int) int {
	a := int64(f.offAlign)
	start := off &^ (a - 1)
	end := (off + int64(n) + a - 1) &^ (a - 1)
	return int(end - start)
}

// ReadSpan reads n bytes at off on the calling goroutine into *scratch,
// which it replaces with a larger aligned buffer when it is too small or
// misaligned for f, and returns them as a slice of *scratch, valid until
// the scratch is used again. moved is what the read moved from the file:
// the range rounded out to the direct-I/O alignment (SpanLen), or what of
// it the file held. Where the file ends before off+n, data holds the bytes
// up to the end and err is io.EOF; a read that stops before the size the
// file had at open fails with ErrChanged (the file shrank since); other
// failures are *Error{Op: "read"},
// wrapping ErrAlignment where the kernel refused a direct read's alignment
// (EINVAL). EINTR and EAGAIN are retried.
func (f *File) ReadSpan(scratch *[]byte, off int64, n int) (data []byte, moved int, err error) {
	if off < 0 || n < 0 {
		return nil, 0, &Error{Op: "read", Path: f.path, Off: off, Err: fmt.Errorf("negative range: %d bytes at %d", n, off)}
	}
	a := int64(f.offAlign)
	start := off &^ (a - 1)
	span := f.SpanLen(off, n)
	if len(*scratch) < span || !aligned(*scratch, f.memAlign) {
		*scratch = AlignedBuffer(span)
	}
	got, err := f.pread((*scratch)[:span], start)
	lo := int(off - start)
	if err != nil {
		return nil, got, err
	}
	if err := f.changed(start, span, got); err != nil {
		return nil, got, err
	}
	if lo+n > got {
		return (*scratch)[lo:max(got, lo)], got, io.EOF
	}
	return (*scratch)[lo : lo+n], got, nil
}

// ReadAt implements io.ReaderAt on the calling goroutine: on a direct file
// b is read in place when it and off meet the alignment, else through an
// aligned scratch buffer and copied. Where the file ends first it returns
// the bytes up to the end and io.EOF, or ErrChanged where it ended before
// the size it had at open. Safe for concurrent use, but not
// concurrently with closing f: the caller keeps f open until its
// synchronous reads return (they hold no count that Close waits for).
func (f *File) ReadAt(b []byte, off int64) (int, error) {
	if !f.direct || (aligned(b, f.memAlign) && off%int64(f.offAlign) == 0 && len(b)%f.offAlign == 0) {
		if off < 0 {
			return 0, &Error{Op: "read", Path: f.path, Off: off, Err: fmt.Errorf("negative offset %d", off)}
		}
		n, err := f.pread(b, off)
		if err == nil && n < len(b) {
			if err = f.changed(off, len(b), n); err == nil {
				err = io.EOF
			}
		}
		return n, err
	}
	sp := scratchPool.Get().(*[]byte)
	defer scratchPool.Put(sp)
	data, _, err := f.ReadSpan(sp, off, len(b))
	return copy(b, data), err
}

// ReadRange reads n bytes at off of the file at path on the calling
// goroutine: OpenFile(path, mode), ReadAt, Close. For one-off reads (a
// resume, a slow path, a baseline's preload); repeated reads of a file keep
// it open instead. Where the file ends first it returns the bytes up to
// the end and io.EOF.
func ReadRange(path string, off int64, n int, mode Tristate) ([]byte, error) {
	f, err := OpenFile(path, mode)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	m, err := f.ReadAt(b, off)
	if err != nil && err != io.EOF {
		return nil, err
	}
	return b[:m], err
}

// changed reports ErrChanged when a read of n bytes at off that returned
// got stopped before the end of the file as it was at open: the file shrank
// (or was replaced) since, as the queued reads report it.
func (f *File) changed(off int64, n, got int) error {
	if end := min(off+int64(n), f.size); off+int64(got) < end {
		return &Error{Op: "read", Path: f.path, Off: off, Err: fmt.Errorf("%w: %d of %d bytes, the file held %d at open",
			ErrChanged, got, end-off, f.size)}
	}
	return nil
}

// scratchPool holds ReadAt's aligned bounce buffers.
var scratchPool = sync.Pool{New: func() any { return new([]byte) }}

// pread fills b from off until it is full or the file ends; it returns the
// bytes read and, on failure, an *Error naming the offset that failed.
func (f *File) pread(b []byte, off int64) (int, error) {
	got := 0
	for got < len(b) {
		m, err := unix.Pread(f.fd, b[got:], off+int64(got))
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil {
			var e error = err
			if err == unix.EINVAL && f.direct {
				e = fmt.Errorf("%w: offset alignment %d, memory alignment %d: %w", ErrAlignment, f.offAlign, f.memAlign, err)
			}
			return got, &Error{Op: "read", Path: f.path, Off: off + int64(got), Err: e}
		}
		if m == 0 {
			break // end of file
		}
		got += m
	}
	return got, nil
}

// AlignedBuffer returns n bytes (rounded up to 4 KiB) starting at a 4 KiB
// boundary: memory any direct read accepts (Open refuses files that need
// more). It is ordinary Go memory, which the collector does not move.
func AlignedBuffer(n int) []byte {
	n = (n + slotAlign - 1) &^ (slotAlign - 1)
	b := make([]byte, n+slotAlign)
	skip := (slotAlign - int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))&(slotAlign-1))) & (slotAlign - 1)
	return b[skip : skip+n : skip+n]
}

func aligned(b []byte, a int) bool {
	return a <= 1 || uintptr(unsafe.Pointer(unsafe.SliceData(b)))&uintptr(a-1) == 0
}
