package bench

import (
	"math"
	"testing"
	"time"
)

func TestLatencyPercentiles(t *testing.T) {
	l := NewLatency()
	// 1..100000 ns uniformly: percentile p is p*1000 ns.
	for v := int64(1); v <= 100000; v++ {
		l.Record(v)
	}
	if l.N() != 100000 || l.min != 1 || l.max != 100000 {
		t.Fatalf("N=%d min=%d max=%d", l.N(), l.min, l.max)
	}
	if got, want := l.Mean(), 50000.5; got != want {
		t.Errorf("mean %v, want %v", got, want)
	}
	// Sample stddev of 1..n is sqrt(n(n+1)/12).
	if got, want := l.Stddev(), math.Sqrt(100000.0*100001/12); math.Abs(got-want) > 1e-6*want {
		t.Errorf("stddev %v, want %v", got, want)
	}
	for _, p := range FioPercentiles {
		want := p * 1000
		got := float64(l.Percentile(p))
		// Three significant digits: within 0.1% (plus one bucket).
		if math.Abs(got-want) > 0.001*want+1 {
			t.Errorf("p%v = %v, want %v ± 0.1%%", p, got, want)
		}
	}
	if l.Percentile(100) != 100000 {
		t.Errorf("p100 = %d, want the max", l.Percentile(100))
	}
}

func TestLatencyClampAndMerge(t *testing.T) {
	a, b := NewLatency(), NewLatency()
	a.Record(-5) // counts as 0
	a.Record(histMax * 2)
	b.Record(1000)
	a.Merge(b)
	a.Merge(NewLatency())
	if a.N() != 3 || a.min != 0 || a.max != histMax*2 {
		t.Errorf("N=%d min=%d max=%d", a.N(), a.min, a.max)
	}
	if got := a.Percentile(50); got < 999 || got > 1001 {
		t.Errorf("p50 = %d, want 1000", got)
	}
	a.Reset()
	if a.N() != 0 || a.Percentile(99) != 0 || a.Mean() != 0 || a.Stddev() != 0 {
		t.Errorf("after Reset: N=%d", a.N())
	}
}

func TestLatBuckets(t *testing.T) {
	var b latBuckets
	for _, ns := range []int64{1, 3, 999, 1000, 1500, 999_999, 1_000_000, 2_500_000, 3_000_000_000} {
		b.add(ns)
	}
	want := latBuckets{}
	want.ns[0], want.ns[1], want.ns[9] = 1, 1, 1 // <2, <4, <1000
	want.us[0], want.us[9] = 2, 1                // 1us and 1.5us (<2), 999us (<1000)
	want.ms[0], want.ms[1], want.ms[11] = 1, 1, 1
	if b != want {
		t.Errorf("got %+v\nwant %+v", b, want)
	}
}

func TestRNGBelow(t *testing.T) {
	var r rng
	const n = 10
	var hist [n]int
	for range 100000 {
		v := r.below(n)
		if v >= n {
			t.Fatalf("below(%d) = %d", n, v)
		}
		hist[v]++
	}
	for i, c := range hist {
		if c < 9000 || c > 11000 {
			t.Errorf("bucket %d has %d of 100000: not uniform", i, c)
		}
	}
}

func BenchmarkLatencyRecord(b *testing.B) {
	l := NewLatency()
	b.ReportAllocs()
	v := int64(1000)
	for b.Loop() {
		l.Record(v)
		v = v*7%1_000_000 + 1
	}
	b.ReportMetric(float64(l.N())/b.Elapsed().Seconds(), "records/s")
}

func TestStatusLine(t *testing.T) {
	got := statusLine(1, 50, 446*1024*1024+300*1024, 114303, 3*time.Second)
	want := "Jobs: 1 (f=1): [r(1)][50.0%][r=446MiB/s][r=114k IOPS][eta 00m:03s]"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	job := Job{Runtime: 4 * time.Second, RampTime: time.Second}
	if pct, eta := progress(&job, 2*time.Second, 0, 1); pct != 40 || eta != 3*time.Second {
		t.Errorf("time based progress %v %v", pct, eta)
	}
	job = Job{Size: 1000}
	if pct, eta := progress(&job, time.Second, 500, 2); pct != 25 || eta != 3*time.Second {
		t.Errorf("size based progress %v %v", pct, eta)
	}
}
