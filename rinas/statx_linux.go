package rinas

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// statID returns path's identity with one statx(2): its device and inode,
// size, and modification and status-change times to the nanosecond the
// file system keeps. statx follows the path, so a file renamed over path
// shows its own inode. Where attributes are cached (NFS's actimeo, FUSE's
// attr_timeout) it answers from the cache as stat(2) does.
func statID(path string) (fileID, error) { return statIDAt(unix.AT_FDCWD, path, path) }

func statIDAt(dir int, name, path string) (fileID, error) {
	var st unix.Statx_t
	const mask = unix.STATX_INO | unix.STATX_SIZE | unix.STATX_MTIME | unix.STATX_CTIME
	for {
		err := unix.Statx(dir, name, unix.AT_STATX_SYNC_AS_STAT, mask, &st)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fileID{}, &os.PathError{Op: "statx", Path: path, Err: err}
		}
		break
	}
	return fileID{
		dev:   unix.Mkdev(st.Dev_major, st.Dev_minor),
		ino:   st.Ino,
		size:  int64(st.Size),
		mtime: st.Mtime.Sec*1e9 + int64(st.Mtime.Nsec),
		ctime: st.Ctime.Sec*1e9 + int64(st.Ctime.Nsec),
	}, nil
}

// maxStatDirs bounds the directory descriptors a statter keeps.
const maxStatDirs = 4

// statter stats the dataset's files relative to descriptors of their
// directories (O_PATH: no read access needed), so that each check walks
// one path component instead of the whole path: the identity check runs
// after every fetch batch, and statx's path walk is most of its cost.
// Files in directories beyond the first maxStatDirs are stat'ed by their
// whole path. A directory renamed or replaced after Open is not followed
// (its descriptor keeps naming the old one), which only makes the check
// compare the files Open saw. It belongs to one goroutine.
type statter struct {
	dirs map[string]int
}

func (s *statter) stat(path string) (fileID, error) {
	dir, name := filepath.Split(path)
	fd, ok := s.dirs[dir]
	if !ok {
		fd = -1
		if len(s.dirs) < maxStatDirs && dir != "" {
			if d, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
				fd = d
			}
		}
		if s.dirs == nil {
			s.dirs = map[string]int{}
		}
		if fd >= 0 || len(s.dirs) < maxStatDirs {
			s.dirs[dir] = fd
		}
	}
	if fd < 0 {
		return statID(path)
	}
	return statIDAt(fd, name, path)
}

func (s *statter) close() {
	for _, fd := range s.dirs {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	s.dirs = nil
}

// addrSpaceLeft returns how much more memory the process may use under
// its RLIMIT_AS (ulimit -v): the soft limit less VmSize, plus the Go
// heap's mapped pages that hold nothing (the Go heap never unmaps its
// arenas, and reuses them), at least 1; 0 when the limit is infinite or
// cannot be read.
func addrSpaceLeft() int64 {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_AS, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY || rl.Cur > math.MaxInt64 {
		return 0
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmSize:" && f[2] == "kB" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0
			}
			return max(int64(rl.Cur)-kb<<10+goHeapFree(), 1)
		}
	}
	return 0
}
