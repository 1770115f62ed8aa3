//go:build linux

package rinas

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/childtest"
	"github.com/pagefeed/pagefeed/internal/gen"
)

// Hostile environments are set up in a child process (the test binary run
// again for one test, with childEnv naming the test and its variant):
// resource limits and seccomp filters cannot be undone, so the parent
// stays clean.
const childEnv = "PAGEFEED_RINAS_RELIABILITY_CHILD"

// inChild runs the calling test again in a child process for each variant
// and reports ("", false) in the parent, which then has nothing left to
// do; in the child it returns the variant and true.
func inChild(t *testing.T, variants ...string) (string, bool) {
	t.Helper()
	if v, ok := strings.CutPrefix(os.Getenv(childEnv), t.Name()+":"); ok {
		return v, true
	}
	for _, v := range variants {
		t.Run(v, func(t *testing.T) {
			childtest.Run(t, t.Name()[:strings.IndexByte(t.Name(), '/')], childEnv, strings.Replace(t.Name(), "/", ":", 1))
		})
	}
	return "", false
}

// smallDataset generates a dataset in a fresh folder of its own.
func smallDataset(t *testing.T, files int) dataset {
	t.Helper()
	res, err := gen.Run(context.Background(), gen.Config{Dir: t.TempDir(), Files: files, RowsPerFile: 1200, PageSize: 1024,
		RowGroupRows: 400, PageVersion: 2, PageIndex: true, Codec: "snappy", Seed: 11, MeanTokens: 4})
	if err != nil {
		t.Fatal(err)
	}
	return dataset{paths: res.Files, rows: res.Rows}
}

// loadAll opens a loader on cfg, checks every row arrives exactly once
// and returns the engine's Info.
func loadAll(t *testing.T, cfg Config, rows int64) engine.Info {
	t.Helper()
	l := openT(t, cfg)
	ids, _, _ := drain(t, l, -1)
	checkExactlyOnce(t, ids, rows)
	info := l.Engine().Info()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return info
}

// Classic BPF and seccomp constants (linux/filter.h, linux/seccomp.h).
const (
	bpfLdWAbs     = 0x20 // BPF_LD|BPF_W|BPF_ABS
	bpfJeqK       = 0x15 // BPF_JMP|BPF_JEQ|BPF_K
	bpfJsetK      = 0x45 // BPF_JMP|BPF_JSET|BPF_K
	bpfRetK       = 0x06 // BPF_RET|BPF_K
	seccompAllow  = 0x7fff0000
	seccompErrno  = 0x00050000
	seccompFilter = 1 // SECCOMP_SET_MODE_FILTER
	seccompTsync  = 1 // SECCOMP_FILTER_FLAG_TSYNC: every thread of the process
)

// auditArch is this architecture's AUDIT_ARCH_* value, 0 when unknown.
func auditArch() uint32 {
	switch runtime.GOARCH {
	case "amd64":
		return 0xc000003e
	case "arm64":
		return 0xc00000b7
	}
	return 0
}

