package ring

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// newRing sets up a ring on a locked OS thread (SINGLE_ISSUER requires the
// creating thread to submit) and closes it with the test.
func newRing(t testing.TB, entries uint32) *Ring {
	t.Helper()
	runtime.LockOSThread()
	r, err := New(entries)
	if err != nil {
		runtime.UnlockOSThread()
		if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
			t.Skipf("io_uring unavailable: %v", err)
		}
		t.Fatalf("New(%d): %v", entries, err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		runtime.UnlockOSThread()
	})
	return r
}

// knownFile writes size bytes of a deterministic pattern and returns its path
// and content.
func knownFile(t testing.TB, size int) (string, []byte) {
	t.Helper()
	data := make([]byte, size)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	path := filepath.Join(t.TempDir(), "known.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// mmapBuf returns n bytes of page-aligned memory outside the Go heap.
func mmapBuf(t testing.TB, n int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}

func TestSetupReportsFlags(t *testing.T) {
	r := newRing(t, 8)
	if r.SQEntries() < 8 || r.CQEntries() < r.SQEntries() {
		t.Fatalf("entries sq=%d cq=%d", r.SQEntries(), r.CQEntries())
	}
	if s := FlagsString(r.Flags()); s == "" {
		t.Fatal("empty flags string")
	}
	t.Logf("setup flags %s features %#x", FlagsString(r.Flags()), r.Features())
}

func TestFlagsString(t *testing.T) {
	for _, tc := range []struct {
		f    uint32
		want string
	}{
		{0, "none"},
		{SetupSingleIssuer | SetupDeferTaskrun, "SINGLE_ISSUER|DEFER_TASKRUN"},
		{SetupCoopTaskrun, "COOP_TASKRUN"},
		{1 << 30, "0x40000000"},
	} {
		if got := FlagsString(tc.f); got != tc.want {
			t.Errorf("FlagsString(%#x) = %q, want %q", tc.f, got, tc.want)
		}
	}
}

func TestNewBadEntries(t *testing.T) {
	if _, err := NewWithFlags(0, 0); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("NewWithFlags(0) err = %v, want EINVAL", err)
	}
}

func TestNopRoundTrip(t *testing.T) {
	r := newRing(t, 16)
	const n = 40 // more than the SQ holds: forces several batches
	seen := make(map[uint64]bool)
	cqes := make([]CQE, 64)
	next := uint64(0)
	for len(seen) < n {
		for next < n {
			sqe := r.GetSQE()
			if sqe == nil {
				break
			}
			sqe.PrepNop(next + 1000)
			next++
		}
		if _, err := r.SubmitAndWait(1); err != nil {
			t.Fatal(err)
		}
		k := r.Reap(cqes)
		for _, c := range cqes[:k] {
			if c.Res != 0 {
				t.Fatalf("nop res %d", c.Res)
			}
			if seen[c.UserData] {
				t.Fatalf("user_data %d completed twice", c.UserData)
			}
			seen[c.UserData] = true
		}
	}
	for i := uint64(0); i < n; i++ {
		if !seen[i+1000] {
			t.Fatalf("user_data %d never completed", i+1000)
		}
	}
	if r.Ready() != 0 {
		t.Fatalf("Ready = %d after reaping all", r.Ready())
	}
}

func TestGetSQEFull(t *testing.T) {
	r := newRing(t, 4)
	for i := uint32(0); i < r.SQEntries(); i++ {
		if r.GetSQE() == nil {
			t.Fatalf("GetSQE nil at %d of %d", i, r.SQEntries())
		}
	}
	if r.GetSQE() != nil {
		t.Fatal("GetSQE returned an entry past a full SQ")
	}
	if r.SQSpace() != 0 || r.Pending() != r.SQEntries() {
		t.Fatalf("space %d pending %d", r.SQSpace(), r.Pending())
	}
}

func TestProbe(t *testing.T) {
	r := newRing(t, 4)
	p, err := r.Probe()
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []uint8{OpNop, OpRead, OpReadFixed, OpReadv} {
		if !p.Supported(op) {
			t.Errorf("probe says op %d unsupported", op)
		}
	}
	if p.Supported(255) {
		t.Error("probe says op 255 supported")
	}
	if p.LastOp() < OpRead {
		t.Errorf("LastOp %d", p.LastOp())
	}
}

type readMode int

const (
	modeRead readMode = iota
	modeReadFixed
	modeReadv
	modeReadFixedFile
)

func TestReadKnownContent(t *testing.T) {
	const size = 1 << 20
	path, want := knownFile(t, size)
	for _, tc := range []struct {
		name string
		mode readMode
	}{
		{"read", modeRead},
		{"read_fixed", modeReadFixed},
		{"readv", modeReadv},
		{"read_registered_file", modeReadFixedFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkReads(t, path, want, tc.mode)
		})
	}
}

