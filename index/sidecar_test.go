package index

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pagefeed/pagefeed/internal/gen"
)

// logSink collects notices.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (l *logSink) logf(f string, a ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(f, a...))
	l.mu.Unlock()
}

func (l *logSink) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range l.lines {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

func buildSC(t *testing.T, paths []string, opts Options) (*Index, *logSink) {
	t.Helper()
	var l logSink
	opts.Logf = l.logf
	ix, err := Build(context.Background(), paths, opts)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return ix, &l
}

func TestSidecarLifecycle(t *testing.T) {
	files := genDataset(t, small(false, 1))
	sc := filepath.Join(t.TempDir(), "ix.sidecar")
	opts := Options{Columns: []string{"input_ids"}, Sidecar: sc}
	fresh := build(t, files, opts)

	steps := []struct {
		name   string
		before func(t *testing.T)
		opts   Options
		want   string
		notice string
	}{
		{"first build writes", nil, opts, "written", ""},
		{"second build loads", nil, opts, "hit", ""},
		{"corrupt byte", func(t *testing.T) { flip(t, sc, 100) }, opts, "rebuilt", "checksum"},
		{"loads again", nil, opts, "hit", ""},
		{"truncated", func(t *testing.T) { truncate(t, sc, 50) }, opts, "rebuilt", "sidecar"},
		{"other projection", nil, Options{Columns: []string{"id"}, Sidecar: sc}, "rebuilt", "projection"},
		{"back", nil, opts, "rebuilt", "projection"},
		{"mtime changed", func(t *testing.T) {
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(files[1], later, later); err != nil {
				t.Fatal(err)
			}
		}, opts, "rebuilt", "changed since"},
		{"loads after rebuild", nil, opts, "hit", ""},
		{"other version", func(t *testing.T) { flip(t, sc, 4) }, opts, "rebuilt", "version"},
		{"file rewritten", func(t *testing.T) {
			c := small(false, 1)
			c.Dir, c.Seed, c.Files = filepath.Dir(files[0]), 77, 1
			genDataset(t, c) // rewrites files[0] with other content
		}, opts, "rebuilt", "changed since"},
		{"unwritable", nil, Options{Columns: []string{"input_ids"}, Sidecar: filepath.Join(t.TempDir(), "no", "such", "dir", "x")}, "miss", "not written"},
		{"off", nil, Options{Columns: []string{"input_ids"}, NoSidecar: true}, "miss", ""},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before(t)
		}
		ix, log := buildSC(t, files, s.opts)
		if got := ix.Stats().Sidecar; got != s.want {
			t.Fatalf("%s: sidecar %q, want %q (notices %q)", s.name, got, s.want, log.lines)
		}
		if s.notice != "" && !log.has(s.notice) {
			t.Errorf("%s: no notice mentioning %q in %q", s.name, s.notice, log.lines)
		}
		if s.want == "hit" {
			if ix.Column(0).Descr == nil {
				t.Fatalf("%s: no descriptor after sidecar load", s.name)
			}
			sameLocations(t, s.name, build(t, files, opts), ix)
			if ix.Stats().Pages != build(t, files, opts).Stats().Pages {
				t.Errorf("%s: stats differ", s.name)
			}
		}
	}
	_ = fresh
}

// TestSidecarEqualsFresh checks that a loaded index is the built one.
func TestSidecarEqualsFresh(t *testing.T) {
	for _, pi := range []bool{true, false} {
		c := small(pi, 2)
		c.Dictionary = true
		files := genDataset(t, c)
		opts := Options{Sidecar: filepath.Join(t.TempDir(), "sc")}
		a, _ := buildSC(t, files, opts)
		b, _ := buildSC(t, files, opts)
		if b.Stats().Sidecar != "hit" {
			t.Fatalf("sidecar %s", b.Stats().Sidecar)
		}
		sameLocations(t, "sidecar", a, b)
		for i := 0; i < a.NumFiles(); i++ {
			fa, fb := a.File(i), b.File(i)
			if fa.Path != fb.Path || fa.Size != fb.Size || !fa.ModTime.Equal(fb.ModTime) || fa.NumRows != fb.NumRows || fa.FirstRow != fb.FirstRow || fa.NumRowGroups != fb.NumRowGroups {
				t.Errorf("file %d: %+v vs %+v", i, fa, fb)
			}
		}
		sa, sb := a.Stats(), b.Stats()
		if sa.Pages != sb.Pages || sa.Rows != sb.Rows || sa.OffsetIndex != sb.OffsetIndex || sa.HeaderWalk != sb.HeaderWalk || sa.ResidentBytes != sb.ResidentBytes {
			t.Errorf("stats %+v vs %+v", sa, sb)
		}
	}
}

