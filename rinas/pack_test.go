package rinas

import (
	"context"
	"slices"
	"testing"
	"unsafe"
)

func TestPackerSplitsDocumentsAndKeepsOneEOS(t *testing.T) {
	const eos, pad = -1, -2
	docs := [][]int32{{1, 2, 3}, {4, 5, 6, 7, 8}, {9}, {10, 11}}
	var stream []int32 // every batch's tokens, padding removed
	var pending []int32
	pendingOwed := false
	next := 0
	for batch := 0; batch < 10 && (next < len(docs) || pendingOwed); batch++ {
		buf, err := newTokenBuf(2, 3)
		if err != nil {
			t.Fatal(err)
		}
		p := packer{eos: eos, pad: pad}
		p.reset(buf)
		for !p.full() {
			if !pendingOwed {
				if next == len(docs) {
					break
				}
				pending, pendingOwed = docs[next], true
				next++
			}
			n, done := p.add(pending)
			pending = pending[n:]
			pendingOwed = !done
		}
		ratio := p.finish()
		if ratio <= 0 || ratio > 1 {
			t.Fatalf("fill ratio %v out of (0,1]", ratio)
		}
		for _, v := range buf.tokens {
			if v != pad {
				stream = append(stream, v)
			}
		}
		buf.free()
	}
	want := []int32{1, 2, 3, eos, 4, 5, 6, 7, 8, eos, 9, eos, 10, 11, eos}
	if len(stream) != len(want) {
		t.Fatalf("stream %v, want %v", stream, want)
	}
	for i := range want {
		if stream[i] != want[i] {
			t.Fatalf("stream %v, want %v", stream, want)
		}
	}
}

func TestTokenBufAligned(t *testing.T) {
	b, err := newTokenBuf(3, 7)
	if err != nil {
		t.Fatal(err)
	}
	defer b.free()
	if len(b.tokens) != 21 {
		t.Fatalf("len %d", len(b.tokens))
	}
	if addr := uintptrOf(b.tokens); addr%4096 != 0 {
		t.Fatalf("token buffer at %#x is not 4096-aligned", addr)
	}
	if _, err := newTokenBuf(0, 1); err == nil {
		t.Fatal("zero rows accepted")
	}
}

func TestShuffleBufferBoundedAndExactlyOnce(t *testing.T) {
	const capRows = 50
	b := newShuffleBuffer[int](capRows, 7)
	seen := map[int]bool{}
	emitted := 0
	firstOut := -1
	for page := 0; page < 100; page++ {
		for r := 0; r < 10; r++ {
			v := page*10 + r
			b.push(v)
		}
		for b.over() > 0 {
			v := b.pop()
			if seen[v] {
				t.Fatalf("row %d emitted twice", v)
			}
			if firstOut < 0 {
				firstOut = v
			}
			seen[v] = true
			emitted++
		}
		if b.len() > capRows {
			t.Fatalf("buffer holds %d rows, cap %d", b.len(), capRows)
		}
	}
	for b.len() > 0 {
		v := b.pop()
		if seen[v] {
			t.Fatalf("row %d emitted twice", v)
		}
		seen[v] = true
		emitted++
	}
	if emitted != 1000 || len(seen) != 1000 {
		t.Fatalf("emitted %d distinct %d, want 1000", emitted, len(seen))
	}
	// Deterministic for a seed.
	a1, a2 := newShuffleBuffer[int](4, 1), newShuffleBuffer[int](4, 1)
	for i := 0; i < 20; i++ {
		a1.push(i)
		a2.push(i)
		for a1.over() > 0 {
			x, y := a1.pop(), a2.pop()
			if x != y {
				t.Fatalf("same seed diverged: %d vs %d", x, y)
			}
		}
	}
}

// TestTokenBufferHeldAtCloseUnmapped: a tokens batch the consumer still
// holds at Close stays valid until its Release, which then unmaps its
// buffer rather than park it for a loader that is gone.
func TestTokenBufferHeldAtCloseUnmapped(t *testing.T) {
	ds := testDataset(t, "v2")
	cfg := baseConfig(ds, "input_ids")
	cfg.Shuffle, cfg.Fetch, cfg.Output, cfg.SeqLen, cfg.BatchRows, cfg.EOS = ShuffleNone, Ordered, OutputTokens, 128, 4, -7
	l, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := append([]int32(nil), b.Tokens...)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l.tokMapped != 1 {
		t.Fatalf("%d token buffers mapped after Close with one batch held, want 1", l.tokMapped)
	}
	if !slices.Equal(b.Tokens, want) {
		t.Fatal("a held batch's tokens changed at Close")
	}
	b.Release()
	if l.tokMapped != 0 {
		t.Fatalf("%d token buffers still mapped after the held batch's Release", l.tokMapped)
	}
}

// TestTokenBufOutsideGoHeap checks that everything a tokens batch hands
// out (tokens, position ids, loss mask, cu_seqlens) lies in the buffer's
// own mapping, also when every token ends a document (the most segments a
// batch can hold): a C caller may keep those pointers until Release.
func TestTokenBufOutsideGoHeap(t *testing.T) {
	for _, wide := range []bool{false, true} {
		buf, err := newTokenBufW(3, 5, wide)
		if err != nil {
			t.Fatal(err)
		}
		p := packer{eos: 0, pad: 0}
		p.reset(buf)
		for !p.full() {
			p.add(nil) // an empty document: one EOS, one segment each
		}
		p.finish()
		lo := uintptr(unsafe.Pointer(&buf.mem[0]))
		hi := lo + uintptr(len(buf.mem))
		in := func(name string, ptr unsafe.Pointer, n, size int) {
			t.Helper()
			a := uintptr(ptr)
			if a < lo || a+uintptr(n*size) > hi {
				t.Fatalf("wide=%v: %s [%#x, +%d) outside the mapping [%#x, %#x)", wide, name, a, n*size, lo, hi)
			}
		}
		if wide {
			in("tokens64", unsafe.Pointer(&buf.tokens64[0]), len(buf.tokens64), 8)
		} else {
			in("tokens", unsafe.Pointer(&buf.tokens[0]), len(buf.tokens), 4)
		}
		in("pos", unsafe.Pointer(&buf.pos[0]), len(buf.pos), 4)
		in("mask", unsafe.Pointer(&buf.mask[0]), len(buf.mask), 1)
		if len(buf.cu) != 3*5+1 {
			t.Fatalf("wide=%v: %d cu_seqlens entries, want one per token plus one", wide, len(buf.cu))
		}
		in("cu", unsafe.Pointer(&buf.cu[0]), len(buf.cu), 4)
		buf.free()
	}
}
