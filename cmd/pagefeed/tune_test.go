package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func runTuneCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runMain(append([]string{"tune"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// TestTuneCommandErrors: every bad input is one line on stderr, exit 1,
// and nothing is written.
func TestTuneCommandErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "data")
	if err := os.WriteFile(file, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Join(dir, "blocker")
	os.WriteFile(blocker, nil, 0o644)
	out := filepath.Join(dir, "out")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no input", nil, "exactly one of --filename and --parquet"},
		{"bad depth list", []string{"--filename", file, "--iodepth", "1,2,x"}, `--iodepth 1,2,x`},
		{"zero depth", []string{"--filename", file, "--iodepth", "0,1"}, "out of range"},
		{"off sequence", []string{"--filename", file, "--iodepth", "1,2,4,...,100"}, "not on the sequence"},
		{"bad bs", []string{"--filename", file, "--bs", "4k,1q"}, "unknown unit"},
		{"tiny bs", []string{"--filename", file, "--bs", "1"}, "out of range"},
		{"dup numjobs", []string{"--filename", file, "--numjobs", "1,1"}, "twice"},
		{"bad engine", []string{"--filename", file, "--ioengine", "io_uring,libaio"}, `"libaio"`},
		{"mmap on parquet", []string{"--parquet", dir, "--ioengine", "mmap"}, `"mmap"`},
		{"short runtime", []string{"--filename", file, "--runtime", "100ms"}, "too short to measure"},
		{"bad runtime", []string{"--filename", file, "--runtime", "soon"}, "--runtime"},
		{"unwritable out", []string{"--filename", file, "--out", filepath.Join(blocker, "x")}, "mkdir"},
		{"missing file", []string{"--filename", filepath.Join(dir, "nope")}, "no --size"},
		{"raw flag on parquet", []string{"--parquet", dir, "--bs", "4k"}, "--bs applies to --filename"},
		{"parquet flag on raw", []string{"--filename", file, "--batch", "8"}, "--batch applies to --parquet"},
		{"unknown flag", []string{"--filename", file, "--depth", "4"}, "flag provided but not defined"},
		{"bad size", []string{"--filename", file, "--size", "big"}, "--size"},
		{"parquet missing", []string{"--parquet", filepath.Join(dir, "none*.parquet")}, "none*.parquet"},
		{"sweep on raw", []string{"--filename", file, "--sweep-memory", "1,2"}, "--sweep-memory applies to --parquet"},
		{"io-mode on raw", []string{"--filename", file, "--io-mode", "direct"}, "--io-mode applies to --parquet"},
		{"direct on parquet", []string{"--parquet", dir, "--direct", "off"}, "--direct applies to --filename"},
		{"bad sweep", []string{"--parquet", dir, "--sweep-memory", "1,0"}, "--sweep-memory"},
		{"bad io-mode", []string{"--parquet", dir, "--io-mode", "mmap"}, "--io-mode"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if !strings.Contains(strings.Join(args, " "), "--out") {
				args = append(args, "--out", out)
			}
			code, stdout, stderr := runTuneCmd(t, args...)
			if code != 1 {
				t.Fatalf("exit %d, want 1 (stderr %q)", code, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) || !strings.HasPrefix(stderr, "pagefeed tune: ") {
				t.Errorf("stderr %q, want one line containing %q", stderr, tc.want)
			}
			if _, err := os.Stat(filepath.Join(out, "results.csv")); err == nil {
				t.Error("results.csv written for bad input")
			}
		})
	}
}

// TestTuneCommandTiny runs two 200ms points on a small file and checks
// every output file and the knee summary.
func TestTuneCommandTiny(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent()) // engines and loaders are closed
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runTuneCmd(t, "--filename", filepath.Join(dir, "data"), "--size", "4m",
		"--iodepth", "1,2", "--bs", "4k", "--runtime", "200ms", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "\r") {
		t.Errorf("progress bar drawn off a terminal: %q", stderr)
	}
	for _, w := range []string{"knee iodepth", "recommended: --ioengine=io_uring --numjobs=1 --bs=4k --iodepth=", "results.csv"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("stdout lacks %q:\n%s", w, stdout)
		}
	}
	for _, f := range []string{"results.csv", "results.json", "iops_vs_iodepth.svg", "iops_vs_iodepth.png",
		"bw_vs_iodepth.svg", "bw_vs_iodepth.png", "p99_vs_iodepth.svg", "p99_vs_iodepth.png"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Points []struct {
			IODepth int     `json:"iodepth"`
			IOPS    float64 `json:"iops"`
		} `json:"points"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Points) != 2 || doc.Points[0].IODepth != 1 || doc.Points[1].IODepth != 2 || doc.Points[0].IOPS <= 0 {
		t.Fatalf("results.json points %+v", doc.Points)
	}

	// --replot redraws from results.json without measuring.
	out2 := filepath.Join(dir, "out2")
	code, stdout2, stderr := runTuneCmd(t, "--replot", out, "--out", out2)
	if code != 0 || !strings.Contains(stdout2, "recommended: --ioengine=io_uring") {
		t.Fatalf("replot: exit %d, stdout %q, stderr %q", code, stdout2, stderr)
	}
	if _, err := os.Stat(filepath.Join(out2, "bw_vs_iodepth.png")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(out2, "results.json"), []byte(`{"mode":"sideways"}`), 0o644)
	if code, _, stderr := runTuneCmd(t, "--replot", out2, "--out", out2); code != 1 || !strings.Contains(stderr, "mode") {
		t.Fatalf("replot of a bad results.json: exit %d, %q", code, stderr)
	}
}

func TestTuneBar(t *testing.T) {
	var b bytes.Buffer
	bar := &tuneBar{w: &b, per: time.Second, enabled: true}
	bar.update(1, 4, "io_uring bs=4k iodepth=2")
	if got := b.String(); !strings.Contains(got, "[#######.......................] 1/4 eta 3s  io_uring bs=4k iodepth=2") {
		t.Fatalf("bar %q", got)
	}
	bar.clear()
	if !strings.HasSuffix(b.String(), "\r\x1b[K") {
		t.Fatalf("clear left %q", b.String())
	}
	b.Reset()
	off := newTuneBar(&b, time.Second) // not a terminal
	off.update(1, 4, "x")
	off.clear()
	if b.Len() != 0 {
		t.Fatalf("bar drawn off a terminal: %q", b.String())
	}
}
