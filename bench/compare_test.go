package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
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
	exec := func(_ context.Context, bin string, args []string) ([]byte, error) {
		calls = append(calls, bin)
		file := ""
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, "--filename="); ok {
				file = v
			}
		}
		if st, err := os.Stat(file); err != nil || st.Size() != 4<<20 {
			t.Errorf("%s got file %q: %v", bin, file, err)
		}
		if strings.Join(args, " ") == "" || !strings.Contains(strings.Join(args, " "), "--output-format=json --rw=randread") {
			t.Errorf("args %q", args)
		}
		if bin == "fio" {
			fioRun++
			// 100k, 110k, 90k IOPS: median 100k.
			return fakeJSON([]float64{100e3, 110e3, 90e3}[(fioRun-1)%3], 1000, 10, 40), nil
		}
		pbRun++
		if strings.Contains(strings.Join(args, " "), "psync") {
			return nil, errors.New("pagebench: engine not ready")
		}
		return fakeJSON([]float64{95e3, 50e3, 96e3}[(pbRun-1)%3], 2000, 5, 20), nil
	}
	dir := t.TempDir()
	cfg := CompareConfig{Dir: dir, FileSize: 4 << 20, Pairs: 3, Runtime: time.Second, Fio: "fio", Pagebench: "pb",
		Cases: DefaultCases[1:], Exec: exec}
	rep, err := CompareFio(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 12 {
		t.Fatalf("%d runs, want 12", len(calls))
	}
	// Alternating: each pair has one of each; who goes first alternates.
	for i := 0; i < len(calls); i += 2 {
		if calls[i] == calls[i+1] {
			t.Errorf("pair %d ran %s twice", i/2, calls[i])
		}
	}
	if calls[0] == calls[2] {
		t.Errorf("the same side went first in consecutive pairs: %v", calls)
	}
	r := rep.Rows[0]
	if r.Fio.IOPS != 100e3 || r.Pagebench.IOPS != 95e3 || r.FioRuns != 3 || r.PagebenchRuns != 3 {
		t.Errorf("row 0 medians: %+v", r)
	}
	// (10+40)% of 1 s over 100k I/Os = 5 us per I/O.
	if math.Abs(r.Fio.CPUPerIO-5e-6) > 1e-9 || r.Fio.P99Clat != 1000 {
		t.Errorf("fio cpu/io %v p99 %v", r.Fio.CPUPerIO, r.Fio.P99Clat)
	}
	if rep.Rows[1].PagebenchErr == nil || rep.Rows[1].PagebenchRuns != 0 || !math.IsNaN(rep.Rows[1].Pagebench.IOPS) {
		t.Errorf("failed side: %+v", rep.Rows[1])
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"1m randread io_uring qd32", "IOPS", "100k", "95k", "0.95", "p99 clat", "2.00", "n/a",
		"pagebench error (0/3 ok)", "engine not ready"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("test file left behind: %v", entries)
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
