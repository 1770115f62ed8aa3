//go:build linux

package engine

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// evict drops path's pages from the page cache.
func evict(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil { // dirty pages stay cached
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
}

// readRange reads [off, off+n) of path through the page cache.
func readRange(t *testing.T, path string, off int64, n int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.ReadAt(make([]byte, n), off); err != nil {
		t.Fatal(err)
	}
}

// TestResident: after eviction nothing of the file is resident, after a
// read the range read is, whole pages up to the ranges' ends; ranges past
// the end and overlaps are left out of the total. Both the cachestat path
// and the mincore fallback, on a disk file and on tmpfs.
func TestResident(t *testing.T) {
	const size = 64 << 10
	page := int(pageSize)
	for _, shm := range []bool{false, true} {
		for _, mincore := range []bool{false, true} {
			name := map[bool]string{false: "cachestat", true: "mincore"}[mincore] + map[bool]string{false: "", true: " tmpfs"}[shm]
			t.Run(name, func(t *testing.T) {
				if mincore {
					saved := noCachestat.Load()
					noCachestat.Store(true)
					t.Cleanup(func() { noCachestat.Store(saved) })
				}
				path := writeFile(t, content(size), shm)
				all := []Extent{{0, size}}
				if !shm {
					// tmpfs pages live in the page cache for good.
					evict(t, path)
					if res, total, err := Resident(path, all); err != nil || res != 0 || total != size {
						t.Fatalf("after eviction: resident %d of %d, %v", res, total, err)
					}
					readRange(t, path, int64(4*page), 2*page)
					res, _, err := Resident(path, []Extent{{int64(4 * page), int64(2 * page)}})
					if err != nil || res != int64(2*page) {
						t.Fatalf("after reading 2 pages: resident %d, %v", res, err)
					}
					// A range inside a cached page counts its own length.
					if res, total, _ := Resident(path, []Extent{{int64(4*page) + 100, 50}}); res != 50 || total != 50 {
						t.Fatalf("50 bytes in a cached page: resident %d of %d", res, total)
					}
				}
				readRange(t, path, 0, size)
				res, total, err := Resident(path, []Extent{{0, size / 2}, {size / 4, size / 2}, {size - 10, 100}, {size + 5, 10}, {-5, 1}})
				if err != nil || total != size/2+size/4+10 || res != total {
					t.Fatalf("cached file, overlapping ranges: resident %d of %d, %v (want %d of %d)", res, total, err, size/2+size/4+10, size/2+size/4+10)
				}
			})
		}
	}
	if _, _, err := Resident("/nonexistent/pagefeed", []Extent{{0, 1}}); err == nil {
		t.Fatal("missing file: no error")
	}
}

func TestMergeRanges(t *testing.T) {
	p := pageSize
	got := mergeRanges([]Extent{{5 * p, 10}, {0, 10}, {20, 10}, {p + 20, 10}, {3 * p, p}, {100 * p, 1}}, 10*p)
	want := []Extent{{0, p + 30}, {3 * p, 2*p + 10}}
	if len(got) != len(want) {
		t.Fatalf("merged %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("merged %v, want %v", got, want)
		}
	}
}

// TestOpenModePerFile: one engine opens one path direct and buffered at
// once; each reads the same bytes, and a direct open refused by the file
// system falls back as Open does (TryOn) or fails (On).
func TestOpenModePerFile(t *testing.T) {
	data := content(1 << 20)
	path := writeFile(t, data, false)
	for _, kind := range []Kind{IOUring, Pread} {
		t.Run(kind.String(), func(t *testing.T) {
			e := newEngine(t, Options{Kind: kind, Direct: Off})
			q := e.NewQueue(QueueOptions{})
			for _, mode := range []Tristate{TryOn, Off} {
				f, err := e.OpenMode(path, mode)
				if err != nil {
					t.Fatal(err)
				}
				if want := mode == TryOn; f.Direct() != want {
					t.Fatalf("mode %d: Direct %v", mode, f.Direct())
				}
				if err := q.Submit(testCtx(t), []Request{{File: f, Off: 12345, Len: 7000, Tag: 1, Worker: -1}}); err != nil {
					t.Fatal(err)
				}
				c, err := q.Next(testCtx(t))
				if err != nil {
					t.Fatal(err)
				}
				checkCompletion(t, c, data, map[uint64]int{1: 7000})
				c.Release()
			}
			if _, err := e.OpenMode(path, Tristate(9)); err == nil {
				t.Fatal("bad mode: no error")
			}
		})
	}
	refuseDirect(t)
	e := newEngine(t, Options{Kind: Pread})
	f, err := e.OpenMode(path, TryOn)
	if err != nil || f.Direct() {
		t.Fatalf("O_DIRECT refused, TryOn: %v, direct %v", err, f != nil && f.Direct())
	}
	if _, err := e.OpenMode(path, On); err == nil {
		t.Fatal("O_DIRECT refused, On: no error")
	}
}
