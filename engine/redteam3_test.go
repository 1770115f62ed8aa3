package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// mapsOf counts the mappings of path in /proc/self/maps (a file deleted
// since it was mapped shows there as "path (deleted)").
func mapsOf(t testing.TB, path string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasSuffix(line, " "+path) || strings.HasSuffix(line, " "+path+" (deleted)") {
			n++
		}
	}
	return n
}

// readAll submits reqs on q and returns each request's completion error
// and data (copied), by tag.
func readAll(t *testing.T, e *Engine, reqs []Request) ([][]byte, []error) {
	t.Helper()
	q := e.NewQueue(QueueOptions{})
	for i := range reqs {
		reqs[i].Tag, reqs[i].Worker = uint64(i), -1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- q.Submit(ctx, reqs) }()
	data, errs := make([][]byte, len(reqs)), make([]error, len(reqs))
	for range reqs {
		c, err := q.Next(ctx)
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		data[c.Tag], errs[c.Tag] = bytes.Clone(c.Data), c.Err
		c.Release()
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return data, errs
}

// TestRedteam3MappedShrunkInsideRequest: a mapped file truncated to a
// size inside a request's range (the request starts below the new end
// and runs past it) fails the request with ErrChanged, as the same
// request of a file read with pread does (a short read, then no
// progress), not with EIO: a shrunk file is a changed file whether the
// copy starts past the new end or before it. Page-aligned and unaligned
// new ends, io_uring and pread workers; the buffered (unmapped) file is
// the reference.
func TestRedteam3MappedShrunkInsideRequest(t *testing.T) {
	data := content(256 << 10)
	for _, kind := range []Kind{IOUring, Pread} {
		for _, mapped := range []bool{false, true} {
			for _, cut := range []int64{12288, 10000} {
				name := fmt.Sprintf("%s/%s/cut%d", kind, map[bool]string{false: "buffered", true: "mapped"}[mapped], cut)
				t.Run(name, func(t *testing.T) {
					e := newEngine(t, Options{Kind: kind, QueueDepth: 4, SlotSize: 64 << 10, Direct: Off})
					path := writeFile(t, data, false)
					var f *File
					var err error
					if mapped {
						f, err = e.OpenMapped(path)
					} else {
						f, err = e.OpenMode(path, Off)
					}
					if err != nil {
						t.Fatal(err)
					}
					if f.Mapped() != mapped {
						t.Fatalf("Mapped %v, want %v", f.Mapped(), mapped)
					}
					if err := os.Truncate(path, cut); err != nil {
						t.Fatal(err)
					}
					_, errs := readAll(t, e, []Request{{File: f, Off: 8192, Len: 16384}})
					var ee *Error
					if !errors.Is(errs[0], ErrChanged) || !errors.As(errs[0], &ee) || ee.Path != path || ee.Off != 8192 {
						t.Fatalf("a request from 8192 to 24576 of a file cut to %d: %v; want ErrChanged naming %s at 8192", cut, errs[0], path)
					}
				})
			}
		}
	}
}

// TestRedteam3MappedFlapping: requests of mapped files while another
// goroutine truncates, extends, rewrites and restores them, again and
// again: nothing crashes or hangs; every request either fails (ErrChanged
// or EIO, naming the file) or delivers bytes that are the file's at some
// moment (the original, the rewrite, or zeros where it was cut and
// extended); after CloseFile and Close no mapping of the files is left.
func TestRedteam3MappedFlapping(t *testing.T) {
	const size = 192 << 10
	orig := content(size)
	alt := bytes.Repeat([]byte{0x5a}, size)
	for _, kind := range []Kind{IOUring, Pread} {
		t.Run(kind.String(), func(t *testing.T) {
			e := newEngine(t, Options{Kind: kind, QueueDepth: 8, SlotSize: 32 << 10, Direct: Off, Workers: 2})
			path := writeFile(t, orig, false)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(5, 6))
				for {
					select {
					case <-stop:
						return
					default:
					}
					switch rng.IntN(4) {
					case 0:
						os.Truncate(path, rng.Int64N(size))
					case 1:
						os.Truncate(path, size+rng.Int64N(size))
					case 2:
						if fw, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
							fw.WriteAt(alt[:rng.IntN(size)], 0)
							fw.Close()
						}
					case 3:
						os.WriteFile(path, orig, 0o644)
					}
					time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
				}
			}()
			rng := rand.New(rand.NewPCG(7, 8))
			fails := 0
			for round := 0; round < 40; round++ {
				f, err := e.OpenMapped(path)
				if err != nil {
					t.Fatal(err)
				}
				fsize := f.Size()
				var reqs []Request
				for len(reqs) < 32 {
					reqs = append(reqs, Request{File: f, Off: rng.Int64N(max(fsize, 1)), Len: 1 + rng.IntN(32<<10-1)})
				}
				got, errs := readAll(t, e, reqs)
				for i, r := range reqs {
					if errs[i] != nil {
						var ee *Error
						if !errors.As(errs[i], &ee) || ee.Path != path {
							t.Fatalf("request %d: %v: want an *Error naming %s", i, errs[i], path)
						}
						fails++
						continue
					}
					for j, c := range got[i] {
						at := r.Off + int64(j)
						if at < size && (c == orig[at] || c == alt[at] || c == 0) {
							continue
						}
						if at >= size && c == 0 {
							continue
						}
						t.Fatalf("request %d: byte %d at offset %d is %#x: none of the file's bytes there", i, j, at, c)
					}
				}
				if err := e.CloseFile(f); err != nil {
					t.Fatal(err)
				}
				if n := mapsOf(t, path); n != 0 {
					t.Fatalf("%d mappings of %s left after CloseFile", n, path)
				}
			}
			close(stop)
			wg.Wait()
			t.Logf("%d requests failed", fails)
		})
	}
}

