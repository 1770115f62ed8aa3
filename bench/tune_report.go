package bench

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/pagefeed/pagefeed/internal/plot"
)

// KneeFraction is the share of the best throughput that defines the knee.
const KneeFraction = 0.95

// Knee is one curve's knee: the smallest parameter value (iodepth for raw
// curves, batch pages for Parquet curves) whose throughput (bandwidth for
// raw, pages/s for Parquet) reaches KneeFraction of the curve's best.
type Knee struct {
	Tool     string `json:"tool"`
	Mode     string `json:"mode"`
	IOEngine string `json:"ioengine"`
	NumJobs  int    `json:"numjobs,omitempty"`
	BS       int    `json:"bs,omitempty"`
	Prefetch int    `json:"prefetch,omitempty"`
	Param    string `json:"param"` // "iodepth" or "batch"
	// At is the knee's parameter value; Point is the point measured there.
	At     int       `json:"at"`
	Point  TunePoint `json:"point"`
	Best   float64   `json:"best"` // the curve's best throughput
	BestAt int       `json:"best_at"`
}

// Throughput is the figure a knee is computed on: bandwidth for raw
// points, pages/s for Parquet points.
func (p *TunePoint) Throughput() float64 {
	if p.Mode == "parquet" {
		return p.PagesPerS
	}
	return p.BWBytes
}

// param is the x of a point's curve.
func (p *TunePoint) param() int {
	if p.Mode == "parquet" {
		return p.Batch
	}
	return p.IODepth
}

// curveKey groups points into curves.
type curveKey struct {
	tool, mode, engine string
	numjobs, bs, pf    int
}

func keyOf(p *TunePoint) curveKey {
	return curveKey{p.Tool, p.Mode, p.IOEngine, p.NumJobs, p.BS, p.Prefetch}
}

// curves groups the successful points by curve, each sorted by parameter,
// curves in first-seen order.
func curves(points []TunePoint) ([]curveKey, map[curveKey][]TunePoint) {
	var keys []curveKey
	m := map[curveKey][]TunePoint{}
	for _, p := range points {
		if p.Err != "" {
			continue
		}
		k := keyOf(&p)
		if _, ok := m[k]; !ok {
			keys = append(keys, k)
		}
		m[k] = append(m[k], p)
	}
	for _, k := range keys {
		slices.SortStableFunc(m[k], func(a, b TunePoint) int { return cmp.Compare(a.param(), b.param()) })
	}
	return keys, m
}

// KneeIndex returns, for ys measured at increasing xs, the index of the
// best y and of the first y reaching frac of it (-1, -1 when ys is empty
// or holds no positive value).
func KneeIndex(ys []float64, frac float64) (knee, best int) {
	best = -1
	for i, y := range ys {
		if y > 0 && (best < 0 || y > ys[best]) {
			best = i
		}
	}
	if best < 0 {
		return -1, -1
	}
	for i, y := range ys {
		if y >= frac*ys[best] {
			return i, best
		}
	}
	return best, best
}

// Knees computes the knee of every curve in points (failed points left out).
func Knees(points []TunePoint) []Knee {
	keys, m := curves(points)
	var out []Knee
	for _, k := range keys {
		ps := m[k]
		ys := make([]float64, len(ps))
		for i := range ps {
			ys[i] = ps[i].Throughput()
		}
		ki, bi := KneeIndex(ys, KneeFraction)
		if ki < 0 {
			continue
		}
		param := "iodepth"
		if k.mode == "parquet" {
			param = "batch"
		}
		out = append(out, Knee{
			Tool: k.tool, Mode: k.mode, IOEngine: k.engine, NumJobs: k.numjobs, BS: k.bs, Prefetch: k.pf,
			Param: param, At: ps[ki].param(), Point: ps[ki], Best: ys[bi], BestAt: ps[bi].param(),
		})
	}
	return out
}

// Recommend picks pagefeed's configuration among the knees: the knee with
// the highest throughput, the shallower one on a tie (fio's curves are
// references, never recommended). Nil when there is none.
func Recommend(knees []Knee) *Knee {
	var best *Knee
	for i := range knees {
		k := &knees[i]
		if k.Tool != "pagefeed" {
			continue
		}
		if best == nil || k.Point.Throughput() > best.Point.Throughput() ||
			k.Point.Throughput() == best.Point.Throughput() && k.At < best.At {
			best = k
		}
	}
	if best == nil {
		return nil
	}
	r := *best
	return &r
}

// csvHeader is results.csv's header; WriteCSV writes one row per point.
var csvHeader = []string{
	"tool", "mode", "ioengine", "numjobs", "bs", "iodepth", "batch", "prefetch",
	"runtime_s", "iops", "bw_bytes", "lat_p50_ns", "lat_p99_ns", "pages_per_sec", "error",
}

