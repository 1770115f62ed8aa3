package rinas

import (
	"fmt"
	"math"
	"unsafe"

	"golang.org/x/sys/unix"
)

// tokenBuf is a [rows, seqLen] int32 (or int64) matrix with the per-token
// position ids and loss mask and the batch's document boundaries, all in
// one 4096-byte-aligned, mmap'd (and, where RLIMIT_MEMLOCK allows,
// mlock'ed) region outside the Go heap: a consumer can hand any of them to
// a device copy without a bounce buffer, and a C caller may keep pointers
// to them until the batch is released (cgo forbids that for Go memory).
type tokenBuf struct {
	mem      []byte  // the mapping, for munmap
	tokens   []int32 // rows*seqLen values over mem (int32 output)
	tokens64 []int64 // rows*seqLen values over mem (int64 output)
	pos      []int32 // position ids, over mem
	mask     []uint8 // loss mask, over mem
	// cu is cu_seqlens over mem; its capacity is one per token plus one,
	// the most segments a batch can hold, so finish never reallocates it.
	cu     []int32
	ends   []int32 // segment ends recorded while packing (Go heap, never handed out)
	rows   int
	seqLen int
	locked bool
}

// newTokenBuf maps a buffer for rows×seqLen int32 tokens.
func newTokenBuf(rows, seqLen int) (*tokenBuf, error) { return newTokenBufW(rows, seqLen, false) }

// tokenBufBytes is the size of the mapping of a rows×seqLen token buffer:
// tokens (4 or 8 bytes each), position ids (4), cu_seqlens (4 per token,
// plus one) and the loss mask (1), each part 64-byte aligned.
func tokenBufBytes(rows, seqLen int, wide bool) int {
	n := rows * seqLen
	w := 4
	if wide {
		w = 8
	}
	al := func(x int) int { return (x + 63) &^ 63 }
	return (al(n*w) + al(n*4) + al((n+1)*4) + al(n) + 4095) &^ 4095
}

// newTokenBufW maps a buffer for rows×seqLen tokens, int64 when wide.
func newTokenBufW(rows, seqLen int, wide bool) (*tokenBuf, error) {
	if rows <= 0 || seqLen <= 0 {
		return nil, fmt.Errorf("rinas: token buffer %d×%d: sizes must be positive", rows, seqLen)
	}
	n := rows * seqLen
	w := 4
	if wide {
		w = 8
	}
	size := tokenBufBytes(rows, seqLen, wide)
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("rinas: map %d-byte token buffer: %w", size, err)
	}
	b := &tokenBuf{mem: mem, rows: rows, seqLen: seqLen}
	al := func(x int) int { return (x + 63) &^ 63 }
	off := 0
	if wide {
		b.tokens64 = unsafe.Slice((*int64)(unsafe.Pointer(&mem[0])), n)
	} else {
		b.tokens = unsafe.Slice((*int32)(unsafe.Pointer(&mem[0])), n)
	}
	off += al(n * w)
	b.pos = unsafe.Slice((*int32)(unsafe.Pointer(&mem[off])), n)
	off += al(n * 4)
	b.cu = unsafe.Slice((*int32)(unsafe.Pointer(&mem[off])), n+1)[:0]
	off += al((n + 1) * 4)
	b.mask = mem[off : off+n : off+n]
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
		b.mem, b.tokens, b.tokens64, b.pos, b.cu, b.mask = nil, nil, nil, nil, nil, nil
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
