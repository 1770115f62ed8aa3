package codec

import (
	"errors"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// Level scans, four levels per 64-bit word where the common case allows:
// most levels of a token column repeat the same (rep, def) pair.

const ones4 = uint64(0x0001000100010001)

func splat(v int16) uint64 { return ones4 * uint64(uint16(v)) }

// countDefined counts levels at or above maxDef (levels holding a value).
func countDefined(defs []int16, maxDef int16) int {
	n, i := 0, 0
	full := splat(maxDef)
	for ; i+4 <= len(defs); i += 4 {
		if load4(defs[i:]) == full {
			n += 4
			continue
		}
		for _, v := range defs[i : i+4] {
			if v >= maxDef {
				n++
			}
		}
	}
	for _, v := range defs[i:] {
		if v >= maxDef {
			n++
		}
	}
	return n
}

// countSlots counts the levels at or above rad (leaf slots) and, of those,
// the ones below maxDef (null slots).
func countSlots(defs []int16, rad, maxDef int16) (slots, nulls int) {
	full := splat(maxDef)
	i := 0
	for ; i+4 <= len(defs); i += 4 {
		if load4(defs[i:]) == full {
			slots += 4
			continue
		}
		for _, v := range defs[i : i+4] {
			if v >= rad {
				slots++
				if v < maxDef {
					nulls++
				}
			}
		}
	}
	for _, v := range defs[i:] {
		if v >= rad {
			slots++
			if v < maxDef {
				nulls++
			}
		}
	}
	return slots, nulls
}

// load4 reads four levels as one word.
func load4(s []int16) uint64 {
	_ = s[3]
	return *(*uint64)(unsafe.Pointer(&s[0]))
}

var errListOverflow = errors.New("list offsets overflow")

// listOffsets builds the offsets and validity of the list described by
// info from the levels, with the semantics of arrow-go's
// file.DefRepLevelsToListInfo: levels below the repeated ancestor's
// definition level or of deeper lists are skipped, a repetition level equal
// to the list's adds an element to the current list, a lower one starts a
// list (null when its definition level is below info.DefLevel-1). offsets
// must hold len(defs)+1 entries; bits, when not nil, len(defs) bits. It
// returns the number of lists and of null lists.
func listOffsets[O int32 | int64](defs, reps []int16, info file.LevelInfo, offsets []O, bits []byte) (n, nulls int, err error) {
	reps = reps[:len(defs)]
	offsets = offsets[:len(defs)+1]
	offsets[0] = 0
	var cur O // elements in the current list
	var total O
	pos := 0
	cont := splat(info.RepLevel)
	maxO := O(1)<<(8*unsafe.Sizeof(O(0))-2) - 1 + O(1)<<(8*unsafe.Sizeof(O(0))-2)
	simple := info.RepeatedAncestorDefLevel == 0
	i := 0
	for i < len(defs) {
		if simple && i+4 <= len(defs) && load4(reps[i:]) == cont {
			// four more elements of the current list
			cur += 4
			i += 4
			continue
		}
		d, r := defs[i], reps[i]
		i++
		if d < info.RepeatedAncestorDefLevel || r > info.RepLevel {
			continue
		}
		if r == info.RepLevel {
			cur++
			continue
		}
		// a new list: close the previous one
		if pos > 0 {
			if total > maxO-cur {
				return 0, 0, errListOverflow
			}
			total += cur
			offsets[pos] = total
		}
		cur = 0
		if d >= info.DefLevel {
			cur = 1
		}
		if bits != nil {
			if d >= info.DefLevel-1 {
				bitutil.SetBit(bits, pos)
			} else {
				bitutil.ClearBit(bits, pos)
				nulls++
			}
		} else if d < info.DefLevel-1 {
			nulls++
		}
		pos++
	}
	if pos > 0 {
		if total > maxO-cur {
			return 0, 0, errListOverflow
		}
		offsets[pos] = total + cur
	} else if cur > 0 {
		return 0, 0, errors.New("list elements before any list")
	}
	return pos, nulls, nil
}
