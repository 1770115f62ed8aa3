package codec

import (
	"encoding/binary"
	"errors"
)

var (
	errRLETruncated = errors.New("RLE/bit-packed data truncated")
	errRLEValue     = errors.New("RLE/bit-packed value out of range")
	errRLEWidth     = errors.New("RLE/bit-packed bit width over 32")
)

// rleDecode decodes n values of bit width bw from Parquet's RLE/bit-packed
// hybrid encoding in b into out[:n], checking each value is ≤ maxv. It
// allocates nothing. Bit-packed runs may end early at the end of b when the
// values they still hold are not needed (writers pad the last group).
// It is one long function because its run loops are the hot path of every
// level and dictionary index decoded, where a call per run or value would
// cost.
func rleDecode[T int16 | int32](b []byte, bw int, n int, maxv uint32, out []T) error {
	if bw > 32 {
		return errRLEWidth
	}
	vbytes := (bw + 7) / 8
	mask := uint64(1)<<uint(bw) - 1
	pos, i := 0, 0
	for i < n {
		// run header: ULEB128
		var h uint64
		var shift uint
		for {
			if pos >= len(b) {
				return errRLETruncated
			}
			c := b[pos]
			pos++
			if shift >= 63 {
				return errRLETruncated
			}
			h |= uint64(c&0x7f) << shift
			if c&0x80 == 0 {
				break
			}
			shift += 7
		}
		if h&1 == 0 {
			count := h >> 1
			if pos+vbytes > len(b) {
				return errRLETruncated
			}
			var v uint32
			for k := 0; k < vbytes; k++ {
				v |= uint32(b[pos+k]) << (8 * k)
			}
			pos += vbytes
			if v > maxv {
				return errRLEValue
			}
			m := n - i
			if count < uint64(m) {
				m = int(count)
			}
			if m == 0 && count == 0 {
				continue
			}
			fill(out[i:i+m], T(v))
			i += m
			continue
		}
		groups := h >> 1
		if groups > uint64(len(b)) {
			groups = uint64(len(b)) // cannot hold more; bounds checked below
		}
		count := int(groups) * 8
		runBytes := int(groups) * bw
		m := n - i
		if count < m {
			m = count
		}
		need := (m*bw + 7) / 8
		if pos+need > len(b) {
			return errRLETruncated
		}
		data := b[pos:]
		check := uint64(maxv) < mask
		out := out[i : i+m]
		k := 0
		if bw <= 8 {
			// whole groups of 8 values: one 64-bit load each
			for ; k+8 <= m && (k/8)*bw+8 <= len(data); k += 8 {
				w := binary.LittleEndian.Uint64(data[(k/8)*bw:])
				o := out[k : k+8 : k+8]
				o[0] = T(w & mask)
				o[1] = T((w >> uint(bw)) & mask)
				o[2] = T((w >> uint(2*bw)) & mask)
				o[3] = T((w >> uint(3*bw)) & mask)
				o[4] = T((w >> uint(4*bw)) & mask)
				o[5] = T((w >> uint(5*bw)) & mask)
				o[6] = T((w >> uint(6*bw)) & mask)
				o[7] = T((w >> uint(7*bw)) & mask)
			}
		}
		for bit := k * bw; k < m; k++ {
			byteIdx := bit >> 3
			var w uint64
			if byteIdx+8 <= len(data) {
				w = binary.LittleEndian.Uint64(data[byteIdx:])
			} else {
				for q := 0; byteIdx+q < len(data) && q < 8; q++ {
					w |= uint64(data[byteIdx+q]) << (8 * q)
				}
			}
			out[k] = T((w >> uint(bit&7)) & mask)
			bit += bw
		}
		if check {
			for _, v := range out {
				if uint32(v) > maxv {
					return errRLEValue
				}
			}
		}
		i += m
		if runBytes > len(b)-pos {
			pos = len(b)
		} else {
			pos += runBytes
		}
	}
	return nil
}

// bitWidth is the number of bits needed for values up to v.
func bitWidth(v int) int {
	n := 0
	for v > 0 {
		n++
		v >>= 1
	}
	return n
}

// fill sets every element of s to v, doubling with copy (memmove speed) on
// long runs.
func fill[T int16 | int32](s []T, v T) {
	if len(s) < 32 {
		for k := range s {
			s[k] = v
		}
		return
	}
	for k := 0; k < 16; k++ {
		s[k] = v
	}
	for k := 16; k < len(s); k *= 2 {
		copy(s[k:], s[:k])
	}
}