// TestRedteam3OpenMappedDuringClose: OpenMapped racing Engine.Close
// either fails (ErrClosed) or returns a file whose mapping Close or
// CloseFile removes: no mapping of the file outlives the engine, no data
// race on the file's mapping, and a file that Close already closed is
// never mapped through its (closed, perhaps reused) descriptor.
func TestRedteam3OpenMappedDuringClose(t *testing.T) {
	data := content(64 << 10)
	path := writeFile(t, data, false)
	for i := 0; i < 150; i++ {
		e, err := New(Options{Kind: Pread, Workers: 1, SlotsPerWorker: 2, SlotSize: 16 << 10, Direct: Off, Logf: func(string, ...any) {}})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var opened []*File
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				f, err := e.OpenMapped(path)
				if err != nil {
					if !errors.Is(err, ErrClosed) {
						t.Errorf("OpenMapped: %v", err)
					}
					return
				}
				opened = append(opened, f)
			}
		}()
		time.Sleep(time.Duration(i%7) * 50 * time.Microsecond)
		e.Close()
		wg.Wait()
		for _, f := range opened {
			e.CloseFile(f)
		}
		if n := mapsOf(t, path); n != 0 {
			t.Fatalf("round %d: %d mappings of %s left after Close (%d files opened)", i, n, path, len(opened))
		}
	}
}

// TestRedteam3MappedDeleted: a mapped file deleted (and its name reused)
// while open reads its own bytes, and its mapping goes with CloseFile.
func TestRedteam3MappedDeleted(t *testing.T) {
	data := content(100 << 10)
	for _, kind := range []Kind{IOUring, Pread} {
		t.Run(kind.String(), func(t *testing.T) {
			e := newEngine(t, Options{Kind: kind, QueueDepth: 4, SlotSize: 64 << 10, Direct: Off})
			path := writeFile(t, data, false)
			f, err := e.OpenMapped(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, bytes.Repeat([]byte{1}, len(data)), 0o644); err != nil {
				t.Fatal(err)
			}
			got, errs := readAll(t, e, []Request{{File: f, Off: 0, Len: 60 << 10}, {File: f, Off: 50 << 10, Len: 50 << 10}})
			if errs[0] != nil || errs[1] != nil || !bytes.Equal(got[0], data[:60<<10]) || !bytes.Equal(got[1], data[50<<10:]) {
				t.Fatalf("errs %v %v: want the deleted file's bytes", errs[0], errs[1])
			}
			if err := e.CloseFile(f); err != nil {
				t.Fatal(err)
			}
			if n := mapsOf(t, path); n != 0 {
				t.Fatalf("%d mappings left", n)
			}
		})
	}
}