// seccompRefuse installs a filter on every thread of this process that
// fails syscall nr with errno; with flagMask != 0 only when the third
// argument (openat's flags) has one of those bits.
func seccompRefuse(t *testing.T, nr uint32, flagMask uint32, errno unix.Errno) {
	t.Helper()
	arch := auditArch()
	if arch == 0 {
		t.Skipf("no seccomp filter for %s", runtime.GOARCH)
	}
	allow := func(pc int, total int) uint8 { return uint8(total - 1 - pc - 1) } // jump to the last (allow)
	var prog []unix.SockFilter
	if flagMask == 0 {
		prog = []unix.SockFilter{
			{Code: bpfLdWAbs, K: 4}, // arch
			{Code: bpfJeqK, K: arch, Jf: allow(1, 6)},
			{Code: bpfLdWAbs, K: 0}, // nr
			{Code: bpfJeqK, K: nr, Jf: allow(3, 6)},
			{Code: bpfRetK, K: seccompErrno | uint32(errno)},
			{Code: bpfRetK, K: seccompAllow},
		}
	} else {
		prog = []unix.SockFilter{
			{Code: bpfLdWAbs, K: 4},
			{Code: bpfJeqK, K: arch, Jf: allow(1, 8)},
			{Code: bpfLdWAbs, K: 0},
			{Code: bpfJeqK, K: nr, Jf: allow(3, 8)},
			{Code: bpfLdWAbs, K: 16 + 2*8}, // args[2], low half (little endian)
			{Code: bpfJsetK, K: flagMask, Jf: allow(5, 8)},
			{Code: bpfRetK, K: seccompErrno | uint32(errno)},
			{Code: bpfRetK, K: seccompAllow},
		}
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		t.Skipf("PR_SET_NO_NEW_PRIVS: %v", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, seccompFilter, seccompTsync, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		t.Skipf("seccomp: %v", e)
	}
	runtime.KeepAlive(prog)
}

// TestReliabilityNoIOUring: where io_uring_setup is refused (seccomp in a
// container, kernel.io_uring_disabled), the loader runs on the pread pool,
// says so, and delivers every row once.
func TestReliabilityNoIOUring(t *testing.T) {
	v, child := inChild(t, "ENOSYS", "EPERM")
	if !child {
		return
	}
	errno := map[string]unix.Errno{"ENOSYS": unix.ENOSYS, "EPERM": unix.EPERM}[v]
	seccompRefuse(t, unix.SYS_IO_URING_SETUP, 0, errno)
	ds := smallDataset(t, 2)
	cfg := baseConfig(ds, "id")
	info := loadAll(t, cfg, ds.rows)
	if info.Kind != engine.Pread || !strings.Contains(strings.Join(info.Notices, "\n"), "io_uring unavailable") {
		t.Fatalf("engine %v, notices %q: want the pread pool and a notice", info.Kind, info.Notices)
	}
	t.Logf("io_uring_setup → %v: %v engine, notices %q", errno, info.Kind, info.Notices)
}

// TestReliabilityODirectRefused: a file system that refuses O_DIRECT at
// open (EINVAL, as tmpfs did and some FUSE do) gets buffered reads, said
// once, and every row once: O_DIRECT asked for (IODirect), or chosen by
// auto (no memory to spare).
func TestReliabilityODirectRefused(t *testing.T) {
	v, child := inChild(t, "openat-EINVAL-direct", "openat-EINVAL-auto")
	if !child {
		return
	}
	ds := smallDataset(t, 2) // written before the filter
	if v == "openat-EINVAL-auto" {
		// Uncompressed: Open samples no page headers, which would leave
		// these small files' pages cached, and cached files read
		// buffered whatever the memory.
		res, err := gen.Run(context.Background(), gen.Config{Dir: t.TempDir(), Files: 2, RowsPerFile: 1200, PageSize: 1024,
			RowGroupRows: 400, PageVersion: 2, PageIndex: true, Codec: "none", Seed: 11, MeanTokens: 4})
		if err != nil {
			t.Fatal(err)
		}
		ds = dataset{paths: res.Files, rows: res.Rows}
	}
	seccompRefuse(t, unix.SYS_OPENAT, unix.O_DIRECT, unix.EINVAL)
	if _, err := unix.Open(ds.paths[0], unix.O_RDONLY|unix.O_DIRECT, 0); err != unix.EINVAL {
		t.Fatalf("the filter does not refuse O_DIRECT: %v", err)
	}
	cfg := baseConfig(ds, "id")
	if v == "openat-EINVAL-direct" {
		cfg.IOMode = IODirect
	} else {
		// The index built first: its footer reads cache whole small
		// files.
		cfg.SharedIndex = buildIndex(t, ds)
		setMemory(t, none)
		for _, p := range ds.paths {
			dropCache(t, p)
		}
	}
	info := loadAll(t, cfg, ds.rows)
	if !strings.Contains(strings.Join(info.Notices, "\n"), "O_DIRECT refused") {
		t.Fatalf("notices %q: want the buffered fallback said", info.Notices)
	}
	t.Logf("O_DIRECT → EINVAL (%s): %v engine, notices %q", v, info.Kind, info.Notices)
}

// capIPCLock reports whether this process may lock memory beyond
// RLIMIT_MEMLOCK (CAP_IPC_LOCK in its effective set).
func capIPCLock() bool {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<unix.CAP_IPC_LOCK) != 0
		}
	}
	return false
}

