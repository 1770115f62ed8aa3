package main

import (
	"encoding/json"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/pagefeed/pagefeed/codec"
	"github.com/pagefeed/pagefeed/codec/codectest"
)

func TestVerifyCommand(t *testing.T) {
	path, _, _ := writeCatFixture(t)
	code, out, errOut := runCmd(t, "verify", path)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want one per column:\n%s", len(lines), out)
	}
	for _, l := range lines {
		if !strings.Contains(l, " OK ") {
			t.Errorf("line %q is not OK", l)
		}
	}
	code, out, _ = runCmd(t, "verify", "--json", path, "--column", "tokens", "--seed", "9")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var r verifyResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if r.Status != "OK" || r.Column != "tokens.list.element" || r.Rows != 6 || r.Pages < 4 {
		t.Errorf("result %+v", r)
	}
}

func TestVerifyCommandFailures(t *testing.T) {
	dir := t.TempDir()
	notParquet := filepath.Join(dir, "x.parquet")
	if err := os.WriteFile(notParquet, []byte("not parquet at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	path, _, _ := writeCatFixture(t)
	for _, args := range [][]string{
		{"verify"},
		{"verify", notParquet},
		{"verify", path, "--column", "nope"},
	} {
		if code, _, _ := runCmd(t, args...); code == 0 {
			t.Errorf("%v: exit 0", args)
		}
	}
	// parquet-testing, where present: nothing mismatches; the only failure
	// is the file arrow-go cannot open.
	data := "../../../shared/parquet-testing/data"
	files, _ := filepath.Glob(filepath.Join(data, "*.parquet"))
	if len(files) == 0 {
		t.Skip("parquet-testing data not present")
	}
	_, out, _ := runCmd(t, append([]string{"verify"}, files...)...)
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.Contains(l, " MISMATCH") || (strings.Contains(l, " ERROR") && !strings.Contains(l, "unknown-logical-type")) {
			t.Errorf("%s", l)
		}
	}
}

// TestVerifyFindsMismatch checks that a reference differing from the
// decoded pages is reported at the right row.
func TestVerifyFindsMismatch(t *testing.T) {
	path, _, _ := writeCatFixture(t)
	rdr, err := codectest.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// column 1 is "name": rows 0..3 in row group 0
	b := array.NewStringBuilder(memory.DefaultAllocator)
	b.AppendValues([]string{`row "a"`, "", `row "X"`, ""}, []bool{true, false, true, false})
	ref := b.NewArray()
	b.Release()
	defer ref.Release()
	dec := codec.NewDecoder(codec.Options{})
	defer dec.Close()
	_, rows, m, err := verifyChunk(dec, f, path, rdr, 0, 1, ref, rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	if rows != 4 || m == nil || m.Row != 2 {
		t.Fatalf("rows %d, difference %v; want 4, row 2", rows, m)
	}
	_ = arrow.BinaryTypes.String
}

// TestVerifyRefusesFIFO checks that verify names a FIFO (or any path that
// is not a regular file) as an ERROR instead of opening it, which would
// wait for a writer that never comes.
func TestVerifyRefusesFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "x.parquet")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	t.Cleanup(func() {
		// A verify stuck opening the FIFO (the bug) gets its writer and ends.
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
	code, out, _ := runCmdWithin(t, "verify", fifo)
	if code == 0 || !strings.Contains(out, fifo+" - ERROR") || !strings.Contains(out, "not a regular file") {
		t.Errorf("exit %d, output %q: want an ERROR naming the FIFO", code, out)
	}
}
