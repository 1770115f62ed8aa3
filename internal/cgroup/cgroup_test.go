package cgroup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// tree writes files (path → content) under a fresh root and returns it.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, s := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const (
	mountsV1 = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	mountsV2 = `22 1 0:21 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate
`
)

func TestSelf(t *testing.T) {
	v1 := "/sys/fs/cgroup/memory/jobs/a"
	v2 := "/sys/fs/cgroup/jobs/a"
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  Memory
		err   error
	}{
		{
			name: "v1 with a limit from an ancestor",
			files: map[string]string{
				"proc/self/cgroup":                 "4:memory:/jobs/a\n3:cpu:/\n0::/\n",
				"proc/self/mountinfo":              mountsV1,
				v1 + "/memory.usage_in_bytes":      "200000000\n",
				v1 + "/memory.max_usage_in_bytes":  "250000000\n",
				v1 + "/memory.limit_in_bytes":      "9223372036854771712\n",
				v1 + "/memory.stat":                "cache 5\nactive_file 1\ntotal_active_file 100000000\ntotal_inactive_file 20000000\nhierarchical_memory_limit 268435456\n",
				"sys/fs/cgroup/memory/memory.stat": "x 1\n",
			},
			want: Memory{Version: 1, Dir: v1, Limit: 268435456, Usage: 200000000, File: 120000000, Peak: 250000000},
		},
		{
			name: "v1 without a limit",
			files: map[string]string{
				"proc/self/cgroup":            "4:memory:/jobs/a\n",
				"proc/self/mountinfo":         mountsV1,
				v1 + "/memory.usage_in_bytes": "1000\n",
				v1 + "/memory.limit_in_bytes": "9223372036854771712\n",
				v1 + "/memory.stat":           "active_file 300\ninactive_file 200\n",
			},
			want: Memory{Version: 1, Dir: v1, Limit: Unlimited, Usage: 1000, File: 500},
		},
		{
			name: "v2, the smallest of memory.max and memory.high up the tree",
			files: map[string]string{
				"proc/self/cgroup":                 "0::/jobs/a\n",
				"proc/self/mountinfo":              mountsV2,
				v2 + "/memory.current":             "5000\n",
				v2 + "/memory.max":                 "max\n",
				v2 + "/memory.high":                "max\n",
				v2 + "/memory.stat":                "anon 1000\nfile 4000\nactive_file 2500\ninactive_file 1500\n",
				"sys/fs/cgroup/jobs/memory.max":    "1073741824\n",
				"sys/fs/cgroup/jobs/memory.high":   "805306368\n",
				"sys/fs/cgroup/jobs/memory.stat":   "file 1\n",
				"sys/fs/cgroup/memory.max":         "max\n", // the top counts too (a container's own group)
				"sys/fs/cgroup/jobs/memory.peak":   "1\n",
				"sys/fs/cgroup/jobs/a/memory.peak": "7000\n",
			},
			want: Memory{Version: 2, Dir: v2, Limit: 805306368, Usage: 5000, File: 4000, Peak: 7000},
		},
		{
			name: "v2 mounted from a sub-hierarchy (container)",
			files: map[string]string{
				"proc/self/cgroup":                   "0::/pod/rank0\n",
				"proc/self/mountinfo":                "22 1 0:21 /pod /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
				"sys/fs/cgroup/rank0/memory.current": "10\n",
				"sys/fs/cgroup/rank0/memory.max":     "4096\n",
				"sys/fs/cgroup/rank0/memory.stat":    "active_file 1\n",
			},
			want: Memory{Version: 2, Dir: "/sys/fs/cgroup/rank0", Limit: 4096, Usage: 10, File: 1},
		},
		{
			name: "hybrid: v2 without memory, no v1 memory hierarchy",
			files: map[string]string{
				"proc/self/cgroup":    "3:cpu:/\n0::/\n",
				"proc/self/mountinfo": strings.ReplaceAll(mountsV1, "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n", ""),
			},
			err: ErrNoController,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := tree(t, tc.files)
			got, err := FS{Root: root}.Self()
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.want.Dir = filepath.Join(root, tc.want.Dir)
			if got != tc.want {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestRoom(t *testing.T) {
	for _, tc := range []struct {
		m    Memory
		want int64
	}{
		{Memory{Limit: Unlimited, Usage: 10}, Unlimited},
		{Memory{Limit: 1000, Usage: 600, File: 200}, 600}, // 400 not cache
		{Memory{Limit: 1000, Usage: 1200, File: 0}, 0},
	} {
		if got := tc.m.Room(); got != tc.want {
			t.Errorf("%+v: Room %d, want %d", tc.m, got, tc.want)
		}
	}
}

func TestMemAvailable(t *testing.T) {
	root := tree(t, map[string]string{"proc/meminfo": "MemTotal:       24684152 kB\nMemFree:        18000000 kB\nMemAvailable:   22670916 kB\n"})
	got, err := FS{Root: root}.MemAvailable()
	if err != nil || got != 22670916<<10 {
		t.Fatalf("MemAvailable %d, %v", got, err)
	}
	root = tree(t, map[string]string{"proc/meminfo": "MemTotal: 1 kB\n"})
	if _, err := (FS{Root: root}).MemAvailable(); err == nil {
		t.Fatal("no MemAvailable line: no error")
	}
}

func TestUnescape(t *testing.T) {
	if got := unescape(`/a\040b\\x`); got != `/a b\\x` {
		t.Fatalf("unescape: %q", got)
	}
}

// TestCreateOnFixture makes a v1 group in a fixture tree: the limit is
// written, and a command started in it writes its own pid into the
// group's cgroup.procs before it runs.
func TestCreateOnFixture(t *testing.T) {
	root := tree(t, map[string]string{
		"proc/self/cgroup":                      "4:memory:/jobs\n",
		"proc/self/mountinfo":                   mountsV1,
		"sys/fs/cgroup/memory/jobs/memory.stat": "x 1\n",
	})
	fs := FS{Root: root}
	g, err := fs.Create("bench", 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "sys/fs/cgroup/memory/jobs/bench"); g.Dir != want || g.Version != 1 {
		t.Fatalf("group %+v, want dir %s", g, want)
	}
	b, err := os.ReadFile(filepath.Join(g.Dir, "memory.limit_in_bytes"))
	if err != nil || string(b) != strconv.Itoa(64<<20) {
		t.Fatalf("limit file %q, %v", b, err)
	}
	cmd := g.Command(context.Background(), "sh", "-c", `cat "$0"`, filepath.Join(g.Dir, "cgroup.procs"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(string(out))
	if n, err := strconv.Atoi(pid); err != nil || n != cmd.Process.Pid {
		t.Fatalf("cgroup.procs holds %q, the command ran as %d", pid, cmd.Process.Pid)
	}
	for _, bad := range []string{"", "a/b", ".."} {
		if _, err := fs.Create(bad, 1); err == nil {
			t.Errorf("Create(%q): no error", bad)
		}
	}
	if _, err := fs.Create("zero", 0); err == nil {
		t.Error("Create with limit 0: no error")
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(g.Dir); !os.IsNotExist(err) {
		t.Fatalf("group folder still there: %v", err)
	}
}

// TestCreateReal makes a real group where this process may (root with a
// memory controller): a command inside sees itself in it, the group
// reports the limit, and Remove takes it away.
func TestCreateReal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a control group")
	}
	if _, err := Self(); err != nil {
		t.Skipf("no memory controller: %v", err)
	}
	g, err := Create("pagefeed-test-"+strconv.Itoa(os.Getpid()), 64<<20)
	if err != nil {
		t.Skipf("cannot make a group here: %v", err)
	}
	defer g.Remove()
	out, err := g.Command(context.Background(), "cat", "/proc/self/cgroup").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "/"+filepath.Base(g.Dir)+"\n") {
		t.Fatalf("the command's groups:\n%s\nwant %s among them", out, g.Dir)
	}
	m, err := g.Read()
	if err != nil {
		t.Fatal(err)
	}
	if m.Limit != 64<<20 {
		t.Fatalf("limit %d, want %d", m.Limit, 64<<20)
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(g.Dir); !os.IsNotExist(err) {
		t.Fatalf("group folder still there: %v", err)
	}
}