// WriteCSV writes one row per point under csvHeader. Latencies are
// completion latencies for raw points and batch latencies for Parquet.
func (r *TuneResult) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write(csvHeader)
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, p := range r.Points {
		cw.Write([]string{
			p.Tool, p.Mode, p.IOEngine, strconv.Itoa(p.NumJobs), strconv.Itoa(p.BS), strconv.Itoa(p.IODepth),
			strconv.Itoa(p.Batch), strconv.Itoa(p.Prefetch), f(p.RuntimeS), f(p.IOPS), f(p.BWBytes),
			f(p.LatP50Ns), f(p.LatP99Ns), f(p.PagesPerS), p.Err,
		})
	}
	cw.Flush()
	return cw.Error()
}

// WriteJSON writes the whole result, indented.
func (r *TuneResult) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(r)
}

// WriteSummary writes the knee table and the recommendation.
func (r *TuneResult) WriteSummary(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if r.Mode == "parquet" {
		fmt.Fprintf(tw, "knee: smallest batch reaching %.0f%% of the best pages/s\n", KneeFraction*100)
		fmt.Fprintln(tw, "ioengine\tprefetch\tknee batch\tpages/s\tbatch p99\tbest pages/s\tat batch")
		for _, k := range r.Knees {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%d\n", k.IOEngine, k.Prefetch, k.At,
				fmtNum(k.Point.PagesPerS), fmtDur(k.Point.LatP99Ns), fmtNum(k.Best), k.BestAt)
		}
	} else {
		fmt.Fprintf(tw, "knee: smallest iodepth reaching %.0f%% of the best bandwidth\n", KneeFraction*100)
		fmt.Fprintln(tw, "tool\tioengine\tnumjobs\tbs\tknee iodepth\tbandwidth\tIOPS\tclat p99\tbest bandwidth\tat iodepth")
		for _, k := range r.Knees {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s/s\t%s\t%s\t%s/s\t%d\n", k.Tool, k.IOEngine, k.NumJobs, sizeName(k.BS), k.At,
				fmtBytes(k.Point.BWBytes, true), fmtNum(k.Point.IOPS), fmtDur(k.Point.LatP99Ns), fmtBytes(k.Best, true), k.BestAt)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if k := r.Recommended; k != nil {
		if r.Mode == "parquet" {
			_, err := fmt.Fprintf(w, "recommended: --ioengine=%s --batch=%d --prefetch=%d (%s pages/s, batch p99 %s)\n",
				k.IOEngine, k.At, k.Prefetch, fmtNum(k.Point.PagesPerS), fmtDur(k.Point.LatP99Ns))
			return err
		}
		_, err := fmt.Fprintf(w, "recommended: --ioengine=%s --numjobs=%d --bs=%s --iodepth=%d (%s/s, %s IOPS, clat p99 %s); for each bs, its knee iodepth above\n",
			k.IOEngine, k.NumJobs, sizeName(k.BS), k.At, fmtBytes(k.Point.BWBytes, true), fmtNum(k.Point.IOPS), fmtDur(k.Point.LatP99Ns))
		return err
	}
	_, err := fmt.Fprintln(w, "recommended: none (no point succeeded)")
	return err
}

// curveLabel names a curve in a legend, leaving out what all curves share.
func curveLabel(k curveKey, multiEngine, multiJobs bool) string {
	var s string
	if k.mode == "parquet" {
		s = fmt.Sprintf("prefetch=%d", k.pf)
	} else {
		s = "bs=" + sizeName(k.bs)
	}
	if multiEngine {
		s = k.engine + " " + s
	}
	if multiJobs {
		s += fmt.Sprintf(" numjobs=%d", k.numjobs)
	}
	if k.tool != "pagefeed" {
		s = k.tool + " " + s
	}
	return s
}

