package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeJSON is a minimal fio document with the given figures.
func fakeJSON(iops float64, p99 int64, usr, sys float64) []byte {
	return fmt.Appendf(nil, `note: fio prints this before the JSON
{"fio version":"fio-3.33","jobs":[{"jobname":"x","usr_cpu":%g,"sys_cpu":%g,
 "read":{"iops":%g,"bw_bytes":%d,"runtime":1000,"total_ios":%d,
 "clat_ns":{"percentile":{"99.000000":%d}}}}]}`, usr, sys, iops, int64(iops)*4096, int64(iops), p99)
}

func TestCompareFio(t *testing.T) {
	var calls []string
	var fioRun, pbRun int
	bestRuns := 0
	exec := func(_ context.Context, bin string, args []string) ([]byte, error) {
		all := strings.Join(args, " ")
		file := ""
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, "--filename="); ok {
				file = v
			}
		}
		if st, err := os.Stat(file); err != nil || st.Size() != 4<<20 {
			t.Errorf("%s got file %q: %v", bin, file, err)
		}
		if !strings.Contains(all, "--output-format=json --rw=randread") {
			t.Errorf("args %q", args)
		}
		if strings.Contains(all, "--fixedbufs") {
			bestRuns++
			if !strings.HasSuffix(all, "--fixedbufs --registerfiles --iodepth_batch_submit=8 --iodepth_batch_complete_min=1") {
				t.Errorf("best flags: %q", all)
			}
			calls = append(calls, bin+"+best")
			if bin == "fio" {
				return fakeJSON(200e3, 1000, 10, 40), nil
			}
			return fakeJSON(210e3, 1000, 5, 20), nil
		}
		calls = append(calls, bin)
		if bin == "fio" {
			fioRun++
			// 100k, 110k, 90k IOPS: median 100k.
			return fakeJSON([]float64{100e3, 110e3, 90e3}[(fioRun-1)%3], 1000, 10, 40), nil
		}
		pbRun++
		if strings.Contains(all, "psync") {
			return nil, errors.New("pagebench: engine not ready")
		}
		return fakeJSON([]float64{95e3, 50e3, 96e3}[(pbRun-1)%3], 2000, 5, 20), nil
	}
	dir := t.TempDir()
	cfg := CompareConfig{Dir: dir, FileSize: 4 << 20, Pairs: 3, Runtime: time.Second, Fio: "fio", Pagebench: "pb",
		Cases: DefaultCases[1:], Exec: exec, BestBatch: 8, HugeTLBFree: -1}
	rep, err := CompareFio(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// io_uring: 3 pairs at defaults and 3 with the best flags; psync: 3
	// pairs at defaults only.
	if len(calls) != 18 || bestRuns != 6 {
		t.Fatalf("%d runs (%d best), want 18 (6 best): %v", len(calls), bestRuns, calls)
	}
	// Alternating: each pair has one run of each tool in one mode; who
	// goes first alternates from one to the next.
	first := map[string][]string{}
	side := func(c string) (string, string) { b, m, _ := strings.Cut(c, "+"); return b, m }
	for i := 0; i < len(calls); i += 2 {
		b0, m0 := side(calls[i])
		b1, m1 := side(calls[i+1])
		if b0 == b1 || m0 != m1 {
			t.Errorf("pair %d ran %s and %s", i/2, calls[i], calls[i+1])
		}
		if i < 12 {
			first[m0] = append(first[m0], b0)
		}
	}
	for m, f := range first {
		if len(f) != 3 || f[0] == f[1] || f[1] == f[2] {
			t.Errorf("mode %q: who went first in its pairs: %v", m, f)
		}
	}
	if len(rep.Rows) != 3 || rep.Rows[0].Mode != ModeDefaults || rep.Rows[1].Mode != ModeBest || rep.Rows[2].Mode != ModeDefaults {
		t.Fatalf("rows: %+v", rep.Rows)
	}
	r := rep.Rows[0]
	if r.Fio.IOPS != 100e3 || r.Pagebench.IOPS != 95e3 || r.FioRuns != 3 || r.PagebenchRuns != 3 {
		t.Errorf("row 0 medians: %+v", r)
	}
	// Pair ratios 0.95, 50/110, 96/90: median 0.95.
	if math.Abs(r.PairRatio-0.95) > 1e-9 {
		t.Errorf("pair ratio %v, want 0.95", r.PairRatio)
	}
	// (10+40)% of 1 s over 100k I/Os = 5 us per I/O.
	if math.Abs(r.Fio.CPUPerIO-5e-6) > 1e-9 || r.Fio.P99Clat != 1000 {
		t.Errorf("fio cpu/io %v p99 %v", r.Fio.CPUPerIO, r.Fio.P99Clat)
	}
	if b := rep.Rows[1]; b.Fio.IOPS != 200e3 || b.Pagebench.IOPS != 210e3 || math.Abs(b.PairRatio-1.05) > 1e-9 {
		t.Errorf("best row: %+v", b)
	}
	if rep.Rows[2].PagebenchErr == nil || rep.Rows[2].PagebenchRuns != 0 || !math.IsNaN(rep.Rows[2].Pagebench.IOPS) {
		t.Errorf("failed side: %+v", rep.Rows[2])
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"1m randread io_uring qd32", "defaults", "best", "IOPS", "100k", "95k", "0.95", "1.05",
		"median of pairs", "--fixedbufs --registerfiles", "p99 clat", "2.00", "n/a",
		"pagebench error (0/3 ok)", "engine not ready"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("test file left behind: %v", entries)
	}
}

