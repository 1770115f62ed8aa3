package engine

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSlotShortReads drives slot.advance with the results a kernel may
// return: short reads resume from an aligned point, EOF ends the read,
// EINTR/EAGAIN retry, other errors finish with a structured error.
func TestSlotShortReads(t *testing.T) {
	e := &Engine{opts: Options{SlotSize: 64 << 10}}
	w := &worker{e: e}
	type step struct {
		res      int
		done     bool
		wantGot  int // s.got after the step
		wantData int // len(Data) when done; -1 for an error
	}
	for _, tc := range []struct {
		name      string
		direct    bool
		off, size int64
		n         int
		steps     []step
	}{
		{"full read at once", true, 100, 1 << 20, 5000, []step{{8192, true, 8192, 5000}}},
		{"short then rest (aligned)", true, 100, 1 << 20, 5000, []step{{4096, false, 4096, 0}, {4096, true, 8192, 5000}}},
		{"short unaligned resumes aligned", true, 100, 1 << 20, 5000, []step{{1000, false, 512, 0}, {7680, true, 8192, 5000}}},
		{"EINTR and EAGAIN retry", true, 0, 1 << 20, 512, []step{{-int(unix.EINTR), false, 0, 0}, {-int(unix.EAGAIN), false, 0, 0}, {512, true, 512, 512}}},
		{"EOF: file shrank", true, 0, 1 << 20, 4096, []step{{1024, false, 1024, 0}, {0, true, 1024, -1}}},
		{"file shrank to an unaligned size", true, 0, 1 << 20, 4096, []step{{1000, false, 512, 0}, {488, true, 512, -1}}},
		{"buffered: file shrank", false, 3, 1 << 20, 10, []step{{4, false, 4, 0}, {0, true, 4, -1}}},
		{"error", true, 512, 1 << 20, 10, []step{{-int(unix.EIO), true, 0, -1}}},
		{"buffered exact", false, 3, 1 << 20, 10, []step{{4, false, 4, 0}, {6, true, 10, 10}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &File{e: e, path: "p", size: tc.size, direct: tc.direct, offAlign: 512, memAlign: 512}
			if !tc.direct {
				f.offAlign, f.memAlign = 1, 1
			}
			s := &slot{w: w, buf: make([]byte, 64<<10)}
			s.setup(&Queue{e: e}, &Request{File: f, Off: tc.off, Len: tc.n})
			for i, st := range tc.steps {
				if done := s.advance(st.res); done != st.done || s.got != st.wantGot {
					t.Fatalf("step %d (res %d): done %v got %d, want %v %d", i, st.res, done, s.got, st.done, st.wantGot)
				}
				if !st.done {
					continue
				}
				if st.wantData < 0 {
					var ee *Error
					if !errors.As(s.c.Err, &ee) || ee.Op != "read" || ee.Off != tc.off || s.c.Data != nil {
						t.Fatalf("error completion: %v", s.c.Err)
					}
				} else if s.c.Err != nil || len(s.c.Data) != st.wantData {
					t.Fatalf("Data %d bytes err %v, want %d", len(s.c.Data), s.c.Err, st.wantData)
				}
			}
		})
	}
}
