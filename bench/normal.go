package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// WriteNormal writes the report as fio's human-readable text: per job the
// read line, latencies, clat percentiles, bandwidth and IOPS samples, CPU
// and depths, then a "Run status group" summary per group.
func (r *Report) WriteNormal(w io.Writer) error {
	var b strings.Builder
	out := r.JSON()
	pid := os.Getpid()
	results := r.Results()
	for i, j := range out.Jobs {
		res := results[i]
		fmt.Fprintf(&b, "%s: (groupid=%d, jobs=%d): err= 0: pid=%d: %s\n", j.JobName, j.GroupID, res.Jobs, pid, out.Time)
		if res.EngineInfo != "" {
			fmt.Fprintf(&b, "  engine: %s\n", res.EngineInfo)
		}
		rd := j.Read
		fmt.Fprintf(&b, "  read: IOPS=%s, BW=%s/s (%s/s)(%s/%dmsec)\n",
			fmtNum(rd.IOPS), fmtBytes(float64(rd.BWBytes), true), fmtBytes(float64(rd.BWBytes), false),
			fmtBytes(float64(rd.IOBytes), true), rd.Runtime)
		if rd.SlatNs.N > 0 {
			writeLat(&b, "    slat", rd.SlatNs)
		}
		writeLat(&b, "    clat", rd.ClatNs)
		writeLat(&b, "     lat", rd.LatNs)
		if len(rd.ClatNs.Percentile) > 0 {
			unit, div := latUnit(rd.ClatNs)
			fmt.Fprintf(&b, "    clat percentiles (%s):\n", unit)
			for k, p := range FioPercentiles {
				if k%4 == 0 {
					b.WriteString("     |")
				}
				fmt.Fprintf(&b, " %5.2fth=[%5d]", p, rd.ClatNs.Percentile[PercentileKey(p)]/div)
				if k < len(FioPercentiles)-1 {
					b.WriteString(",")
				}
				if k%4 == 3 || k == len(FioPercentiles)-1 {
					b.WriteString("\n")
				}
			}
		}
		if rd.BWSamples > 0 {
			fmt.Fprintf(&b, "   bw (  KiB/s): min=%d, max=%d, per=%.2f%%, avg=%.2f, stdev=%.2f, samples=%d\n",
				rd.BWMin, rd.BWMax, rd.BWAgg, rd.BWMean, rd.BWDev, rd.BWSamples)
			fmt.Fprintf(&b, "   iops        : min=%d, max=%d, avg=%.2f, stdev=%.2f, samples=%d\n",
				rd.IOPSMin, rd.IOPSMax, rd.IOPSMean, rd.IOPSStddev, rd.IOPSSamples)
		}
		fmt.Fprintf(&b, "  cpu          : usr=%.2f%%, sys=%.2f%%, ctx=%d, majf=%d, minf=%d\n", j.UsrCPU, j.SysCPU, j.Ctx, j.Majf, j.Minf)
		fmt.Fprintf(&b, "  IO depths    : %s\n\n", depthLine(j.IODepthLevel))
	}
	for _, g := range r.Groups {
		var bytes int64
		var lo, hi, rt int64 = -1, 0, 0
		var rtMax time.Duration
		for _, c := range g.Clones {
			bytes += c.IOBytes
			bw := int64(0)
			if s := c.Runtime.Seconds(); s > 0 {
				bw = int64(float64(c.IOBytes) / s)
			}
			if lo < 0 || bw < lo {
				lo = bw
			}
			hi = max(hi, bw)
			rt = max(rt, c.Runtime.Milliseconds())
			rtMax = max(rtMax, c.Runtime)
		}
		var minRT int64 = -1
		for _, c := range g.Clones {
			if ms := c.Runtime.Milliseconds(); minRT < 0 || ms < minRT {
				minRT = ms
			}
		}
		agg := 0.0
		if rtMax > 0 {
			agg = float64(bytes) / rtMax.Seconds()
		}
		fmt.Fprintf(&b, "Run status group %d (all jobs):\n", g.ID)
		fmt.Fprintf(&b, "   READ: bw=%s/s (%s/s), %s/s-%s/s (%s/s-%s/s), io=%s (%s), run=%d-%dmsec\n",
			fmtBytes(agg, true), fmtBytes(agg, false),
			fmtBytes(float64(lo), true), fmtBytes(float64(hi), true), fmtBytes(float64(lo), false), fmtBytes(float64(hi), false),
			fmtBytes(float64(bytes), true), fmtBytes(float64(bytes), false), minRT, rt)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// latUnit picks fio's display unit from the minimum: nsec below 10 us,
// usec below 10 ms, else msec.
func latUnit(l FioLat) (string, int64) {
	switch {
	case l.Min >= 10_000_000:
		return "msec", 1_000_000
	case l.Min >= 10_000:
		return "usec", 1000
	}
	return "nsec", 1
}

func writeLat(b *strings.Builder, label string, l FioLat) {
	unit, div := latUnit(l)
	d := float64(div)
	fmt.Fprintf(b, "%s (%s): min=%d, max=%d, avg=%.2f, stdev=%.2f\n", label, unit, l.Min/div, l.Max/div, l.Mean/d, l.Stddev/d)
}

func depthLine(m map[string]float64) string {
	keys := []string{"1", "2", "4", "8", "16", "32", ">=64"}
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%.1f%%", k, m[k])
	}
	return strings.Join(parts, ", ")
}