// TestCompareBestHuge checks that iomem=shmhuge joins the best flags only
// when fio's hugetlbfs pages hold the case's buffers.
func TestCompareBestHuge(t *testing.T) {
	for _, c := range []struct {
		free int64
		want bool
	}{{-1, false}, {16 << 20, false}, {64 << 20, true}} {
		huge := false
		exec := func(_ context.Context, bin string, args []string) ([]byte, error) {
			if slices.Contains(args, "--iomem=shmhuge") {
				huge = true
			}
			return fakeJSON(1000, 1000, 10, 40), nil
		}
		// 1 MiB × 32 = 32 MiB of buffers.
		cfg := CompareConfig{Dir: t.TempDir(), FileSize: 1 << 20, Pairs: 1, Runtime: time.Second, Fio: "fio", Pagebench: "pb",
			Cases: DefaultCases[1:2], Exec: exec, HugeTLBFree: c.free}
		if _, err := CompareFio(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		if huge != c.want {
			t.Errorf("hugetlbfs free %d: shmhuge %v, want %v", c.free, huge, c.want)
		}
	}
	if got := BestFlags(4, true); strings.Join(got, " ") != "--fixedbufs --registerfiles --iodepth_batch_submit=4 --iodepth_batch_complete_min=1 --iomem=shmhuge" {
		t.Errorf("BestFlags: %q", got)
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{7}, 7},
	}
	for _, tt := range tests {
		if got := median(tt.in); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
	if !math.IsNaN(median(nil)) {
		t.Error("median of nothing is not NaN")
	}
}

// TestExecCPUCountsChildren: the whole-command CPU includes the children
// a command waits for (fio runs its jobs in child processes), so a busy
// loop in a subshell counts as much as the same loop in the shell itself.
func TestExecCPUCountsChildren(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	const loop = `i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done`
	_, self, err := execCPU(context.Background(), sh, []string{"-c", loop})
	if err != nil {
		t.Fatal(err)
	}
	_, child, err := execCPU(context.Background(), sh, []string{"-c", "(" + loop + "); true"})
	if err != nil {
		t.Fatal(err)
	}
	if self <= 0 || child < self*3/10 {
		t.Fatalf("the loop in the shell took %v of CPU, in a child %v: the child's CPU is not counted", self, child)
	}
	t.Logf("CPU: in the shell %v, in a child %v", self, child)
}

// TestCompareTableWholeCommandCPU: the whole-command CPU line appears, with
// its ratio, where both sides measured it, and not otherwise.
func TestCompareTableWholeCommandCPU(t *testing.T) {
	row := CompareRow{Case: "4k", Mode: ModeDefaults, PairRatio: 1,
		Fio:       Metrics{IOPS: 100, BWBytes: 4096e2, CPUPerIO: 4e-6, CmdCPUPerIO: 8e-6, P99Clat: 1e6},
		Pagebench: Metrics{IOPS: 100, BWBytes: 4096e2, CPUPerIO: 5e-6, CmdCPUPerIO: 4e-6, P99Clat: 1e6}}
	var b bytes.Buffer
	if err := (&CompareReport{Pairs: 1, Runtime: time.Second, FileSize: 1 << 20, Rows: []CompareRow{row}}).WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`CPU/IO, whole command \(lower better\) +8(\.0+)?us +4(\.0+)?us +0\.50`).MatchString(b.String()) {
		t.Fatalf("no whole-command line with ratio 0.50:\n%s", b.String())
	}
	row.Fio.CmdCPUPerIO, row.Pagebench.CmdCPUPerIO = 0, 0
	b.Reset()
	if err := (&CompareReport{Pairs: 1, Runtime: time.Second, FileSize: 1 << 20, Rows: []CompareRow{row}}).WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "whole command (lower") {
		t.Fatalf("whole-command line without measurements:\n%s", b.String())
	}
}
