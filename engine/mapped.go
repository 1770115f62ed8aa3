package engine

import (
	"runtime/debug"
	"syscall"

	"golang.org/x/sys/unix"
)

// OpenMapped opens path for reads through the page cache that make no
// system call: the file is mapped read-only (MADV_RANDOM: a page not in
// the cache is read alone, without read-ahead) and each request is served
// by copying its bytes out of the mapping into its slot on the worker, as
// the pread of a buffered file would, then delivered as any other. It
// suits a file whose pages are in the page cache: a page that is not is
// read synchronously by the worker when the copy touches it, holding up
// the worker's other requests meanwhile.
//
// A file that shrinks while mapped fails the requests that run past its
// new end with ErrChanged, as reads would, instead of killing the process
// with SIGBUS; a page the kernel cannot read fails its request with EIO.
// A request that ends in the memory page the new end falls in is the
// exception: the mapping reads that partial page whole, so the request
// gets zeros past the new end instead of an error. A caller that must not
// use such bytes checks the file's identity once its reads have landed,
// as it must anyway for a file written in place. The mapping is removed
// by CloseFile (once the file's requests finished) or by Close. Where
// mmap(2) fails the file is read with plain buffered reads (File.Mapped
// reports false) and the fallback is noticed once.
func (e *Engine) OpenMapped(path string) (*File, error) {
	f, err := e.OpenMode(path, Off)
	if err != nil || f.size == 0 {
		return f, err
	}
	// Mapped under filesMu, as Close and CloseFile unmap: a Close that
	// took the file since OpenMode closed its descriptor (whose number
	// another open may reuse), and a mapping set after it would outlive
	// the engine.
	e.filesMu.Lock()
	if _, ok := e.files[f]; !ok {
		e.filesMu.Unlock()
		return nil, &Error{Op: "open", Path: path, Err: ErrClosed}
	}
	m, err := unix.Mmap(f.fd, 0, int(f.size), unix.PROT_READ, unix.MAP_SHARED)
	if err == nil {
		// Advice only: without it a missing page reads ahead, which is
		// all the harm there is.
		_ = unix.Madvise(m, unix.MADV_RANDOM)
		f.mapped = m
	}
	e.filesMu.Unlock()
	if err != nil {
		e.notice("mmap", "mapping %s failed (%v): buffered reads instead", path, err)
	}
	return f, nil
}

// Mapped reports whether the file's requests are served from a mapping
// (OpenMapped).
func (f *File) Mapped() bool { return f.mapped != nil }

// unmap removes f's mapping, if any; no request of f may be in flight.
func (f *File) unmap() {
	if f.mapped != nil {
		_ = unix.Munmap(f.mapped)
		f.mapped = nil
	}
}

// copyMapped serves s from its file's mapping: it copies what s still
// wants and returns the bytes copied (0 at the mapping's end), as a read
// returns them, or -EIO. A fault while copying (the file shrank below the
// mapped pages, or a page could not be read) is caught: the runtime turns
// it into a panic on this goroutine only while SetPanicOnFault is on. A
// file now shorter than the copy's end answers 0, which advance fails
// with ErrChanged, as the reads of a shrunk file end (a short read, then
// none); only a fault the file's size does not explain is EIO.
func copyMapped(s *slot) (n int) {
	f := s.c.File
	off := s.aoff + int64(s.got)
	if off >= int64(len(f.mapped)) {
		return 0
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			n = -int(syscall.EIO)
			var st unix.Stat_t
			if unix.Fstat(f.fd, &st) == nil && st.Size < s.aoff+int64(s.want) {
				n = 0
			}
		}
	}()
	return copy(s.buf[s.got:s.want], f.mapped[off:])
}

// serveMapped completes s from its file's mapping on worker w (no read is
// issued): it copies, resuming as a short read would, until advance says
// the slot is done.
func (w *worker) serveMapped(s *slot) {
	s.handed()
	for !s.advance(w.e.fault(s, copyMapped(s))) {
	}
}
