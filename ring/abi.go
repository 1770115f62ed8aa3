package ring

import "unsafe"

// Kernel ABI, from include/uapi/linux/io_uring.h. Layouts are asserted by
// the compile-time size checks at the end of this file.

// Opcodes (enum io_uring_op) used by pagefeed.
const (
	OpNop       uint8 = 0
	OpReadv     uint8 = 1
	OpReadFixed uint8 = 4
	OpRead      uint8 = 22
	OpMsgRing   uint8 = 40
)

// Setup flags (io_uring_params.flags).
const (
	SetupIOPoll       uint32 = 1 << 0
	SetupSQPoll       uint32 = 1 << 1
	SetupCQSize       uint32 = 1 << 3
	SetupClamp        uint32 = 1 << 4
	SetupSubmitAll    uint32 = 1 << 7
	SetupCoopTaskrun  uint32 = 1 << 8
	SetupTaskrunFlag  uint32 = 1 << 9
	SetupSingleIssuer uint32 = 1 << 12
	SetupDeferTaskrun uint32 = 1 << 13
	SetupNoSQArray    uint32 = 1 << 16
)

// Feature bits (io_uring_params.features).
const (
	FeatSingleMmap uint32 = 1 << 0
	FeatNoDrop     uint32 = 1 << 1
	FeatExtArg     uint32 = 1 << 8
)

// SQE flags (io_uring_sqe.flags).
const (
	SQEFixedFile uint8 = 1 << 0
	SQEIODrain   uint8 = 1 << 1
	SQEIOLink    uint8 = 1 << 2
	SQEAsync     uint8 = 1 << 4
)

// io_uring_enter flags.
const (
	enterGetEvents uint32 = 1 << 0
	enterExtArg    uint32 = 1 << 3
)

// io_uring_register opcodes.
const (
	regBuffers     = 0
	regUnBuffers   = 1
	regFiles       = 2
	regUnFiles     = 3
	regFilesUpdate = 6
	regProbe       = 8
)

// mmap offsets.
const (
	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000
)

const probeOpSupported = 1 << 0

type sqringOffsets struct {
	Head, Tail, RingMask, RingEntries, Flags, Dropped, Array, Resv1 uint32
	UserAddr                                                        uint64
}

type cqringOffsets struct {
	Head, Tail, RingMask, RingEntries, Overflow, Cqes, Flags, Resv1 uint32
	UserAddr                                                        uint64
}

type params struct {
	SQEntries    uint32
	CQEntries    uint32
	Flags        uint32
	SQThreadCPU  uint32
	SQThreadIdle uint32
	Features     uint32
	WQFd         uint32
	Resv         [3]uint32
	SQOff        sqringOffsets
	CQOff        cqringOffsets
}

// SQE is a submission queue entry (struct io_uring_sqe, 64 bytes). It lives
// in the kernel-shared SQE array; fill it through the Prep methods between
// GetSQE and Submit, and never retain it afterwards.
type SQE struct {
	Opcode      uint8
	Flags       uint8
	IOPrio      uint16
	Fd          int32
	Off         uint64
	Addr        uint64
	Len         uint32
	OpFlags     uint32 // rw_flags and the other per-op unions
	UserData    uint64
	BufIndex    uint16 // buf_index / buf_group
	Personality uint16
	FileIndex   int32 // splice_fd_in / file_index
	Addr3       uint64
	pad         uint64
}

// CQE is a completion queue entry (struct io_uring_cqe, 16 bytes). Res is
// the operation's result: bytes transferred, or a negated errno.
type CQE struct {
	UserData uint64
	Res      int32
	Flags    uint32
}

type probeOp struct {
	Op    uint8
	Resv  uint8
	Flags uint16
	Resv2 uint32
}

type probeHdr struct {
	LastOp uint8
	OpsLen uint8
	Resv   uint16
	Resv2  [3]uint32
}

// getEventsArg is struct io_uring_getevents_arg, passed with IORING_ENTER_EXT_ARG.
type getEventsArg struct {
	Sigmask   uint64
	SigmaskSz uint32
	MinWaitUs uint32
	Ts        uint64
}

type kernelTimespec struct {
	Sec  int64
	Nsec int64
}

// Compile-time layout checks: each line fails to build if a size is wrong.
var (
	_ [unsafe.Sizeof(SQE{}) - 64]byte
	_ [64 - unsafe.Sizeof(SQE{})]byte
	_ [unsafe.Sizeof(CQE{}) - 16]byte
	_ [16 - unsafe.Sizeof(CQE{})]byte
	_ [unsafe.Sizeof(params{}) - 120]byte
	_ [120 - unsafe.Sizeof(params{})]byte
	_ [unsafe.Sizeof(getEventsArg{}) - 24]byte
	_ [24 - unsafe.Sizeof(getEventsArg{})]byte
	_ [unsafe.Sizeof(probeHdr{}) - 16]byte
	_ [unsafe.Sizeof(probeOp{}) - 8]byte
)
