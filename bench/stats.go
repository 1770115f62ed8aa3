package bench

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// histMax is the largest latency a histogram tracks (60 s); longer ones are
// clamped so recording never fails or allocates.
const histMax = int64(60e9)

// Latency accumulates one latency series in ns: an HDR histogram with three
// significant digits for percentiles, and exact min, max, mean and stddev
// as fio reports them. Record does not allocate. Not safe for concurrent use.
type Latency struct {
	h        *hdr.Histogram
	n        int64
	min, max int64
	sum      float64
	sumSq    float64
}

// NewLatency returns an empty series.
func NewLatency() *Latency {
	return &Latency{h: hdr.New(1, histMax, 3)}
}

// Record adds one latency in ns; negative values count as 0.
func (l *Latency) Record(ns int64) {
	if ns < 0 {
		ns = 0
	}
	if l.n == 0 || ns < l.min {
		l.min = ns
	}
	if ns > l.max {
		l.max = ns
	}
	l.n++
	f := float64(ns)
	l.sum += f
	l.sumSq += f * f
	v := ns
	if v > histMax {
		v = histMax
	}
	_ = l.h.RecordValue(v) // in range by construction
}

// Reset empties the series (end of ramp_time).
func (l *Latency) Reset() {
	l.h.Reset()
	l.n, l.min, l.max, l.sum, l.sumSq = 0, 0, 0, 0, 0
}

// Merge adds o's samples to l (group_reporting).
func (l *Latency) Merge(o *Latency) {
	if o.n == 0 {
		return
	}
	if l.n == 0 || o.min < l.min {
		l.min = o.min
	}
	if o.max > l.max {
		l.max = o.max
	}
	l.n += o.n
	l.sum += o.sum
	l.sumSq += o.sumSq
	l.h.Merge(o.h)
}

// N returns the number of samples.
func (l *Latency) N() int64 { return l.n }

// Mean returns the exact mean in ns.
func (l *Latency) Mean() float64 {
	if l.n == 0 {
		return 0
	}
	return l.sum / float64(l.n)
}

// Stddev returns the sample standard deviation in ns, as fio computes it.
func (l *Latency) Stddev() float64 {
	if l.n < 2 {
		return 0
	}
	m := l.Mean()
	v := (l.sumSq - float64(l.n)*m*m) / float64(l.n-1)
	if v < 0 {
		return 0
	}
	return math.Sqrt(v)
}

// Percentile returns the latency at percentile p (0..100) from the
// histogram: accurate to three significant digits.
func (l *Latency) Percentile(p float64) int64 {
	if l.n == 0 {
		return 0
	}
	v := l.h.ValueAtQuantile(p)
	if v > l.max {
		v = l.max // the histogram reports a bucket's upper edge
	}
	return v
}

// FioPercentiles are the percentiles fio prints by default.
var FioPercentiles = []float64{1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99}

// PercentileKey formats p as fio's JSON does: "%f", e.g. "99.000000".
func PercentileKey(p float64) string { return fmt.Sprintf("%f", p) }

// fio's latency buckets (latency_ns, latency_us, latency_ms): key "k"
// counts samples below k units and at or above the previous key.
var (
	latEdgesNsUs = []int64{2, 4, 10, 20, 50, 100, 250, 500, 750, 1000}
	latEdgesMs   = []int64{2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000}
)

// fio's clat histogram (stat.h): 29 groups of 64 buckets; values below
// 128 have a bucket each, then each power of two splits into 64.
const (
	platBits  = 6
	platVal   = 1 << platBits
	platGroup = 29
	platNR    = platGroup * platVal
)

// platHist counts latencies in ns into fio's buckets, the "bins" of
// --output-format=json+. Add does not allocate.
type platHist [platNR]int64

// platIndex is fio's plat_val_to_idx.
func platIndex(v uint64) int {
	msb := 0
	if v > 0 {
		msb = bits.Len64(v) - 1
	}
	if msb <= platBits {
		return int(v)
	}
	errBits := msb - platBits
	base := (errBits + 1) << platBits
	off := int((platVal - 1) & (v >> errBits))
	return min(base+off, platNR-1)
}

// platValue is fio's plat_idx_to_val: the middle of bucket i, the key
// fio writes for it.
func platValue(i int) uint64 {
	if i < platVal<<1 {
		return uint64(i)
	}
	errBits := (i >> platBits) - 1
	base := uint64(1) << (errBits + platBits)
	k := uint64(i % platVal)
	return base + uint64((float64(k)+0.5)*float64(uint64(1)<<errBits))
}

func (h *platHist) add(ns int64) { h[platIndex(uint64(max(ns, 0)))]++ }

func (h *platHist) merge(o *platHist) {
	for i := range h {
		h[i] += o[i]
	}
}

// bins returns the non-empty buckets keyed by platValue, as fio's json+.
func (h *platHist) bins() map[string]int64 {
	m := map[string]int64{}
	for i, n := range h {
		if n > 0 {
			m[strconv.FormatUint(platValue(i), 10)] = n
		}
	}
	return m
}

// latBuckets counts completion latencies (clat, as fio does) into fio's
// buckets: 10 ns, 10 us and 12 ms buckets (the last is ">=2000").
type latBuckets struct {
	ns [10]int64
	us [10]int64
	ms [12]int64
}

func (b *latBuckets) add(ns int64) {
	switch {
	case ns < 1000:
		b.ns[edgeIndex(latEdgesNsUs, ns)]++
	case ns < 1000_000:
		b.us[edgeIndex(latEdgesNsUs, ns/1000)]++
	default:
		b.ms[edgeIndex(latEdgesMs, ns/1000_000)]++
	}
}

func (b *latBuckets) merge(o *latBuckets) {
	for i := range b.ns {
		b.ns[i] += o.ns[i]
		b.us[i] += o.us[i]
	}
	for i := range b.ms {
		b.ms[i] += o.ms[i]
	}
}

// edgeIndex returns the first i with v < edges[i], or len(edges).
func edgeIndex(edges []int64, v int64) int {
	for i, e := range edges {
		if v < e {
			return i
		}
	}
	return len(edges)
}
