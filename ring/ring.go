// Package ring is pagefeed's io_uring binding over golang.org/x/sys/unix: no
// cgo, no third-party wrapper. It implements the small part of liburing the
// engine needs: setup with a flag ladder, the mmap'd SQ/CQ rings and SQE
// array, READ / READ_FIXED / READV / NOP preparation, batched submission and
// reaping, buffer and file registration, and the opcode probe.
//
// Concurrency: a Ring is not safe for concurrent use. Rings set up with
// SINGLE_ISSUER (the first rung of the default ladder) must be submitted to
// and registered from the OS thread that created them: call
// runtime.LockOSThread before New and keep the goroutine locked while the
// ring is used. Close may be called from any goroutine once use has stopped.
//
// Memory: the rings live in mmap'd memory outside the Go heap. user_data is
// an opaque uint64 (never a Go pointer). Buffers handed to Prep methods must
// stay valid and unmoved until their completion is reaped; use memory from
// unix.Mmap, not the Go heap.
package ring

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrClosed is returned by calls on a closed Ring.
var ErrClosed = errors.New("ring: closed")

// ErrUnsupportedFlags is returned by setup for flags whose discipline this
// binding does not implement: SQPOLL (a kernel thread takes SQEs, and must
// be woken when it sleeps; Withdraw would race it) and IOPOLL (completions
// must be polled for, and only O_DIRECT reads of polled block devices
// complete: not the eventfd wakeup read, nor buffered reads).
var ErrUnsupportedFlags = errors.New("ring: unsupported setup flags")

// UnsupportedFlags are the setup flags NewWithFlags refuses.
const UnsupportedFlags = SetupSQPoll | SetupIOPoll

// Error is a failed io_uring system call.
type Error struct {
	Op  string // "setup", "enter", "register buffers", ...
	Err error  // a syscall.Errno, or ErrUnsupportedFlags at setup
}

func (e *Error) Error() string { return "ring: " + e.Op + ": " + e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// Ring is one io_uring instance. See the package documentation for its
// concurrency and memory contract.
type Ring struct {
	fd       int
	flags    uint32
	features uint32

	sqMem, cqMem, sqeMem []byte

	sqHead, sqTail, sqFlags *uint32
	sqMask, sqEntries       uint32
	sqes                    *[1 << 15]SQE

	cqHead, cqTail    *uint32
	cqMask, cqEntries uint32
	cqes              *[1 << 16]CQE

	// sqeTail counts SQEs handed out by GetSQE; the kernel sees it at Submit.
	sqeTail uint32

	// Arguments for EXT_ARG waits, kept here so they never live on a
	// goroutine stack while the kernel reads them.
	ts  kernelTimespec
	arg getEventsArg
}

// Ladder is the setup-flag ladder New tries, first to last, dropping to the
// next rung on EINVAL: fio's choice.
var Ladder = []uint32{
	SetupSingleIssuer | SetupDeferTaskrun,
	SetupCoopTaskrun,
	0,
}

// New sets up a ring with at least entries SQ entries (the kernel rounds up
// to a power of two; the CQ gets twice as many), trying each rung of Ladder
// in turn. Flags reports which took.
func New(entries uint32) (*Ring, error) { return NewLadder(entries, Ladder) }

// NewLadder is New with the given ladder of setup flags; the first rung the
// kernel accepts wins, and only EINVAL moves on to the next (a rung with
// unsupported flags fails the call).
func NewLadder(entries uint32, ladder []uint32) (*Ring, error) {
	if len(ladder) == 0 {
		return nil, &Error{Op: "setup", Err: unix.EINVAL}
	}
	var err error
	for _, f := range ladder {
		var r *Ring
		r, err = NewWithFlags(entries, f)
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, unix.EINVAL) {
			return nil, err
		}
	}
	return nil, err
}

