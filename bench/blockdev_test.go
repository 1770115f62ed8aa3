package bench

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestPrepareFileBlockDevice(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for losetup")
	}
	img := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(img, make([]byte, 8<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "-f", "--show", img).CombinedOutput()
	if err != nil {
		t.Skipf("losetup: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	defer exec.Command("losetup", "-d", dev).Run()

	job := DefaultJob()
	job.Name, job.Filename, job.BS, job.Direct = "dev", dev, 4096, true
	if _, _, err := prepareFiles(&job, io.Discard); err != nil {
		t.Fatal(err)
	}
	if job.Size != 8<<20 {
		t.Fatalf("size %d, want the device's %d", job.Size, 8<<20)
	}
	job.Size = 1 << 30
	if _, _, err := prepareFiles(&job, io.Discard); !errors.Is(err, ErrBadOption) {
		t.Fatalf("size beyond the device: %v, want ErrBadOption (devices are never laid out)", err)
	}
}
