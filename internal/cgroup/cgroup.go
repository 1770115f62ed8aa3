// Package cgroup reads how much memory the calling process's control
// group lets it hold (cgroup v1 and v2) and the node's available memory,
// and makes short-lived memory-limited groups for benchmarks.
//
// Everything is read under a root folder (FS.Root, default "/"), so tests
// run on fixture trees of /proc and /sys.
package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Sentinel errors.
var (
	// ErrNoController: no memory controller is mounted for this process
	// (no cgroup v1 memory hierarchy, no cgroup v2 with memory enabled).
	ErrNoController = errors.New("cgroup: no memory controller")
)

// Unlimited is Memory.Limit when the group and its ancestors set none.
const Unlimited = -1

// Memory is what the memory controller says of one group.
type Memory struct {
	Version int    // 1 or 2
	Dir     string // the group's folder (under FS.Root)
	// Limit is the group's effective limit in bytes: the smallest of its
	// own and its ancestors' (v1 hierarchical_memory_limit; v2 memory.max
	// and memory.high up to the hierarchy's root), or Unlimited.
	Limit int64
	Usage int64 // bytes charged now (v1 memory.usage_in_bytes, v2 memory.current)
	// File is the part of Usage that is page cache on the file LRUs
	// (active_file + inactive_file): memory the kernel reclaims before
	// it fails an allocation.
	File int64
	// Peak is the most ever charged (v1 memory.max_usage_in_bytes, v2
	// memory.peak); 0 when the kernel does not say.
	Peak int64
}

// Room returns what the group can hold of page cache: its limit less
// what it holds that is not page cache (anonymous memory, kernel
// memory), counting the page cache it already holds. Unlimited when the
// group has no limit.
func (m Memory) Room() int64 {
	if m.Limit == Unlimited {
		return Unlimited
	}
	return max(0, m.Limit-(m.Usage-m.File))
}

// FS reads control groups under Root ("" is "/").
type FS struct {
	Root string
	// PID is the process whose group Self reads; 0 is "self".
	PID int
}

func (fs FS) path(p string) string {
	if fs.Root == "" {
		return p
	}
	return filepath.Join(fs.Root, p)
}

func (fs FS) proc(name string) string {
	pid := "self"
	if fs.PID > 0 {
		pid = strconv.Itoa(fs.PID)
	}
	return fs.path(filepath.Join("/proc", pid, name))
}

// Self reads the memory group of the process (ErrNoController where it
// has none).
func Self() (Memory, error) { return FS{}.Self() }

// MemAvailable returns the node's MemAvailable from /proc/meminfo in
// bytes: what can be allocated without swapping, reclaimable page cache
// included.
func MemAvailable() (int64, error) { return FS{}.MemAvailable() }

// MemAvailable returns the node's MemAvailable from /proc/meminfo.
func (fs FS) MemAvailable() (int64, error) {
	p := fs.path("/proc/meminfo")
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != "MemAvailable" {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			break
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s: MemAvailable %q", p, v)
		}
		if len(f) > 1 && f[1] == "kB" {
			n <<= 10
		}
		return n, nil
	}
	return 0, fmt.Errorf("%s: no MemAvailable line", p)
}

// mount is one cgroup file system mount from mountinfo.
type mount struct {
	dir  string // mount point
	root string // the hierarchy path mounted there
	v2   bool
}

// location is where the process's memory group lives.
type location struct {
	version int
	mnt     mount
	rel     string // the group's path within the hierarchy
}

// Dir is the group's folder.
func (l location) dir(fs FS) string {
	rel := l.rel
	if l.mnt.root != "/" {
		// A mount of a sub-hierarchy (a container's namespace): paths in
		// /proc/self/cgroup are relative to the namespace, or start with
		// the mounted root.
		rel = strings.TrimPrefix(rel, l.mnt.root)
	}
	return fs.path(filepath.Join(l.mnt.dir, rel))
}

// locate finds the process's memory group: the v1 hierarchy with the
// memory controller, else the v2 hierarchy where memory is enabled.
func (fs FS) locate() (location, error) {
	groups, err := os.ReadFile(fs.proc("cgroup"))
	if err != nil {
		return location{}, err
	}
	mounts, err := fs.mounts()
	if err != nil {
		return location{}, err
	}
	var v1Path, v2Path string
	hasV2 := false
	for _, line := range strings.Split(string(groups), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			v2Path, hasV2 = f[2], true
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == "memory" {
				v1Path = f[2]
			}
		}
	}
	if v1Path != "" {
		for _, m := range mounts {
			if !m.v2 {
				return location{version: 1, mnt: m, rel: v1Path}, nil
			}
		}
	}
	if hasV2 {
		for _, m := range mounts {
			if !m.v2 {
				continue
			}
			l := location{version: 2, mnt: m, rel: v2Path}
			// Memory is enabled for the group when its files are there.
			if _, err := os.Stat(filepath.Join(l.dir(fs), "memory.current")); err == nil {
				return l, nil
			}
		}
	}
	return location{}, ErrNoController
}

