package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// CompareCase is one job run by both fio and pagebench. Args are fio
// options common to both, without name, filename, size, runtime and
// output format, which CompareFio adds.
type CompareCase struct {
	Name string
	Args []string
}

// DefaultCases are the cases of `make bench`: deep 4 KiB and 1 MiB random
// reads through io_uring, and one 4 KiB pread at a time.
var DefaultCases = []CompareCase{
	{Name: "4k randread io_uring qd64", Args: []string{"--rw=randread", "--bs=4k", "--ioengine=io_uring", "--iodepth=64", "--direct=1"}},
	{Name: "1m randread io_uring qd32", Args: []string{"--rw=randread", "--bs=1m", "--ioengine=io_uring", "--iodepth=32", "--direct=1"}},
	{Name: "4k randread psync qd1", Args: []string{"--rw=randread", "--bs=4k", "--ioengine=psync", "--iodepth=1", "--direct=1"}},
}

// CompareConfig configures CompareFio. Zero fields take the defaults
// filled by fill.
type CompareConfig struct {
	Dir       string        // where the test file's temporary directory goes; default os.TempDir()
	FileSize  int64         // default 2 GiB
	Pairs     int           // fio/pagebench pairs per case; default 3
	Runtime   time.Duration // per run; default 5s (time_based)
	Fio       string        // fio binary; default "fio"
	Pagebench string        // pagebench binary; default this executable
	Cases     []CompareCase // default DefaultCases
	Stderr    io.Writer     // progress lines; default discard
	// Exec runs bin with args and returns its stdout; default os/exec, with
	// the last line of stderr in the error.
	Exec func(ctx context.Context, bin string, args []string) ([]byte, error)
}

func (c *CompareConfig) fill() error {
	if c.Dir == "" {
		c.Dir = os.TempDir()
	}
	if c.FileSize == 0 {
		c.FileSize = 2 << 30
	}
	if c.Pairs == 0 {
		c.Pairs = 3
	}
	if c.Runtime == 0 {
		c.Runtime = 5 * time.Second
	}
	if c.Fio == "" {
		c.Fio = "fio"
	}
	if c.Pagebench == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("%w: cannot find the pagebench binary: %v", ErrBadOption, err)
		}
		c.Pagebench = exe
	}
	if c.Cases == nil {
		c.Cases = DefaultCases
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
	if c.Exec == nil {
		c.Exec = execOutput
	}
	if c.Pairs < 1 || c.Runtime < time.Second || c.FileSize < 1<<20 {
		return fmt.Errorf("%w: compare wants pairs ≥ 1, runtime ≥ 1s, size ≥ 1m", ErrBadOption)
	}
	return nil
}

func execOutput(ctx context.Context, bin string, args []string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		return out, fmt.Errorf("%s: %v: %s", filepath.Base(bin), err, lines[len(lines)-1])
	}
	return out, nil
}

// Metrics are the figures compared, from one run's JSON (all jobs summed;
// latency and CPU from the first job).
type Metrics struct {
	IOPS     float64
	BWBytes  float64 // bytes/s
	CPUPerIO float64 // seconds of CPU (usr+sys) per I/O
	P99Clat  float64 // ns
}

// MetricsOf extracts Metrics from a fio or pagebench JSON document.
func MetricsOf(out *FioOutput) (Metrics, error) {
	if len(out.Jobs) == 0 {
		return Metrics{}, errors.New("no jobs in JSON")
	}
	var m Metrics
	var cpu, ios float64
	for _, j := range out.Jobs {
		m.IOPS += j.Read.IOPS
		m.BWBytes += float64(j.Read.BWBytes)
		cpu += (j.UsrCPU + j.SysCPU) / 100 * float64(j.Read.Runtime) / 1000
		ios += float64(j.Read.TotalIOs)
	}
	if ios == 0 {
		return Metrics{}, errors.New("no I/O in JSON")
	}
	m.CPUPerIO = cpu / ios
	m.P99Clat = float64(out.Jobs[0].Read.ClatNs.Percentile[PercentileKey(99)])
	return m, nil
}

// CompareRow is one case: the medians of each side over the pairs.
type CompareRow struct {
	Case           string
	Fio, Pagebench Metrics
	FioRuns        int // successful runs
	PagebenchRuns  int
	FioErr         error // last error, if any run failed
	PagebenchErr   error
}

// CompareReport is CompareFio's outcome.
type CompareReport struct {
	Pairs    int
	Runtime  time.Duration
	FileSize int64
	Rows     []CompareRow
}

