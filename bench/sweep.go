package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pagefeed/pagefeed/internal/cgroup"
	"github.com/pagefeed/pagefeed/internal/plot"
)

// DefaultSweepRatios are SweepMemory's dataset sizes ÷ memory: from a
// dataset a quarter of the memory to one four times it.
var DefaultSweepRatios = []float64{0.25, 0.5, 1, 2, 4}

// SweepConfig configures SweepMemory. Zero fields take the defaults of
// fill.
type SweepConfig struct {
	Base  ParquetConfig
	Cases []ParquetCase // default RegimeContenders
	// Ratios are the dataset's projected bytes ÷ the memory cgroup's
	// limit, one cgroup each; default DefaultSweepRatios.
	Ratios    []float64
	Runtime   time.Duration // per run; default 5s
	Pagebench string        // the binary each run is; default this executable
	Env       []string      // added to its environment
	Progress  io.Writer     // a line per run; default discard

	// System hooks, for tests: nil takes the real ones.
	CreateGroup func(name string, limit int64) (*cgroup.Group, error)
	DropCaches  func() error
}

// SweepResult is SweepMemory's answer: RowsPerSec[i][k] is case i at
// Ratios[k] (0 where the run failed; Errs says why).
type SweepResult struct {
	Dataset    DatasetFacts  `json:"dataset"`
	Ratios     []float64     `json:"ratios"`
	Memory     []int64       `json:"memory_bytes"` // each ratio's cgroup limit
	Labels     []string      `json:"labels"`
	Shorts     []string      `json:"shorts"`
	RowsPerSec [][]float64   `json:"rows_per_sec"`
	Modes      [][]string    `json:"io_modes"` // the mode each run read in (auto: its choice)
	Errs       [][]string    `json:"errors"`
	Runtime    time.Duration `json:"runtime_ns"`
	Load       string        `json:"load"` // /proc/loadavg's 1-minute figure before and after
	Notes      []string      `json:"notes,omitempty"`
}

func (c *SweepConfig) fill() error {
	rc := RegimesConfig{Base: c.Base, Cases: c.Cases, Runtime: c.Runtime, Pagebench: c.Pagebench, Env: c.Env,
		Progress: c.Progress, CreateGroup: c.CreateGroup, DropCaches: c.DropCaches}
	if err := rc.fill(); err != nil {
		return err
	}
	c.Base, c.Cases, c.Runtime, c.Pagebench, c.Progress, c.CreateGroup, c.DropCaches = rc.Base, rc.Cases, rc.Runtime, rc.Pagebench, rc.Progress, rc.CreateGroup, rc.DropCaches
	if len(c.Ratios) == 0 {
		c.Ratios = DefaultSweepRatios
	}
	for _, r := range c.Ratios {
		if !(r > 0) || math.IsInf(r, 0) {
			return fmt.Errorf("%w: dataset ÷ memory ratio %g (want > 0)", ErrBadOption, r)
		}
	}
	return nil
}

// SweepMemory runs every case inside memory cgroups whose limits make
// the dataset Ratios times the memory: for each ratio one cgroup; for
// each case the page cache dropped, the dataset read once inside the
// cgroup (what a job's earlier epochs leave cached: all of it where it
// fits, the most recently read part where it does not), then the case
// measured for Runtime. Where no cgroup can be made it fails with the
// reason.
func SweepMemory(ctx context.Context, cfg SweepConfig) (*SweepResult, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	d, err := datasetFacts(ctx, cfg.Base)
	if err != nil {
		return nil, err
	}
	res := &SweepResult{Dataset: d, Ratios: cfg.Ratios, Runtime: cfg.Runtime, Load: loadavg()}
	for _, c := range cfg.Cases {
		res.Labels, res.Shorts = append(res.Labels, c.Label), append(res.Shorts, c.Short)
	}
	res.RowsPerSec = make([][]float64, len(cfg.Cases))
	res.Modes = make([][]string, len(cfg.Cases))
	res.Errs = make([][]string, len(cfg.Cases))
	rc := RegimesConfig{Pagebench: cfg.Pagebench, Env: cfg.Env, DropCaches: cfg.DropCaches}
	for _, ratio := range cfg.Ratios {
		mem := int64(float64(d.Projected) / ratio)
		res.Memory = append(res.Memory, mem)
		g, err := cfg.CreateGroup(fmt.Sprintf("pagefeed-sweep-%d-%d", os.Getpid(), groupSeq.Add(1)), mem)
		if err != nil {
			return res, fmt.Errorf("no memory cgroup could be made here: %w", err)
		}
		for i, c := range cfg.Cases {
			rps, mode, errText := cfg.point(ctx, &rc, d, g, c, res)
			res.RowsPerSec[i] = append(res.RowsPerSec[i], rps)
			res.Modes[i] = append(res.Modes[i], mode)
			res.Errs[i] = append(res.Errs[i], errText)
			fmt.Fprintf(cfg.Progress, "dataset %.2g× a %s cgroup: %-32s %10.0f rows/s  %s%s\n", ratio, fmtBytes(float64(mem), true), c.Label, rps, mode, errText)
		}
		if err := g.Remove(); err != nil {
			return res, err
		}
	}
	res.Load += " → " + loadavg()
	return res, nil
}

