package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/pagefeed/pagefeed/bench"
	"github.com/pagefeed/pagefeed/internal/cgroup"
)

const inCgroupUsage = `usage: pagebench --in-cgroup=SIZE [--drop-caches] -- COMMAND [ARG...]
  runs COMMAND inside a memory cgroup of SIZE bytes (made here, removed after),
  with the node's page cache dropped first where --drop-caches says so: any
  contender (a Python loader, fio) under the memory limit --regimes uses.
`

// isInCgroup reports whether args ask for --in-cgroup mode.
func isInCgroup(args []string) bool {
	return len(args) > 0 && (strings.HasPrefix(args[0], "--in-cgroup=") || strings.HasPrefix(args[0], "-in-cgroup="))
}

// runInCgroup runs --in-cgroup: the command's output passes through, and
// its exit status is pagebench's (an error names a command that could not
// start or was killed).
func runInCgroup(args []string, stdout, stderr io.Writer) error {
	size, _ := strings.CutPrefix(strings.TrimPrefix(args[0], "-"), "-in-cgroup=")
	args = args[1:]
	drop := false
	if len(args) > 0 && strings.TrimLeft(args[0], "-") == "drop-caches" {
		drop, args = true, args[1:]
	}
	if len(args) == 0 || args[0] != "--" || len(args) == 1 {
		return errors.New(strings.TrimSpace(inCgroupUsage))
	}
	args = args[1:]
	limit, err := bench.ParseSize(size)
	if err != nil || limit < 1 {
		return fmt.Errorf("--in-cgroup=%s: want a size such as 256m", size)
	}
	create, dropCaches := cgroup.Create, cgroup.DropCaches
	if hooks.createGroup != nil {
		create, dropCaches = hooks.createGroup, hooks.dropCaches
	}
	g, err := create(fmt.Sprintf("pagefeed-run-%d", os.Getpid()), limit)
	if err != nil {
		return fmt.Errorf("--in-cgroup: no memory cgroup could be made here: %w", err)
	}
	defer g.Remove()
	if drop {
		if err := dropCaches(); err != nil {
			fmt.Fprintf(stderr, "pagebench: --drop-caches: %v: the page cache stays\n", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := g.Command(ctx, args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Errorf("%s was killed by %v (in a %s memory cgroup: the OOM killer?)", args[0], ws.Signal(), size)
		}
		return exitCode(ee.ExitCode())
	}
	return err
}

// exitCode is a command's exit status passed through runMain.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