// TestReliabilityMemlock64K: with RLIMIT_MEMLOCK at 64 KiB (soft and
// hard) the engine cannot pin its slots as fixed buffers; the loader
// still works, on plain READs. (With CAP_IPC_LOCK, as root has, the
// kernel does not count pinned pages, so fixed buffers may still work.)
func TestReliabilityMemlock64K(t *testing.T) {
	_, child := inChild(t, "64KiB")
	if !child {
		return
	}
	rl := unix.Rlimit{Cur: 64 << 10, Max: 64 << 10}
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		t.Skipf("setrlimit MEMLOCK: %v", err)
	}
	ds := smallDataset(t, 2)
	cfg := baseConfig(ds, "id")
	cfg.Output = OutputArrow
	info := loadAll(t, cfg, ds.rows)
	if !capIPCLock() && info.Kind == engine.IOUring && info.FixedBuffers {
		t.Fatalf("fixed buffers registered under a 64 KiB RLIMIT_MEMLOCK without CAP_IPC_LOCK")
	}
	t.Logf("RLIMIT_MEMLOCK 64 KiB (CAP_IPC_LOCK %v): %v engine, fixed buffers %v, notices %q", capIPCLock(), info.Kind, info.FixedBuffers, info.Notices)
}

// TestReliabilityManyFiles: 10,000 files under RLIMIT_NOFILE 1024 (soft
// and hard): the loader opens files lazily and keeps at most half the
// limit open (the fetch window's units, or 256 if more), closing only
// files with no read scheduled; every page arrives once.
func TestReliabilityManyFiles(t *testing.T) {
	_, child := inChild(t, "10000files-nofile1024")
	if !child {
		return
	}
	const nfiles = 10_000
	rl := unix.Rlimit{Cur: 1024, Max: 1024}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		t.Skipf("setrlimit NOFILE: %v", err)
	}
	dir := t.TempDir()
	res, err := gen.Run(context.Background(), gen.Config{Dir: filepath.Join(dir, "src"), Files: 1, RowsPerFile: 20, PageVersion: 2, PageIndex: true, Codec: "none", Seed: 1, MeanTokens: 2})
	if err != nil {
		t.Fatal(err)
	}
	paths := make([]string, nfiles)
	for i := range paths {
		// Hard links: 10,000 names, each opened on its own descriptor.
		paths[i] = filepath.Join(dir, fmt.Sprintf("f%05d.parquet", i))
		if err := os.Link(res.Files[0], paths[i]); err != nil {
			t.Fatal(err)
		}
	}
	// index.Build bounds its own open files (a quarter of the limit).
	ix, err := index.Build(context.Background(), paths, index.Options{Columns: []string{"id"}, NoSidecar: true, Logf: t.Logf})
	if err != nil {
		t.Fatalf("index.Build: %v", err)
	}
	pages := ix.NumPages(0)
	cfg := baseConfig(dataset{paths: paths}, "id")
	cfg.SharedIndex = ix
	cfg.BatchPages = 128
	l := openT(t, cfg)
	budget := l.fc.max
	if budget > 511 || budget < cfg.BatchPages*(l.Prefetch()+1) {
		t.Fatalf("file budget %d, want the fetch window's %d units or more, within 511 (half of RLIMIT_NOFILE 1024, less one for synchronous reads)", budget, cfg.BatchPages*(l.Prefetch()+1))
	}
	seen := make([]bool, pages)
	peak := 0
	for {
		b, err := l.Next(context.Background())
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("Next: %v", err)
		}
		for _, p := range b.Pages {
			if seen[p] {
				t.Fatalf("page %d delivered twice", p)
			}
			seen[p] = true
		}
		b.Release()
		peak = max(peak, l.fc.openNow())
	}
	for p, ok := range seen {
		if !ok {
			t.Fatalf("page %d of %d never delivered", p, pages)
		}
	}
	// The fetch window (BatchPages × (Prefetch+1) units) may hold files
	// open beyond the budget, never more.
	if limit := budget + cfg.BatchPages*3; peak > limit {
		t.Fatalf("%d files open at the peak, budget %d + window", peak, budget)
	}
	t.Logf("%d files, %d pages, each once; at most %d files open (budget %d, RLIMIT_NOFILE 1024)", nfiles, pages, peak, budget)
}