func checkReads(t *testing.T, path string, want []byte, mode readMode) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := newRing(t, 32)
	const nbuf, bufSize = 32, 8192
	mem := mmapBuf(t, nbuf*bufSize)
	iovs := make([]unix.Iovec, nbuf)
	for i := range iovs {
		iovs[i].Base = &mem[i*bufSize]
		iovs[i].SetLen(bufSize)
	}
	fd := int32(f.Fd())
	if mode == modeReadFixed {
		if err := r.RegisterBuffers(iovs); err != nil {
			t.Fatal(err)
		}
	}
	var flags uint8
	if mode == modeReadFixedFile {
		if err := r.RegisterFiles([]int32{-1, -1, -1}); err != nil {
			t.Fatal(err)
		}
		if err := r.UpdateFiles(2, []int32{fd}); err != nil {
			t.Fatal(err)
		}
		fd, flags = 2, SQEFixedFile
	}
	// readv needs its iovec array outside the Go heap as well.
	vmem := mmapBuf(t, nbuf*int(unsafeSizeofIovec))
	rng := rand.New(rand.NewPCG(3, 4))
	offs := make([]int64, nbuf)
	lens := make([]int, nbuf)
	cqes := make([]CQE, 2*nbuf)
	for round := 0; round < 8; round++ {
		for i := 0; i < nbuf; i++ {
			lens[i] = 1 + rng.IntN(bufSize)
			offs[i] = rng.Int64N(int64(len(want) - lens[i]))
			sqe := r.GetSQE()
			if sqe == nil {
				t.Fatal("SQ full")
			}
			buf := mem[i*bufSize : i*bufSize+lens[i]]
			switch mode {
			case modeReadFixed:
				sqe.PrepReadFixed(fd, buf, uint64(offs[i]), uint16(i), uint64(i))
			case modeReadv:
				iov := iovecAt(vmem, i)
				iov.Base = &buf[0]
				iov.SetLen(len(buf))
				sqe.PrepReadv(fd, unsafeIovecs(vmem, i), uint64(offs[i]), uint64(i))
			default:
				sqe.PrepRead(fd, buf, uint64(offs[i]), uint64(i))
			}
			sqe.Flags |= flags
		}
		got := 0
		for got < nbuf {
			if _, err := r.SubmitAndWait(1); err != nil {
				t.Fatal(err)
			}
			k := r.Reap(cqes)
			for _, c := range cqes[:k] {
				i := int(c.UserData)
				if c.Res != int32(lens[i]) {
					t.Fatalf("read %d: res %d (%v), want %d", i, c.Res, Errno(c.Res), lens[i])
				}
				gotb := mem[i*bufSize : i*bufSize+lens[i]]
				wantb := want[offs[i] : offs[i]+int64(lens[i])]
				if string(gotb) != string(wantb) {
					t.Fatalf("read %d at %d len %d: content differs", i, offs[i], lens[i])
				}
			}
			got += k
		}
	}
}

