// Package childtest runs a test again in a child process of the test
// binary, for set-ups the parent must not take on itself: a lowered
// rlimit, a seccomp filter.
package childtest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Timeout bounds a child's run.
const Timeout = 3 * time.Minute

// Run runs the test binary again with -test.run=^run$ and env=value in
// its environment, passes the child's t.Log lines on to t, and fails t
// when the child fails or outlives Timeout, or skips t when it skipped.
// The test named run must see env=value and do the real work.
func Run(t testing.TB, run, env, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+run+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+value)
	out, err := cmd.CombinedOutput()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(line, ".go:") { // the child's t.Log lines
			t.Log(strings.TrimSpace(line))
		}
	}
	switch {
	case ctx.Err() != nil:
		t.Fatalf("child did not finish within %v:\n%s", Timeout, out)
	case strings.Contains(string(out), "--- SKIP"):
		t.Skipf("child skipped:\n%s", out)
	case err != nil || !strings.Contains(string(out), "--- PASS"):
		t.Fatalf("child failed (%v):\n%s", err, out)
	}
}
