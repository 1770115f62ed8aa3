package rinas

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/index"
)

// copyDataset copies ds's files into a fresh folder the test may damage.
func copyDataset(t *testing.T, ds dataset) dataset {
	t.Helper()
	dir := t.TempDir()
	out := dataset{rows: ds.rows}
	for _, p := range ds.paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		q := filepath.Join(dir, filepath.Base(p))
		if err := os.WriteFile(q, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out.paths = append(out.paths, q)
	}
	return out
}

// runWithin opens a loader on cfg and reads every batch, failing the test
// if that does not end within 10 s. It returns the ids delivered and the
// first error (Open's or Next's; nil when the epoch ended). A panic
// crashes the test binary, which fails too.
func runWithin(t *testing.T, cfg Config, damage func()) (ids []int64, err error) {
	t.Helper()
	type result struct {
		ids []int64
		err error
	}
	ch := make(chan result, 1)
	go func() {
		var r result
		defer func() { ch <- r }()
		ctx := context.Background()
		l, err := Open(ctx, cfg)
		if err != nil {
			r.err = err
			return
		}
		defer l.Close()
		if damage != nil {
			damage()
		}
		for {
			b, err := l.Next(ctx)
			if err == io.EOF {
				return
			}
			if err != nil {
				r.err = err
				return
			}
			for _, a := range b.Arrays {
				r.ids = append(r.ids, a.(*array.Int64).Int64Values()...)
			}
			b.Release()
		}
	}()
	select {
	case r := <-ch:
		return r.ids, r.err
	case <-time.After(10 * time.Second):
		t.Fatal("the loader did not finish within 10 s")
		return nil, nil
	}
}

// namesAFile reports whether err's message names one of paths.
func namesAFile(err error, paths []string) bool {
	for _, p := range paths {
		if strings.Contains(err.Error(), p) {
			return true
		}
	}
	return false
}

// TestBadFilesLoaderPageFlips flips bits inside data pages after the
// index was built: the loader must deliver the epoch (a flip may only
// change a value) or fail with an error naming the file, in time; with
// SkipBadPages it must end the epoch, counting what it dropped.
func TestBadFilesLoaderPageFlips(t *testing.T) {
	src := manyPages(t)
	r := rand.New(rand.NewPCG(2, 2))
	outcomes := map[string]int{}
	for i := 0; i < 24; i++ {
		ds := copyDataset(t, src)
		ix, err := index.Build(context.Background(), ds.paths, index.Options{Columns: []string{"id"}, NoSidecar: true, Logf: func(string, ...any) {}})
		if err != nil {
			t.Fatal(err)
		}
		// Damage a few pages of one file: headers and bodies alike.
		g0 := r.IntN(ix.NumPages(0))
		path := ix.File(ix.Locate(0, g0).File).Path
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 4; k++ {
			loc := ix.Locate(0, min(g0+k, ix.NumPages(0)-1))
			if ix.File(loc.File).Path != path {
				continue
			}
			pos := loc.Offset + r.Int64N(int64(loc.Size))
			b[pos] ^= 1 << r.IntN(8)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		// Bit rot keeps the size and mtime: the identity check passes and
		// the pages' own checks must catch it.
		if err := os.Chtimes(path, st.ModTime(), st.ModTime()); err != nil {
			t.Fatal(err)
		}
		for _, skip := range []bool{false, true} {
			cfg := baseConfig(ds, "id")
			cfg.SharedIndex = ix
			cfg.SkipBadPages = skip
			ids, err := runWithin(t, cfg, nil)
			switch {
			case err != nil && skip && IsCorruption(err):
				t.Fatalf("flip %d with SkipBadPages: %v", i, err)
			case err != nil && skip:
				// A flip may make a page look unsupported or too large
				// rather than corrupt: those fail the epoch.
				outcomes["error/skip"]++
				if !namesAFile(err, ds.paths) {
					t.Errorf("flip %d: %q names no file", i, err)
				}
			case err != nil:
				outcomes["error"]++
				if !namesAFile(err, ds.paths) {
					t.Errorf("flip %d: %q names no file", i, err)
				}
			case int64(len(ids)) == ds.rows:
				outcomes[fmt.Sprintf("delivered/skip=%v", skip)]++
			case skip:
				outcomes["skipped"]++
			default:
				t.Fatalf("flip %d: %d of %d rows and no error", i, len(ids), ds.rows)
			}
		}
	}
	t.Logf("outcomes: %v", outcomes)
}

// TestBadFilesLoaderFileChanges changes a file between indexing and
// reading (the index was built on the old one): it shrinks, grows, is
// removed, or is replaced by a directory. Each fails the epoch with an
// error naming the file, in time: a file whose size or mtime differs from
// the index's is not the one indexed, growth included.
func TestBadFilesLoaderFileChanges(t *testing.T) {
	src := manyPages(t)
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, path string)
		ok     bool // every row still arrives
	}{
		{"shrinks", func(t *testing.T, p string) {
			st, _ := os.Stat(p)
			if err := os.Truncate(p, st.Size()/2); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"shrinks to nothing", func(t *testing.T, p string) {
			if err := os.Truncate(p, 0); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"grows", func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(make([]byte, 1<<20))
			f.Close()
		}, false},
		{"disappears", func(t *testing.T, p string) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"becomes a directory", func(t *testing.T, p string) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := copyDataset(t, src)
			ix, err := index.Build(context.Background(), ds.paths, index.Options{Columns: []string{"id"}, NoSidecar: true, Logf: func(string, ...any) {}})
			if err != nil {
				t.Fatal(err)
			}
			victim := ds.paths[1]
			tc.change(t, victim)
			cfg := baseConfig(ds, "id")
			cfg.SharedIndex = ix
			ids, err := runWithin(t, cfg, nil)
			if tc.ok {
				if err != nil {
					t.Fatalf("Next: %v", err)
				}
				checkExactlyOnce(t, ids, ds.rows)
				return
			}
			if err == nil {
				t.Fatalf("%d of %d rows delivered and no error", len(ids), ds.rows)
			}
			if !strings.Contains(err.Error(), victim) {
				t.Fatalf("error %q does not name %s", err, victim)
			}
			t.Logf("error: %v", err)
		})
	}
}