// point measures case c inside g: caches dropped, the dataset read once
// in g, then the run.
func (cfg *SweepConfig) point(ctx context.Context, rc *RegimesConfig, d DatasetFacts, g *cgroup.Group, c ParquetCase, res *SweepResult) (rps float64, mode, errText string) {
	if note := rc.coldCache(d.Files); note != "" && !slices.Contains(res.Notes, note) {
		res.Notes = append(res.Notes, note)
	}
	if _, err := runCmd(g.Command(ctx, "cat", d.Files...), "cat"); err != nil {
		return 0, "", err.Error()
	}
	pc := cfg.Base
	pc.Name, pc.Runtime, pc.Loops, pc.KeepCache = c.Label, cfg.Runtime, 0, true
	c.Mod(&pc)
	j, err := rc.runIn(ctx, g, pc)
	if err != nil {
		return 0, "", err.Error()
	}
	return j.RowsPerSec, j.IOMode, ""
}

// ratioLabel writes a ratio as the chart and table show it: 1/4, 1/2, 1,
// 2, 4.
func ratioLabel(r float64) string {
	if r < 1 && math.Abs(1/r-math.Round(1/r)) < 1e-9 {
		return "1/" + strconv.Itoa(int(math.Round(1/r)))
	}
	return strconv.FormatFloat(r, 'g', 3, 64)
}

// WriteTable prints rows/s per case and ratio, each run's read mode
// beside it.
func (r *SweepResult) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "rows/s by dataset size ÷ memory (%s projected; memory: a memory cgroup's limit; caches dropped, then the dataset read once in the cgroup before each %v run; load %s)\n",
		fmtBytes(float64(r.Dataset.Projected), true), r.Runtime, r.Load)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "case\t")
	for k, ratio := range r.Ratios {
		fmt.Fprintf(tw, "%s (%s)\t", ratioLabel(ratio), fmtBytes(float64(r.Memory[k]), true))
	}
	fmt.Fprintln(tw)
	for i, label := range r.Labels {
		fmt.Fprintf(tw, "%s\t", label)
		for k := range r.Ratios {
			switch {
			case k >= len(r.RowsPerSec[i]):
				fmt.Fprint(tw, "-\t")
			case r.Errs[i][k] != "":
				fmt.Fprint(tw, "failed\t")
			default:
				mode := r.Modes[i][k]
				if mode == "" || mode == r.Shorts[i] {
					mode = ""
				} else {
					mode = " " + mode
				}
				fmt.Fprintf(tw, "%.0f%s\t", r.RowsPerSec[i][k], mode)
			}
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for i := range r.Labels {
		for k, e := range r.Errs[i] {
			if e != "" {
				fmt.Fprintf(w, "%s at %s: %s\n", r.Labels[i], ratioLabel(r.Ratios[k]), e)
			}
		}
	}
	return nil
}

// Chart is rows/s against dataset ÷ memory, both axes logarithmic, one
// line per case (failed points left out).
func (r *SweepResult) Chart() plot.Chart {
	c := plot.Chart{
		Title:  fmt.Sprintf("rows/s as the dataset (%s) outgrows memory", fmtBytes(float64(r.Dataset.Projected), true)),
		XLabel: "dataset size ÷ memory (memory cgroup limit)", YLabel: "rows delivered per second",
		LogX: true, LogY: true, Pow2X: true,
	}
	for i, label := range r.Labels {
		s := plot.Series{Label: label, ColorKey: r.Shorts[i]}
		for k, ratio := range r.Ratios {
			if k < len(r.RowsPerSec[i]) && r.RowsPerSec[i][k] > 0 {
				s.X, s.Y = append(s.X, ratio), append(s.Y, r.RowsPerSec[i][k])
			}
		}
		if len(s.X) > 0 {
			c.Series = append(c.Series, s)
		}
	}
	return c
}

// SaveChart draws Chart into dir as name.svg and name.png and returns
// the base path.
func (r *SweepResult) SaveChart(dir, name string) (string, error) {
	c := r.Chart()
	base := filepath.Join(dir, name)
	if err := c.Save(base); err != nil {
		return "", fmt.Errorf("chart %s: %w", base, err)
	}
	return base, nil
}

// ParseRatios parses a comma-separated list of dataset ÷ memory ratios:
// numbers or fractions (1/4, 0.5, 2).
func ParseRatios(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		num, den, frac := strings.Cut(f, "/")
		a, err := strconv.ParseFloat(num, 64)
		b := 1.0
		if err == nil && frac {
			b, err = strconv.ParseFloat(den, 64)
		}
		if err != nil || !(a > 0) || !(b > 0) || math.IsInf(a/b, 0) {
			return nil, fmt.Errorf("%w: ratio %q (want a positive number or fraction, e.g. 1/4,1/2,1,2,4)", ErrBadOption, f)
		}
		out = append(out, a/b)
	}
	return out, nil
}
