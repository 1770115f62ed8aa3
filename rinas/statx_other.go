//go:build !linux

package rinas

import "os"

// statID returns path's identity: its size and modification time (the
// inode and change time are Linux's statx only, and stay zero: unknown).
func statID(path string) (fileID, error) {
	st, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	return fileID{size: st.Size(), mtime: st.ModTime().UnixNano()}, nil
}

// statter stats files by path.
type statter struct{}

func (statter) stat(path string) (fileID, error) { return statID(path) }
func (statter) close()                           {}

// addrSpaceLeft returns 0: the address space is not bounded here.
func addrSpaceLeft() int64 { return 0 }
