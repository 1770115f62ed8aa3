package rinas

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/gen"
)

// Fuzz seeds are written under testdata/fuzz by
// PAGEFEED_WRITE_FUZZ_SEEDS=1 go test -run TestWriteFuzzSeeds ./rinas

// fuzzDeadline bounds one input: Open and one epoch.
const fuzzDeadline = 5 * time.Second

// stateFuzz is what FuzzState's inputs resume against: a small dataset,
// its index and one engine, made once per process.
var stateFuzz struct {
	once    sync.Once
	err     error
	ds      dataset
	ix      *index.Index
	eng     *engine.Engine
	dataset string // the loader's fingerprint of ds
}

// stateFuzzModes are the loader configurations a State may resume under;
// the input's mode byte picks one.
var stateFuzzModes = []func(c *Config){
	func(c *Config) { c.BatchPages = 2 },
	func(c *Config) { c.BatchRows, c.BatchPages, c.BufferRows = 16, 2, 40 },
	func(c *Config) { c.Shuffle, c.BatchRows, c.BatchPages = ShuffleRow, 16, 8 },
	func(c *Config) { c.Shuffle, c.BatchRows = ShuffleRowGroup, 16 },
	func(c *Config) { c.Shuffle, c.BatchRows, c.BufferRows = ShuffleStream, 16, 40 },
	func(c *Config) { c.BatchRows, c.BatchPages, c.World, c.Rank = 16, 2, 2, 1 },
	func(c *Config) {
		c.Columns = []string{"input_ids"}
		c.Shuffle, c.Output, c.SeqLen, c.BatchRows, c.BatchPages = ShuffleNone, OutputTokens, 16, 2, 2
	},
}

func stateFuzzSetup(t testing.TB) {
	stateFuzz.once.Do(func() {
		ds := relDataset(t.(*testing.T), "fuzzstate", gen.Config{Files: 2, RowsPerFile: 300, PageSize: 1024, RowGroupRows: 150,
			PageVersion: 2, PageIndex: true, Codec: "snappy", Dictionary: true, Seed: 5, MeanTokens: 8})
		stateFuzz.ds = ds
		stateFuzz.ix, stateFuzz.err = index.Build(context.Background(), ds.paths,
			index.Options{Columns: []string{"id"}, NoSidecar: true, Logf: func(string, ...any) {}})
		if stateFuzz.err != nil {
			return
		}
		stateFuzz.eng, stateFuzz.err = engine.New(engine.Options{Workers: 1, SlotSize: 64 << 10, QueueDepth: 64, SlotsPerWorker: 160,
			Logf: func(string, ...any) {}})
		if stateFuzz.err != nil {
			return
		}
		var l *Loader
		if l, stateFuzz.err = Open(context.Background(), stateFuzzConfig(0)); stateFuzz.err == nil {
			stateFuzz.dataset = l.State().Dataset
			l.Close()
		}
	})
	if stateFuzz.err != nil {
		t.Fatal(stateFuzz.err)
	}
}

func stateFuzzConfig(mode uint8) Config {
	cfg := baseConfig(stateFuzz.ds, "id")
	cfg.SharedIndex, cfg.SharedEngine = stateFuzz.ix, stateFuzz.eng
	stateFuzzModes[int(mode)%len(stateFuzzModes)](&cfg)
	if cfg.Columns[0] != "id" {
		cfg.SharedIndex = nil // the tokens mode loads another column
	}
	return cfg
}

// FuzzState feeds checkpoint bytes to UnmarshalState and, when they
// decode, resumes a loader from them: Open must accept the State or refuse
// it with ErrState, and an accepted State must run its epoch to the end
// in time, without a panic, an error or a row delivered twice. The
// dataset fingerprint is the loader's own unless keep is set, so that
// mutations reach the fields behind it.
func FuzzState(f *testing.F) {
	f.Add([]byte(`{"version":1,"shuffle":"page","seed":42,"world":1}`), uint8(0), false)
	f.Fuzz(func(t *testing.T, b []byte, mode uint8, keep bool) {
		st, err := UnmarshalState(b)
		if err != nil {
			if !errors.Is(err, ErrState) {
				t.Fatalf("UnmarshalState: %v is not ErrState", err)
			}
			return
		}
		stateFuzzSetup(t)
		cfg := stateFuzzConfig(mode)
		if !keep && cfg.SharedIndex != nil {
			st.Dataset = stateFuzz.dataset
		}
		cfg.Resume = st
		rows, err := runEpochWithin(t, cfg, true)
		if err != nil && !errors.Is(err, ErrState) {
			t.Fatalf("resume (mode %d) after %d rows: %v; want success or ErrState", mode, rows, err)
		}
	})
}