func TestBadFdSurfacesEBADF(t *testing.T) {
	r := newRing(t, 4)
	mem := mmapBuf(t, 4096)
	sqe := r.GetSQE()
	sqe.PrepRead(9999, mem, 0, 7)
	if _, err := r.SubmitAndWait(1); err != nil {
		t.Fatal(err)
	}
	cqes := make([]CQE, 4)
	n := r.Reap(cqes)
	if n != 1 || cqes[0].UserData != 7 {
		t.Fatalf("reaped %d: %+v", n, cqes[:n])
	}
	if err := Errno(cqes[0].Res); !errors.Is(err, unix.EBADF) {
		t.Fatalf("res %d -> %v, want EBADF", cqes[0].Res, err)
	}
	if Errno(5) != nil {
		t.Fatal("Errno(5) != nil")
	}
}

func TestSubmitAndWaitTimeout(t *testing.T) {
	r := newRing(t, 4)
	if r.Features()&FeatExtArg == 0 {
		t.Skip("no EXT_ARG")
	}
	// Nothing in flight: the wait must end by timeout, not hang.
	if _, err := r.SubmitAndWaitTimeout(1, 1e6); err != nil {
		t.Fatal(err)
	}
	r.GetSQE().PrepNop(1)
	if n, err := r.SubmitAndWaitTimeout(1, 1e9); err != nil || n != 1 {
		t.Fatalf("n=%d err=%v", n, err)
	}
	if r.Ready() != 1 {
		t.Fatalf("Ready %d", r.Ready())
	}
}

// TestSubmitAndWaitHeld: the held wait submits, waits for completions and
// ends by its timeout when none come, as SubmitAndWaitTimeout; it needs a
// timeout.
func TestSubmitAndWaitHeld(t *testing.T) {
	r := newRing(t, 4)
	if r.Features()&FeatExtArg == 0 {
		t.Skip("no EXT_ARG")
	}
	if _, err := r.SubmitAndWaitHeld(1, 0); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("no timeout: %v", err)
	}
	if n, err := r.SubmitAndWaitHeld(1, 1e6); err != nil || n != 0 || r.Ready() != 0 {
		t.Fatalf("nothing in flight: n=%d err=%v Ready %d", n, err, r.Ready())
	}
	r.GetSQE().PrepNop(7)
	r.GetSQE().PrepNop(8)
	if n, err := r.SubmitAndWaitHeld(2, 1e9); err != nil || n != 2 {
		t.Fatalf("n=%d err=%v", n, err)
	}
	var cqes [4]CQE
	if n := r.Reap(cqes[:]); n != 2 || cqes[0].UserData != 7 || cqes[1].UserData != 8 {
		t.Fatalf("reaped %d: %+v", n, cqes[:n])
	}
}

