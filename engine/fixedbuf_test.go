//go:build linux

package engine

import (
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/pagefeed/pagefeed/ring"
)

// TestPrepReadFixed: with registered buffers a slot's read is
// IORING_OP_READ_FIXED with buf_index the slot's index (the registered
// iovec that holds it) and the address where the read resumes; without,
// a plain IORING_OP_READ.
func TestPrepReadFixed(t *testing.T) {
	r, err := ring.New(8)
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	defer r.Close()
	f := &File{fd: 7, regIdx: -1}
	for _, fixed := range []bool{true, false} {
		w := &worker{r: r, fixed: fixed, slots: make([]slot, 3)}
		mem := make([]byte, 3*8192)
		for i := range w.slots {
			s := &w.slots[i]
			s.w, s.idx, s.buf = w, int32(i), mem[i*8192:(i+1)*8192]
		}
		s := &w.slots[2]
		s.c.File = f
		s.aoff, s.got, s.want = 1<<20, 4096, 8192 // a resumed short read
		sqe := r.GetSQE()
		if sqe == nil {
			t.Fatal("no SQE")
		}
		w.prep(sqe, s)
		op, idx := ring.OpRead, uint16(0)
		if fixed {
			op, idx = ring.OpReadFixed, 2
		}
		if sqe.Opcode != op || sqe.BufIndex != idx || sqe.Fd != 7 || sqe.UserData != 2 ||
			sqe.Addr != uint64(uintptr(unsafe.Pointer(&s.buf[4096]))) || sqe.Len != 4096 || sqe.Off != 1<<20+4096 {
			t.Fatalf("fixed %v: SQE %+v, want opcode %d buf_index %d at slot 2's byte 4096", fixed, *sqe, op, idx)
		}
		r.Withdraw(func(uint64) {})
	}
}

// TestRegisteredBuffersCoverSlots: the iovecs registered for a worker are
// its slots, one each, in slot order, so that buf_index = slot index.
func TestRegisteredBuffersCoverSlots(t *testing.T) {
	saved := registerBuffers
	defer func() { registerBuffers = saved }()
	var got []unix.Iovec
	registerBuffers = func(r *ring.Ring, iovs []unix.Iovec) error {
		got = append([]unix.Iovec(nil), iovs...)
		return saved(r, iovs)
	}
	e := newEngine(t, Options{Kind: IOUring, QueueDepth: 4, SlotsPerWorker: 6, SlotSize: 12 << 10, FixedBuffers: On, HugePages: Off})
	w := e.workers[0]
	if len(got) != len(w.slots) {
		t.Fatalf("%d iovecs for %d slots", len(got), len(w.slots))
	}
	for i, iov := range got {
		b := w.slots[i].buf
		if iov.Base != unsafe.SliceData(b) || iov.Len != uint64(len(b)) {
			t.Fatalf("iovec %d = %p+%d, slot %p+%d", i, iov.Base, iov.Len, unsafe.SliceData(b), len(b))
		}
	}
	readOne(t, e, content(50000), 999, 4000, 0).Release()
}

// TestSlotMemoryResident: slot memory is resident once New returns,
// whether the buffer registration faulted it in (4 KiB pages, registered),
// or mapping did, or registration was refused and the worker populated it
// itself; so no read faults.
func TestSlotMemoryResident(t *testing.T) {
	saved := registerBuffers
	defer func() { registerBuffers = saved }()
	for _, tc := range []struct {
		name   string
		fixed  Tristate
		refuse bool
	}{
		{"registered", On, false},
		{"refused", TryOn, true},
		{"unregistered", Off, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			registerBuffers = saved
			if tc.refuse {
				registerBuffers = func(*ring.Ring, []unix.Iovec) error { return &ring.Error{Op: "register buffers", Err: unix.ENOMEM} }
			}
			e := newEngine(t, Options{Kind: IOUring, QueueDepth: 4, SlotsPerWorker: 8, SlotSize: 64 << 10, FixedBuffers: tc.fixed, HugePages: Off})
			w := e.workers[0]
			if w.lazy || e.Info().FixedBuffers != (tc.fixed != Off && !tc.refuse) {
				t.Fatalf("lazy %v, Info %+v", w.lazy, e.Info())
			}
			vec := make([]byte, len(w.mem)/4096)
			if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(w.mem))), uintptr(len(w.mem)), uintptr(unsafe.Pointer(unsafe.SliceData(vec)))); errno != 0 {
				t.Fatalf("mincore: %v", errno)
			}
			for i, v := range vec {
				if v&1 == 0 {
					t.Fatalf("page %d of %d not resident", i, len(vec))
				}
			}
		})
	}
}

// TestWaitHoldsP: with held waits every read still returns its file's
// bytes, also with one P (the consumer goroutine needs the P the worker
// holds while it waits: the wait is bounded, and an idle worker waits as
// usual); the workers report the held waits. Without the option none.
func TestWaitHoldsP(t *testing.T) {
	data := content(1 << 20)
	path := writeFile(t, data, false)
	for _, tc := range []struct {
		hold  bool
		procs int
	}{{true, 0}, {true, 1}, {false, 0}} {
		t.Run(fmt.Sprintf("hold=%v/procs=%d", tc.hold, tc.procs), func(t *testing.T) {
			if tc.procs > 0 {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(tc.procs))
			}
			r, err := ring.New(2)
			if err != nil {
				t.Skipf("io_uring unavailable: %v", err)
			}
			extArg := r.Features()&ring.FeatExtArg != 0
			r.Close()
			e := newEngine(t, Options{Kind: IOUring, QueueDepth: 8, SlotSize: 16 << 10, WaitHoldsP: tc.hold})
			if e.Info().WaitHoldsP != (tc.hold && extArg) {
				t.Fatalf("WaitHoldsP %v, EXT_ARG %v: Info %+v", tc.hold, extArg, e.Info())
			}
			if tc.hold && !extArg {
				t.Skip("no IORING_FEAT_EXT_ARG: held waits off")
			}
			f, err := e.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			q := e.NewQueue(QueueOptions{})
			const reads = 400
			lens := map[uint64]int{}
			errc := make(chan error, 1)
			go func() {
				var err error
				for i := 0; i < reads && err == nil; i++ {
					off := int64(i*7919) % (int64(len(data)) - 5000)
					err = q.Submit(testCtx(t), []Request{{File: f, Off: off, Len: 5000, Tag: uint64(i)}})
				}
				errc <- err
			}()
			for i := range reads {
				lens[uint64(i)] = 5000
			}
			for range reads {
				c, err := q.Next(testCtx(t))
				if err != nil {
					t.Fatal(err)
				}
				checkCompletion(t, c, data, lens)
				c.Release()
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			st := e.Stats()
			if tc.hold != (st.HeldWaits > 0) || st.HeldExpired > st.HeldWaits {
				t.Fatalf("WaitHoldsP %v: %+v", tc.hold, st)
			}
		})
	}
}
