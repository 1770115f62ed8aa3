package index

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/internal/pqtest"
)

// buildSCWithin is buildSC with a deadline: a Build that hangs fails the
// test instead of the whole run.
func buildSCWithin(t *testing.T, paths []string, opts Options) (*Index, *logSink) {
	t.Helper()
	type res struct {
		ix  *Index
		log *logSink
		err error
	}
	done := make(chan res, 1)
	go func() {
		var l logSink
		o := opts
		o.Logf = l.logf
		ix, err := Build(context.Background(), paths, o)
		done <- res{ix, &l, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("Build: %v", r.err)
		}
		return r.ix, r.log
	case <-time.After(20 * time.Second):
		t.Fatal("Build hangs")
		return nil, nil
	}
}

// TestSidecarHostileFiles: what lies at the sidecar's name is read only
// when it is a regular file of a size the dataset could need. A FIFO does
// not hang Build, a symbolic link to /dev/zero is not followed, and a
// huge (sparse) file is not read; each is replaced by a real sidecar.
func TestSidecarHostileFiles(t *testing.T) {
	files := genDataset(t, small(true, 1))
	for _, tc := range []struct {
		name   string
		make   func(path string) error
		notice string
	}{
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "not a regular file"},
		{"symlink to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }, "symbolic link"},
		{"huge sparse file", func(p string) error {
			f, err := os.Create(p)
			if err != nil {
				return err
			}
			defer f.Close()
			return f.Truncate(1 << 40)
		}, "more than a sidecar"},
		{"directory", func(p string) error { return os.Mkdir(p, 0o755) }, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := filepath.Join(t.TempDir(), "ix.sidecar")
			if err := tc.make(sc); err != nil {
				t.Skipf("cannot make it: %v", err)
			}
			ix, log := buildSCWithin(t, files, Options{Sidecar: sc})
			if !log.has(tc.notice) {
				t.Errorf("no notice mentioning %q: %q", tc.notice, log.lines)
			}
			if tc.name == "directory" {
				if st := ix.Stats().Sidecar; st != "miss" {
					t.Errorf("sidecar %s over a directory, want miss", st)
				}
				return
			}
			if st := ix.Stats().Sidecar; st != "rebuilt" {
				t.Fatalf("sidecar %s, want rebuilt", st)
			}
			if st, err := os.Lstat(sc); err != nil || !st.Mode().IsRegular() {
				t.Fatalf("not replaced by a sidecar: %v %v", st.Mode(), err)
			}
			if again, _ := buildSCWithin(t, files, Options{Sidecar: sc}); again.Stats().Sidecar != "hit" {
				t.Fatalf("then %s", again.Stats().Sidecar)
			}
		})
	}
}