// TestDefaultSidecar puts the sidecar next to the dataset; the directory
// walk then ignores it without a notice.
func TestDefaultSidecar(t *testing.T) {
	dir := t.TempDir()
	genDataset(t, gen.Config{Dir: dir, Files: 2, RowsPerFile: 50, MeanTokens: 8})
	a, _ := buildSC(t, []string{dir}, Options{})
	if a.Stats().Sidecar != "written" || filepath.Dir(a.Stats().SidecarPath) != dir {
		t.Fatalf("stats %+v", a.Stats())
	}
	b, log := buildSC(t, []string{dir}, Options{})
	if b.Stats().Sidecar != "hit" || b.NumFiles() != 2 {
		t.Fatalf("stats %+v", b.Stats())
	}
	if log.has(sidecarPrefix) {
		t.Errorf("notice about our own sidecar: %q", log.lines)
	}
	c, _ := buildSC(t, []string{dir}, Options{Columns: []string{"id"}})
	if c.Stats().Sidecar != "written" || c.Stats().SidecarPath == a.Stats().SidecarPath {
		t.Errorf("another projection reused sidecar %s", c.Stats().SidecarPath)
	}
}

func flip(t *testing.T, path string, off int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0x40
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func truncate(t *testing.T, path string, n int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)-n], 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSidecarReusesUnchangedFiles: after some files change, or are added,
// only those are read again, and the index equals a fresh build.
func TestSidecarReusesUnchangedFiles(t *testing.T) {
	dir := t.TempDir()
	c := small(true, 1)
	c.Dir, c.Files = dir, 3
	files := genDataset(t, c)
	sc := filepath.Join(t.TempDir(), "sc")
	opts := Options{Columns: []string{"input_ids", "id"}, Sidecar: sc}
	buildSC(t, files, opts)

	rewrite := func(n int, seed uint64) {
		t.Helper()
		c2 := c
		c2.Seed, c2.Files, c2.Prefix = seed, n+1, "tmp"
		res := genDataset(t, c2)
		if err := os.Rename(res[n], files[n]); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct {
		name   string
		change func()
		paths  func() []string
		reused int
	}{
		{"middle file rewritten", func() { rewrite(1, 100) }, func() []string { return files }, 2},
		{"first file rewritten", func() { rewrite(0, 101) }, func() []string { return files }, 2},
		{"file added", func() {
			c2 := c
			c2.Files, c2.Prefix, c2.Seed = 1, "zz", 5
			files = append(files, genDataset(t, c2)...)
		}, func() []string { return files }, 3},
		{"file removed", func() {}, func() []string { return files[1:] }, 3},
	} {
		step.change()
		ix, log := buildSC(t, step.paths(), opts)
		st := ix.Stats()
		if st.Sidecar != "rebuilt" || st.Reused != step.reused {
			t.Fatalf("%s: sidecar %s, reused %d; want rebuilt, %d (%q)", step.name, st.Sidecar, st.Reused, step.reused, log.lines)
		}
		if !log.has("re-indexing") {
			t.Errorf("%s: no notice of the partial re-index: %q", step.name, log.lines)
		}
		sameLocations(t, step.name, build(t, step.paths(), Options{Columns: opts.Columns}), ix)
		if ix.Column(0).Descr == nil || ix.NumRows() != int64(len(step.paths())*c.RowsPerFile) {
			t.Fatalf("%s: %d rows", step.name, ix.NumRows())
		}
		if again, _ := buildSC(t, step.paths(), opts); again.Stats().Sidecar != "hit" {
			t.Fatalf("%s: then %s", step.name, again.Stats().Sidecar)
		}
	}
}
