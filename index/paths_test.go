package index

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pagefeed/pagefeed/internal/gen"
)

// buildSoon runs Build and fails the test when it has not returned within
// a second: every path check is a stat, so a hang means something opened a
// FIFO.
func buildSoon(t *testing.T, paths []string, logf func(string, ...any)) (*Index, error) {
	t.Helper()
	type res struct {
		ix  *Index
		err error
	}
	ch := make(chan res, 1)
	go func() {
		ix, err := Build(context.Background(), paths, Options{NoSidecar: true, Logf: logf})
		ch <- res{ix, err}
	}()
	select {
	case r := <-ch:
		return r.ix, r.err
	case <-time.After(time.Second):
		// Unblock the open so the goroutine ends: a writer on each FIFO.
		for _, p := range paths {
			if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		}
		t.Fatalf("Build(%v) still blocked after 1 s", paths)
		return nil, nil
	}
}

// TestPathsNotRegularFiles: a FIFO, a socket, a character device or a
// symbolic link loop named as a path fails at once with an error naming
// it and its kind; in a directory or a glob's matches such entries are
// skipped with a notice.
func TestPathsNotRegularFiles(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	genDataset(t, gen.Config{Dir: data, Files: 1, RowsPerFile: 40, MeanTokens: 4})
	fifo := filepath.Join(data, "pipe.parquet")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	sock := filepath.Join(data, "sock.parquet")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	loop := filepath.Join(dir, "loop.parquet")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	toFifo := filepath.Join(data, "link.parquet")
	if err := os.Symlink(fifo, toFifo); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, kind string
	}{
		{fifo, "FIFO"}, {sock, "socket"}, {"/dev/null", "character device"}, {loop, "symbolic link loop"}, {toFifo, "FIFO"},
	} {
		_, err := buildSoon(t, []string{c.path}, t.Logf)
		if !errors.Is(err, ErrNotFile) || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.kind) {
			t.Errorf("%s: %v, want ErrNotFile naming it and %q", c.path, err, c.kind)
		}
	}
	if _, err := buildSoon(t, []string{loop}, t.Logf); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("symbolic link loop: %v does not wrap ELOOP", err)
	}
	// A directory and a glob skip them, each with a notice.
	for _, p := range []string{data, filepath.Join(data, "*.parquet")} {
		var mu sync.Mutex
		var notes []string
		ix, err := buildSoon(t, []string{p}, func(f string, a ...any) {
			mu.Lock()
			notes = append(notes, fmt.Sprintf(f, a...))
			mu.Unlock()
		})
		if err != nil || ix.NumFiles() != 1 || ix.NumRows() != 40 {
			t.Fatalf("%s: %v, want the one Parquet file", p, err)
		}
		joined := strings.Join(notes, "\n")
		for _, s := range []string{"pipe.parquet: not a regular file (a FIFO)", "sock.parquet: not a regular file (a socket)", "link.parquet: not a regular file (a FIFO)"} {
			if !strings.Contains(joined, s) {
				t.Errorf("%s: no notice %q in %q", p, s, joined)
			}
		}
	}
	// A loop inside a directory names a Parquet file that cannot be read.
	if err := os.Symlink(filepath.Join(data, "l2.parquet"), filepath.Join(data, "l2.parquet")); err != nil {
		t.Fatal(err)
	}
	if _, err := buildSoon(t, []string{data}, t.Logf); !errors.Is(err, ErrNotFile) || !strings.Contains(err.Error(), "l2.parquet") {
		t.Errorf("loop in a directory: %v, want ErrNotFile naming it", err)
	}
}