// TestSidecarFooterHash: a file rewritten in place with its size and mtime
// kept (here: one byte of its footer changed) is indexed again.
func TestSidecarFooterHash(t *testing.T) {
	files := genDataset(t, small(true, 1))
	sc := filepath.Join(t.TempDir(), "sc")
	opts := Options{Columns: []string{"id"}, Sidecar: sc}
	buildSC(t, files, opts)
	f := files[1]
	st, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	// the footer's last string (created_by or a key-value) has letters
	i := bytes.LastIndexAny(b[:len(b)-8], "abcdefghijklmnopqrstuvwxyz")
	if i < len(b)-8-int(le32(b[len(b)-8:])) {
		t.Fatal("no letter in the footer")
	}
	b[i] ^= 0x20 // upper case: same size
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(f, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	ix, log := buildSC(t, files, opts)
	if ix.Stats().Sidecar != "rebuilt" || ix.Stats().Reused != len(files)-1 {
		t.Fatalf("sidecar %s, reused %d; want rebuilt, %d (%q)", ix.Stats().Sidecar, ix.Stats().Reused, len(files)-1, log.lines)
	}
	if !log.has("footer differs") {
		t.Errorf("no notice of the footer: %q", log.lines)
	}
}

// TestSidecarHonoursUmask: the sidecar gets mode 0666 less the umask.
func TestSidecarHonoursUmask(t *testing.T) {
	files := genDataset(t, small(true, 1))
	for _, mask := range []int{0o022, 0o077, 0o002} {
		sc := filepath.Join(t.TempDir(), "sc")
		old := syscall.Umask(mask)
		_, err := Build(context.Background(), files, Options{Sidecar: sc, Logf: t.Logf})
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(sc)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := st.Mode().Perm(), os.FileMode(0o666&^mask); got != want {
			t.Errorf("umask %03o: mode %v, want %v", mask, got, want)
		}
	}
}

// TestSidecarReadOnlyDataset: where the dataset's directory is not
// writable, the sidecar lives in $XDG_CACHE_HOME/pagefeed, and the next
// Build loads it from there; Options.SidecarDir puts it anywhere.
func TestSidecarReadOnlyDataset(t *testing.T) {
	c := small(true, 1)
	c.Dir = t.TempDir()
	files := genDataset(t, c)
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	old := dirWritable
	t.Cleanup(func() { dirWritable = old })
	dirWritable = func(dir string) bool { return dir != c.Dir && old(dir) }

	a, _ := buildSC(t, files, Options{})
	if a.Stats().Sidecar != "written" || filepath.Dir(a.Stats().SidecarPath) != filepath.Join(cache, "pagefeed") {
		t.Fatalf("sidecar %s at %s, want written in the cache", a.Stats().Sidecar, a.Stats().SidecarPath)
	}
	if m, _ := filepath.Glob(filepath.Join(c.Dir, sidecarPrefix+"*")); len(m) != 0 {
		t.Fatalf("sidecar written in the read-only dataset: %v", m)
	}
	b, _ := buildSC(t, files, Options{})
	if b.Stats().Sidecar != "hit" || b.Stats().SidecarPath != a.Stats().SidecarPath {
		t.Fatalf("second build: %s at %s", b.Stats().Sidecar, b.Stats().SidecarPath)
	}
	sameLocations(t, "cached", build(t, files, Options{}), b)

	dir := filepath.Join(t.TempDir(), "made", "here")
	s, _ := buildSC(t, files, Options{SidecarDir: dir})
	if s.Stats().Sidecar != "written" || filepath.Dir(s.Stats().SidecarPath) != dir {
		t.Fatalf("SidecarDir: %s at %s", s.Stats().Sidecar, s.Stats().SidecarPath)
	}
	if s2, _ := buildSC(t, files, Options{SidecarDir: dir}); s2.Stats().Sidecar != "hit" {
		t.Fatalf("SidecarDir again: %s", s2.Stats().Sidecar)
	}
}

// TestSidecarReadOnlyDatasetForReal: the same with a directory the
// process cannot write (skipped as root, whom permissions do not stop).
func TestSidecarReadOnlyDatasetForReal(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes anywhere")
	}
	c := small(true, 1)
	c.Dir = t.TempDir()
	files := genDataset(t, c)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	if err := os.Chmod(c.Dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(c.Dir, 0o755) })
	buildSC(t, files, Options{})
	if b, log := buildSC(t, files, Options{}); b.Stats().Sidecar != "hit" {
		t.Fatalf("second build: %s (%q)", b.Stats().Sidecar, log.lines)
	}
}

// writeIDFile writes an int64 column "id", REQUIRED or OPTIONAL, after
// lead other columns.
func writeIDFile(t *testing.T, path string, optional bool, lead int) {
	t.Helper()
	mem := memory.NewGoAllocator()
	var fields []arrow.Field
	var arrs []arrow.Array
	for i := 0; i < lead; i++ {
		b := array.NewInt32Builder(mem)
		b.AppendValues([]int32{1, 2, 3}, nil)
		fields = append(fields, arrow.Field{Name: "pad" + string(rune('a'+i)), Type: arrow.PrimitiveTypes.Int32})
		arrs = append(arrs, b.NewArray())
		b.Release()
	}
	b := array.NewInt64Builder(mem)
	b.AppendValues([]int64{0, 1, 2}, nil)
	fields = append(fields, arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: optional})
	arrs = append(arrs, b.NewArray())
	b.Release()
	sc := arrow.NewSchema(fields, nil)
	rec := array.NewRecordBatch(sc, arrs, 3)
	defer rec.Release()
	for _, a := range arrs {
		a.Release()
	}
	pqtest.WriteRecords(t, path, parquet.NewWriterProperties(parquet.WithPageIndexEnabled(true)), rec)
}