// NewWithFlags sets up a ring with exactly the given setup flags. SQPOLL
// and IOPOLL fail with ErrUnsupportedFlags.
func NewWithFlags(entries uint32, flags uint32) (*Ring, error) {
	if entries == 0 {
		return nil, &Error{Op: "setup", Err: unix.EINVAL}
	}
	if bad := flags & UnsupportedFlags; bad != 0 {
		return nil, &Error{Op: "setup", Err: fmt.Errorf("%w: %s", ErrUnsupportedFlags, FlagsString(bad))}
	}
	var p params
	p.Flags = flags
	fd, _, errno := syscall6(sysSetup, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0, 0, 0, 0)
	if errno != 0 {
		return nil, &Error{Op: "setup", Err: errno}
	}
	r := &Ring{fd: int(fd), flags: flags, features: p.Features}
	if err := r.mapRings(&p); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Ring) mapRings(p *params) error {
	sqSize := int(p.SQOff.Array + p.SQEntries*4)
	cqSize := int(p.CQOff.Cqes + p.CQEntries*uint32(unsafe.Sizeof(CQE{})))
	single := p.Features&FeatSingleMmap != 0
	if single && cqSize > sqSize {
		sqSize = cqSize
	}
	var err error
	r.sqMem, err = unix.Mmap(r.fd, offSQRing, sqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|mapPopulate)
	if err != nil {
		return &Error{Op: "mmap sq ring", Err: err}
	}
	if single {
		r.cqMem = r.sqMem
	} else {
		r.cqMem, err = unix.Mmap(r.fd, offCQRing, cqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|mapPopulate)
		if err != nil {
			return &Error{Op: "mmap cq ring", Err: err}
		}
	}
	sqeSize := int(p.SQEntries) * int(unsafe.Sizeof(SQE{}))
	r.sqeMem, err = unix.Mmap(r.fd, offSQEs, sqeSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|mapPopulate)
	if err != nil {
		return &Error{Op: "mmap sqes", Err: err}
	}

	sq := r.sqMem
	r.sqHead = u32At(sq, p.SQOff.Head)
	r.sqTail = u32At(sq, p.SQOff.Tail)
	r.sqFlags = u32At(sq, p.SQOff.Flags)
	r.sqMask = *u32At(sq, p.SQOff.RingMask)
	r.sqEntries = *u32At(sq, p.SQOff.RingEntries)
	r.sqes = (*[1 << 15]SQE)(unsafe.Pointer(&r.sqeMem[0]))
	if flags := r.flags; flags&SetupNoSQArray == 0 {
		// Identity mapping: SQE i is always submitted from array slot i.
		arr := unsafe.Slice(u32At(sq, p.SQOff.Array), r.sqEntries)
		for i := range arr {
			arr[i] = uint32(i)
		}
	}
	cq := r.cqMem
	r.cqHead = u32At(cq, p.CQOff.Head)
	r.cqTail = u32At(cq, p.CQOff.Tail)
	r.cqMask = *u32At(cq, p.CQOff.RingMask)
	r.cqEntries = *u32At(cq, p.CQOff.RingEntries)
	r.cqes = (*[1 << 16]CQE)(unsafe.Pointer(&cq[p.CQOff.Cqes]))
	r.sqeTail = atomic.LoadUint32(r.sqTail)
	return nil
}

func u32At(mem []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&mem[off])) }

// Close unmaps the rings and closes the ring's file descriptor. Operations
// still in flight are cancelled by the kernel; their buffers must stay
// mapped until Close returns.
func (r *Ring) Close() error {
	if r.fd < 0 {
		return ErrClosed
	}
	var first error
	unmap := func(m []byte, what string) {
		if m == nil {
			return
		}
		if err := unix.Munmap(m); err != nil && first == nil {
			first = &Error{Op: "munmap " + what, Err: err}
		}
	}
	unmap(r.sqeMem, "sqes")
	if r.cqMem != nil && (r.sqMem == nil || &r.cqMem[0] != &r.sqMem[0]) {
		unmap(r.cqMem, "cq ring")
	}
	unmap(r.sqMem, "sq ring")
	r.sqeMem, r.cqMem, r.sqMem = nil, nil, nil
	r.sqes, r.cqes = nil, nil
	if err := unix.Close(r.fd); err != nil && first == nil {
		first = &Error{Op: "close", Err: err}
	}
	r.fd = -1
	return first
}

// Fd returns the ring's file descriptor.
func (r *Ring) Fd() int { return r.fd }

// Flags returns the setup flags that took.
func (r *Ring) Flags() uint32 { return r.flags }

// Features returns the kernel's feature bits.
func (r *Ring) Features() uint32 { return r.features }

// SQEntries and CQEntries return the ring sizes the kernel chose.
func (r *Ring) SQEntries() uint32 { return r.sqEntries }

// CQEntries returns the completion ring size.
func (r *Ring) CQEntries() uint32 { return r.cqEntries }

