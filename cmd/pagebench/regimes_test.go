package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pagefeed/pagefeed/bench"
	"github.com/pagefeed/pagefeed/internal/cgroup"
	"github.com/pagefeed/pagefeed/internal/gen"
	"github.com/pagefeed/pagefeed/rinas"
)

// fixtureGroups makes the regimes' memory cgroups in a fixture tree of a
// cgroup v1 hierarchy (a child then writes its pid to a plain file, and no
// limit applies), stubs the page cache drop (refused: the tests must not
// drop the node's cache) and runs the children as this test binary in
// pagebench's place. fio names the fio binary. It returns the folder the
// groups go in.
func fixtureGroups(t *testing.T, fio string) string {
	t.Helper()
	root := t.TempDir()
	for p, s := range map[string]string{
		"proc/self/cgroup":                      "4:memory:/jobs\n",
		"proc/self/mountinfo":                   "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n",
		"sys/fs/cgroup/memory/jobs/memory.stat": "x 1\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	saved := hooks
	t.Cleanup(func() { hooks = saved })
	hooks.pagebench, hooks.env, hooks.fio = os.Args[0], []string{asMainEnv + "=1"}, fio
	hooks.createGroup = cgroup.FS{Root: root}.Create
	hooks.dropCaches = func() error { return errors.New("refused in tests") }
	return filepath.Join(root, "sys/fs/cgroup/memory/jobs")
}

func regimesDataset(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := gen.Run(context.Background(), gen.Config{Dir: dir, Files: 2, RowsPerFile: 400, PageSize: 4096, PageIndex: true, PageVersion: 2, Codec: "none", Seed: 3, MeanTokens: 16}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRegimesEndToEnd: --regimes alone runs every contender where the
// dataset fits (in this process) and inside the memory cgroup it makes
// (children), says what it could not do (the page cache drop refused,
// fio missing), and leaves no group behind.
func TestRegimesEndToEnd(t *testing.T) {
	groups := fixtureGroups(t, "fio-is-not-installed-here")
	dir := regimesDataset(t)
	var out, errb bytes.Buffer
	if rc := runMain([]string{"--parquet=" + dir, "--column=input_ids", "--regimes=fits,larger,device", "--runtime=300ms", "--memory=1m"}, &out, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	s := out.String()
	for _, want := range []string{
		"fits in memory, page cache warm",
		"larger than memory: every contender in a memory cgroup of 1024KiB",
		"note: page cache not dropped (refused in tests): the dataset's files were evicted with posix_fadvise instead",
		"device limit: skipped: fio is not installed",
		"auto read: ",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	for _, c := range bench.RegimeContenders {
		if n := strings.Count(s, c.Label); n != 2 {
			t.Errorf("%q appears %d times, want once per regime:\n%s", c.Label, n, s)
		}
	}
	if strings.Contains(s, "failed") {
		t.Errorf("a run failed:\n%s\n%s", s, errb.String())
	}
	if ents, _ := os.ReadDir(groups); len(ents) != 1 { // memory.stat
		t.Errorf("groups left behind: %v", ents)
	}
}

// TestRegimesWithoutCgroup: where no memory cgroup can be made, the
// larger-than-memory regime and the device limit say so and why, and the
// fitting regime still runs.
func TestRegimesWithoutCgroup(t *testing.T) {
	fixtureGroups(t, "fio")
	hooks.createGroup = func(string, int64) (*cgroup.Group, error) { return nil, errors.New("permission denied") }
	dir := regimesDataset(t)
	var out, errb bytes.Buffer
	if rc := runMain([]string{"--parquet=" + dir, "--column=input_ids", "--regimes=fits,larger,device", "--runtime=200ms"}, &out, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	s := out.String()
	for _, want := range []string{
		"fits in memory, page cache warm",
		"page cache dropped before each run: skipped: no memory cgroup could be made here (permission denied)",
		"device limit: skipped: no memory cgroup could be made here (permission denied)",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

// TestSweepEndToEnd: --sweep measures every contender at every ratio
// inside its cgroup and draws the chart.
func TestSweepEndToEnd(t *testing.T) {
	fixtureGroups(t, "")
	dir := regimesDataset(t)
	charts := t.TempDir()
	var out, errb bytes.Buffer
	if rc := runMain([]string{"--parquet=" + dir, "--column=input_ids", "--sweep=1/2,2", "--runtime=200ms", "--charts=" + charts}, &out, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	s := out.String()
	if !strings.Contains(s, "1/2 (") || !strings.Contains(s, "2 (") || strings.Contains(s, "failed") {
		t.Fatalf("table:\n%s\n%s", s, errb.String())
	}
	for _, c := range bench.RegimeContenders {
		if !strings.Contains(s, c.Label) {
			t.Errorf("no row for %s:\n%s", c.Label, s)
		}
	}
	for _, ext := range []string{".svg", ".png"} {
		if st, err := os.Stat(filepath.Join(charts, "rows_by_memory"+ext)); err != nil || st.Size() == 0 {
			t.Errorf("chart %s: %v", ext, err)
		}
	}
	var o, e bytes.Buffer
	if rc := runMain([]string{"--parquet=" + dir, "--sweep=0,1", "--runtime=1"}, &o, &e); rc != 1 || !strings.Contains(e.String(), "ratio") {
		t.Errorf("--sweep=0,1: rc %d, %q", rc, e.String())
	}
}

// TestParquetArgsRoundTrip: the flags ParquetConfig.Args writes parse
// back into the same configuration (what a regime's child runs).
func TestParquetArgsRoundTrip(t *testing.T) {
	for _, cfg := range []bench.ParquetConfig{
		{Paths: []string{"/d/a.parquet", "/d/b*.parquet"}, Name: "x", Column: "a,b", LeadColumn: "b", Coalesce: -1, SideCache: 1 << 20,
			Shuffle: rinas.ShuffleRowGroup, Fetch: rinas.Ordered, Batch: 8, Rows: 100, Buffer: 10, IODepth: 32, Prefetch: 3, Workers: 2,
			IOEngine: bench.ParquetPsync, IOMode: rinas.IOBuffered, Runtime: 1500 * time.Millisecond, Seed: 9, Epoch: 2, Rank: 1, World: 3,
			PadLast: true, Deterministic: true, KeepCache: true},
		{Paths: []string{"/d"}, Name: "parquet", Batch: 64, IODepth: 256, Loops: 2, IOEngine: bench.ParquetMmap, World: 1},
		{Paths: []string{"/d"}, Name: "parquet", Batch: 64, IODepth: 256, Engine: bench.ParquetArrowGo, IOMode: rinas.IODirect, World: 1, Runtime: time.Second},
	} {
		fs := flag.NewFlagSet("pagebench", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		p := bindParquetFlags(fs)
		if err := fs.Parse(cfg.Args()); err != nil {
			t.Fatalf("%v: %v", cfg.Args(), err)
		}
		if err := p.resolve(); err != nil {
			t.Fatalf("%v: %v", cfg.Args(), err)
		}
		if !reflect.DeepEqual(p.cfg, cfg) {
			t.Errorf("args %v\nparsed %+v\nwant   %+v", cfg.Args(), p.cfg, cfg)
		}
	}
}

// TestInCgroup: --in-cgroup runs a command inside a memory cgroup it
// makes (its pid written to the group's cgroup.procs before it runs),
// passes its output and exit status through, and removes the group.
func TestInCgroup(t *testing.T) {
	groups := fixtureGroups(t, "")
	var out, errb bytes.Buffer
	rc := runMain([]string{"--in-cgroup=64m", "--drop-caches", "--", "sh", "-c", `echo ran as $$; exit 3`}, &out, &errb)
	if rc != 3 || !strings.HasPrefix(out.String(), "ran as ") {
		t.Fatalf("rc %d, stdout %q, stderr %q", rc, out.String(), errb.String())
	}
	if !strings.Contains(errb.String(), "--drop-caches: refused in tests") {
		t.Errorf("stderr %q: want the refused drop said", errb.String())
	}
	if ents, _ := os.ReadDir(groups); len(ents) != 1 {
		t.Errorf("groups left behind: %v", ents)
	}
	for _, args := range [][]string{{"--in-cgroup=64m"}, {"--in-cgroup=64m", "sh"}, {"--in-cgroup=lots", "--", "true"}} {
		var o, e bytes.Buffer
		if rc := runMain(args, &o, &e); rc != 1 || !strings.HasPrefix(e.String(), "pagebench: ") {
			t.Errorf("%v: rc %d, %q", args, rc, e.String())
		}
	}
}