// TestMixedDeclarations: each file's chunks carry its own descriptor, from
// a fresh build and from the sidecar alike, and files declared alike share
// one.
func TestMixedDeclarations(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i, s := range []struct {
		optional bool
		lead     int
	}{{false, 0}, {true, 0}, {false, 0}, {true, 2}} {
		p := filepath.Join(dir, string(rune('a'+i))+".parquet")
		writeIDFile(t, p, s.optional, s.lead)
		files = append(files, p)
	}
	sc := filepath.Join(t.TempDir(), "sc")
	for _, want := range []string{"written", "hit"} {
		ix, _ := buildSC(t, files, Options{Columns: []string{"id"}, Sidecar: sc})
		if ix.Stats().Sidecar != want || ix.Stats().Schemas != 3 {
			t.Fatalf("sidecar %s, %d declarations; want %s, 3", ix.Stats().Sidecar, ix.Stats().Schemas, want)
		}
		for f, wantDef := range []int16{0, 1, 0, 1} {
			if d := ix.Descr(0, f); d.MaxDefinitionLevel() != wantDef {
				t.Errorf("%s: file %d: max definition level %d, want %d", want, f, d.MaxDefinitionLevel(), wantDef)
			}
			c := ix.Chunk(0, ix.File(f).FirstChunk)
			if c.Descr != ix.Descr(0, f) {
				t.Errorf("%s: file %d: chunk descriptor is not the file's", want, f)
			}
		}
		if ix.Descr(0, 0) != ix.Descr(0, 2) {
			t.Errorf("files declared alike do not share a descriptor")
		}
		if ix.Leaf(0, 3) != 2 || ix.Leaf(0, 0) != 0 {
			t.Errorf("leaves %d, %d; want 0, 2", ix.Leaf(0, 0), ix.Leaf(0, 3))
		}
	}
	// a column of another type fails, naming both files
	bad := filepath.Join(dir, "e.parquet")
	f, err := os.Create(bad)
	if err != nil {
		t.Fatal(err)
	}
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}}, nil)
	w, err := pqarrow.NewFileWriter(sch, f, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	_, err = Build(context.Background(), append(files, bad), Options{Columns: []string{"id"}, NoSidecar: true, Logf: t.Logf})
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), files[0]) || !strings.Contains(err.Error(), "physical type") {
		t.Fatalf("Build: %v", err)
	}
}

// countingReader counts the ranges read that end at their file's end and
// are longer than exact footer reads: parsed footers' tail reads.
type countingReader struct {
	r     engine.PreadReader
	mu    sync.Mutex
	reads []engine.Range
}

func (c *countingReader) ReadBatch(ctx context.Context, rs []engine.Range, fn func(int, []byte, error)) error {
	c.mu.Lock()
	c.reads = append(c.reads, rs...)
	c.mu.Unlock()
	return c.r.ReadBatch(ctx, rs, fn)
}

// TestSidecarHitParsesOneFooterPerDeclaration: a sidecar load reads every
// footer exactly and parses one per declaration, not one per file.
func TestSidecarHitParsesOneFooterPerDeclaration(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i, optional := range []bool{false, true, false, true, false} {
		p := filepath.Join(dir, string(rune('a'+i))+".parquet")
		writeIDFile(t, p, optional, 0)
		files = append(files, p)
	}
	sc := filepath.Join(t.TempDir(), "sc")
	buildSC(t, files, Options{Columns: []string{"id"}, Sidecar: sc})
	cr := &countingReader{}
	ix, _ := buildSC(t, files, Options{Columns: []string{"id"}, Sidecar: sc, Reader: cr})
	if ix.Stats().Sidecar != "hit" {
		t.Fatalf("sidecar %s", ix.Stats().Sidecar)
	}
	tails := 0
	for _, r := range cr.reads {
		st, _ := os.Stat(r.Path)
		if r.Len == int(min(int64(footerTailRead), st.Size())) {
			tails++
		}
	}
	if len(cr.reads) != len(files) || tails != 2 {
		t.Fatalf("%d reads, %d tail reads; want %d, 2", len(cr.reads), tails, len(files))
	}
}
