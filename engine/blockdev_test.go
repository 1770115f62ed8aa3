package engine

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// loopDevice attaches a file of known content to a loop device, or skips.
func loopDevice(t *testing.T, size int) (dev string, content []byte) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for losetup")
	}
	if _, err := exec.LookPath("losetup"); err != nil {
		t.Skip("no losetup")
	}
	content = make([]byte, size)
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range content {
		content[i] = byte(rng.Uint32())
	}
	img := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(img, content, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "-f", "--show", img).CombinedOutput()
	if err != nil {
		t.Skipf("losetup: %v: %s", err, out)
	}
	dev = strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "-d", dev).Run() })
	return dev, content
}

func TestBlockDeviceSizeAndReads(t *testing.T) {
	dev, content := loopDevice(t, 4<<20)
	e, err := New(Options{Kind: IOUring, QueueDepth: 16, SlotSize: 128 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	f, err := e.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	if f.Size() != int64(len(content)) {
		t.Fatalf("%s: size %d, want %d", dev, f.Size(), len(content))
	}
	q := e.NewQueue(QueueOptions{})
	rng := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 50; i++ {
		off := rng.Int64N(int64(len(content)) - 100)
		n := 1 + rng.IntN(min(100<<10, len(content)-int(off)))
		if err := q.Submit(context.Background(), []Request{{File: f, Off: off, Len: n, Worker: -1}}); err != nil {
			t.Fatal(err)
		}
		c, err := q.Next(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if c.Err != nil || !bytes.Equal(c.Data, content[off:off+int64(n)]) {
			t.Fatalf("read %d at %d: err %v, %d bytes differ from the device's content", n, off, c.Err, len(c.Data))
		}
		c.Release()
	}
}