// TestBadFilesLoaderFileChangesWhileReading shrinks a file while the loader
// runs (after Open, whose producer has started reading): the epoch ends in
// time with every row or with an error naming the file.
func TestBadFilesLoaderFileChangesWhileReading(t *testing.T) {
	ds := copyDataset(t, manyPages(t))
	cfg := baseConfig(ds, "id")
	cfg.BatchPages = 4
	cfg.Index.NoSidecar = true
	victim := ds.paths[len(ds.paths)-1]
	ids, err := runWithin(t, cfg, func() {
		if err := os.Truncate(victim, 100); err != nil {
			t.Error(err)
		}
	})
	switch {
	case err == nil && int64(len(ids)) == ds.rows:
		t.Log("every row arrived (the file was read before it shrank)")
	case err == nil:
		t.Fatalf("%d of %d rows and no error", len(ids), ds.rows)
	case !strings.Contains(err.Error(), victim):
		t.Fatalf("error %q does not name %s", err, victim)
	default:
		t.Logf("error: %v", err)
	}
}

// TestBadFilesLoaderOpen: a truncated or unreadable file fails Open with an
// error naming it.
func TestBadFilesLoaderOpen(t *testing.T) {
	ds := copyDataset(t, manyPages(t))
	victim := ds.paths[0]
	b, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{0, 3, 4, 100, len(b) / 2, len(b) - 9, len(b) - 1} {
		if err := os.WriteFile(victim, b[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := runWithin(t, baseConfig(ds, "id"), nil)
		if err == nil || !strings.Contains(err.Error(), victim) {
			t.Fatalf("cut at %d: %v, want an error naming %s", cut, err, victim)
		}
		if !errors.Is(err, index.ErrNotParquet) && !errors.Is(err, index.ErrCorrupt) {
			t.Errorf("cut at %d: %v is neither ErrNotParquet nor ErrCorrupt", cut, err)
		}
	}
}

// TestBadFilesLoaderPermission: a file the process may not read fails
// Open with a permission error naming it. Root reads mode-000 files, so
// as root the test skips (a directory in the file's place, the other
// unreadable case, is in TestBadFilesLoaderFileChanges).
func TestBadFilesLoaderPermission(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: mode 000 does not deny reads")
	}
	ds := copyDataset(t, manyPages(t))
	victim := ds.paths[0]
	if err := os.Chmod(victim, 0o000); err != nil {
		t.Fatal(err)
	}
	if _, err := runWithin(t, baseConfig(ds, "id"), nil); err == nil || !errors.Is(err, os.ErrPermission) || !strings.Contains(err.Error(), victim) {
		t.Fatalf("unreadable: %v, want a permission error naming %s", err, victim)
	}
}

// TestBadFilesLoaderShrinksUnderARead: a file that shrinks while the
// engine has a read of it in flight (the read's rest then finds nothing:
// engine.ErrChanged) is the corruption a file that shrank before its read
// is: the epoch fails with ErrFileChanged naming the file, or, with
// SkipBadPages, its pages are skipped and every other row arrives once.
func TestBadFilesLoaderShrinksUnderARead(t *testing.T) {
	src := manyPages(t)
	for _, skip := range []bool{false, true} {
		t.Run(fmt.Sprintf("skip=%v", skip), func(t *testing.T) {
			ds := copyDataset(t, src)
			victim := ds.paths[1]
			var once sync.Once
			cfg := baseConfig(ds, "id")
			cfg.SkipBadPages = skip
			cfg.Engine.Faults = engine.FaultFunc(func(f *engine.File, _ int64, _, res int) int {
				if f.Path() != victim || res <= 1 {
					return res
				}
				shrunk := false
				once.Do(func() {
					if err := os.Truncate(victim, 100); err != nil {
						t.Error(err)
					}
					shrunk = true
				})
				if shrunk {
					return 1 // a short first attempt: the rest is read from the shrunk file
				}
				return res
			})
			ids, err := runWithin(t, cfg, nil)
			if skip {
				if err != nil {
					t.Fatalf("SkipBadPages: %v", err)
				}
				seen := make(map[int64]bool, len(ids))
				for _, id := range ids {
					if seen[id] {
						t.Fatalf("id %d delivered twice", id)
					}
					seen[id] = true
				}
				if int64(len(ids)) >= ds.rows {
					t.Fatalf("%d of %d rows with the victim's pages gone", len(ids), ds.rows)
				}
				return
			}
			if err == nil || !IsCorruption(err) || !errors.Is(err, ErrFileChanged) || !errors.Is(err, engine.ErrChanged) || !strings.Contains(err.Error(), victim) {
				t.Fatalf("error %v: want ErrFileChanged (a corruption) wrapping engine.ErrChanged, naming %s", err, victim)
			}
		})
	}
}

// TestDirectReaderFileShrinks: ordered fetch's synchronous reads report a
// file that shrank after they opened it (engine.ErrChanged) as the
// corruption ErrFileChanged naming the file and the page's offset, as the
// queued reads do; a file that was already short says so too.
func TestDirectReaderFileShrinks(t *testing.T) {
	ds := copyDataset(t, manyPages(t))
	victim := ds.paths[0]
	st, err := os.Stat(victim)
	if err != nil {
		t.Fatal(err)
	}
	r := newDirectReader(8192, engine.TryOn)
	defer r.close()
	if _, _, err := r.read(victim, 0, 4); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(victim, 100); err != nil {
		t.Fatal(err)
	}
	off := st.Size() / 2
	_, _, err = r.read(victim, off, 1000)
	var pe *PageError
	if !errors.Is(err, ErrFileChanged) || !errors.Is(err, engine.ErrChanged) || !IsCorruption(err) || !errors.As(err, &pe) || pe.Path != victim || pe.Off != off {
		t.Fatalf("read of a shrunk file: %v; want ErrFileChanged wrapping engine.ErrChanged at %s:%d", err, victim, off)
	}
	if _, err := preadFile(victim, off, 1000); !errors.Is(err, ErrFileChanged) || !strings.Contains(err.Error(), victim) {
		t.Fatalf("preadFile of a short file: %v", err)
	}
}
