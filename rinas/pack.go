package rinas

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// tokenBuf is a [rows, seqLen] int32 matrix in one 4096-byte-aligned,
// mmap'd (and, where RLIMIT_MEMLOCK allows, mlock'ed) region outside the Go
// heap, so a consumer can hand it to a device copy without a bounce buffer.
type tokenBuf struct {
	mem    []byte  // the mapping, for munmap
	tokens []int32 // rows*seqLen values over mem
	rows   int
	seqLen int
	locked bool
}

// newTokenBuf maps a buffer for rows×seqLen tokens.
func newTokenBuf(rows, seqLen int) (*tokenBuf, error) {
	if rows <= 0 || seqLen <= 0 {
		return nil, fmt.Errorf("rinas: token buffer %d×%d: sizes must be positive", rows, seqLen)
	}
	n := rows * seqLen * 4
	size := (n + 4095) &^ 4095
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("rinas: map %d-byte token buffer: %w", size, err)
	}
	b := &tokenBuf{mem: mem, rows: rows, seqLen: seqLen}
	b.tokens = unsafe.Slice((*int32)(unsafe.Pointer(&mem[0])), rows*seqLen)
	b.locked = unix.Mlock(mem) == nil
	return b, nil
}

func (b *tokenBuf) free() {
	if b.mem != nil {
		if b.locked {
			_ = unix.Munlock(b.mem)
		}
		_ = unix.Munmap(b.mem)
		b.mem, b.tokens = nil, nil
	}
}

// packer fills a token buffer row by row with documents separated by an
// EOS id. A document longer than the room left continues on the next row
// (nothing is dropped); the last row of a batch is padded with pad.
type packer struct {
	buf    *tokenBuf
	eos    int32
	pad    int32
	pos    int // next free index in buf.tokens
	filled int // tokens written that are document tokens or EOS (not padding)
}

func (p *packer) reset(buf *tokenBuf) { p.buf, p.pos, p.filled = buf, 0, 0 }

// room returns the number of tokens that still fit.
func (p *packer) room() int { return len(p.buf.tokens) - p.pos }

// add appends doc followed by EOS. It returns how many of doc's tokens were
// taken and whether the EOS was written too; when not, the caller keeps
// doc[n:] (possibly empty: only the EOS is owed) for the next buffer, so a
// document split across batches keeps exactly one EOS after its end.
func (p *packer) add(doc []int32) (n int, complete bool) {
	n = copy(p.buf.tokens[p.pos:], doc)
	p.pos += n
	p.filled += n
	if n == len(doc) && p.pos < len(p.buf.tokens) {
		p.buf.tokens[p.pos] = p.eos
		p.pos++
		p.filled++
		return n, true
	}
	return n, false
}

// full reports whether no token fits anymore.
func (p *packer) full() bool { return p.pos >= len(p.buf.tokens) }

// finish pads the rest of the buffer and returns the fill ratio.
func (p *packer) finish() float64 {
	t := p.buf.tokens
	for i := p.pos; i < len(t); i++ {
		t[i] = p.pad
	}
	p.pos = len(t)
	return float64(p.filled) / float64(len(t))
}
