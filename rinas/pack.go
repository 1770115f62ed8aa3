package rinas

import (
	"fmt"
	"math"
	"unsafe"

	"golang.org/x/sys/unix"
)

// tokenBuf is a [rows, seqLen] int32 (or int64) matrix in one
// 4096-byte-aligned, mmap'd (and, where RLIMIT_MEMLOCK allows, mlock'ed)
// region outside the Go heap, so a consumer can hand it to a device copy
// without a bounce buffer; with it, the per-token position ids and loss
// mask and the batch's document boundaries, on the Go heap.
type tokenBuf struct {
	mem      []byte  // the mapping, for munmap
	tokens   []int32 // rows*seqLen values over mem (int32 output)
	tokens64 []int64 // rows*seqLen values over mem (int64 output)
	pos      []int32 // position ids
	mask     []uint8 // loss mask
	cu       []int32 // cu_seqlens
	ends     []int32 // segment ends recorded while packing
	rows     int
	seqLen   int
	locked   bool
}

// newTokenBuf maps a buffer for rows×seqLen int32 tokens.
func newTokenBuf(rows, seqLen int) (*tokenBuf, error) { return newTokenBufW(rows, seqLen, false) }

// newTokenBufW maps a buffer for rows×seqLen tokens, int64 when wide.
func newTokenBufW(rows, seqLen int, wide bool) (*tokenBuf, error) {
	if rows <= 0 || seqLen <= 0 {
		return nil, fmt.Errorf("rinas: token buffer %d×%d: sizes must be positive", rows, seqLen)
	}
	w := 4
	if wide {
		w = 8
	}
	n := rows * seqLen * w
	size := (n + 4095) &^ 4095
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("rinas: map %d-byte token buffer: %w", size, err)
	}
	b := &tokenBuf{mem: mem, rows: rows, seqLen: seqLen}
	if wide {
		b.tokens64 = unsafe.Slice((*int64)(unsafe.Pointer(&mem[0])), rows*seqLen)
	} else {
		b.tokens = unsafe.Slice((*int32)(unsafe.Pointer(&mem[0])), rows*seqLen)
	}
	b.pos = make([]int32, rows*seqLen)
	b.mask = make([]uint8, rows*seqLen)
	b.cu = make([]int32, 0, 2*rows+1)
	b.locked = unix.Mlock(mem) == nil
	return b, nil
}

// size returns the number of token slots.
func (b *tokenBuf) size() int { return b.rows * b.seqLen }

func (b *tokenBuf) free() {
	if b.mem != nil {
		if b.locked {
			_ = unix.Munlock(b.mem)
		}
		_ = unix.Munmap(b.mem)
		b.mem, b.tokens, b.tokens64 = nil, nil, nil
	}
}

// packer fills a token buffer row by row with documents separated by an
// EOS id. A document longer than the room left continues on the next row
// (nothing is dropped), unless truncate is set: then a document never
// spans rows (the rest of a row it does not fit is padded) and is cut to
// seqLen-1 tokens and its EOS. The last row of a batch is padded with pad.
type packer struct {
	buf      *tokenBuf
	eos      int32
	pad      int32
	truncate bool
	pos      int // next free index in the buffer
	filled   int // tokens written that are document tokens or EOS (not padding)
}

func (p *packer) reset(buf *tokenBuf) {
	p.buf, p.pos, p.filled = buf, 0, 0
	buf.ends = buf.ends[:0]
}

// room returns the number of tokens that still fit.
func (p *packer) room() int { return p.buf.size() - p.pos }

// put writes one token (document or EOS).
func (p *packer) put(v int64) {
	if p.buf.tokens64 != nil {
		p.buf.tokens64[p.pos] = v
	} else {
		p.buf.tokens[p.pos] = int32(v)
	}
	p.buf.mask[p.pos] = 1
	p.pos++
	p.filled++
}

