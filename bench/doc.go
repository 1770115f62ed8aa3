// Package bench is pagefeed's benchmark library: Config structs and Run
// functions that cmd/pagebench binds to fio-style flags, after pebble's
// bench/ and cmd/pebble.
//
// Raw mode (RunRaw) reads a plain file the way fio does: rw=read or
// randread, bs-sized reads, iodepth in flight, with the io_uring engine of
// package engine, a psync loop or an mmap copy loop. Its report speaks fio's
// JSON (FioOutput) and fio-like text, so fio tooling reads either.
// CompareFio runs fio and pagebench alternately on one file and tabulates
// medians and ratios.
//
// Nothing here panics on bad input: options, job files and sizes are
// validated and rejected with errors naming the key, the value and the file.
package bench
