package index

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/internal/childtest"
	"github.com/pagefeed/pagefeed/internal/gen"
	"golang.org/x/sys/unix"
)

// unbounded is a MaxOpenFiles above any batch of these tests: one call
// per pass, as before the budget.
const unbounded = 1 << 20

// fileCounter is a engine.BatchReader that records the most files one call names
// and, with fds set, the most descriptors the process holds while a call's
// callbacks run (every file of a call is open until it returns).
type fileCounter struct {
	inner engine.BatchReader
	fds   bool

	mu       sync.Mutex
	calls    int
	maxFiles int
	peakFDs  int
}

func (c *fileCounter) ReadBatch(ctx context.Context, rs []engine.Range, fn func(int, []byte, error)) error {
	names := map[string]bool{}
	for _, r := range rs {
		names[r.Path] = true
	}
	c.mu.Lock()
	c.calls++
	c.maxFiles = max(c.maxFiles, len(names))
	c.mu.Unlock()
	return c.inner.ReadBatch(ctx, rs, func(i int, data []byte, err error) {
		if c.fds {
			n := openFDs()
			c.mu.Lock()
			c.peakFDs = max(c.peakFDs, n)
			c.mu.Unlock()
		}
		fn(i, data, err)
	})
}

// fdMu serializes openFDs, lest one count see another's listing.
var fdMu sync.Mutex

// openFDs counts the process's descriptors in /proc/self/fd (the one it
// opens to list them included).
func openFDs() int {
	fdMu.Lock()
	defer fdMu.Unlock()
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return -1
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return -1
	}
	return len(names)
}

// mixedDataset returns 20 files, those with offset indexes interleaved
// with those without, so that the offset index pass and the header walk
// each span files that are not adjacent in the batch.
func mixedDataset(t *testing.T) []string {
	t.Helper()
	c := gen.Config{RowsPerFile: 120, RowGroupRows: 50, PageSize: 512, MeanTokens: 8, Seed: 3}
	c.Files, c.PageIndex, c.Dir = 12, true, filepath.Join(t.TempDir(), "oi")
	oi := genDataset(t, c)
	c.Files, c.PageIndex, c.Dir, c.PageVersion = 8, false, filepath.Join(t.TempDir(), "walk"), 2
	walk := genDataset(t, c)
	var files []string
	for i := range max(len(oi), len(walk)) {
		if i < len(oi) {
			files = append(files, oi[i])
		}
		if i < len(walk) {
			files = append(files, walk[i])
		}
	}
	return files
}

