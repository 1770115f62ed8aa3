package engine

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// Open opens path for reads, with O_DIRECT when Options.Direct allows and
// the file system accepts it. Where O_DIRECT is refused at open (EINVAL:
// tmpfs, some FUSE) and Direct is TryOn, the file is reopened buffered,
// File.Direct reports false, and the fallback is noticed once per device.
func (e *Engine) Open(path string) (*File, error) { return e.OpenMode(path, e.opts.Direct) }

// OpenMode is Open with direct in place of Options.Direct: a caller that
// chooses per file between O_DIRECT and the page cache opens each file
// with its own mode (TryOn falls back and notices as Open does). One path
// may be open several times, in different modes.
func (e *Engine) OpenMode(path string, direct Tristate) (*File, error) {
	if e.closing.Load() {
		return nil, &Error{Op: "open", Path: path, Err: ErrClosed}
	}
	if direct < TryOn || direct > Off {
		return nil, &Error{Op: "open", Path: path, Err: fmt.Errorf("%w: direct mode %d", ErrInvalid, direct)}
	}
	f, dev, err := openPath(path, direct)
	if err != nil {
		return nil, err
	}
	if dev != nil {
		e.notice("buffered:"+strconv.FormatUint(*dev, 10),
			"O_DIRECT refused by the file system of %s (EINVAL): buffered reads for its files", path)
	}
	if f.direct && f.offAlign > e.opts.SlotSize {
		unix.Close(f.fd)
		return nil, &Error{Op: "open", Path: path, Err: fmt.Errorf("%w: offset alignment %d, memory alignment %d exceed the slot's %d",
			ErrAlignment, f.offAlign, f.memAlign, slotAlign)}
	}
	f.e = e
	e.filesMu.Lock()
	if e.closing.Load() {
		e.filesMu.Unlock()
		unix.Close(f.fd)
		return nil, &Error{Op: "open", Path: path, Err: ErrClosed}
	}
	if n := len(e.regFree); n > 0 {
		f.regIdx = e.regFree[n-1]
		e.regFree = e.regFree[:n-1]
	}
	e.files[f] = struct{}{}
	e.filesMu.Unlock()
	return f, nil
}

// OpenFile opens path for synchronous reads (File.ReadAt, File.ReadSpan)
// without an engine: O_DIRECT as direct says (TryOn falls back to buffered
// reads where the file system refuses it, silently: File.Direct says which),
// with the alignment statx reports. Requests for the file on an engine's
// queue fail with ErrInvalid. Close it with File.Close.
func OpenFile(path string, direct Tristate) (*File, error) {
	f, _, err := openPath(path, direct)
	return f, err
}

// openPath opens path as mode says and reads its size and direct-I/O
// alignment. fellBack, when not nil, is the device whose file system
// refused O_DIRECT, so that TryOn fell back to buffered reads.
func openPath(path string, mode Tristate) (f *File, fellBack *uint64, err error) {
	flags := unix.O_RDONLY | unix.O_CLOEXEC
	direct := mode != Off
	fd, err := openFile(path, flags|pick(direct, oDirect, 0))
	if err == unix.EINVAL && direct {
		if mode == On {
			return nil, nil, &Error{Op: "open", Path: path, Err: fmt.Errorf("O_DIRECT refused: %w", err)}
		}
		direct = false
		fd, err = openFile(path, flags)
		if err == nil {
			var st unix.Stat_t
			dev := uint64(0)
			if unix.Fstat(fd, &st) == nil {
				dev = uint64(st.Dev)
			}
			fellBack = &dev
		}
	}
	if err != nil {
		return nil, nil, &Error{Op: "open", Path: path, Err: err}
	}
	st, err := statFile(fd)
	if err != nil {
		unix.Close(fd)
		if e, ok := err.(*Error); ok {
			e.Path = path
		}
		return nil, nil, err
	}
	if st.isDir {
		unix.Close(fd)
		return nil, nil, &Error{Op: "open", Path: path, Err: errors.New("is a directory")}
	}
	f = &File{path: path, size: st.size, direct: direct, fd: fd, offAlign: 1, memAlign: 1, regIdx: -1}
	f.cond = sync.NewCond(&f.mu)
	if direct {
		f.offAlign, f.memAlign = st.offAlign, st.memAlign
		if f.memAlign > slotAlign {
			unix.Close(fd)
			return nil, nil, &Error{Op: "open", Path: path, Err: fmt.Errorf("%w: offset alignment %d, memory alignment %d exceed the slot's %d",
				ErrAlignment, f.offAlign, f.memAlign, slotAlign)}
		}
	}
	return f, fellBack, nil
}

func pick(c bool, a, b int) int {
	if c {
		return a
	}
	return b
}

// openFile is the open(2) hook; tests replace it to refuse O_DIRECT.
var openFile = openRetry

func openRetry(path string, flags int) (int, error) {
	for {
		fd, err := sysOpen(path, flags)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// CloseFile closes f. Reads of f still in flight finish first; requests for
// f submitted afterwards fail with an *Error wrapping os.ErrClosed. It must
// not be called from a Handler while reads of f are in flight (it would
// wait for the worker it runs on).
func (e *Engine) CloseFile(f *File) error {
	if f == nil {
		return &Error{Op: "close", Err: os.ErrInvalid}
	}
	if f.closing.Swap(true) {
		return &Error{Op: "close", Path: f.path, Err: os.ErrClosed}
	}
	f.mu.Lock()
	for f.inflight.Load() > 0 {
		f.cond.Wait()
	}
	f.mu.Unlock()
	e.filesMu.Lock()
	if _, ok := e.files[f]; !ok { // Close already closed it
		e.filesMu.Unlock()
		return nil
	}
	delete(e.files, f)
	if f.regIdx >= 0 {
		// Rings may keep a reference to the old file in this index until a
		// new file takes it over; the descriptor number itself is free.
		e.regFree = append(e.regFree, f.regIdx)
	}
	err := unix.Close(f.fd)
	e.filesMu.Unlock()
	if err != nil {
		return &Error{Op: "close", Path: f.path, Err: err}
	}
	return nil
}

// readDone marks one read of f complete, waking CloseFile on the last one.
func (f *File) readDone() {
	if f.inflight.Add(-1) == 0 && f.closing.Load() {
		f.mu.Lock()
		f.cond.Broadcast()
		f.mu.Unlock()
	}
}
