//go:build cgo

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/pagefeed/pagefeed/codec"
	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/gen"
	"github.com/pagefeed/pagefeed/rinas"
)

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want error
	}{
		{`{"paths":["a"],"shuffle":"row","fetch":"ordered","output":"tokens","seq_len":8,"batch_rows":2}`, nil},
		{`{"paths":["a"],"batch_size":8}`, rinas.ErrConfig}, // unknown key
		{`{"paths":["a"],"shuffle":"zigzag"}`, rinas.ErrConfig},
		{`{"paths":["a"],"output":"pixels"}`, rinas.ErrConfig},
		{`{"paths":["a"],"seed":-1}`, rinas.ErrConfig},
		{`{"paths":["a"]} {}`, rinas.ErrConfig},
		{`{"paths":["a"],"resume":{"version":99}}`, rinas.ErrState},
		{`{"paths":["a"],"resume":null}`, nil},
		{`{"paths":["a"],"drop_last":true,"deterministic":true,"eos":0,"truncate":true}`, nil},
		{`{"paths":["a"],"io_mode":"buffered"}`, nil},
		{`{"paths":["a"],"io_mode":"mmap"}`, rinas.ErrConfig},
	} {
		c, _, err := parseConfig([]byte(tc.in))
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s: err %v, want %v", tc.in, err, tc.want)
		}
		if tc.want == nil && len(c.Paths) != 1 {
			t.Errorf("%s: paths %v", tc.in, c.Paths)
		}
	}
	c, _, err := parseConfig([]byte(`{"paths":["a"],"shuffle":"row","fetch":"ordered","output":"tokens","seq_len":8,"batch_rows":2,"rank":1,"world":3,"memory_limit":123}`))
	if err != nil || c.Shuffle != rinas.ShuffleRow || c.Fetch != rinas.Ordered || c.Output != rinas.OutputTokens ||
		c.SeqLen != 8 || c.BatchRows != 2 || c.Rank != 1 || c.World != 3 || c.MemoryLimit != 123 || c.ExplicitEOS {
		t.Fatalf("parsed %+v, %v", c, err)
	}
	c, _, err = parseConfig([]byte(`{"paths":["a"],"eos":0,"pad":7,"keep_uneven":true}`))
	if err != nil || c.EOS != 0 || !c.ExplicitEOS || c.Pad != 7 || !c.ExplicitPad || !c.KeepUneven {
		t.Fatalf("parsed %+v, %v", c, err)
	}
}

