package term

import (
	"os"
	"testing"
)

func TestIsTerminalFile(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Fatal("a regular file is taken as a terminal")
	}
}
