package soak

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/pagefeed/pagefeed/engine/enginetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestRunShort runs the workload briefly with a high fault rate: every
// row is accounted for, faults were injected, and samples were taken.
func TestRunShort(t *testing.T) {
	var out bytes.Buffer
	faults := &enginetest.RateFaults{EIO: 0.005, Short: 0.02, EAGAIN: 0.01, EINTR: 0.01, ECANCELED: 0.01, Seed: 3}
	rep, err := Run(context.Background(), Config{Duration: 3 * time.Second, RowsPerFile: 3000, Interval: time.Second, Dir: t.TempDir(), Faults: faults, Out: &out, Growth: 10})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if rep.Runs < 2 || rep.Reads == 0 || rep.Faults.Total() == 0 || len(rep.Samples) < 2 {
		t.Fatalf("report %+v: the workload did not run", rep)
	}
	if rep.Lost != 0 || rep.Dup != 0 {
		t.Fatalf("%d rows lost, %d duplicated", rep.Lost, rep.Dup)
	}
	if rep.Skipped == 0 {
		t.Fatalf("report %+v: no corrupt page skipped", rep)
	}
	if !strings.Contains(out.String(), "goroutines=") {
		t.Fatalf("no samples printed:\n%s", out.String())
	}
	t.Logf("%d runs (%d ended by EIO), %d reads, %d pages skipped, %+v", rep.Runs, rep.EIOFailed, rep.Reads, rep.Skipped, rep.Faults)
}

// TestVerdict: growth beyond the tolerance, or rising goroutines, is not
// flat.
func TestVerdict(t *testing.T) {
	mk := func(rss []int64, g []int) *Report {
		r := &Report{}
		for i := range rss {
			r.Samples = append(r.Samples, Sample{RSS: rss[i], Goroutines: g[i]})
		}
		return r
	}
	for _, tc := range []struct {
		name string
		r    *Report
		flat bool
	}{
		{"flat", mk([]int64{1, 100, 101, 99, 100, 102, 100}, []int{3, 5, 5, 5, 5, 5, 5}), true},
		{"rss grows", mk([]int64{1, 100, 110, 130, 150, 170, 190}, []int{3, 5, 5, 5, 5, 5, 5}), false},
		{"goroutines grow", mk([]int64{1, 100, 100, 100, 100, 100, 100}, []int{3, 5, 6, 8, 10, 12, 14}), false},
	} {
		tc.r.verdict(0.25)
		if tc.r.Flat != tc.flat {
			t.Errorf("%s: flat %v (growth %.2f, goroutines %d→%d), want %v", tc.name, tc.r.Flat, tc.r.RSSGrowth, tc.r.GoroFirst, tc.r.GoroLast, tc.flat)
		}
	}
}

// TestContracts runs each rewrite and interrupt variant a few times under
// read faults (no EIO, so that every run reaches its epoch's end or the
// rewrite's error): rewrites are made and detected, interrupts, resumes
// and unreads happen, and no row is lost, duplicated or wrong.
func TestContracts(t *testing.T) {
	cfg := Config{RowsPerFile: 3000, Faults: &enginetest.RateFaults{Short: 0.02, EAGAIN: 0.01, EINTR: 0.01, ECANCELED: 0.01, Seed: 5}}
	cfg.fill()
	w, err := newWorkload(context.Background(), cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range variants {
		if v.kind == plain {
			continue
		}
		for i := 0; i < 3; i++ {
			if err := w.run(context.Background(), v); err != nil {
				t.Fatalf("%s: %v", v.name, err)
			}
		}
	}
	t.Logf("runs %d, rows %d; rewrites %d (errors %d, skips %d, undetected %d); interrupts %d, resumes %d, unreads %d; lost %d, dup %d, wrong %d",
		w.runs, w.rowsOut, w.rewrites, w.rewriteErrors, w.rewriteSkips, w.undetected, w.interrupts, w.resumes, w.unreads, w.lost, w.dup, w.wrong)
	if w.lost != 0 || w.dup != 0 || w.wrong != 0 || w.undetected != 0 {
		t.Fatalf("%d rows lost, %d duplicated, %d wrong; %d rewrites undetected", w.lost, w.dup, w.wrong, w.undetected)
	}
	if w.rewrites == 0 || w.rewriteErrors == 0 || w.rewriteSkips == 0 || w.interrupts == 0 || w.resumes == 0 || w.unreads == 0 {
		t.Fatalf("a contract went untested: rewrites %d, errors %d, skips %d, interrupts %d, resumes %d, unreads %d",
			w.rewrites, w.rewriteErrors, w.rewriteSkips, w.interrupts, w.resumes, w.unreads)
	}
}
