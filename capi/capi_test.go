package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
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
	} {
		c, err := parseConfig([]byte(tc.in))
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s: err %v, want %v", tc.in, err, tc.want)
		}
		if tc.want == nil && len(c.Paths) != 1 {
			t.Errorf("%s: paths %v", tc.in, c.Paths)
		}
	}
	c, err := parseConfig([]byte(`{"paths":["a"],"shuffle":"row","fetch":"ordered","output":"tokens","seq_len":8,"batch_rows":2,"rank":1,"world":3,"memory_limit":123}`))
	if err != nil || c.Shuffle != rinas.ShuffleRow || c.Fetch != rinas.Ordered || c.Output != rinas.OutputTokens ||
		c.SeqLen != 8 || c.BatchRows != 2 || c.Rank != 1 || c.World != 3 || c.MemoryLimit != 123 || c.ExplicitEOS {
		t.Fatalf("parsed %+v, %v", c, err)
	}
	c, err = parseConfig([]byte(`{"paths":["a"],"eos":0,"pad":7,"keep_uneven":true}`))
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
