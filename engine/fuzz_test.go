package engine

import "testing"

// FuzzSlotSetup checks the aligned-superset arithmetic: for any request the
// engine accepts, the slot read is aligned, fits the slot, covers the
// requested bytes clamped to the file size, and finish slices exactly them.
func FuzzSlotSetup(f *testing.F) {
	f.Add(int64(0), 4096, int64(1<<20), uint8(12), true)
	f.Add(int64(4095), 2, int64(8192), uint8(9), true)
	f.Add(int64(1<<20-3), 100, int64(1<<20), uint8(12), true)
	f.Add(int64(5000), 10, int64(100), uint8(9), true)
	f.Add(int64(7), 65536-4096, int64(1<<30), uint8(12), true)
	f.Add(int64(123), 65535, int64(1<<20), uint8(0), false)
	const slotSize = 64 << 10
	e := &Engine{opts: Options{SlotSize: slotSize}}
	w := &worker{e: e}
	f.Fuzz(func(t *testing.T, off int64, n int, size int64, alignLog uint8, direct bool) {
		if size < 0 || alignLog > 13 {
			return
		}
		a := 1 << alignLog
		file := &File{e: e, path: "fuzz", size: size, direct: direct, offAlign: a, memAlign: a}
		if !direct {
			file.offAlign, file.memAlign = 1, 1
		}
		req := Request{File: file, Off: off, Len: n}
		if e.check(&req) != nil {
			return
		}
		s := &slot{w: w, buf: make([]byte, slotSize)}
		s.setup(&Queue{e: e}, &req)
		if s.want < 0 || s.want > slotSize {
			t.Fatalf("want %d outside slot %d", s.want, slotSize)
		}
		if direct && s.want > 0 && (s.aoff%int64(a) != 0 || s.want%a != 0) {
			t.Fatalf("unaligned read aoff %d want %d align %d", s.aoff, s.want, a)
		}
		wantN := int64(0)
		if off < size {
			wantN = min(off+int64(n), size) - off
		}
		if int64(s.n) != wantN || (s.n > 0 && (s.aoff+int64(s.head) != off || s.head+s.n > s.want)) {
			t.Fatalf("off %d n %d size %d: aoff %d head %d n %d want %d", off, n, size, s.aoff, s.head, s.n, s.want)
		}
		// A full read yields exactly the clamped bytes.
		for i := range s.buf[:s.want] {
			s.buf[i] = byte(s.aoff + int64(i))
		}
		if s.want == 0 {
			s.finish()
		} else if !s.advance(s.want) {
			t.Fatal("full read not done")
		}
		if int64(len(s.c.Data)) != wantN {
			t.Fatalf("Data %d bytes, want %d", len(s.c.Data), wantN)
		}
		for i, b := range s.c.Data {
			if b != byte(off+int64(i)) {
				t.Fatalf("Data[%d] from the wrong offset", i)
			}
		}
	})
}
