package engine

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Open opens path for reads, with O_DIRECT when Options.Direct allows and
// the file system accepts it. Where O_DIRECT is refused at open (EINVAL:
// tmpfs, some FUSE) and Direct is TryOn, the file is reopened buffered,
// File.Direct reports false, and the fallback is noticed once per device.
func (e *Engine) Open(path string) (*File, error) {
	if e.closing.Load() {
		return nil, &Error{Op: "open", Path: path, Err: ErrClosed}
	}
	f, dev, err := openPath(path, e.opts.Direct)
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
	f.cond = sync.NewCond(&f.mu)
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
	if err != nil {
		return nil, err
	}
	f.cond = sync.NewCond(&f.mu)
	return f, nil
}

// openPath opens path as mode says and reads its size and direct-I/O
// alignment. fellBack, when not nil, is the device whose file system
// refused O_DIRECT, so that TryOn fell back to buffered reads.
func openPath(path string, mode Tristate) (f *File, fellBack *uint64, err error) {
	flags := unix.O_RDONLY | unix.O_CLOEXEC
	direct := mode != Off
	fd, err := openFile(path, flags|pick(direct, unix.O_DIRECT, 0))
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
				dev = st.Dev
			}
			fellBack = &dev
		}
	}
	if err != nil {
		return nil, nil, &Error{Op: "open", Path: path, Err: err}
	}
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_SIZE|unix.STATX_TYPE|unix.STATX_DIOALIGN, &stx); err != nil {
		unix.Close(fd)
		return nil, nil, &Error{Op: "statx", Path: path, Err: err}
	}
	if stx.Mode&unix.S_IFMT == unix.S_IFDIR {
		unix.Close(fd)
		return nil, nil, &Error{Op: "open", Path: path, Err: errors.New("is a directory")}
	}
	size := int64(stx.Size)
	if stx.Mode&unix.S_IFMT == unix.S_IFBLK {
		// A block device's size is not in st_size.
		n, err := blockDeviceSize(fd)
		if err != nil {
			unix.Close(fd)
			return nil, nil, &Error{Op: "ioctl BLKGETSIZE64", Path: path, Err: err}
		}
		size = n
	}
	f = &File{path: path, size: size, direct: direct, fd: fd, offAlign: 1, memAlign: 1, regIdx: -1}
	if direct {
		f.offAlign, f.memAlign = dioAlign(&stx)
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
		fd, err := unix.Open(path, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// dioAlign returns the direct-I/O offset and memory alignment: statx's
// STATX_DIOALIGN, else the device's logical block size, else 4096.
func dioAlign(stx *unix.Statx_t) (off, mem int) {
	if stx.Mask&unix.STATX_DIOALIGN != 0 && stx.Dio_offset_align > 0 {
		off, mem = int(stx.Dio_offset_align), int(stx.Dio_mem_align)
		if mem <= 0 {
			mem = off
		}
		return off, mem
	}
	if lbs := logicalBlockSize(stx.Dev_major, stx.Dev_minor); lbs > 0 {
		return lbs, lbs
	}
	return 4096, 4096
}

// logicalBlockSize reads the block device's logical_block_size from sysfs
// (a partition's queue lives in its parent); 0 when unknown.
func logicalBlockSize(major, minor uint32) int {
	base := fmt.Sprintf("/sys/dev/block/%d:%d/", major, minor)
	for _, p := range []string{base + "queue/logical_block_size", base + "../queue/logical_block_size"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err == nil && n > 0 && n&(n-1) == 0 {
			return n
		}
	}
	return 0
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

// blockDeviceSize returns the size in bytes of the block device open at fd.
func blockDeviceSize(fd int) (int64, error) {
	var n uint64
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.BLKGETSIZE64, uintptr(unsafe.Pointer(&n))); e != 0 {
		return 0, e
	}
	return int64(n), nil
}
