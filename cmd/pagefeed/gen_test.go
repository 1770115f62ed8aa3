package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runMain(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestGenCommand(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCmd(t, "gen", "--out", dir, "--files", "2", "--rows-per-file", "300", "--page-size", "2048",
		"--codec", "snappy", "--page-version", "2", "--page-index", "off", "--dictionary", "on", "--seed", "3", "--mean-tokens", "32")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, s := range []string{"wrote 2 files", "600 rows", "pages", "input_ids", "bytes"} {
		if !strings.Contains(out, s) {
			t.Errorf("output %q lacks %q", out, s)
		}
	}
	if strings.Count(errs, "part-0000") != 2 {
		t.Errorf("want a progress line per file on stderr, got %q", errs)
	}
	a, err := os.ReadFile(filepath.Join(dir, "part-00001.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	// the same flags write the same bytes
	dir2 := t.TempDir()
	if code, _, errs := runCmd(t, "gen", "--out", dir2, "--files", "2", "--rows-per-file", "300", "--page-size", "2048",
		"--codec", "snappy", "--page-version", "2", "--page-index", "off", "--dictionary", "on", "--seed", "3", "--mean-tokens", "32", "--quiet"); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, _ := os.ReadFile(filepath.Join(dir2, "part-00001.parquet"))
	if !bytes.Equal(a, b) {
		t.Error("same flags, different bytes")
	}
}

func TestGenCommandErrors(t *testing.T) {
	for _, args := range [][]string{
		{"gen"},
		{"gen", "--out", t.TempDir(), "--codec", "lzo"},
		{"gen", "--out", t.TempDir(), "--page-version", "3"},
		{"gen", "--out", t.TempDir(), "--page-index", "maybe"},
		{"gen", "--out", t.TempDir(), "--files", "0"},
		{"gen", "--out", t.TempDir(), "stray"},
	} {
		code, _, errs := runCmd(t, args...)
		if code == 0 || errs == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
}