// FlagsString names setup flags as fio prints them, e.g.
// "SINGLE_ISSUER|DEFER_TASKRUN"; 0 is "none".
func FlagsString(f uint32) string {
	if f == 0 {
		return "none"
	}
	names := []struct {
		bit  uint32
		name string
	}{
		{SetupIOPoll, "IOPOLL"}, {SetupSQPoll, "SQPOLL"}, {SetupCQSize, "CQSIZE"},
		{SetupClamp, "CLAMP"}, {SetupSubmitAll, "SUBMIT_ALL"},
		{SetupCoopTaskrun, "COOP_TASKRUN"}, {SetupTaskrunFlag, "TASKRUN_FLAG"},
		{SetupSingleIssuer, "SINGLE_ISSUER"}, {SetupDeferTaskrun, "DEFER_TASKRUN"},
		{SetupNoSQArray, "NO_SQARRAY"},
	}
	var parts []string
	for _, n := range names {
		if f&n.bit != 0 {
			parts = append(parts, n.name)
			f &^= n.bit
		}
	}
	if f != 0 {
		parts = append(parts, fmt.Sprintf("0x%x", f))
	}
	return strings.Join(parts, "|")
}

// GetSQE returns the next free submission entry, zeroed, or nil when the SQ
// is full (submit first). The entry is owned by the caller until Submit.
func (r *Ring) GetSQE() *SQE {
	head := atomic.LoadUint32(r.sqHead)
	if r.sqeTail-head >= r.sqEntries {
		return nil
	}
	sqe := &r.sqes[r.sqeTail&r.sqMask]
	r.sqeTail++
	*sqe = SQE{}
	return sqe
}

// SQSpace returns how many SQEs GetSQE can still hand out before a Submit.
func (r *Ring) SQSpace() uint32 {
	return r.sqEntries - (r.sqeTail - atomic.LoadUint32(r.sqHead))
}

// Pending returns the number of SQEs prepared and not yet taken by the kernel.
func (r *Ring) Pending() uint32 { return r.sqeTail - atomic.LoadUint32(r.sqHead) }

// Withdraw takes back every SQE prepared and not yet taken by the kernel,
// calling fn with each one's user_data, oldest first, and returns how
// many: after an io_uring_enter failed, the entries it did not submit
// would otherwise go to the kernel with the next one. It relies on the
// kernel taking SQEs only inside io_uring_enter, which holds for every
// ring New sets up (no SQPOLL).
func (r *Ring) Withdraw(fn func(userData uint64)) int {
	head := atomic.LoadUint32(r.sqHead)
	for i := head; i != r.sqeTail; i++ {
		fn(r.sqes[i&r.sqMask].UserData)
	}
	n := int(r.sqeTail - head)
	r.sqeTail = head
	atomic.StoreUint32(r.sqTail, head)
	return n
}

// PrepNop makes e a no-op.
func (e *SQE) PrepNop(userData uint64) {
	e.Opcode = OpNop
	e.Fd = -1
	e.UserData = userData
}

// PrepRead makes e a read(2) of len(buf) bytes at off of fd (a registered
// file index when e.Flags has SQEFixedFile).
func (e *SQE) PrepRead(fd int32, buf []byte, off uint64, userData uint64) {
	e.Opcode = OpRead
	e.Fd = fd
	e.Off = off
	e.Addr = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
	e.Len = uint32(len(buf))
	e.UserData = userData
}

// PrepReadFixed is PrepRead into registered buffer bufIndex; buf must lie
// within that buffer.
func (e *SQE) PrepReadFixed(fd int32, buf []byte, off uint64, bufIndex uint16, userData uint64) {
	e.PrepRead(fd, buf, off, userData)
	e.Opcode = OpReadFixed
	e.BufIndex = bufIndex
}

// PrepReadv makes e a preadv(2) into iovs, which must stay valid (and, with
// the iovec array, outside the Go heap or pinned) until the completion.
func (e *SQE) PrepReadv(fd int32, iovs []unix.Iovec, off uint64, userData uint64) {
	e.Opcode = OpReadv
	e.Fd = fd
	e.Off = off
	e.Addr = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(iovs))))
	e.Len = uint32(len(iovs))
	e.UserData = userData
}

// Submit hands every prepared SQE to the kernel without waiting.
func (r *Ring) Submit() (int, error) { return r.enter(0, 0, false, false) }

// SubmitAndWait submits every prepared SQE and waits until at least
// minComplete completions are ready to reap. EINTR is retried. EAGAIN and
// EBUSY are returned (as *Error wrapping the errno): the caller must reap
// completions and call again.
func (r *Ring) SubmitAndWait(minComplete uint32) (int, error) {
	return r.enter(minComplete, 0, false, false)
}