// Charts writes the result's charts into dir as SVG and PNG and returns
// their base names. Raw: IOPS, bandwidth and p99 completion latency
// against iodepth, one line per block size. Parquet: pages/s and p99 batch
// latency against batch size, one line per prefetch depth.
func (r *TuneResult) Charts(dir string) ([]string, error) {
	keys, m := curves(r.Points)
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no successful point to chart", plot.ErrData)
	}
	engines, jobs := map[string]bool{}, map[int]bool{}
	for _, k := range keys {
		engines[k.engine], jobs[k.numjobs] = true, true
	}
	type spec struct {
		name, title, ylabel string
		y                   func(*TunePoint) float64
		logY                bool
	}
	var specs []spec
	xlabel := "queue depth (iodepth, reads in flight per job)"
	if r.Mode == "parquet" {
		xlabel = "batch size (pages per batch)"
		specs = []spec{
			{"pages_vs_batch", "Parquet page reads vs batch size", "pages/s", func(p *TunePoint) float64 { return p.PagesPerS }, false},
			{"batch_latency_vs_batch", "p99 batch latency vs batch size", "p99 batch latency (ms)", func(p *TunePoint) float64 { return p.LatP99Ns / 1e6 }, true},
		}
	} else {
		specs = []spec{
			{"iops_vs_iodepth", "random-read IOPS vs queue depth", "IOPS (reads/s)", func(p *TunePoint) float64 { return p.IOPS }, true},
			{"bw_vs_iodepth", "random-read bandwidth vs queue depth", "bandwidth (MiB/s)", func(p *TunePoint) float64 { return p.BWBytes / (1 << 20) }, false},
			{"p99_vs_iodepth", "p99 completion latency vs queue depth", "p99 completion latency (µs)", func(p *TunePoint) float64 { return p.LatP99Ns / 1e3 }, true},
		}
	}
	var names []string
	for _, s := range specs {
		// A linear value axis turns logarithmic when the curves span more
		// than two orders of magnitude (4 KiB and 1 MiB bandwidths).
		lo, hi := math.Inf(1), 0.0
		for _, k := range keys {
			for i := range m[k] {
				if y := s.y(&m[k][i]); y > 0 {
					lo, hi = min(lo, y), max(hi, y)
				}
			}
		}
		c := plot.Chart{Title: s.title, XLabel: xlabel, YLabel: s.ylabel, LogX: true, LogY: s.logY || hi > 100*lo, Pow2X: true}
		logY := c.LogY
		for _, k := range keys {
			ps := m[k]
			// A curve and fio's reference share a colour; fio's is dashed.
			ref := k
			ref.tool = "pagefeed"
			_, hasSolid := m[ref]
			ser := plot.Series{Label: curveLabel(k, len(engines) > 1, len(jobs) > 1),
				ColorKey: curveLabel(ref, true, true), Dashed: k.tool != "pagefeed",
				NoLegend: k.tool != "pagefeed" && hasSolid}
			if ser.Dashed {
				c.DashedNote = "dashed: " + k.tool + ", same settings"
			}
			ys := make([]float64, len(ps))
			for i := range ps {
				ys[i] = ps[i].Throughput()
			}
			kneeX := 0.0
			if ki, _ := KneeIndex(ys, KneeFraction); ki >= 0 {
				kneeX = float64(ps[ki].param())
			}
			for i := range ps {
				y := s.y(&ps[i])
				if logY && y <= 0 {
					continue // a log axis cannot show it (e.g. a zero percentile)
				}
				ser.X = append(ser.X, float64(ps[i].param()))
				ser.Y = append(ser.Y, y)
			}
			if len(ser.X) > 0 {
				if !ser.Dashed && slices.Contains(ser.X, kneeX) {
					// The knee of throughput, marked on every chart of the
					// curve; fio's knees are in the table only.
					ser.KneeX = kneeX
				}
				c.Series = append(c.Series, ser)
			}
		}
		if len(c.Series) == 0 {
			continue
		}
		if err := c.Save(filepath.Join(dir, s.name)); err != nil {
			return names, err
		}
		names = append(names, s.name)
	}
	return names, nil
}

// WriteAll writes results.csv, results.json and the charts into dir.
func (r *TuneResult) WriteAll(dir string) ([]string, error) {
	files := []string{"results.csv", "results.json"}
	for i, write := range []func(io.Writer) error{r.WriteCSV, r.WriteJSON} {
		path := filepath.Join(dir, files[i])
		f, err := os.Create(path)
		if err != nil {
			return nil, &Error{Op: "create", Path: path, Off: -1, Err: err}
		}
		err = write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, &Error{Op: "write", Path: path, Off: -1, Err: err}
		}
	}
	charts, err := r.Charts(dir)
	for _, c := range charts {
		files = append(files, c+".svg", c+".png")
	}
	return files, err
}

// ReadTuneResult decodes a results.json written by WriteJSON, for charts
// redrawn without measuring again.
func ReadTuneResult(r io.Reader) (*TuneResult, error) {
	var res TuneResult
	if err := json.NewDecoder(r).Decode(&res); err != nil {
		return nil, fmt.Errorf("%w: results.json: %v", ErrBadOption, err)
	}
	if res.Mode != "raw" && res.Mode != "parquet" {
		return nil, fmt.Errorf("%w: results.json: mode %q (want raw or parquet)", ErrBadOption, res.Mode)
	}
	return &res, nil
}