// TestMaxOpenFilesSameIndex: a budget of 3 files gives the index the
// unbounded build gives, on every pass (footers and their re-reads, offset
// indexes, header walk rounds), with the default reader, the pread reader
// and a caller's wrapper alike; and no call names more than 3 files.
func TestMaxOpenFilesSameIndex(t *testing.T) {
	files := mixedDataset(t)
	for _, tc := range []struct {
		name   string
		opts   Options
		reader func() engine.BatchReader
		tail   int // footerTailRead; small forces the footer re-read pass
	}{
		{name: "default", reader: func() engine.BatchReader { return nil }},
		{name: "pread", reader: func() engine.BatchReader { return &engine.PreadReader{} }},
		{name: "caller", reader: func() engine.BatchReader { return &fileCounter{inner: &engine.PreadReader{Parallelism: 4}} }},
		{name: "footer-reread", reader: func() engine.BatchReader { return nil }, tail: 256},
		{name: "header-walk", reader: func() engine.BatchReader { return &engine.PreadReader{} }, opts: Options{HeaderWalk: true, WalkReadSize: 1024}},
		{name: "columns", reader: func() engine.BatchReader { return nil }, opts: Options{Columns: []string{"input_ids"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.tail > 0 {
				old := footerTailRead
				footerTailRead = tc.tail
				t.Cleanup(func() { footerTailRead = old })
			}
			want := tc.opts
			want.Reader, want.MaxOpenFiles = tc.reader(), unbounded
			ref := build(t, files, want)

			got := tc.opts
			counter := &fileCounter{inner: tc.reader()}
			if counter.inner == nil {
				got.Reader = nil // Build's own engine, unwatched
			} else {
				got.Reader = counter
			}
			got.MaxOpenFiles = 3
			ix := build(t, files, got)

			sameLocations(t, tc.name, ref, ix)
			rs, gs := ref.Stats(), ix.Stats()
			rs.BuildTime, gs.BuildTime = 0, 0
			if rs != gs {
				t.Errorf("stats %+v, unbounded %+v", gs, rs)
			}
			for i := range ref.NumFiles() {
				if ref.File(i) != ix.File(i) {
					t.Errorf("file %d: %+v, unbounded %+v", i, ix.File(i), ref.File(i))
				}
			}
			if counter.inner != nil {
				// 20 files in chunks of 3: at least 7 calls a pass
				if counter.maxFiles > 3 || counter.calls < 14 {
					t.Errorf("%d calls, up to %d files each; want at most 3 files", counter.calls, counter.maxFiles)
				}
				t.Logf("%d calls, at most %d files each", counter.calls, counter.maxFiles)
			}
		})
	}
}

// TestMaxOpenFilesSameError: with files broken in two chunks, the budgeted
// build fails with the unbounded build's error: the first broken file in
// batch order, named with its offset, whichever pass finds it.
func TestMaxOpenFilesSameError(t *testing.T) {
	for _, tc := range []struct {
		name       string
		walk       bool
		breakFiles func(t *testing.T, files []string) (first string, r engine.BatchReader)
	}{
		{name: "footer", breakFiles: func(t *testing.T, files []string) (string, engine.BatchReader) {
			for _, f := range []string{files[16], files[5]} {
				overwrite(t, f, -4, []byte("XXXX"))
			}
			return files[5], nil
		}},
		{name: "offset-index-read", breakFiles: func(t *testing.T, files []string) (string, engine.BatchReader) {
			// the offset indexes' reads (a few hundred bytes), not the
			// footers' (a file's tail); a bad offset index is walked
			// around instead (TestBadOffsetIndexIgnored)
			for _, f := range []string{files[14], files[6]} {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if _, n := offsetIndexOf(t, b, 0); n > 512 || len(b) <= 512 {
					t.Fatalf("%s: offset index of %d bytes in a file of %d", f, n, len(b))
				}
			}
			return files[6], multiFail{&engine.PreadReader{}, map[string]bool{files[14]: true, files[6]: true}, 512}
		}},
		{name: "header-walk-read", walk: true, breakFiles: func(t *testing.T, files []string) (string, engine.BatchReader) {
			// the walk's reads, not the footers' (whole files here)
			return files[4], multiFail{&engine.PreadReader{}, map[string]bool{files[4]: true, files[11]: true}, 1024}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := mixedDataset(t)
			first, r := tc.breakFiles(t, files)
			var errs [2]error
			for j, budget := range []int{unbounded, 3} {
				_, errs[j] = Build(t.Context(), files, Options{NoSidecar: true, Logf: t.Logf, Reader: r, HeaderWalk: tc.walk, WalkReadSize: 1024, MaxOpenFiles: budget})
			}
			if errs[0] == nil || !strings.Contains(errs[0].Error(), first) {
				t.Fatalf("unbounded build: error %v, want one naming %s", errs[0], first)
			}
			if errs[1] == nil || errs[1].Error() != errs[0].Error() {
				t.Fatalf("budget 3: error %v\nunbounded: %v", errs[1], errs[0])
			}
			var e *Error
			if !errors.As(errs[1], &e) || e.Off < 0 {
				t.Fatalf("error %v carries no offset", errs[1])
			}
			t.Log(errs[1])
		})
	}
}

// multiFail fails every read of at most maxLen bytes of the paths in fail.
type multiFail struct {
	engine.BatchReader
	fail   map[string]bool
	maxLen int
}

func (m multiFail) ReadBatch(ctx context.Context, rs []engine.Range, fn func(int, []byte, error)) error {
	return m.BatchReader.ReadBatch(ctx, rs, func(i int, b []byte, err error) {
		if m.fail[rs[i].Path] && rs[i].Len <= m.maxLen {
			fn(i, nil, &Error{Op: "read", Path: rs[i].Path, Off: rs[i].Off, Err: errors.New("input/output error")})
			return
		}
		fn(i, b, err)
	})
}

// overwrite writes b at off of path (off < 0: from the end).
func overwrite(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if off < 0 {
		st, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		off += st.Size()
	}
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestMaxOpenFilesPeakDescriptors counts the process's descriptors while
// reads run: over 20 files under a budget of 5, the default readers hold
// at most 5 more than before the build; unbounded, all 20 (which shows
// the count sees them).
func TestMaxOpenFilesPeakDescriptors(t *testing.T) {
	if openFDs() < 0 {
		t.Skip("no /proc/self/fd")
	}
	files := mixedDataset(t)
	er, err := engine.StartRangeReader(engine.Options{QueueDepth: 64, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer er.Close()
	for _, rd := range []struct {
		name string
		r    engine.BatchReader
	}{{"pread", &engine.PreadReader{}}, {"engine", er}} {
		t.Run(rd.name, func(t *testing.T) {
			for _, opts := range []Options{{}, {HeaderWalk: true, WalkReadSize: 1024}} {
				build(t, files, Options{Reader: rd.r, HeaderWalk: opts.HeaderWalk}) // warm: lazily made descriptors
				for _, budget := range []int{5, unbounded} {
					base := openFDs()
					c := &fileCounter{inner: rd.r, fds: true}
					opts.Reader, opts.MaxOpenFiles = c, budget
					build(t, files, opts)
					extra := c.peakFDs - base
					t.Logf("walk %v, budget %d: %d descriptors at the peak, %d before (%d calls)", opts.HeaderWalk, budget, c.peakFDs, base, c.calls)
					switch {
					case budget == 5 && extra > 5:
						t.Errorf("walk %v: %d descriptors beyond the %d before, budget 5", opts.HeaderWalk, extra, base)
					case budget == unbounded && extra < len(files)-1:
						t.Errorf("walk %v: unbounded build held only %d more descriptors over %d files: the count does not see them", opts.HeaderWalk, extra, len(files))
					}
				}
			}
		})
	}
}

const childEnv = "PAGEFEED_INDEX_TEST_CHILD"

// inChild reports whether this process is the child of test t; otherwise
// it runs t again in a child process (for what must not touch the parent,
// such as a lowered RLIMIT_NOFILE) and reports the child's verdict.
func inChild(t *testing.T) bool {
	t.Helper()
	if os.Getenv(childEnv) == t.Name() {
		return true
	}
	childtest.Run(t, t.Name(), childEnv, t.Name())
	return false
}

// TestManyFilesLowNofile: 3,000 files under RLIMIT_NOFILE 1024 (soft and
// hard) index with the default options (engine reader, budget 256), with
// a caller's pread reader, by header walk, and through a sidecar written
// and loaded again; every file has its pages.
// The same build with the budget lifted fails with EMFILE, which shows
// the limit bites.
func TestManyFilesLowNofile(t *testing.T) {
	if !inChild(t) {
		return
	}
	const nfiles = 3000
	rl := unix.Rlimit{Cur: 1024, Max: 1024}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		t.Skipf("setrlimit NOFILE: %v", err)
	}
	if got := engine.OpenFileBudget(4); got != 256 {
		t.Fatalf("default budget %d under RLIMIT_NOFILE 1024, want 256", got)
	}
	dir := t.TempDir()
	src := genDataset(t, gen.Config{Dir: filepath.Join(dir, "src"), Files: 1, RowsPerFile: 60, RowGroupRows: 20, PageSize: 256, PageVersion: 2, PageIndex: true, Codec: "none", Seed: 1, MeanTokens: 4})[0]
	one := build(t, []string{src}, Options{})
	perFile := make([]int, one.NumColumns())
	for k := range perFile {
		perFile[k] = one.NumPages(k)
	}
	paths := make([]string, nfiles)
	for i := range paths {
		// Hard links: 3,000 names, each opened on its own descriptor.
		paths[i] = filepath.Join(dir, fmt.Sprintf("f%04d.parquet", i))
		if err := os.Link(src, paths[i]); err != nil {
			t.Skipf("hard link: %v", err)
		}
	}
	check := func(name string, ix *Index) {
		t.Helper()
		if ix.NumFiles() != nfiles {
			t.Fatalf("%s: %d files indexed, want %d", name, ix.NumFiles(), nfiles)
		}
		for k := range perFile {
			if ix.NumPages(k) != nfiles*perFile[k] {
				t.Fatalf("%s column %s: %d pages, want %d", name, ix.Column(k).Path, ix.NumPages(k), nfiles*perFile[k])
			}
			pages := make([]int, nfiles)
			for g := range ix.NumPages(k) {
				pages[ix.Locate(k, g).File]++
			}
			for f, n := range pages {
				if n != perFile[k] {
					t.Fatalf("%s column %s: file %d has %d pages, want %d", name, ix.Column(k).Path, f, n, perFile[k])
				}
			}
		}
		t.Logf("%s: %d files, %d pages (%s)", name, ix.NumFiles(), ix.Stats().Pages, ix.Stats().BuildTime.Round(time.Millisecond))
	}
	check("default", build(t, paths, Options{}))
	check("pread", build(t, paths, Options{Reader: &engine.PreadReader{}}))
	check("header walk", build(t, paths, Options{HeaderWalk: true}))
	for _, want := range []string{"written", "hit"} { // Options{} but for Logf
		ix, err := Build(t.Context(), paths, Options{Logf: t.Logf})
		if err != nil {
			t.Fatalf("sidecar %s: %v", want, err)
		}
		if ix.Stats().Sidecar != want {
			t.Fatalf("sidecar %s, want %s", ix.Stats().Sidecar, want)
		}
		check("sidecar "+want, ix)
	}

	_, err := Build(t.Context(), paths, Options{NoSidecar: true, Logf: t.Logf, MaxOpenFiles: nfiles})
	if !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("budget lifted: error %v, want EMFILE", err)
	}
	t.Logf("budget lifted: %v", err)
}

// BenchmarkBuildMaxOpenFiles: BenchmarkBuild's 1,000 files read whole
// (one call a pass) and in chunks of 256 files (the default budget under
// RLIMIT_NOFILE 1024), with the default reader and the pread pool.
func BenchmarkBuildMaxOpenFiles(b *testing.B) {
	files := benchDataset(b, "oi1000", 1000, true)
	for _, rd := range []struct {
		name string
		r    engine.BatchReader
	}{{"default", nil}, {"pread", &engine.PreadReader{}}} {
		for _, budget := range []int{unbounded, 256} {
			name := fmt.Sprintf("%s/files=%d", rd.name, budget)
			if budget == unbounded {
				name = rd.name + "/files=all"
			}
			b.Run(name, func(b *testing.B) {
				benchBuild(b, files, Options{Columns: []string{"input_ids"}, NoSidecar: true, Logf: b.Logf, Reader: rd.r, MaxOpenFiles: budget})
			})
		}
	}
}