// SubmitAndWaitTimeout is SubmitAndWait that gives up waiting after
// timeoutNs nanoseconds (IORING_ENTER_EXT_ARG; kernel 5.11+). A timeout is
// not an error: it returns the number submitted and nil.
func (r *Ring) SubmitAndWaitTimeout(minComplete uint32, timeoutNs int64) (int, error) {
	return r.enter(minComplete, timeoutNs, true, false)
}

// SubmitAndWaitHeld is SubmitAndWaitTimeout made as a raw system call:
// the Go scheduler is not told that the thread is in a system call, so
// the calling goroutine keeps its P while the kernel sleeps, and no other
// goroutine runs on that P meanwhile; a stop-the-world (the garbage
// collector's) waits for the call to return. In exchange the wait costs
// no scheduler handoff: sysmon does not retake the P, no other thread
// wakes to run it, and the caller need not reacquire one on return. The
// timeout (timeoutNs > 0) bounds all of that, so keep it short; the
// caller decides what to do when it expires (returns 0 and nil) with
// nothing ready. A signal ends the wait as the timeout does, once every
// SQE is submitted: waiting again would hold the P past the bound.
func (r *Ring) SubmitAndWaitHeld(minComplete uint32, timeoutNs int64) (int, error) {
	if timeoutNs <= 0 {
		return 0, &Error{Op: "enter", Err: unix.EINVAL}
	}
	return r.enter(minComplete, timeoutNs, true, true)
}

func (r *Ring) enter(minComplete uint32, timeoutNs int64, timed, held bool) (int, error) {
	if r.fd < 0 {
		return 0, ErrClosed
	}
	tail := r.sqeTail
	atomic.StoreUint32(r.sqTail, tail)
	toSubmit := tail - atomic.LoadUint32(r.sqHead)
	var flags uint32
	// DEFER_TASKRUN rings post completions only while their task enters
	// with GETEVENTS, so ask for them even when not waiting.
	if minComplete > 0 || r.flags&SetupDeferTaskrun != 0 {
		flags |= enterGetEvents
	}
	var argp, argsz uintptr
	if timed {
		flags |= enterExtArg | enterGetEvents
		r.ts = kernelTimespec{Sec: timeoutNs / 1e9, Nsec: timeoutNs % 1e9}
		r.arg = getEventsArg{Ts: uint64(uintptr(unsafe.Pointer(&r.ts)))}
		argp = uintptr(unsafe.Pointer(&r.arg))
		argsz = unsafe.Sizeof(r.arg)
	}
	for {
		// An enter that does not wait never sleeps (io_uring issues reads
		// non-blocking and hands what would block to its own workers), so
		// it runs as a raw syscall: no scheduler bookkeeping, and no P for
		// sysmon to retake and hand back, on a call made once per chunk.
		call := syscall6
		if (minComplete == 0 && !timed) || held {
			call = rawSyscall6
		}
		n, _, errno := call(sysEnter, uintptr(r.fd), uintptr(toSubmit),
			uintptr(minComplete), uintptr(flags), argp, argsz)
		switch errno {
		case 0:
			return int(n), nil
		case unix.EINTR:
			if held && atomic.LoadUint32(r.sqHead) == r.sqeTail {
				// Everything is submitted: end the held wait here, as a
				// timeout would, rather than hold the P for another.
				return 0, nil
			}
			toSubmit = r.sqeTail - atomic.LoadUint32(r.sqHead)
			continue
		case unix.ETIME:
			if timed {
				return 0, nil
			}
		}
		return 0, &Error{Op: "enter", Err: errno}
	}
}

// Ready returns the number of completions waiting to be reaped.
func (r *Ring) Ready() uint32 {
	return atomic.LoadUint32(r.cqTail) - *r.cqHead
}

// PeekCQEs copies up to len(dst) ready completions into dst, oldest first,
// without consuming them, and returns how many it copied. It never
// allocates. Follow it with Advance(n).
//
// On DEFER_TASKRUN rings completions become visible only after an
// io_uring_enter with GETEVENTS, which Submit and SubmitAndWait make.
func (r *Ring) PeekCQEs(dst []CQE) int {
	head := *r.cqHead // only we write the CQ head
	tail := atomic.LoadUint32(r.cqTail)
	n := int(tail - head)
	if n > len(dst) {
		n = len(dst)
	}
	for i := 0; i < n; i++ {
		dst[i] = r.cqes[(head+uint32(i))&r.cqMask]
	}
	return n
}

