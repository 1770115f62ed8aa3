package rinas

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pagefeed/pagefeed/index"
)

// TestOpenFIFOFailsAtOnce: a FIFO named as a path fails Open within a
// second, at defaults, with an error naming it; before, Open blocked in
// the open of the FIFO until a writer came.
func TestOpenFIFOFailsAtOnce(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "data.parquet")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	loop := filepath.Join(dir, "loop.parquet")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, loop} {
		done := make(chan error, 1)
		go func() {
			l, err := Open(context.Background(), Config{Paths: []string{p}})
			if err == nil {
				l.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, index.ErrNotFile) || !strings.Contains(err.Error(), p) {
				t.Errorf("Open(%s): %v, want index.ErrNotFile naming it", p, err)
			}
		case <-time.After(time.Second):
			if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close() // let the blocked open go
			}
			t.Fatalf("Open(%s) still blocked after 1 s", p)
		}
	}
}
