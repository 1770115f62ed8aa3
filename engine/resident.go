package engine

import (
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// Extent is a byte range of a file: Len bytes from Off.
type Extent struct{ Off, Len int64 }

// Resident reports how many bytes of ranges of the file at path are in
// the page cache now, and the bytes the ranges cover (overlaps and the
// parts past the file's end left out). It asks cachestat(2) where the
// kernel has it (Linux 6.5 and later), else mincore(2) over a read-only
// mapping of the file; a cached page counts whole, up to its range's
// ends. Ranges closer than a page are measured together. The answer is a
// moment's: the cache may gain or lose pages the next instant, so use it
// to choose, never to promise. A file that cannot be opened or mapped is
// an error; a kernel that has neither call reports 0 resident bytes.
func Resident(path string, ranges []Extent) (resident, total int64, err error) {
	fd, err := openRetry(path, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return 0, 0, &Error{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, 0, &Error{Op: "fstat", Path: path, Err: err}
	}
	rs := mergeRanges(ranges, st.Size)
	for _, r := range rs {
		total += r.Len
	}
	if total == 0 {
		return 0, 0, nil
	}
	n, err := residentOf(path, fd, st.Size, rs)
	return n, total, err
}

var pageSize = int64(os.Getpagesize())

// mergeRanges clamps ranges to [0, size), sorts them and merges those
// that overlap or lie closer than a page, so each page is asked once.
func mergeRanges(ranges []Extent, size int64) []Extent {
	out := make([]Extent, 0, len(ranges))
	for _, r := range ranges {
		lo, hi := max(r.Off, 0), min(r.Off+r.Len, size)
		if hi > lo {
			out = append(out, Extent{lo, hi - lo})
		}
	}
	slices.SortFunc(out, func(a, b Extent) int {
		switch {
		case a.Off < b.Off:
			return -1
		case a.Off > b.Off:
			return 1
		}
		return 0
	})
	n := 0
	for _, r := range out {
		if n > 0 && r.Off <= out[n-1].Off+out[n-1].Len+pageSize {
			last := &out[n-1]
			last.Len = max(last.Len, r.Off+r.Len-last.Off)
			continue
		}
		out[n] = r
		n++
	}
	return out[:n]
}

// pageSpan returns r rounded out to pages: its first page's offset and
// the pages it touches.
func pageSpan(r Extent) (off, pages int64) {
	off = r.Off &^ (pageSize - 1)
	end := (r.Off + r.Len + pageSize - 1) &^ (pageSize - 1)
	return off, (end - off) / pageSize
}

// clampPages turns cached pages of r into bytes no longer than r.
func clampPages(cached int64, r Extent) int64 { return min(cached*pageSize, r.Len) }