// mounts lists the cgroup v1 mounts with the memory controller and the
// cgroup2 mounts from mountinfo.
func (fs FS) mounts() ([]mount, error) {
	b, err := os.ReadFile(fs.proc("mountinfo"))
	if err != nil {
		return nil, err
	}
	var out []mount
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 1 {
			continue
		}
		m := mount{dir: unescape(f[4]), root: unescape(f[3])}
		switch g[0] {
		case "cgroup2":
			m.v2 = true
		case "cgroup":
			if len(g) < 3 || !hasOption(g[2], "memory") {
				continue
			}
		default:
			continue
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

func hasOption(opts, name string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == name {
			return true
		}
	}
	return false
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Self reads the process's memory group.
func (fs FS) Self() (Memory, error) {
	l, err := fs.locate()
	if err != nil {
		return Memory{}, err
	}
	return read(l.version, l.dir(fs), fs.path(l.mnt.dir))
}

// read reads the group at dir of a hierarchy mounted at top.
func read(version int, dir, top string) (Memory, error) {
	m := Memory{Version: version, Dir: dir, Limit: Unlimited}
	stat, err := readStat(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return m, err
	}
	if version == 1 {
		if m.Usage, err = readInt(filepath.Join(dir, "memory.usage_in_bytes")); err != nil {
			return m, err
		}
		m.Peak, _ = readInt(filepath.Join(dir, "memory.max_usage_in_bytes"))
		limit, ok := stat["hierarchical_memory_limit"]
		if !ok {
			if limit, err = readInt(filepath.Join(dir, "memory.limit_in_bytes")); err != nil {
				return m, err
			}
		}
		m.Limit = v1Limit(limit)
		m.File = pick(stat, "total_active_file", "active_file") + pick(stat, "total_inactive_file", "inactive_file")
		return m, nil
	}
	if m.Usage, err = readInt(filepath.Join(dir, "memory.current")); err != nil {
		return m, err
	}
	m.Peak, _ = readInt(filepath.Join(dir, "memory.peak"))
	m.File = stat["active_file"] + stat["inactive_file"]
	// The effective limit: the smallest memory.max (and memory.high, past
	// which the group is throttled and reclaimed) up to the mount's top.
	for d := dir; ; d = filepath.Dir(d) {
		for _, name := range []string{"memory.max", "memory.high"} {
			if v, err := readMax(filepath.Join(d, name)); err == nil && v != Unlimited && (m.Limit == Unlimited || v < m.Limit) {
				m.Limit = v
			}
		}
		if d == top || len(d) <= len(top) || d == filepath.Dir(d) {
			break
		}
	}
	return m, nil
}

// v1Limit maps cgroup v1's "no limit" (a page-rounded near-maximum
// int64) to Unlimited.
func v1Limit(v int64) int64 {
	if v <= 0 || v >= math.MaxInt64/2 {
		return Unlimited
	}
	return v
}

func pick(stat map[string]int64, keys ...string) int64 {
	for _, k := range keys {
		if v, ok := stat[k]; ok {
			return v
		}
	}
	return 0
}

// readStat reads a memory.stat file of "key value" lines.
func readStat(p string) (map[string]int64, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		if v, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			out[f[0]] = v
		}
	}
	return out, nil
}

func readInt(p string) (int64, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", p, err)
	}
	return v, nil
}

// readMax reads a v2 limit file: a number, or "max".
func readMax(p string) (int64, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return Unlimited, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", p, err)
	}
	return v, nil
}

// DropCaches writes back dirty pages and drops the node's clean page
// cache (/proc/sys/vm/drop_caches = 1): a benchmark's cold start. It
// needs root (CAP_SYS_ADMIN); the error says when it was refused.
func (fs FS) DropCaches() error {
	syncAll()
	p := fs.path("/proc/sys/vm/drop_caches")
	if err := os.WriteFile(p, []byte("1"), 0); err != nil {
		return fmt.Errorf("cgroup: drop caches: %w", err)
	}
	return nil
}

// DropCaches drops the node's clean page cache (see FS.DropCaches).
func DropCaches() error { return FS{}.DropCaches() }