// runEpochWithin opens a loader on cfg and reads every batch; it fails the
// test when that takes longer than fuzzDeadline, when an error is neither
// Open's nor named after a file, or, with distinct, when an id arrives
// twice. It returns the rows delivered and the first error.
func runEpochWithin(t *testing.T, cfg Config, distinct bool) (int, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fuzzDeadline)
	defer cancel()
	type result struct {
		rows int
		err  error
		bad  string
	}
	ch := make(chan result, 1)
	go func() {
		var r result
		defer func() { ch <- r }()
		l, err := Open(ctx, cfg)
		if err != nil {
			r.err = err
			return
		}
		defer l.Close()
		seen := map[int64]bool{}
		for {
			b, err := l.Next(ctx)
			if err == io.EOF {
				return
			}
			if err != nil {
				r.err = err
				return
			}
			r.rows += b.Rows
			for _, a := range b.Arrays {
				ids, ok := a.(*array.Int64)
				if !distinct || !ok {
					continue
				}
				for _, id := range ids.Int64Values() {
					if seen[id] {
						r.bad = fmt.Sprintf("id %d delivered twice", id)
					}
					seen[id] = true
				}
			}
			b.Release()
			if r.bad != "" {
				return
			}
		}
	}()
	select {
	case r := <-ch:
		if r.bad != "" {
			t.Fatal(r.bad)
		}
		if errors.Is(r.err, context.DeadlineExceeded) {
			t.Fatalf("Open and one epoch took over %v", fuzzDeadline)
		}
		return r.rows, r.err
	case <-time.After(fuzzDeadline + 5*time.Second):
		t.Fatalf("Open and one epoch still running %v after the deadline", 5*time.Second)
		return 0, nil
	}
}

// fileFuzzMemoryLimit is FuzzParquetFile's Config.MemoryLimit. Go heap
// allocation over Open and the epoch must stay within it plus 64 MiB.
const fileFuzzMemoryLimit = 32 << 20

// FuzzParquetFile runs a whole small Parquet file (footer, offset index,
// pages) through Open and one epoch, in the mode the mode byte picks: no
// panic, no hang (fuzzDeadline), no Go heap allocation beyond MemoryLimit
// + 64 MiB, and an error from Next names the file.
func FuzzParquetFile(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte, mode uint8) {
		dir := t.TempDir()
		path := filepath.Join(dir, "f.parquet")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		col := "id"
		if mode&1 != 0 {
			col = "input_ids"
		}
		cfg := baseConfig(dataset{paths: []string{path}}, col)
		cfg.MemoryLimit = fileFuzzMemoryLimit
		cfg.Engine = engine.Options{Workers: 1}
		switch mode >> 1 % 4 {
		case 1:
			cfg.BatchRows, cfg.BufferRows = 16, 32
		case 2:
			cfg.Shuffle, cfg.BatchRows = ShuffleRow, 16
		case 3:
			cfg.Fetch, cfg.BatchRows = Ordered, 8
		}
		cfg.SkipBadPages = mode&16 != 0
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := runEpochWithin(t, cfg, false)
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > fileFuzzMemoryLimit+64<<20 {
			t.Fatalf("%d MiB allocated over Open and one epoch, limit %d MiB + 64 MiB (error: %v)", got>>20, fileFuzzMemoryLimit>>20, err)
		}
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), path) && !errors.Is(err, ErrConfig) && !errors.Is(err, ErrMemory) {
			t.Fatalf("error %q does not name the file", err)
		}
	})
}

// TestWriteFuzzSeeds writes the fuzz targets' seed corpora under
// testdata/fuzz when PAGEFEED_WRITE_FUZZ_SEEDS is set: small files from
// the generator in several layouts, and the States of loaders in each
// FuzzState mode.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("PAGEFEED_WRITE_FUZZ_SEEDS") == "" {
		t.Skip("set PAGEFEED_WRITE_FUZZ_SEEDS=1 to rewrite testdata/fuzz")
	}
	seed := func(target, name string, args ...any) {
		d := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		s := "go test fuzz v1\n"
		for _, a := range args {
			switch v := a.(type) {
			case []byte:
				s += fmt.Sprintf("[]byte(%q)\n", v)
			case uint8:
				s += fmt.Sprintf("byte(%q)\n", rune(v))
			case bool:
				s += fmt.Sprintf("bool(%v)\n", v)
			}
		}
		if err := os.WriteFile(filepath.Join(d, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	for i, c := range []gen.Config{
		{PageVersion: 2, PageIndex: true, Codec: "snappy", Dictionary: true},
		{PageVersion: 1, Codec: "none"},
		{PageVersion: 1, PageIndex: true, Codec: "zstd"},
		{PageVersion: 2, Codec: "none", Dictionary: true},
	} {
		c.Dir = filepath.Join(dir, fmt.Sprint(i))
		c.RowsPerFile, c.PageSize, c.RowGroupRows, c.Seed, c.MeanTokens, c.MaxTokens = 40, 256, 20, uint64(i), 4, 12
		res, err := gen.Run(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(res.Files[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []uint8{uint8(2 * i), uint8(2*i + 1 + 16)} {
			seed("FuzzParquetFile", fmt.Sprintf("gen-%d-mode%d", i, mode), b, mode)
		}
	}
	stateFuzzSetup(t)
	for m := range stateFuzzModes {
		cfg := stateFuzzConfig(uint8(m))
		l := openT(t, cfg)
		for n := 0; n < 3+2*m; n++ {
			bt, err := l.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			bt.Release()
		}
		b, err := MarshalState(l.State())
		if err != nil {
			t.Fatal(err)
		}
		seed("FuzzState", fmt.Sprintf("mode%d", m), b, uint8(m), false)
	}
}