// CompareFio lays out one test file in a temporary directory under
// cfg.Dir, then per case runs fio and pagebench alternately (who goes
// first alternates too) cfg.Pairs times for cfg.Runtime each, and reports
// the medians. The file is removed at the end. A side that fails keeps its
// error in the row; only setup errors fail the whole comparison.
func CompareFio(ctx context.Context, cfg CompareConfig) (*CompareReport, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(cfg.Dir, "pagebench-compare-")
	if err != nil {
		return nil, &Error{Op: "mkdir", Path: cfg.Dir, Off: -1, Err: err}
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "fio-compare.dat")
	if err := layout(file, 0, cfg.FileSize, "compare", cfg.Stderr); err != nil {
		return nil, err
	}
	rep := &CompareReport{Pairs: cfg.Pairs, Runtime: cfg.Runtime, FileSize: cfg.FileSize}
	for ci, c := range cfg.Cases {
		common := append([]string{
			"--name=" + slug(c.Name), "--filename=" + file, fmt.Sprintf("--size=%d", cfg.FileSize),
			fmt.Sprintf("--runtime=%dms", cfg.Runtime.Milliseconds()), "--time_based", "--output-format=json",
		}, c.Args...)
		var fio, pb []Metrics
		row := CompareRow{Case: c.Name}
		for p := range cfg.Pairs {
			order := []bool{true, false} // fio first
			if (p+ci)%2 == 1 {
				order = []bool{false, true}
			}
			for _, isFio := range order {
				bin, side := cfg.Pagebench, "pagebench"
				if isFio {
					bin, side = cfg.Fio, "fio"
				}
				if ctx.Err() != nil {
					return rep, ctx.Err()
				}
				fmt.Fprintf(cfg.Stderr, "compare: %s: pair %d/%d: %s\n", c.Name, p+1, cfg.Pairs, side)
				m, err := runSide(ctx, cfg.Exec, bin, common)
				switch {
				case err != nil && isFio:
					row.FioErr = err
				case err != nil:
					row.PagebenchErr = err
				case isFio:
					fio = append(fio, m)
				default:
					pb = append(pb, m)
				}
			}
		}
		row.Fio, row.FioRuns = medians(fio), len(fio)
		row.Pagebench, row.PagebenchRuns = medians(pb), len(pb)
		rep.Rows = append(rep.Rows, row)
	}
	return rep, nil
}

func runSide(ctx context.Context, run func(context.Context, string, []string) ([]byte, error), bin string, args []string) (Metrics, error) {
	out, err := run(ctx, bin, args)
	if err != nil {
		return Metrics{}, err
	}
	doc, err := DecodeFio(out)
	if err != nil {
		return Metrics{}, fmt.Errorf("%s: bad JSON: %v", filepath.Base(bin), err)
	}
	m, err := MetricsOf(doc)
	if err != nil {
		return Metrics{}, fmt.Errorf("%s: %v", filepath.Base(bin), err)
	}
	return m, nil
}

func slug(s string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '/' {
			return '-'
		}
		return r
	}, s)
}

// median returns the median of xs (the mean of the middle two for an even
// count); NaN when empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medians(ms []Metrics) Metrics {
	col := func(f func(Metrics) float64) float64 {
		xs := make([]float64, len(ms))
		for i, m := range ms {
			xs[i] = f(m)
		}
		return median(xs)
	}
	return Metrics{
		IOPS:     col(func(m Metrics) float64 { return m.IOPS }),
		BWBytes:  col(func(m Metrics) float64 { return m.BWBytes }),
		CPUPerIO: col(func(m Metrics) float64 { return m.CPUPerIO }),
		P99Clat:  col(func(m Metrics) float64 { return m.P99Clat }),
	}
}

// WriteTable prints the medians and the pagebench/fio ratios. For IOPS and
// bandwidth higher is better; for CPU per I/O and p99 clat lower is.
func (r *CompareReport) WriteTable(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "pagebench vs fio: medians of %d alternating pairs, %s each, %s file, O_DIRECT\n",
		r.Pairs, r.Runtime, fmtBytes(float64(r.FileSize), true))
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "case\tmetric\tfio\tpagebench\tratio pb/fio")
	for _, row := range r.Rows {
		lines := []struct {
			name    string
			fio, pb float64
			format  func(float64) string
		}{
			{"IOPS", row.Fio.IOPS, row.Pagebench.IOPS, fmtNum},
			{"BW", row.Fio.BWBytes, row.Pagebench.BWBytes, func(v float64) string { return fmtBytes(v, true) + "/s" }},
			{"CPU/IO (lower better)", row.Fio.CPUPerIO, row.Pagebench.CPUPerIO, func(v float64) string { return fmtDur(v * 1e9) }},
			{"p99 clat (lower better)", row.Fio.P99Clat, row.Pagebench.P99Clat, fmtDur},
		}
		for i, l := range lines {
			name := ""
			if i == 0 {
				name = row.Case
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, l.name, orNA(l.fio, l.format), orNA(l.pb, l.format), ratio(l.pb, l.fio))
		}
		if row.FioErr != nil {
			fmt.Fprintf(tw, "\tfio error (%d/%d ok)\t%v\t\t\n", row.FioRuns, r.Pairs, row.FioErr)
		}
		if row.PagebenchErr != nil {
			fmt.Fprintf(tw, "\tpagebench error (%d/%d ok)\t%v\t\t\n", row.PagebenchRuns, r.Pairs, row.PagebenchErr)
		}
	}
	tw.Flush()
	_, err := w.Write(b.Bytes())
	return err
}

func orNA(v float64, f func(float64) string) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return f(v)
}

func ratio(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// fmtDur prints ns with a unit: "812ns", "3.41us", "1.27ms".
func fmtDur(ns float64) string {
	switch {
	case ns >= 1e6:
		return trimFloat(ns/1e6) + "ms"
	case ns >= 1e3:
		return trimFloat(ns/1e3) + "us"
	}
	return trimFloat(ns) + "ns"
}
