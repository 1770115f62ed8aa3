package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pagefeed/pagefeed/bench"
)

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "data")
	if err := os.WriteFile(file, make([]byte, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	badJob := filepath.Join(dir, "bad.fio")
	os.WriteFile(badJob, []byte("[a]\nfilename="+file+"\niodepth=lots\n"), 0o644)
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"no args", nil, "no job"},
		{"missing file without size", []string{"--name=a", "--filename=" + filepath.Join(dir, "nope")}, "no such file, and no --size"},
		{"directory", []string{"--name=a", "--filename=" + dir}, "is a directory"},
		{"misaligned direct bs", []string{"--name=a", "--filename=" + file, "--direct=1", "--bs=1000"}, "O_DIRECT alignment"},
		{"iodepth 0", []string{"--name=a", "--filename=" + file, "--iodepth=0"}, "iodepth=0 out of range [1, 4096]"},
		{"iodepth too deep", []string{"--name=a", "--filename=" + file, "--iodepth", "5000"}, "iodepth=5000 out of range"},
		{"unknown flag", []string{"--name=a", "--filename=" + file, "--frobnicate=1"}, `unknown option "frobnicate"`},
		{"unknown engine", []string{"--name=a", "--filename=" + file, "--ioengine=libaio"}, `unknown ioengine "libaio"`},
		{"missing job file", []string{filepath.Join(dir, "none.fio")}, "bad job file"},
		{"directory as job file", []string{dir}, "bad job file"},
		{"malformed job file", []string{badJob}, "bad.fio:3:"},
		{"bad size", []string{"--name=a", "--filename=" + file, "--size=2q"}, "size"},
		{"bad runtime", []string{"--name=a", "--filename=" + file, "--runtime=5x"}, "time"},
		{"compare bad flag", []string{"--compare-fio", "--pairs=x"}, "--compare-fio"},
		{"compare bad size", []string{"--compare-fio", "--size=1k"}, "size"},
		{"compare bad mode", []string{"--compare-fio", "--mode=fastest"}, "--mode"},
		{"write workload", []string{"--name=a", "--filename=" + file, "--rw=randwrite"}, "pagebench only reads"},
		{"verify", []string{"--name=a", "--filename=" + file, "--verify=crc32c"}, "pagebench only reads"},
		{"output format", []string{"--name=a", "--filename=" + file, "--output-format=json,terse"}, `"terse" is not normal, json or json+`},
		{"output dir", []string{"--name=a", "--filename=" + file, "--output=" + filepath.Join(dir, "no", "such", "out")}, "--output"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runMain(tt.args, &stdout, &stderr)
			e := stderr.String()
			if code != 1 {
				t.Errorf("exit %d, want 1 (stderr %q)", code, e)
			}
			if strings.Count(e, "\n") != 1 || !strings.HasPrefix(e, "pagebench: ") || !strings.Contains(e, tt.msg) {
				t.Errorf("stderr %q: want one line \"pagebench: ...%s...\"", e, tt.msg)
			}
			if strings.Contains(e, "goroutine ") || strings.Contains(e, "panic") {
				t.Errorf("stack trace on stderr: %q", e)
			}
		})
	}
}

func TestRunJSON(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "data")
	var stdout, stderr bytes.Buffer
	code := runMain([]string{"--name=rr", "--filename=" + file, "--size=1m", "--rw=randread", "--bs=4k",
		"--ioengine=psync", "--runtime=300ms", "--time_based", "--output-format=json"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if strings.Contains(stderr.String(), "Jobs:") {
		t.Errorf("status line drawn on a non-terminal: %q", stderr.String())
	}
	if !strings.Contains(stderr.String(), "laying out IO file") {
		t.Errorf("no layout notice on stderr: %q", stderr.String())
	}
	var out bench.FioOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout.String())
	}
	if len(out.Jobs) != 1 || out.Jobs[0].JobName != "rr" || out.Jobs[0].Read.TotalIOs == 0 ||
		out.Jobs[0].JobOptions["rw"] != "randread" {
		t.Errorf("jobs: %+v", out.Jobs)
	}
}

func TestRunJobFileNormal(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "data")
	job := filepath.Join(dir, "j.fio")
	os.WriteFile(job, []byte("[global]\nfilename="+file+"\nsize=256k\n\n[seq]\nrw=read\n\n[mm]\nioengine=mmap\nrw=randread\n"), 0o644)
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{job}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"seq: (groupid=0", "mm: (groupid=1", "Run status group 1 (all jobs):", "io=256KiB"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
}

func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"--help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "--iodepth") {
		t.Errorf("exit %d, stdout %q", code, stdout.String())
	}
}

// TestOutputFile checks --output with two formats: the file holds json+
// (clat bins) then the normal report, and nothing goes to stdout.
func TestOutputFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "data")
	if err := os.WriteFile(file, make([]byte, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.txt")
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"--name=a", "--filename=" + file, "--output=" + out, "--output-format=json+,normal"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if stdout.Len() != 0 || !strings.Contains(s, `"bins"`) || !strings.Contains(s, "Run status group 0") ||
		strings.Index(s, `"bins"`) > strings.Index(s, "Run status group 0") {
		t.Errorf("stdout %q; file:\n%s", stdout.String(), s)
	}
}
