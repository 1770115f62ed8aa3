package engine

import (
	"bytes"
	"context"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// rangeReaders returns every BatchReader implementation, closed at cleanup.
func rangeReaders(t *testing.T) map[string]BatchReader {
	t.Helper()
	out := map[string]BatchReader{"pread": &PreadReader{Parallelism: 3}}
	er, err := StartRangeReader(Options{Logf: t.Logf, SlotSize: 8192})
	if err != nil {
		t.Logf("engine reader unavailable: %v", err)
		return out
	}
	t.Cleanup(func() { er.Close() })
	out["engine"] = er
	ob := OpenBatchReader(3, t.Logf)
	t.Cleanup(func() { ob.Close() })
	out["open"] = ob
	t.Logf("engine: %+v", er.Info())
	return out
}

func TestBatchReaders(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(1))
	contents := map[string][]byte{}
	for _, name := range []string{"a", "b", "c"} {
		b := make([]byte, 10000+rng.Intn(50000))
		rng.Read(b)
		p := filepath.Join(dir, name)
		os.WriteFile(p, b, 0o644)
		contents[p] = b
	}
	missing := filepath.Join(dir, "missing")
	var rs []Range
	paths := []string{filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")}
	for i := 0; i < 300; i++ {
		p := paths[rng.Intn(3)]
		size := len(contents[p])
		off := rng.Intn(size)
		n := 1 + rng.Intn(20000) // some longer than the engine slot, some past EOF
		rs = append(rs, Range{Path: p, Off: int64(off), Len: n})
	}
	rs = append(rs, Range{Path: missing, Off: 0, Len: 10})
	for name, r := range rangeReaders(t) {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			calls := make([]int, len(rs))
			err := r.ReadBatch(context.Background(), rs, func(i int, data []byte, err error) {
				mu.Lock()
				calls[i]++
				mu.Unlock()
				rg := rs[i]
				if rg.Path == missing {
					if err == nil || !errors.Is(err, os.ErrNotExist) {
						t.Errorf("missing file: err %v", err)
					}
					return
				}
				if err != nil {
					t.Errorf("range %d: %v", i, err)
					return
				}
				want := contents[rg.Path][rg.Off:min(int(rg.Off)+rg.Len, len(contents[rg.Path]))]
				if !bytes.Equal(data, want) {
					t.Errorf("range %d %+v: got %d bytes, want %d", i, rg, len(data), len(want))
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range calls {
				if c != 1 {
					t.Fatalf("range %d reported %d times", i, c)
				}
			}
			// a cancelled context still reports every range
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			n := 0
			r.ReadBatch(ctx, rs[:20], func(i int, data []byte, err error) {
				mu.Lock()
				n++
				mu.Unlock()
			})
			if n != 20 {
				t.Errorf("cancelled batch reported %d of 20", n)
			}
		})
	}
}

// TestOpenBatchReaderLazy: OpenBatchReader's reader reads small batches
// without an engine, starts one at the first large batch, and once closed
// reports every range of a batch as closed.
func TestOpenBatchReaderLazy(t *testing.T) {
	data := make([]byte, 1<<20)
	rand.New(rand.NewSource(3)).Read(data)
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r := OpenBatchReader(4, t.Logf).(*lazyReader)
	read := func(n int) error {
		rs := make([]Range, n)
		for i := range rs {
			rs[i] = Range{Path: p, Off: int64(i * 1000), Len: 777}
		}
		var mu sync.Mutex
		calls := 0
		err := r.ReadBatch(context.Background(), rs, func(i int, b []byte, err error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if err == nil && !bytes.Equal(b, data[i*1000:i*1000+777]) {
				t.Errorf("range %d: wrong bytes", i)
			}
		})
		if calls != n {
			t.Errorf("%d calls for %d ranges", calls, n)
		}
		return err
	}
	if err := read(SmallBatch - 1); err != nil || r.rr != nil {
		t.Fatalf("small batch: err %v, engine started %v", err, r.rr != nil)
	}
	if err := read(SmallBatch); err != nil {
		t.Fatal(err)
	}
	if r.big == nil {
		t.Fatal("a large batch did not pick the engine's reader")
	}
	t.Logf("engine started: %v", r.rr != nil)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := read(3); !errors.Is(err, ErrReaderClosed) {
		t.Fatalf("batch after Close: %v", err)
	}
}