func TestStatus(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, statusOK},
		{io.EOF, statusEOF},
		{fmt.Errorf("x: %w", fs.ErrNotExist), statusNotFound},
		{&index.Error{Op: "glob", Err: index.ErrEmpty}, statusNotFound},
		{fmt.Errorf("%w: no", rinas.ErrConfig), statusConfig},
		{fmt.Errorf("%w: no", index.ErrColumn), statusConfig},
		{fmt.Errorf("%w: no", rinas.ErrState), statusState},
		{fmt.Errorf("%w: no", rinas.ErrMemory), statusMemory},
		{&codec.Error{Op: "decode", Err: codec.ErrCorrupt}, statusCorrupt},
		{fmt.Errorf("%w: no", index.ErrCorrupt), statusCorrupt},
		{rinas.ErrClosed, statusClosed},
		{context.Canceled, statusClosed},
		{errors.New("other"), statusErr},
	} {
		if got := status(tc.err); got != tc.want {
			t.Errorf("status(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func genData(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := gen.Run(context.Background(), gen.Config{Dir: dir, Files: 2, RowsPerFile: 1500, Codec: "none", PageSize: 8192, PageIndex: true}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func open(t *testing.T, cfg map[string]any) int64 {
	t.Helper()
	b, _ := json.Marshal(cfg)
	h, err := openLoader(b)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestLoaderRoundTrip reads an epoch through the handles and descriptors
// the C callers see: every id once, and everything given back.
func TestLoaderRoundTrip(t *testing.T) {
	dir := genData(t)
	h := open(t, map[string]any{"paths": []string{dir}, "columns": []string{"id"}, "batch_pages": 2, "world": 1})
	seen := map[int64]bool{}
	var held []int64
	for {
		bh, d, err := nextBatch(h)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if d.ncols != 1 || d.nchunks < 1 || int64(d.handle) != bh {
			t.Fatalf("descriptor %+v", *d)
		}
		if got := goString(unsafe.Pointer(*d.names)); got != "id" {
			t.Fatalf("column name %q", got)
		}
		be := lookup(table.batches, bh)
		for _, a := range be.b.Columns[0].Arrays {
			for _, v := range a.(interface{ Int64Values() []int64 }).Int64Values() {
				if seen[v] {
					t.Fatalf("id %d twice", v)
				}
				seen[v] = true
			}
		}
		held = append(held, bh)
		if len(held) == 2 { // outstanding batches across Next, released out of order
			releaseBatch(held[1])
			releaseBatch(held[0])
			releaseBatch(held[0]) // twice: harmless
			held = held[:0]
		}
	}
	if len(seen) != 3000 {
		t.Fatalf("%d ids, want 3000", len(seen))
	}
	st, err := stateJSON(h)
	if err != nil || !json.Valid(st) {
		t.Fatalf("state %s, %v", st, err)
	}
	if n, err := loaderLen(h); err != nil || n <= 0 {
		t.Fatalf("len %d %v", n, err)
	}
	// Close with a batch outstanding: it stays valid until released.
	for _, bh := range held {
		releaseBatch(bh)
	}
	if err := closeLoader(h); err != nil {
		t.Fatal(err)
	}
	if _, _, err := nextBatch(h); status(err) != statusClosed {
		t.Fatalf("next after close: %v", err)
	}
	if n := len(table.batches); n != 0 {
		t.Fatalf("%d batches left in the table", n)
	}
}

func TestCloseWithBatchOutstanding(t *testing.T) {
	dir := genData(t)
	h := open(t, map[string]any{"paths": []string{dir}, "columns": []string{"input_ids"}, "batch_rows": 7, "world": 1})
	bh, d, err := nextBatch(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := closeLoader(h); err != nil {
		t.Fatal(err)
	}
	if d.rows != 7 || d.arrays.length != 7 {
		t.Fatalf("rows %d, array length %d", d.rows, d.arrays.length)
	}
	releaseBatch(bh)
}

func TestOpenErrors(t *testing.T) {
	dir := genData(t)
	for _, tc := range []struct {
		cfg  string
		want int
	}{
		{`{"paths":["` + filepath.Join(dir, "nope.parquet") + `"]}`, statusNotFound},
		{`{"paths":["` + dir + `"],"columns":["nope"]}`, statusConfig},
		{`{"paths":["` + dir + `"],"colums":["id"]}`, statusConfig},
		{`{"paths":["` + dir + `"],"memory_limit":1}`, statusMemory},
		{`{"paths":["` + dir + `"],"resume":{"version":1,"dataset":"other","shuffle":"page","world":1}}`, statusState},
	} {
		h, err := openLoader([]byte(tc.cfg))
		if got := status(err); got != tc.want {
			t.Errorf("%s: %v (status %d), want status %d", tc.cfg, err, got, tc.want)
		}
		if err == nil {
			closeLoader(h)
		}
	}
}

func TestReshardJSON(t *testing.T) {
	s := `{"version":1,"dataset":"d","shuffle":"page","seed":0,"epoch":0,"start":0,"rank":%d,"world":2,"done":3,"rng":1}`
	out, err := reshardJSON([]byte("["+fmt.Sprintf(s, 0)+","+fmt.Sprintf(s, 1)+"]"), 3)
	if err != nil {
		t.Fatal(err)
	}
	var states []rinas.State
	if err := json.Unmarshal(out, &states); err != nil || len(states) != 3 || states[2].Rank != 2 || states[0].Start != 6 {
		t.Fatalf("%s %v", out, err)
	}
	if _, err := reshardJSON([]byte("[{"), 3); status(err) != statusState {
		t.Fatalf("bad JSON: %v", err)
	}
}

// segments recomputes, from a token matrix alone, what the descriptor's
// per-token arrays must hold: a segment ends after every eos, at every
// row's end and where a run of pad starts; positions count from 0 in each.
// eos and pad must be ids that no document holds.
func segments(tok []int64, seqLen int, eos, pad int64) (pos []int32, mask []uint8, cu []int32) {
	pos, mask, cu = make([]int32, len(tok)), make([]uint8, len(tok)), []int32{0}
	p := int32(0)
	for i, v := range tok {
		start := i%seqLen == 0 || tok[i-1] == eos || (v == pad && tok[i-1] != pad)
		if start && i > 0 {
			cu = append(cu, int32(i))
		}
		if start {
			p = 0
		}
		pos[i] = p
		p++
		if v != pad {
			mask[i] = 1
		}
	}
	return pos, mask, append(cu, int32(len(tok)))
}

// TestTokensDescriptor reads the tokens output through the descriptor as
// a C caller does, int32 and int64, with and without the per-token
// arrays, and checks each against what the tokens imply.
func TestTokensDescriptor(t *testing.T) {
	dir := genData(t)
	const seqLen, rows, eos, pad = 24, 3, 60000, 60001 // eos and pad outside gen's vocabulary
	read := func(extra map[string]any) (toks []int64, nbatches int) {
		cfg := map[string]any{"paths": []string{dir}, "columns": []string{"input_ids"}, "output": "tokens",
			"seq_len": seqLen, "batch_rows": rows, "world": 1, "deterministic": true, "eos": eos, "pad": pad}
		maps.Copy(cfg, extra)
		h := open(t, cfg)
		defer closeLoader(h)
		wide := extra["tokens_dtype"] == "int64"
		x := extra["position_ids"] == true
		sawPad, sawMidRow := false, false
		for {
			bh, d, err := nextBatch(h)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			nbatches++
			be := lookup(table.batches, bh)
			if d.tok_rows != rows || d.seq_len != seqLen {
				t.Fatalf("matrix %d×%d", d.tok_rows, d.seq_len)
			}
			n := rows * seqLen
			var tok []int64
			if wide {
				if d.tokens != nil || d.tokens64 == nil || unsafe.Pointer(d.tokens64) != unsafe.Pointer(&be.b.Tokens64[0]) {
					t.Fatalf("int64: tokens %p tokens64 %p", d.tokens, d.tokens64)
				}
				tok = slices.Clone(unsafe.Slice((*int64)(unsafe.Pointer(d.tokens64)), n))
			} else {
				if d.tokens64 != nil || d.tokens == nil || unsafe.Pointer(d.tokens) != unsafe.Pointer(&be.b.Tokens[0]) {
					t.Fatalf("int32: tokens %p tokens64 %p", d.tokens, d.tokens64)
				}
				for _, v := range unsafe.Slice((*int32)(unsafe.Pointer(d.tokens)), n) {
					tok = append(tok, int64(v))
				}
			}
			if !x {
				if d.position_ids != nil || d.loss_mask != nil || d.cu_seqlens != nil || d.n_cu != 0 {
					t.Fatalf("extras not asked for: %p %p %p %d", d.position_ids, d.loss_mask, d.cu_seqlens, d.n_cu)
				}
			} else {
				wantPos, wantMask, wantCu := segments(tok, seqLen, eos, pad)
				pos := unsafe.Slice((*int32)(unsafe.Pointer(d.position_ids)), n)
				mask := unsafe.Slice((*uint8)(unsafe.Pointer(d.loss_mask)), n)
				cu := unsafe.Slice((*int32)(unsafe.Pointer(d.cu_seqlens)), int(d.n_cu))
				if !slices.Equal(pos, wantPos) || !slices.Equal(mask, wantMask) || !slices.Equal(cu, wantCu) {
					t.Fatalf("batch %d:\ntokens %v\npos  %v want %v\nmask %v want %v\ncu   %v want %v",
						nbatches, tok, pos, wantPos, mask, wantMask, cu, wantCu)
				}
				if unsafe.Pointer(d.cu_seqlens) != unsafe.Pointer(&be.b.CuSeqlens[0]) {
					t.Fatal("cu_seqlens is not the batch's own")
				}
				sawMidRow = sawMidRow || slices.ContainsFunc(cu, func(v int32) bool { return v%seqLen != 0 })
			}
			sawPad = sawPad || slices.Contains(tok, pad)
			toks = append(toks, tok...)
			releaseBatch(bh)
		}
		if x && (!sawPad || !sawMidRow) {
			t.Fatalf("no padding (%v) or no segment inside a row (%v): the check proved little", sawPad, sawMidRow)
		}
		return toks, nbatches
	}
	t32, n32 := read(nil)
	t64, n64 := read(map[string]any{"tokens_dtype": "int64", "position_ids": true, "loss_mask": true, "cu_seqlens": true})
	if n32 == 0 || n32 != n64 || !slices.Equal(t32, t64) {
		t.Fatalf("int32 and int64 outputs differ: %d and %d batches, %d and %d tokens", n32, n64, len(t32), len(t64))
	}
	x32, _ := read(map[string]any{"tokens_dtype": "int32", "position_ids": true, "loss_mask": true, "cu_seqlens": true})
	if !slices.Equal(t32, x32) {
		t.Fatal("asking for the extras changed the tokens")
	}
	// truncate: documents never span rows, so rows end in padding
	read(map[string]any{"truncate": true, "position_ids": true, "loss_mask": true, "cu_seqlens": true})
	if n := len(table.batches); n != 0 {
		t.Fatalf("%d batches left in the table", n)
	}
}

func TestTokensConfigErrors(t *testing.T) {
	for _, tc := range []struct{ in, msg string }{
		{`{"paths":["a"],"output":"tokens","tokens_dtype":"float32"}`, `tokens_dtype "float32": want "int32" or "int64"`},
		{`{"paths":["a"],"output":"tokens","tokens_dtype":"int16"}`, `tokens_dtype "int16"`},
		{`{"paths":["a"],"tokens_dtype":"int64"}`, `tokens_dtype "int64" needs output "tokens"`},
		{`{"paths":["a"],"output":"arrow","cu_seqlens":true}`, `cu_seqlens needs output "tokens"`},
		{`{"paths":["a"],"position_ids":1}`, `position_ids`}, // not a bool
	} {
		_, _, err := parseConfig([]byte(tc.in))
		if !errors.Is(err, rinas.ErrConfig) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want ErrConfig with %q", tc.in, err, tc.msg)
		}
	}
	c, x, err := parseConfig([]byte(`{"paths":["a"],"output":"tokens","tokens_dtype":"int64","loss_mask":true}`))
	if err != nil || !c.Tokens64 || !x.lossMask || x.positionIDs || x.cuSeqlens {
		t.Fatalf("parsed %+v %+v, %v", c, x, err)
	}
	if c, _, err := parseConfig([]byte(`{"paths":["a"],"tokens_dtype":"int32"}`)); err != nil || c.Tokens64 {
		t.Fatalf("int32 with arrow output: %+v, %v", c, err)
	}
}
