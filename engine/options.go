package engine

import (
	"fmt"
	"os"

	"github.com/pagefeed/pagefeed/pin"
	"github.com/pagefeed/pagefeed/ring"
)

// Limits and defaults of Options.
const (
	DefaultQueueDepth = 64
	MaxQueueDepth     = 4096
	DefaultSlotSize   = 1 << 20
	// slotAlign is the alignment of every slot's memory and size: a page,
	// which satisfies the direct-I/O memory alignment of every file system
	// we know (Dio_mem_align is at most the logical block size).
	slotAlign = 4096
	// maxFixedFiles sizes each ring's sparse registered-file table.
	maxFixedFiles = 1024
)

// fill returns o with defaults applied and reports an invalid option.
func (o Options) fill() (Options, error) {
	if o.Kind < Auto || o.Kind > Pread {
		return o, fmt.Errorf("engine: unknown Kind %d", o.Kind)
	}
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if o.QueueDepth <= 0 {
		o.QueueDepth = DefaultQueueDepth
	}
	if o.QueueDepth > MaxQueueDepth {
		return o, fmt.Errorf("engine: QueueDepth %d exceeds %d", o.QueueDepth, MaxQueueDepth)
	}
	if o.SlotSize <= 0 {
		o.SlotSize = DefaultSlotSize
	}
	o.SlotSize = (o.SlotSize + slotAlign - 1) &^ (slotAlign - 1)
	if o.SlotsPerWorker <= 0 {
		o.SlotsPerWorker = o.QueueDepth
	}
	if o.SlotsPerWorker > 1<<16 {
		return o, fmt.Errorf("engine: SlotsPerWorker %d exceeds %d", o.SlotsPerWorker, 1<<16)
	}
	if o.BatchSubmit < 0 {
		o.BatchSubmit = 0
	}
	o.BatchSubmit = min(o.BatchSubmit, o.QueueDepth) // 0: adaptive (chunker)
	if o.BatchCompleteMax <= 0 || o.BatchCompleteMax > o.QueueDepth {
		o.BatchCompleteMax = o.QueueDepth + 1 // every ready CQE, the eventfd's included
	}
	if o.BatchComplete <= 0 {
		o.BatchComplete = 1
	}
	if o.BatchComplete > o.QueueDepth {
		o.BatchComplete = o.QueueDepth
	}
	if o.BatchCompleteMax < o.BatchComplete {
		o.BatchCompleteMax = o.BatchComplete // as fio raises it to the minimum
	}
	for i, set := range o.CPUSets {
		if err := pin.CheckCPUs(set); err != nil {
			return o, fmt.Errorf("engine: CPUSets[%d] %v: %w", i, set, err)
		}
	}
	if len(o.RingFlags) == 0 {
		o.RingFlags = ring.Ladder
	}
	for i, f := range o.RingFlags {
		if bad := f & ring.UnsupportedFlags; bad != 0 {
			return o, fmt.Errorf("engine: RingFlags[%d] %s: %w", i, ring.FlagsString(f), ring.ErrUnsupportedFlags)
		}
	}
	if o.Logf == nil {
		o.Logf = func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "pagefeed: engine: "+format+"\n", args...)
		}
	}
	return o, nil
}

// String names a Kind.
func (k Kind) String() string {
	switch k {
	case Auto:
		return "auto"
	case IOUring:
		return "io_uring"
	case Pread:
		return "pread"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}