func TestClosedRing(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, err := New(4)
	if err != nil {
		t.Skip(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := r.Submit(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Submit after Close: %v", err)
	}
	if err := r.UnregisterBuffers(); !errors.Is(err, ErrClosed) {
		t.Fatalf("register after Close: %v", err)
	}
}

func BenchmarkNop(b *testing.B) {
	for _, batch := range []int{1, 32} {
		b.Run(map[int]string{1: "batch1", 32: "batch32"}[batch], func(b *testing.B) {
			r := newRing(b, 64)
			cqes := make([]CQE, 128)
			b.ReportAllocs()
			b.ResetTimer()
			done := 0
			for done < b.N {
				k := batch
				if b.N-done < k {
					k = b.N - done
				}
				for i := 0; i < k; i++ {
					r.GetSQE().PrepNop(uint64(i))
				}
				if _, err := r.SubmitAndWait(uint32(k)); err != nil {
					b.Fatal(err)
				}
				got := 0
				for got < k {
					got += r.Reap(cqes)
				}
				done += k
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}

func TestSubmitThenReapWithoutWaiting(t *testing.T) {
	r := newRing(t, 8)
	for i := 0; i < 4; i++ {
		r.GetSQE().PrepNop(uint64(i))
	}
	n, err := r.Submit()
	if err != nil || n != 4 {
		t.Fatalf("Submit = %d, %v", n, err)
	}
	// NOPs complete inline; with DEFER_TASKRUN they are posted by a
	// GETEVENTS enter, which Submit makes.
	cqes := make([]CQE, 8)
	got := r.Reap(cqes)
	if got == 0 {
		if _, err := r.SubmitAndWait(4); err != nil {
			t.Fatal(err)
		}
		got = r.Reap(cqes)
	}
	if got != 4 {
		t.Fatalf("reaped %d of 4", got)
	}
}

func TestNewLadderDropsRefusedRungs(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// DEFER_TASKRUN without SINGLE_ISSUER is refused with EINVAL.
	r, err := NewLadder(4, []uint32{SetupDeferTaskrun, SetupCoopTaskrun, 0})
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	defer r.Close()
	if r.Flags() != SetupCoopTaskrun && r.Flags() != 0 {
		t.Fatalf("took %s", FlagsString(r.Flags()))
	}
	if _, err := NewLadder(4, []uint32{SetupDeferTaskrun}); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("only a refused rung: %v", err)
	}
	if _, err := NewLadder(4, nil); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("empty ladder: %v", err)
	}
}

// TestWithdraw: SQEs taken back after a failed enter never reach the
// kernel, and the ring goes on from where the kernel stopped.
func TestWithdraw(t *testing.T) {
	r := newRing(t, 8)
	cqes := make([]CQE, 16)
	submitNops := func(from, n uint64) {
		for i := from; i < from+n; i++ {
			r.GetSQE().PrepNop(i)
		}
	}
	submitNops(1, 2)
	if _, err := r.SubmitAndWait(2); err != nil {
		t.Fatal(err)
	}
	if k := r.Reap(cqes); k != 2 {
		t.Fatalf("reaped %d", k)
	}
	submitNops(10, 3) // as if the enter that would submit them failed
	var got []uint64
	if n := r.Withdraw(func(ud uint64) { got = append(got, ud) }); n != 3 || len(got) != 3 || got[0] != 10 || got[2] != 12 {
		t.Fatalf("Withdraw = %d, %v; want 3, [10 11 12]", n, got)
	}
	if r.Pending() != 0 || r.SQSpace() != r.SQEntries() {
		t.Fatalf("pending %d, space %d after Withdraw", r.Pending(), r.SQSpace())
	}
	submitNops(20, 1)
	if n, err := r.SubmitAndWait(1); err != nil || n != 1 {
		t.Fatalf("SubmitAndWait = %d, %v; want 1", n, err)
	}
	if k := r.Reap(cqes); k != 1 || cqes[0].UserData != 20 {
		t.Fatalf("reaped %d, first user_data %d; want only 20", k, cqes[0].UserData)
	}
}

// TestUnsupportedFlagsRefused: SQPOLL and IOPOLL rings need a submission
// and completion discipline this binding does not implement (waking the
// SQ thread, polling for completions); asking for them fails at setup
// with ErrUnsupportedFlags instead of a ring that hangs or fails reads.
func TestUnsupportedFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags uint32
	}{
		{"SQPOLL", SetupSQPoll},
		{"IOPOLL", SetupIOPoll},
		{"SQPOLL|SINGLE_ISSUER", SetupSQPoll | SetupSingleIssuer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewWithFlags(8, tc.flags)
			if err == nil {
				r.Close()
			}
			var re *Error
			if !errors.Is(err, ErrUnsupportedFlags) || !errors.As(err, &re) || re.Op != "setup" {
				t.Fatalf("NewWithFlags(%s) = %v, want a setup error wrapping ErrUnsupportedFlags", tc.name, err)
			}
			// A ladder does not step over it either: it is not EINVAL.
			if _, err := NewLadder(8, []uint32{tc.flags, 0}); !errors.Is(err, ErrUnsupportedFlags) {
				t.Fatalf("NewLadder(%s, none) = %v, want ErrUnsupportedFlags", tc.name, err)
			}
		})
	}
}
