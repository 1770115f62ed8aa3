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
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
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
	// buffer_rows left out is the loader's default buffer (rinas 0), 0
	// given is none (rinas -1), a count is that count.
	for in, want := range map[string]int{`{"paths":["a"]}`: 0, `{"paths":["a"],"buffer_rows":0}`: -1, `{"paths":["a"],"buffer_rows":300}`: 300} {
		if c, _, err := parseConfig([]byte(in)); err != nil || c.BufferRows != want {
			t.Errorf("%s: BufferRows %d, %v; want %d", in, c.BufferRows, err, want)
		}
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
		bh, d, err := nextBatch(h, -1)
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
	st, err := stateJSON(h, false)
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
	if _, _, err := nextBatch(h, -1); status(err) != statusClosed {
		t.Fatalf("next after close: %v", err)
	}
	if n := len(table.batches); n != 0 {
		t.Fatalf("%d batches left in the table", n)
	}
}

func TestCloseWithBatchOutstanding(t *testing.T) {
	dir := genData(t)
	h := open(t, map[string]any{"paths": []string{dir}, "columns": []string{"input_ids"}, "batch_rows": 7, "world": 1})
	bh, d, err := nextBatch(h, -1)
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
	s := `{"version":2,"dataset":"d","shuffle":"page","output":"arrow","seed":0,"epoch":0,"rank":%d,"world":2,` +
		`"batch_rows":8,"policy":"drop","total":100,"share":[{"lo":%d,"hi":%d}],"done":%d,"rng":1}`
	out, err := reshardJSON([]byte("["+fmt.Sprintf(s, 0, 0, 48, 16)+","+fmt.Sprintf(s, 1, 48, 96, 64)+"]"), 3)
	if err != nil {
		t.Fatal(err)
	}
	var states []rinas.State
	if err := json.Unmarshal(out, &states); err != nil || len(states) != 3 || states[2].Rank != 2 || len(states[0].Rest) != 2 || states[0].Rest[0].Lo != 16 {
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
			bh, d, err := nextBatch(h, -1)
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

// TestConfigRanges: every integer key is checked for type and range with
// an error naming it, and a 0 that rinas would read as its default is
// refused rather than silently replaced.
func TestConfigRanges(t *testing.T) {
	for _, tc := range []struct{ in, msg string }{
		{`{"paths":["a"],"world":1.5}`, "world: number 1.5 is not an integer"},
		{`{"paths":["a"],"world":9223372036854775808}`, "world: number 9223372036854775808 is not an integer"},
		{`{"paths":["a"],"world":2000000}`, "world 2000000: want 0..1048576"},
		{`{"paths":["a"],"world":-1}`, "world -1: want 0..1048576"},
		{`{"paths":["a"],"world":2,"rank":2}`, "rank 2: want 0..1 (of world 2)"},
		{`{"paths":["a"],"seq_len":0,"output":"tokens"}`, "seq_len 0: want 1..16777216 (leave the key out for the default)"},
		{`{"paths":["a"],"memory_limit":-1}`, "memory_limit -1: want 1..9223372036854775807 bytes"},
		{`{"paths":["a"],"memory_limit":0}`, "memory_limit 0"},
		{`{"paths":["a"],"epochs":0}`, "epochs 0: want 1.."},
		{`{"paths":["a"],"batch_pages":0}`, "batch_pages 0: want 1..65536"},
		{`{"paths":["a"],"buffer_rows":1000000000000}`, "buffer_rows 1000000000000: want 0..2147483647"},
		{`{"paths":["a"],"buffer_rows":0,"shuffle":"stream"}`, `buffer_rows 0: shuffle "stream" needs a buffer`},
		{`{"paths":["a"],"seed":NaN}`, "config JSON at offset 23: invalid character 'N'"},
		{`{"paths":["a"],"seed":-1}`, "seed: number -1 is not an integer in 0..18446744073709551615"},
		{`{"paths":["a"],"epoch":18446744073709551615,"epochs":2}`, "past the last epoch number"},
		{`{"paths":"a"}`, "paths: string is not a list of strings"},
		{`{"paths":["a"],"drop_last":"yes"}`, "drop_last: string is not true or false"},
		{`{"paths":["a"],"eos":3000000000}`, "eos: number 3000000000 is not an integer in -2147483648..2147483647"},
	} {
		_, _, err := parseConfig([]byte(tc.in))
		if !errors.Is(err, rinas.ErrConfig) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want ErrConfig with %q", tc.in, err, tc.msg)
		}
	}
	for _, in := range []string{
		`{"paths":["a"],"world":0}`, `{"paths":["a"],"batch_rows":0,"buffer_rows":0,"prefetch":0,"iodepth":0}`,
		`{"paths":["a"],"world":3,"rank":2,"seq_len":1,"output":"tokens","memory_limit":1,"epochs":1,"batch_pages":65536}`,
	} {
		if _, _, err := parseConfig([]byte(in)); err != nil {
			t.Errorf("%s: %v", in, err)
		}
	}
	if _, err := reshardJSON([]byte(`[]`), 1<<63-1); !errors.Is(err, rinas.ErrConfig) || !strings.Contains(err.Error(), "world 9223372036854775807: want 1..1048576") {
		t.Errorf("reshard to 2**63-1 ranks: %v", err)
	}
}

// TestNullArguments: a NULL pointer argument is a config error naming it.
func TestNullArguments(t *testing.T) {
	for name, rc := range map[string]int{
		"pf_len":          int(pf_len(1, nil)),
		"pf_epoch_len":    int(pf_epoch_len(1, 0, nil)),
		"pf_next":         int(pf_next(1, nil)),
		"pf_next_wait":    int(pf_next_wait(1, 0, nil)),
		"pf_state":        int(pf_state(1, 0, nil)),
		"pf_reshard":      int(pf_reshard(nil, 1, nil)),
		"pf_open":         int(pf_open(nil, 0, nil)),
		"pf_batch_export": int(pf_batch_export(1, 0, 0, nil, nil)),
	} {
		if rc != statusConfig || !strings.Contains(lastError(), "is NULL") {
			t.Errorf("%s with NULL: status %d, %q", name, rc, lastError())
		}
	}
}

// TestTimedWait: with every batch held, a timed wait returns errTimeout
// with nothing taken; once batches go back it goes on, and the epoch
// still delivers every id once. Len follows the epoch of the batch
// returned, and EpochLen plans other epochs.
func TestTimedWait(t *testing.T) {
	dir := genData(t)
	for _, cfg := range []map[string]any{
		{"columns": []string{"id"}, "batch_pages": 1, "shuffle": "none"},
		// row batches cut across pages, the wait ending inside a batch
		{"columns": []string{"input_ids"}, "output": "tokens", "seq_len": 64, "batch_rows": 4, "shuffle": "stream", "buffer_rows": 300},
	} {
		t.Run(fmt.Sprint(cfg), func(t *testing.T) { testTimedWait(t, dir, cfg) })
	}
}

func testTimedWait(t *testing.T, dir string, extra map[string]any) {
	cfg := map[string]any{"paths": []string{dir}, "world": 1, "epochs": 2, "memory_limit": 64 << 20, "deterministic": true}
	maps.Copy(cfg, extra)
	h := open(t, cfg)
	defer closeLoader(h)
	// content is what a batch carries: its ids, or its tokens.
	content := func(bh int64) (out []int64) {
		b := lookup(table.batches, bh).b
		for _, v := range b.Tokens {
			out = append(out, int64(v))
		}
		for _, c := range b.Columns {
			for _, a := range c.Arrays {
				out = append(out, a.(interface{ Int64Values() []int64 }).Int64Values()...)
			}
		}
		return out
	}
	// The reference: the same epochs without a timeout.
	ref := open(t, cfg)
	var want [][]int64
	wantSteps := map[uint64]int{}
	for {
		bh, d, err := nextBatch(ref, -1)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, content(bh))
		wantSteps[uint64(d.epoch)]++
		releaseBatch(bh)
	}
	closeLoader(ref)

	var got [][]int64
	var held []int64
	timeouts := 0
	for len(held) < 1000 {
		bh, _, err := nextBatch(h, 5*time.Millisecond)
		if errors.Is(err, errTimeout) {
			timeouts++
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, content(bh))
		held = append(held, bh)
	}
	if timeouts == 0 {
		t.Fatalf("%d batches held and no timeout: nothing blocks?", len(held))
	}
	if status(errTimeout) != statusTimeout {
		t.Fatal("errTimeout's status")
	}
	// Timeouts in the middle of batches: many short waits, then go on.
	for range 50 {
		if _, _, err := nextBatch(h, 0); !errors.Is(err, errTimeout) {
			t.Fatalf("a wait of 0 with every batch held: %v", err)
		}
	}
	n0, _ := loaderLen(h)
	steps := map[uint64]int{0: len(held)}
	for _, bh := range held {
		releaseBatch(bh)
	}
	for {
		bh, d, err := nextBatch(h, time.Millisecond)
		if err == io.EOF {
			break
		}
		if errors.Is(err, errTimeout) {
			timeouts++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		steps[uint64(d.epoch)]++
		got = append(got, content(bh))
		if n, _ := loaderLen(h); int(n) != func() int { n, _ := lookup(table.loaders, h).l.EpochLen(uint64(d.epoch)); return n }() {
			t.Fatalf("pf_len %d in epoch %d", n, d.epoch)
		}
		releaseBatch(bh)
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("%d batches with timed waits (%d timeouts), %d without; they differ", len(got), timeouts, len(want))
	}
	// Len is exact but for tokens output with keep_uneven (World 1's
	// default), where it is an estimate.
	exact := cfg["output"] != "tokens"
	for e := int64(0); e < 2; e++ {
		n, err := epochLen(h, e)
		if err != nil || steps[uint64(e)] != wantSteps[uint64(e)] || (exact && int(n) != steps[uint64(e)]) {
			t.Fatalf("epoch %d: EpochLen %d (%v), %d steps taken, %d without timeouts", e, n, err, steps[uint64(e)], wantSteps[uint64(e)])
		}
	}
	if exact && int(n0) != steps[0] {
		t.Fatalf("len %d before epoch 1, epoch 0 took %d", n0, steps[0])
	}
	if _, err := epochLen(h, -1); !errors.Is(err, rinas.ErrConfig) {
		t.Fatalf("epoch -1: %v", err)
	}
}

// TestCompactState: a compact state is the full one without the fields
// that name the loader.
func TestCompactState(t *testing.T) {
	dir := genData(t)
	h := open(t, map[string]any{"paths": []string{dir}, "columns": []string{"id"}, "batch_rows": 10, "world": 1})
	defer closeLoader(h)
	bh, _, err := nextBatch(h, -1)
	if err != nil {
		t.Fatal(err)
	}
	releaseBatch(bh)
	full, err := stateJSON(h, false)
	if err != nil {
		t.Fatal(err)
	}
	compact, err := stateJSON(h, true)
	if err != nil {
		t.Fatal(err)
	}
	var f, c map[string]any
	if json.Unmarshal(full, &f) != nil || json.Unmarshal(compact, &c) != nil {
		t.Fatalf("%s %s", full, compact)
	}
	for _, k := range []string{"dataset", "files", "shuffle", "output"} {
		if _, ok := c[k]; ok {
			t.Errorf("compact state has %q", k)
		}
		delete(f, k)
	}
	if !maps.EqualFunc(f, c, func(a, b any) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
		t.Fatalf("full %v\ncompact %v", f, c)
	}
}

// TestErrno: an error from a system call has its own status and carries
// its errno (a symlink loop: the index calls it a config error, naming
// the file; the errno still comes with it).
func TestErrno(t *testing.T) {
	dir := t.TempDir()
	loop := filepath.Join(dir, "loop.parquet")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	_, err := openLoader([]byte(`{"paths":["` + loop + `"]}`))
	if st := status(err); (st != statusOS && st != statusConfig) || errnoOf(err) != syscall.ELOOP || !strings.Contains(err.Error(), loop) {
		t.Fatalf("symlink loop: %v (status %d, errno %v)", err, status(err), errnoOf(err))
	}
	if status(fmt.Errorf("x: %w", syscall.EIO)) != statusOS {
		t.Fatal("EIO's status")
	}
}

// TestUnread: a batch given back is delivered again by the next Next,
// and the state taken meanwhile counts it as not delivered; only the
// last batch, neither released nor exported, goes back. So for page
// and row batches of one dataset and for a mixture.
func TestUnread(t *testing.T) {
	dir := genData(t)
	mix := []map[string]any{{"paths": []string{dir}, "name": "a", "weight": 0.7}, {"paths": []string{dir}, "name": "b", "weight": 0.3}}
	for _, extra := range []map[string]any{{"batch_pages": 2}, {"batch_rows": 64}, {"batch_rows": 64, "sources": mix}} {
		cfg := map[string]any{"columns": []string{"id"}, "world": 1, "deterministic": true}
		if extra["sources"] == nil {
			cfg["paths"] = []string{dir}
		}
		maps.Copy(cfg, extra)
		h := open(t, cfg)
		ids := func(bh int64) (out []int64) {
			for _, a := range lookup(table.batches, bh).b.Columns[0].Arrays {
				out = append(out, a.(interface{ Int64Values() []int64 }).Int64Values()...)
			}
			return out
		}
		first, _, err := nextBatch(h, -1)
		if err != nil {
			t.Fatal(err)
		}
		before, _ := stateJSON(h, false)
		bh, _, err := nextBatch(h, -1)
		if err != nil {
			t.Fatal(err)
		}
		want := ids(bh)
		if err := unreadBatch(h, first); status(err) != statusConfig {
			t.Fatalf("unread of the batch before the last: %v", err)
		}
		if err := unreadBatch(h+1000, bh); status(err) != statusClosed {
			t.Fatalf("unread through another handle: %v", err)
		}
		if err := unreadBatch(h, bh); err != nil {
			t.Fatal(err)
		}
		if lookup(table.batches, bh) != nil {
			t.Fatal("the batch given back is still in the table")
		}
		if after, _ := stateJSON(h, false); string(after) != string(before) {
			t.Fatalf("state after unread\n%s\nwant\n%s", after, before)
		}
		again, _, err := nextBatch(h, -1)
		if err != nil || !slices.Equal(ids(again), want) {
			t.Fatalf("after unread: %v, %v, want %v", err, ids(again), want)
		}
		releaseBatch(again)
		if err := unreadBatch(h, again); status(err) != statusConfig {
			t.Fatalf("unread of a released batch: %v", err)
		}
		releaseBatch(first)
		closeLoader(h)
	}
	if n := len(table.batches); n != 0 {
		t.Fatalf("%d batches left in the table", n)
	}
}

// TestDescribeFailureKeepsTheBatch: a batch whose descriptor cannot be
// built goes back to the loader; the next call delivers its rows. So for
// one dataset and for a mixture of two sources (of the same files).
func TestDescribeFailureKeepsTheBatch(t *testing.T) {
	dir := genData(t)
	mix := []map[string]any{{"paths": []string{dir}, "name": "a", "weight": 0.7}, {"paths": []string{dir}, "name": "b", "weight": 0.3}}
	for _, c := range []struct {
		src  map[string]any
		rows int
	}{{map[string]any{"paths": []string{dir}}, 3000}, {map[string]any{"sources": mix}, 6000}} {
		cfg := func(extra map[string]any) map[string]any {
			m := map[string]any{"columns": []string{"id"}, "batch_rows": 100, "world": 1}
			maps.Copy(m, c.src)
			maps.Copy(m, extra)
			return m
		}
		h := open(t, cfg(map[string]any{"deterministic": true}))
		ref := open(t, cfg(map[string]any{"deterministic": true}))
		ids := func(bh int64) (out []int64) {
			for _, a := range lookup(table.batches, bh).b.Columns[0].Arrays {
				out = append(out, a.(interface{ Int64Values() []int64 }).Int64Values()...)
			}
			return out
		}
		fail := errors.New("descriptor refused")
		restore := failDescribe(fail)
		_, _, err := nextBatch(h, -1)
		restore()
		if !errors.Is(err, fail) {
			t.Fatalf("next with a failing describe: %v", err)
		}
		// The state counts nothing delivered: resumed, it gives every row.
		after, _ := stateJSON(h, false)
		rh := open(t, cfg(map[string]any{"resume": json.RawMessage(after)}))
		n := 0
		for {
			bh, _, err := nextBatch(rh, -1)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			n += len(ids(bh))
			releaseBatch(bh)
		}
		closeLoader(rh)
		if n != c.rows {
			t.Fatalf("%v: resumed from the state after the failure: %d rows, want %d", c.src, n, c.rows)
		}
		for {
			bh, _, err := nextBatch(h, -1)
			rh, _, rerr := nextBatch(ref, -1)
			if err == io.EOF && rerr == io.EOF {
				break
			}
			if err != nil || rerr != nil || !slices.Equal(ids(bh), ids(rh)) {
				t.Fatalf("%v: after the failure: %v %v, batches differ from an undisturbed run", c.src, err, rerr)
			}
			releaseBatch(bh)
			releaseBatch(rh)
		}
		closeLoader(h)
		closeLoader(ref)
	}
}

// A file changed under the loader has its own status, ahead of the
// corrupt-page one its sentinel also matches.
func TestStatusFileChanged(t *testing.T) {
	err := fmt.Errorf("read x.parquet: %w (size 10, now 5)", rinas.ErrFileChanged)
	if got := status(err); got != statusChanged {
		t.Fatalf("status(%v) = %d, want %d", err, got, statusChanged)
	}
	if got := status(fmt.Errorf("page: %w", codec.ErrCorrupt)); got != statusCorrupt {
		t.Fatalf("a corrupt page: status %d, want %d", got, statusCorrupt)
	}
}

// "columns": [] is refused, naming the key; null and the key left out
// take the default.
func TestEmptyProjectionRefused(t *testing.T) {
	for _, cfg := range []string{`{"paths":["x"],"columns":[]}`, `{"sources":[{"paths":["x"],"columns":[]}]}`} {
		_, _, err := parseConfig([]byte(cfg))
		if status(err) != statusConfig || !strings.Contains(fmt.Sprint(err), "columns") {
			t.Errorf("%s: %v (status %d), want a config error naming columns", cfg, err, status(err))
		}
	}
	for _, cfg := range []string{`{"paths":["x"]}`, `{"paths":["x"],"columns":null}`} {
		if _, _, err := parseConfig([]byte(cfg)); err != nil {
			t.Errorf("%s: %v", cfg, err)
		}
	}
}
