//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/pagefeed/pagefeed/internal/gen"
)

// noUringEnv, set in a child test process, makes it refuse io_uring_setup
// with EPERM before the test runs: what kernel.io_uring_disabled=2 or a
// container's seccomp profile does, without touching the machine.
const noUringEnv = "PAGEBENCH_TEST_NO_IO_URING"

// refuseIOUring installs a seccomp filter on every thread of the process
// that fails io_uring_setup with EPERM.
func refuseIOUring() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	f := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: unix.SYS_IO_URING_SETUP},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog))); e != 0 {
		return e
	}
	return nil
}

// TestParquetWithoutIOUring: where the kernel refuses io_uring, --parquet
// with no --ioengine falls back to the pread pool as the library does and
// reports psync; an explicit --ioengine=io_uring fails, as fio does, with
// fio's words for it (func=io_queue_init, error=Operation not permitted).
// The test runs itself again in a child process that refuses io_uring.
func TestParquetWithoutIOUring(t *testing.T) {
	if os.Getenv(noUringEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestParquetWithoutIOUring$", "-test.v")
		cmd.Env = append(os.Environ(), noUringEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		if strings.Contains(string(out), "--- SKIP") {
			t.Skipf("child skipped:\n%s", out)
		}
		return
	}
	if err := refuseIOUring(); err != nil {
		t.Skipf("cannot install a seccomp filter here: %v", err)
	}
	dir := t.TempDir()
	if _, err := gen.Run(context.Background(), gen.Config{Dir: dir, Files: 1, RowsPerFile: 300, PageSize: 4096, PageIndex: true, Seed: 1, MeanTokens: 32}); err != nil {
		t.Fatal(err)
	}
	glob := filepath.Join(dir, "*.parquet")
	var out, errb bytes.Buffer
	if rc := runMain([]string{"--parquet=" + glob, "--column=id", "--loops=1", "--output-format=json"}, &out, &errb); rc != 0 {
		t.Fatalf("default ioengine without io_uring: rc %d: %s", rc, errb.String())
	}
	var doc struct {
		Jobs []struct {
			Rows     int64  `json:"rows"`
			IOEngine string `json:"ioengine"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(doc.Jobs) != 1 || doc.Jobs[0].Rows != 300 || doc.Jobs[0].IOEngine != "psync" {
		t.Fatalf("default ioengine without io_uring: %s", out.String())
	}
	out.Reset()
	errb.Reset()
	rc := runMain([]string{"--parquet=" + glob, "--column=id", "--loops=1", "--ioengine=io_uring"}, &out, &errb)
	msg := errb.String()
	if rc != 1 || !strings.Contains(msg, "func=io_queue_init, error=Operation not permitted") || strings.Count(strings.TrimRight(msg, "\n"), "\n") != 0 {
		t.Fatalf("--ioengine=io_uring without io_uring: rc %d, stderr %q; want one line with fio's words", rc, msg)
	}
}
