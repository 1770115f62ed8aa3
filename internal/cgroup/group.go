package cgroup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Group is a memory-limited control group made by Create, for running
// benchmark contenders inside. Remove it when done.
type Group struct {
	Version int
	Dir     string
	Limit   int64
}

// Create makes a group named name with a memory limit of limit bytes
// (swap included where the kernel counts it), below the process's own
// memory group (v1), or where cgroup v2 lets a child enable the memory
// controller: the process's own group when its subtree has memory on,
// else the hierarchy's top. The error says why a group could not be
// made (no controller, no permission, a read-only mount).
func (fs FS) Create(name string, limit int64) (*Group, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("cgroup: limit %d", limit)
	}
	if strings.ContainsAny(name, "/\x00") || name == "" || name == "." || name == ".." {
		return nil, fmt.Errorf("cgroup: bad group name %q", name)
	}
	l, err := fs.locate()
	if err != nil {
		return nil, err
	}
	parent := l.dir(fs)
	if l.version == 2 {
		if parent, err = fs.v2Parent(l); err != nil {
			return nil, err
		}
	}
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup: make %s: %w", dir, err)
	}
	g := &Group{Version: l.version, Dir: dir, Limit: limit}
	v := strconv.FormatInt(limit, 10)
	var files []string
	if l.version == 1 {
		files = []string{"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"}
	} else {
		files = []string{"memory.max", "memory.swap.max"}
	}
	if err := os.WriteFile(filepath.Join(dir, files[0]), []byte(v), 0); err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("cgroup: set %s: %w", filepath.Join(dir, files[0]), err)
	}
	// Swap: none in the group (v2), or no more than the limit (v1's
	// memsw counts memory and swap together). Absent without swap
	// accounting, which is fine: the point is only that the group
	// cannot swap its way out of the limit.
	sw := v
	if l.version == 2 {
		sw = "0"
	}
	_ = os.WriteFile(filepath.Join(dir, files[1]), []byte(sw), 0)
	return g, nil
}

// Create makes a memory-limited group (see FS.Create).
func Create(name string, limit int64) (*Group, error) { return FS{}.Create(name, limit) }

// v2Parent returns the folder a v2 group with the memory controller can
// be made in: the process's own group when its cgroup.subtree_control has
// memory, else the hierarchy's top once memory is on in its subtree.
// (A group with processes cannot enable controllers for children, so the
// own group serves only where that was done already.)
func (fs FS) v2Parent(l location) (string, error) {
	own := l.dir(fs)
	if hasController(filepath.Join(own, "cgroup.subtree_control"), "memory") {
		return own, nil
	}
	top := fs.path(l.mnt.dir)
	ctl := filepath.Join(top, "cgroup.subtree_control")
	if !hasController(ctl, "memory") {
		if err := os.WriteFile(ctl, []byte("+memory"), 0); err != nil {
			return "", fmt.Errorf("cgroup: enable memory in %s: %w", ctl, err)
		}
	}
	return top, nil
}

func hasController(p, name string) bool {
	b, err := os.ReadFile(p)
	return err == nil && hasOption(strings.ReplaceAll(strings.TrimSpace(string(b)), " ", ","), name)
}

// Command returns a command that runs name with args inside g: a shell
// moves itself into the group, then executes the command, so that
// everything the command allocates (its page cache included) is charged
// to g from its first instruction. The caller starts and waits for it.
func (g *Group) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	sh := append([]string{"-c", `echo $$ > "$0" && exec "$@"`, filepath.Join(g.Dir, "cgroup.procs"), name}, args...)
	return exec.CommandContext(ctx, "/bin/sh", sh...)
}

// Read reads the group's memory figures now.
func (g *Group) Read() (Memory, error) {
	m, err := read(g.Version, g.Dir, g.Dir)
	if m.Limit == Unlimited || (g.Limit > 0 && g.Limit < m.Limit) {
		m.Limit = g.Limit
	}
	return m, err
}

// Remove removes the group. Its processes must have exited; the kernel
// may take a moment to let go of an emptied group (EBUSY), so Remove
// retries for up to a second. The page cache charged to the group moves
// to its parent.
func (g *Group) Remove() error {
	var err error
	for i := 0; i < 50; i++ {
		if err = os.Remove(g.Dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if errors.Is(err, syscall.ENOTEMPTY) {
			// Not a cgroup file system (whose control files never keep
			// rmdir from a group): a fixture folder of files.
			return os.RemoveAll(g.Dir)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("cgroup: remove %s: %w", g.Dir, err)
}