// Advance consumes n completions, publishing the new CQ head once.
func (r *Ring) Advance(n int) {
	if n > 0 {
		atomic.StoreUint32(r.cqHead, *r.cqHead+uint32(n))
	}
}

// Reap is PeekCQEs followed by one Advance.
func (r *Ring) Reap(dst []CQE) int {
	n := r.PeekCQEs(dst)
	r.Advance(n)
	return n
}

func (r *Ring) register(op string, opcode uintptr, arg unsafe.Pointer, nr int) error {
	if r.fd < 0 {
		return ErrClosed
	}
	for {
		_, _, errno := syscall6(sysRegister, uintptr(r.fd), opcode, uintptr(arg), uintptr(nr), 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return &Error{Op: op, Err: errno}
		}
		return nil
	}
}

// RegisterBuffers registers iovs as fixed buffers 0..len(iovs)-1 for
// READ_FIXED. The memory must stay mapped until UnregisterBuffers or Close.
// The kernel pins it, charged to RLIMIT_MEMLOCK unless CAP_IPC_LOCK.
func (r *Ring) RegisterBuffers(iovs []unix.Iovec) error {
	if len(iovs) == 0 {
		return &Error{Op: "register buffers", Err: unix.EINVAL}
	}
	return r.register("register buffers", regBuffers, unsafe.Pointer(&iovs[0]), len(iovs))
}

// UnregisterBuffers drops the registered buffers.
func (r *Ring) UnregisterBuffers() error {
	return r.register("unregister buffers", regUnBuffers, nil, 0)
}

// RegisterFiles registers fds as fixed files 0..len(fds)-1; -1 entries
// leave a sparse slot for UpdateFiles.
func (r *Ring) RegisterFiles(fds []int32) error {
	if len(fds) == 0 {
		return &Error{Op: "register files", Err: unix.EINVAL}
	}
	return r.register("register files", regFiles, unsafe.Pointer(&fds[0]), len(fds))
}

// filesUpdate is struct io_uring_files_update.
type filesUpdate struct {
	Offset uint32
	Resv   uint32
	Fds    uint64
}

// UpdateFiles replaces registered files off.. with fds (-1 clears a slot).
func (r *Ring) UpdateFiles(off uint32, fds []int32) error {
	if len(fds) == 0 {
		return nil
	}
	u := filesUpdate{Offset: off, Fds: uint64(uintptr(unsafe.Pointer(&fds[0])))}
	err := r.register("update files", regFilesUpdate, unsafe.Pointer(&u), len(fds))
	runtime.KeepAlive(fds)
	return err
}

// UnregisterFiles drops the registered file table.
func (r *Ring) UnregisterFiles() error {
	return r.register("unregister files", regUnFiles, nil, 0)
}

// Probe lists the opcodes the running kernel supports.
type Probe struct {
	lastOp uint8
	ops    [256]bool
}

// Supported reports whether op is supported.
func (p *Probe) Supported(op uint8) bool { return p.ops[op] }

// LastOp returns the highest opcode the kernel knows.
func (p *Probe) LastOp() uint8 { return p.lastOp }

// Probe asks the kernel which opcodes it supports (IORING_REGISTER_PROBE).
func (r *Ring) Probe() (*Probe, error) {
	const nops = 256
	buf := make([]byte, unsafe.Sizeof(probeHdr{})+nops*unsafe.Sizeof(probeOp{}))
	if err := r.register("probe", regProbe, unsafe.Pointer(&buf[0]), nops); err != nil {
		return nil, err
	}
	hdr := (*probeHdr)(unsafe.Pointer(&buf[0]))
	ops := unsafe.Slice((*probeOp)(unsafe.Pointer(&buf[unsafe.Sizeof(probeHdr{})])), nops)
	p := &Probe{lastOp: hdr.LastOp}
	for i := 0; i < int(hdr.OpsLen) && i < nops; i++ {
		if ops[i].Flags&probeOpSupported != 0 {
			p.ops[ops[i].Op] = true
		}
	}
	return p, nil
}

// Errno converts a negative CQE result to its errno; nil for res >= 0.
func Errno(res int32) error {
	if res >= 0 {
		return nil
	}
	return syscall.Errno(-res)
}
