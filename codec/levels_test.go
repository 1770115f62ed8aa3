package codec

import (
	"math/rand"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// TestListOffsetsMatchesArrow compares listOffsets with arrow-go's
// file.DefRepLevelsToListInfo on random level sequences.
func TestListOffsetsMatchesArrow(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	infos := []file.LevelInfo{
		{NullSlotUsage: 1, DefLevel: 2, RepLevel: 1, RepeatedAncestorDefLevel: 0}, // optional list
		{NullSlotUsage: 1, DefLevel: 1, RepLevel: 1, RepeatedAncestorDefLevel: 0}, // required list
		{NullSlotUsage: 1, DefLevel: 4, RepLevel: 2, RepeatedAncestorDefLevel: 2}, // inner of two lists
		{NullSlotUsage: 1, DefLevel: 2, RepLevel: 1, RepeatedAncestorDefLevel: 0},
	}
	for iter := 0; iter < 3000; iter++ {
		info := infos[iter%len(infos)]
		n := r.Intn(40)
		defs, reps := make([]int16, n), make([]int16, n)
		maxDef := info.DefLevel + 1
		for i := range defs {
			defs[i] = int16(r.Intn(int(maxDef) + 1))
			if i > 0 && r.Intn(4) != 0 {
				reps[i] = int16(1 + r.Intn(int(info.RepLevel)))
			}
			if iter%3 == 0 && r.Intn(3) != 0 {
				reps[i], defs[i] = info.RepLevel, maxDef // long runs of continuation
			}
		}
		// arrow-go counts elements before any list into offsets[0]; such
		// input is corrupt and listOffsets refuses it, so skip it here.
		first := -1
		for i := range defs {
			if defs[i] >= info.RepeatedAncestorDefLevel && reps[i] <= info.RepLevel {
				first = i
				break
			}
		}
		if first >= 0 && reps[first] == info.RepLevel {
			continue
		}
		want := make([]int32, n+1)
		wbits := make([]byte, bitutil.BytesForBits(int64(n))+1)
		out := file.ValidityBitmapInputOutput{ReadUpperBound: int64(n), ValidBits: wbits}
		if err := file.DefRepLevelsToListInfo(defs, reps, info, &out, want); err != nil {
			continue
		}
		got := make([]int32, n+1)
		gbits := make([]byte, len(wbits))
		lists, nulls, err := listOffsets(defs, reps, info, got, gbits)
		if err != nil {
			t.Fatalf("defs %v reps %v: %v", defs, reps, err)
		}
		if lists != int(out.Read) || nulls != int(out.NullCount) {
			t.Fatalf("defs %v reps %v: %d lists %d nulls, arrow-go %d %d", defs, reps, lists, nulls, out.Read, out.NullCount)
		}
		for i := 0; i <= lists; i++ {
			if got[i] != want[i] {
				t.Fatalf("defs %v reps %v: offsets %v, arrow-go %v", defs, reps, got[:lists+1], want[:lists+1])
			}
		}
		for i := 0; i < lists; i++ {
			if bitutil.BitIsSet(gbits, i) != bitutil.BitIsSet(wbits, i) {
				t.Fatalf("defs %v reps %v: validity bit %d differs", defs, reps, i)
			}
		}
	}
}

// TestRLEDecode checks the RLE/bit-packed hybrid decoder on hand-made runs.
func TestRLEDecode(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
		bw   int
		n    int
		max  uint32
		want []int16
		err  bool
	}{
		{"rle run", []byte{0x0a, 0x03}, 2, 5, 3, []int16{3, 3, 3, 3, 3}, false},
		{"bit-packed 1 group bw1", []byte{0x03, 0xA5}, 1, 8, 1, []int16{1, 0, 1, 0, 0, 1, 0, 1}, false},
		{"bit-packed bw3 partial", []byte{0x03, 0x88, 0xC6, 0xFA}, 3, 8, 7, []int16{0, 1, 2, 3, 4, 5, 6, 7}, false},
		{"rle then packed", []byte{0x04, 0x01, 0x03, 0x02}, 2, 6, 3, []int16{1, 1, 2, 0, 0, 0}, false},
		{"value over max", []byte{0x04, 0x03}, 2, 2, 2, nil, true},
		{"truncated run", []byte{0x04}, 2, 2, 3, nil, true},
		{"truncated packed", []byte{0x05, 0xff}, 2, 16, 3, nil, true},
		{"no data", nil, 1, 1, 1, nil, true},
		{"width 33", []byte{0x02, 0, 0, 0, 0, 0}, 33, 1, 1, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := make([]int16, tc.n)
			err := rleDecode(tc.b, tc.bw, tc.n, tc.max, out)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if err == nil {
				for i := range tc.want {
					if out[i] != tc.want[i] {
						t.Fatalf("got %v, want %v", out, tc.want)
					}
				}
			}
		})
	}
}

// TestRowStarts checks the repetition-bit scanner against decoding the
// levels and looking for zeros, on random hybrid streams.
func TestRowStarts(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for iter := 0; iter < 500; iter++ {
		// build a stream of random runs
		var b []byte
		n := 0
		for k := r.Intn(6) + 1; k > 0; k-- {
			if r.Intn(2) == 0 {
				cnt := r.Intn(300) + 1
				b = append(b, byte(cnt<<1&0x7f|0x80), byte(cnt>>6), byte(r.Intn(2)))
				n += cnt
			} else {
				groups := r.Intn(20) + 1
				b = append(b, byte(groups<<1|1))
				for g := 0; g < groups; g++ {
					b = append(b, byte(r.Intn(256)))
				}
				n += groups * 8
			}
		}
		want := make([]int16, n)
		if err := rleDecode(b, 1, n, 1, want); err != nil {
			t.Fatal(err)
		}
		offs := make([]int32, n+1)
		rows, first, err := rowStarts(b, n, offs)
		if err != nil {
			t.Fatal(err)
		}
		k := 0
		for i, v := range want {
			if v == 0 {
				if k >= rows || int(offs[k]) != i {
					t.Fatalf("iter %d: row start %d at level %d missing (got %v)", iter, k, i, offs[:rows])
				}
				k++
			}
		}
		if k != rows {
			t.Fatalf("iter %d: %d row starts, want %d", iter, rows, k)
		}
		if (rows == 0 && first != n) || (rows > 0 && first != int(offs[0])) {
			t.Fatalf("iter %d: first %d", iter, first)
		}
	}
	if _, _, err := rowStarts([]byte{0x04, 0x02}, 2, make([]int32, 3)); err == nil {
		t.Error("repetition level 2 in a one-bit stream accepted")
	}
}
