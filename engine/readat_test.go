package engine

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReadAtAndReadSpan reads random ranges (unaligned, crossing the end
// of the file, past it) with ReadAt and ReadSpan on direct, buffered and
// fallen-back files, and checks the bytes, the io.EOF contract and the
// bytes moved.
func TestReadAtAndReadSpan(t *testing.T) {
	data := content(300 << 10)
	for _, tc := range []struct {
		name   string
		mode   Tristate
		refuse bool
	}{{"direct", TryOn, false}, {"buffered", Off, false}, {"fallback", TryOn, true}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.refuse {
				refuseDirect(t)
			}
			path := writeFile(t, data, false)
			f, err := OpenFile(path, tc.mode)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if tc.mode == Off || tc.refuse {
				if f.Direct() {
					t.Fatal("buffered file reports Direct")
				}
			}
			t.Logf("direct %v, alignment %d/%d", f.Direct(), f.offAlign, f.memAlign)
			rng := rand.New(rand.NewSource(7))
			var scratch []byte
			for i := 0; i < 200; i++ {
				off := int64(rng.Intn(len(data) + 10000))
				n := rng.Intn(70000)
				if i%7 == 0 {
					n = rng.Intn(16) // tiny
				}
				want := expect(data, off, n)
				b := make([]byte, n)
				got, err := f.ReadAt(b, off)
				if got != len(want) || !bytes.Equal(b[:got], want) {
					t.Fatalf("ReadAt(%d bytes at %d): %d bytes, want %d (equal %v)", n, off, got, len(want), bytes.Equal(b[:got], want))
				}
				if (len(want) < n) != (err == io.EOF) || (err != nil && err != io.EOF) {
					t.Fatalf("ReadAt(%d bytes at %d) read %d: err %v", n, off, got, err)
				}
				span, moved, err := f.ReadSpan(&scratch, off, n)
				if !bytes.Equal(span, want) {
					t.Fatalf("ReadSpan(%d bytes at %d): %d bytes, want %d", n, off, len(span), len(want))
				}
				if (len(want) < n) != (err == io.EOF) || (err != nil && err != io.EOF) {
					t.Fatalf("ReadSpan(%d bytes at %d) read %d: err %v", n, off, len(span), err)
				}
				start := off &^ int64(f.offAlign-1)
				if want := max(0, min(int64(f.SpanLen(off, n)), int64(len(data))-start)); int64(moved) != want {
					t.Fatalf("ReadSpan(%d bytes at %d) moved %d, want %d", n, off, moved, want)
				}
			}
		})
	}
}

// TestReadAtErrors checks the failures a synchronous read reports.
func TestReadAtErrors(t *testing.T) {
	data := content(64 << 10)
	path := writeFile(t, data, false)
	f, err := OpenFile(path, TryOn)
	if err != nil {
		t.Fatal(err)
	}
	var ee *Error
	if _, err := f.ReadAt(make([]byte, 4), -1); !errors.As(err, &ee) || ee.Op != "read" || ee.Path != path {
		t.Errorf("negative offset: %v", err)
	}
	if f.Direct() && f.offAlign >= 512 {
		// Pretend the file needs no alignment: the kernel refuses the read,
		// and the error says so.
		a, m := f.offAlign, f.memAlign
		f.offAlign, f.memAlign = 1, 1
		var scratch []byte
		if _, _, err := f.ReadSpan(&scratch, 3, 5); !errors.Is(err, ErrAlignment) || !errors.Is(err, unix.EINVAL) {
			t.Errorf("misaligned direct read: %v", err)
		}
		f.offAlign, f.memAlign = a, m
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
	if _, err := OpenFile(path+".missing", TryOn); err == nil {
		t.Error("missing file opened")
	}

	// A file from OpenFile belongs to no engine: a queue refuses it.
	e := newEngine(t, Options{QueueDepth: 4, SlotSize: 16 << 10})
	g, err := OpenFile(path, TryOn)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	q := e.NewQueue(QueueOptions{})
	if err := q.Submit(testCtx(t), []Request{{File: g, Len: 10, Worker: -1}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("standalone file on a queue: %v", err)
	}
}

// TestReadAtShrunk: a file that shrank after OpenFile fails synchronous
// reads of the bytes it lost with ErrChanged naming it, as queued reads
// do, while a range past its size at open still ends in io.EOF.
func TestReadAtShrunk(t *testing.T) {
	data := content(256 << 10)
	for _, mode := range []Tristate{TryOn, Off} {
		path := writeFile(t, data, false)
		f, err := OpenFile(path, mode)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := os.Truncate(path, 64<<10); err != nil {
			t.Fatal(err)
		}
		var ee *Error
		b := make([]byte, 5000)
		if n, err := f.ReadAt(b, 100<<10+3); !errors.Is(err, ErrChanged) || !errors.As(err, &ee) || ee.Path != path || ee.Op != "read" {
			t.Errorf("direct %v: ReadAt of lost bytes: %d, %v; want ErrChanged naming %s", f.Direct(), n, err, path)
		}
		if _, err := f.ReadAt(b, 60<<10); !errors.Is(err, ErrChanged) {
			t.Errorf("direct %v: ReadAt across the new end: %v", f.Direct(), err)
		}
		var scratch []byte
		if _, _, err := f.ReadSpan(&scratch, 100<<10+3, 5000); !errors.Is(err, ErrChanged) {
			t.Errorf("direct %v: ReadSpan of lost bytes: %v", f.Direct(), err)
		}
		if n, err := f.ReadAt(b[:100], 1000); err != nil || n != 100 || !bytes.Equal(b[:100], data[1000:1100]) {
			t.Errorf("direct %v: ReadAt of kept bytes: %d, %v", f.Direct(), n, err)
		}
		if err := os.Truncate(path, int64(len(data))); err != nil { // back to its size, zeros at the end
			t.Fatal(err)
		}
		if n, err := f.ReadAt(b, int64(len(data))-100); err != io.EOF || n != 100 {
			t.Errorf("direct %v: ReadAt past the end: %d, %v; want 100, io.EOF", f.Direct(), n, err)
		}
	}
}
