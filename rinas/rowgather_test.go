package rinas

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestBufferRowOverhead: the fixed bookkeeping a buffered row is
// counted at covers its rowItem twice and a whole rowPage.
func TestBufferRowOverhead(t *testing.T) {
	need := 2*unsafe.Sizeof(rowItem{}) + unsafe.Sizeof(rowPage{})
	if int64(need) > bufferRowOverhead {
		t.Fatalf("a buffered row's bookkeeping is %d bytes, counted at %d", need, bufferRowOverhead)
	}
}

// listPage builds a list<int32> page of n rows (row i holds i%5 values
// base+i*10+j), with the rows in nullRows null and the values at
// positions in nullVals null, sliced to [lo, n).
func listPage(mem memory.Allocator, n, base, lo int, nullRows, nullVals map[int]bool) arrow.Array {
	b := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int32)
	defer b.Release()
	vb := b.ValueBuilder().(*array.Int32Builder)
	pos := 0
	for i := 0; i < n; i++ {
		if nullRows[i] {
			b.AppendNull()
			continue
		}
		b.Append(true)
		for j := 0; j < i%5; j++ {
			if nullVals[pos] {
				vb.AppendNull()
			} else {
				vb.Append(int32(base + i*10 + j))
			}
			pos++
		}
	}
	a := b.NewArray()
	defer a.Release()
	return array.NewSlice(a, int64(lo), int64(n))
}

// TestConcatRowsGather: a batch gathered from the pages the row stream
// holds equals the concatenation of its rows' one-row slices, whichever
// path builds it (list<int32> pages without nulls, with null rows, with
// null values, sliced pages; int64, string and list sides), and the
// pages' references are all released with their last row.
func TestConcatRowsGather(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sideOf := func(n, base int) []arrow.Array {
		ib := array.NewInt64Builder(mem)
		defer ib.Release()
		sb := array.NewStringBuilder(mem)
		defer sb.Release()
		for i := 0; i < n; i++ {
			if i%7 == 3 {
				ib.AppendNull()
			} else {
				ib.Append(int64(base + i))
			}
			sb.Append(string(rune('a' + (base+i)%26)))
		}
		return []arrow.Array{ib.NewArray(), sb.NewArray(), listPage(mem, n, base, 0, nil, nil)}
	}
	const n = 40
	type page struct {
		name     string
		arr      arrow.Array
		fastPath bool
	}
	pages := []page{
		{"plain", listPage(mem, n, 0, 0, nil, nil), true},
		{"sliced", listPage(mem, n+6, 1000, 6, nil, nil), true},
		{"null rows", listPage(mem, n, 2000, 0, map[int]bool{3: true, 17: true}, nil), false},
		{"null values", listPage(mem, n, 3000, 0, nil, map[int]bool{5: true, 40: true}), false},
	}
	for _, set := range [][]int{{0, 1}, {0, 1, 2}, {1, 3}, {0, 1, 2, 3}} {
		var r rowStream
		var items, run []rowItem
		var want [4][]arrow.Array // lead, then the sides
		for _, k := range set {
			p := pages[k]
			cols := sideOf(n, 100*k)
			// The page's rows in the batch start at row 2, its sides'
			// arrays at index 0.
			pg := r.pin(uint64(k), p.arr, cols, 2, n-2, 10, 1)
			for _, c := range cols {
				c.Release() // the page holds them now
			}
			if got := r.pages[pg].offs != nil; got != p.fastPath {
				t.Fatalf("%s: fast path %v, want %v", p.name, got, p.fastPath)
			}
			run = run[:0]
			for i := 2; i < n; i++ {
				run = append(run, rowItem{pg: pg, row: uint32(i)})
			}
			items = append(items, run...)
		}
		// Rows at random, then the last page's in order (a run of
		// consecutive rows, as without a buffer).
		rng := rand.New(rand.NewPCG(uint64(len(set)), 1))
		head := items[:len(items)-len(run)]
		rng.Shuffle(len(head), func(i, j int) { head[i], head[j] = head[j], head[i] })
		for _, it := range items {
			p := r.pages[it.pg]
			want[0] = append(want[0], array.NewSlice(p.arr, int64(it.row), int64(it.row+1)))
			for s, c := range p.cols {
				i := int64(int(it.row) - p.lo)
				want[s+1] = append(want[s+1], array.NewSlice(c, i, i+1))
			}
		}
		for col := -1; col < 3; col++ {
			got, err := concatRows(items, r.pages, col)
			if err != nil {
				t.Fatal(err)
			}
			w, err := array.Concatenate(want[col+1], mem)
			if err != nil {
				t.Fatal(err)
			}
			if !array.Equal(got, w) {
				t.Errorf("pages %v, column %d:\n got %v\nwant %v", set, col, got, w)
			}
			got.Release()
			w.Release()
			for _, a := range want[col+1] {
				a.Release()
			}
		}
		for _, it := range items[len(items)-len(items)/4:] {
			r.unpin(it.pg)
		}
		for _, it := range items[:len(items)-len(items)/4] {
			r.unpin(it.pg)
		}
		if r.held != 0 || r.cost != 0 || len(r.free) != len(set) {
			t.Fatalf("pages %v: after every row left, held %d, cost %d, %d pages free", set, r.held, r.cost, len(r.free))
		}
	}
	for _, p := range pages {
		p.arr.Release()
	}
}
