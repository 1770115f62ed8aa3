//go:build linux

package rinas

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/childtest"
	"github.com/pagefeed/pagefeed/internal/gen"
)

// memcgEnv carries a held-batches child's mode, cgroup and dataset.
const memcgEnv = "PAGEFEED_RINAS_MEMCG_CHILD"

// memcgRoot is where the cgroup v1 memory controller is mounted.
const memcgRoot = "/sys/fs/cgroup/memory"

// heldModes are the outputs whose held batches must count against
// MemoryLimit, by name: page batches, row batches of Arrow arrays, the
// token matrix, and row batches through a large shuffle buffer; heldRuns
// the batches each child takes (fewer where Next waits every few).
var heldRuns = map[string]int{"pages": 600, "rows32": 20000, "tokens": 600, "buffer100k": 20000}

var heldModes = map[string]func(*Config){
	"pages":      func(c *Config) {},
	"rows32":     func(c *Config) { c.BatchRows = 32 },
	"tokens":     func(c *Config) { c.Output, c.BatchRows, c.SeqLen = OutputTokens, 32, 512 },
	"buffer100k": func(c *Config) { c.BatchRows, c.BufferRows = 32, 100000 },
}

const heldLimit = 256 << 20

// TestHeldBatchesMemoryCgroup: for each output mode, a consumer that holds
// every batch it gets, releasing them only when Next has waited 50 ms for
// more, runs for up to 20,000 batches in a memory cgroup (v1) of
// MemoryLimit + 64 MiB: it is never OOM-killed, and the group's peak
// usage stays within it. A configuration that cannot fit (a shuffle
// buffer of 10^7 rows) is refused at Open with ErrMemory.
func TestHeldBatchesMemoryCgroup(t *testing.T) {
	if v := os.Getenv(memcgEnv); v != "" {
		heldChild(t, v)
		return
	}
	if testing.Short() {
		t.Skip("-short: generates a dataset and runs four children")
	}
	probe := filepath.Join(memcgRoot, fmt.Sprintf("pagefeed-rinas-%d-probe", os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		t.Skipf("cannot create a memory cgroup under %s (cgroup v1 and root needed): %v", memcgRoot, err)
	}
	os.Remove(probe)
	res, err := gen.Run(context.Background(), gen.Config{Dir: t.TempDir(), Files: 4, RowsPerFile: 20000, PageSize: 16 << 10,
		RowGroupRows: 5000, PageVersion: 2, PageIndex: true, Codec: "zstd", Seed: 9, MeanTokens: 128})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(res.Files[0])
	cfg := heldConfig(dir)
	cfg.BatchRows, cfg.BufferRows = 32, 1e7
	if l, err := Open(context.Background(), cfg); !errors.Is(err, ErrMemory) || !strings.Contains(err.Error(), "lower BufferRows to") {
		if err == nil {
			l.Close()
		}
		t.Errorf("a shuffle buffer of 10^7 rows under %d MiB: %v, want ErrMemory", heldLimit>>20, err)
	}
	for _, mode := range []string{"pages", "rows32", "tokens", "buffer100k"} {
		t.Run(mode, func(t *testing.T) {
			cg := filepath.Join(memcgRoot, fmt.Sprintf("pagefeed-rinas-%d-%s", os.Getpid(), mode))
			if err := os.Mkdir(cg, 0o755); err != nil {
				t.Skipf("memory cgroup: %v", err)
			}
			defer os.Remove(cg) // the child has exited: the group is empty
			limit := int64(heldLimit + 64<<20)
			for _, f := range []string{"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"} {
				if err := os.WriteFile(filepath.Join(cg, f), []byte(strconv.FormatInt(limit, 10)), 0); err != nil && f == "memory.limit_in_bytes" {
					t.Fatalf("%s: %v", f, err)
				}
			}
			childtest.Run(t, "TestHeldBatchesMemoryCgroup", memcgEnv, mode+"|"+cg+"|"+dir)
			peak := readInt(t, filepath.Join(cg, "memory.max_usage_in_bytes"))
			fails := readInt(t, filepath.Join(cg, "memory.failcnt"))
			t.Logf("%s: cgroup peak %d MiB of %d MiB, %d failed charges", mode, peak>>20, limit>>20, fails)
			if peak > limit {
				t.Errorf("peak %d bytes over the group's %d", peak, limit)
			}
		})
	}
}

func heldConfig(dir string) Config {
	return Config{Paths: []string{dir}, Columns: []string{"input_ids"}, World: 1, MemoryLimit: heldLimit, Epochs: 50,
		Index: index.Options{NoSidecar: true, Logf: func(string, ...any) {}}, Logf: func(string, ...any) {}}
}

func readInt(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// heldChild joins the cgroup and holds batches (see
// TestHeldBatchesMemoryCgroup).
func heldChild(t *testing.T, v string) {
	parts := strings.SplitN(v, "|", 3)
	mode, cg, dir := parts[0], parts[1], parts[2]
	if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
		t.Fatalf("joining %s: %v", cg, err)
	}
	cfg := heldConfig(dir)
	heldModes[mode](&cfg)
	l := openT(t, cfg)
	var held []*Batch
	blocked, total, most, slow := 0, 0, 0, 0
	for total < heldRuns[mode] {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		b, err := l.Next(ctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			if len(held) == 0 {
				// Nothing held: a slow read on a busy machine, not a wait.
				if slow++; slow > 400 {
					t.Fatalf("Next waited 20 s with no batch held")
				}
				continue
			}
			slow = 0
			blocked++
			for _, h := range held {
				h.Release()
			}
			held = held[:0]
			continue
		}
		if err != nil {
			t.Fatalf("Next after %d batches: %v", total, err)
		}
		held = append(held, b)
		total++
		most = max(most, len(held))
	}
	for _, h := range held {
		h.Release()
	}
	hwm := ""
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "VmHWM") {
				hwm = strings.Join(strings.Fields(line), " ")
			}
		}
	}
	t.Logf("%s: %d batches, at most %d held, Next waited %d times; planned %d MiB; %s", mode, total, most, blocked, l.PlannedBytes()>>20, hwm)
}