// putEOS writes the EOS that ends a document, a segment boundary.
func (p *packer) putEOS() {
	p.put(int64(p.eos))
	p.buf.ends = append(p.buf.ends, int32(p.pos))
}

// padTo pads up to index end (not a document).
func (p *packer) padTo(end int) {
	if p.pos < end {
		p.buf.ends = append(p.buf.ends, int32(p.pos))
	}
	for ; p.pos < end; p.pos++ {
		if p.buf.tokens64 != nil {
			p.buf.tokens64[p.pos] = int64(p.pad)
		} else {
			p.buf.tokens[p.pos] = p.pad
		}
		p.buf.mask[p.pos] = 0
	}
}

// add appends doc followed by EOS. It returns how many of doc's tokens were
// taken and whether the EOS was written too; when not, the caller keeps
// doc[n:] (possibly empty: only the EOS is owed) for the next buffer, so a
// document split across batches keeps exactly one EOS after its end.
func (p *packer) add(doc []int32) (n int, complete bool) {
	n, complete, _ = addTokens(p, doc)
	return n, complete
}

// errTokenRange reports a token id the int32 output cannot hold.
type errTokenRange struct{ v int64 }

func (e errTokenRange) Error() string {
	return fmt.Sprintf("token id %d does not fit int32 (set Tokens64)", e.v)
}

// addTokens is add for token ids of any integer type. A value the output
// cannot hold is an error; nothing of doc is taken then.
func addTokens[T int32 | int64 | uint16 | uint32](p *packer, doc []T) (n int, complete bool, err error) {
	if p.truncate {
		sl := p.buf.seqLen
		doc = doc[:min(len(doc), sl-1)]
		if rowRoom := sl - p.pos%sl; len(doc)+1 > rowRoom {
			p.padTo(p.pos + rowRoom) // start the document on the next row
			if p.room() == 0 {
				return 0, false, nil
			}
		}
	}
	m := min(len(doc), p.room())
	if p.buf.tokens64 == nil {
		for _, v := range doc[:m] {
			if int64(v) > math.MaxInt32 || int64(v) < math.MinInt32 {
				return 0, false, errTokenRange{int64(v)}
			}
		}
	}
	if d, ok := any(doc).([]int32); ok && p.buf.tokens != nil {
		copy(p.buf.tokens[p.pos:], d[:m])
		clear1(p.buf.mask[p.pos : p.pos+m])
		p.pos += m
		p.filled += m
	} else {
		for _, v := range doc[:m] {
			p.put(int64(v))
		}
	}
	if m == len(doc) && p.pos < p.buf.size() {
		p.putEOS()
		if p.truncate {
			return len(doc), true, nil
		}
		return m, true, nil
	}
	return m, false, nil
}

// clear1 sets every byte of b to 1.
func clear1(b []uint8) {
	for i := range b {
		b[i] = 1
	}
}

// full reports whether no token fits anymore.
func (p *packer) full() bool { return p.pos >= p.buf.size() }

// finish pads the rest of the buffer, derives the position ids and the
// document boundaries, and returns the fill ratio. Segments end at every
// row's end, after every EOS and where padding starts; cu holds their
// cumulative ends from 0 (cu_seqlens over the flattened batch) and the
// position ids restart at 0 at each.
func (p *packer) finish() float64 {
	b := p.buf
	total := b.size()
	p.padTo(total)
	cu := append(b.cu[:0], 0)
	e := 0
	for r := 1; r <= b.rows; r++ {
		rowEnd := int32(r * b.seqLen)
		for ; e < len(b.ends) && b.ends[e] < rowEnd; e++ {
			if b.ends[e] > cu[len(cu)-1] {
				cu = append(cu, b.ends[e])
			}
		}
		cu = append(cu, rowEnd)
	}
	for s := 1; s < len(cu); s++ {
		for k, i := cu[s-1], int32(0); k < cu[s]; k, i = k+1, i+1 {
			b.pos[k] = i
		}
	}
	b.cu = cu
	return float64(p.filled) / float64(total)
}
