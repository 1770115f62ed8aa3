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
	"slices"
	"sort"
	"strconv"
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

// Modes of a comparison: both tools at their defaults, and both given
// fio's best read settings.
const (
	ModeDefaults = "defaults"
	ModeBest     = "best"
)

// BestFlags are fio's best read settings for an io_uring job, given to
// both tools alike: registered buffers and files, batch submissions of
// batch reads, completions reaped as soon as one is ready, and I/O
// buffers on huge pages when huge is true (fio's shmhuge needs
// hugetlbfs pages reserved; pagebench backs it with transparent ones).
func BestFlags(batch int, huge bool) []string {
	f := []string{"--fixedbufs", "--registerfiles", fmt.Sprintf("--iodepth_batch_submit=%d", batch), "--iodepth_batch_complete_min=1"}
	if huge {
		f = append(f, "--iomem=shmhuge")
	}
	return f
}

// hugeTLBFree returns the bytes of free hugetlbfs pages (HugePages_Free
// times Hugepagesize in /proc/meminfo), what fio's iomem=shmhuge draws
// from; 0 when it cannot tell.
func hugeTLBFree() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	var free, size int64
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "HugePages_Free":
			free = n
		case "Hugepagesize":
			size = n << 10
		}
	}
	return free * size
}

// isUring reports whether a case's args run io_uring, where the best
// settings apply.
func isUring(args []string) bool {
	return slices.Contains(args, "--ioengine=io_uring")
}

// caseBuffers is the I/O buffer memory a case asks for: iodepth × bs.
func caseBuffers(args []string) int64 {
	depth, bs := int64(1), int64(4096)
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--iodepth="); ok {
			depth, _ = ParseSize(v)
		}
		if v, ok := strings.CutPrefix(a, "--bs="); ok {
			bs, _ = ParseSize(v)
		}
	}
	return depth * bs
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
	// BestBatch is N in the best settings' iodepth_batch_submit=N
	// (capped at each case's iodepth by both tools); default 16.
	BestBatch int
	// Modes to run, of ModeDefaults and ModeBest; default both. The best
	// settings apply to io_uring cases only.
	Modes []string
	// HugeTLBFree is the hugetlbfs memory free for fio's iomem=shmhuge;
	// the best settings use it only for cases whose buffers fit. Default:
	// read from /proc/meminfo; negative: never.
	HugeTLBFree int64
	Stderr      io.Writer // progress lines; default discard
	// Exec runs bin with args and returns its stdout; default os/exec, with
	// the last line of stderr in the error, and each run's whole-command
	// CPU measured (Metrics.CmdCPUPerIO; not measured with an Exec given).
	Exec func(ctx context.Context, bin string, args []string) ([]byte, error)
	run  func(ctx context.Context, bin string, args []string) ([]byte, time.Duration, error)
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
	if c.BestBatch == 0 {
		c.BestBatch = 16
	}
	if c.Modes == nil {
		c.Modes = []string{ModeDefaults, ModeBest}
	}
	for _, m := range c.Modes {
		if m != ModeDefaults && m != ModeBest {
			return fmt.Errorf("%w: compare mode %q (want %s or %s)", ErrBadOption, m, ModeDefaults, ModeBest)
		}
	}
	if c.HugeTLBFree == 0 {
		c.HugeTLBFree = hugeTLBFree()
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
	if c.Exec == nil {
		c.run = execCPU
	} else {
		run := c.Exec
		c.run = func(ctx context.Context, bin string, args []string) ([]byte, time.Duration, error) {
			out, err := run(ctx, bin, args)
			return out, 0, err
		}
	}
	if c.Pairs < 1 || c.Runtime < time.Second || c.FileSize < 1<<20 || c.BestBatch < 1 {
		return fmt.Errorf("%w: compare wants pairs ≥ 1, runtime ≥ 1s, size ≥ 1m, best batch ≥ 1", ErrBadOption)
	}
	return nil
}

// execCPU runs bin as execOutput does and also returns the CPU time (user
// and system) the command used in all, as wait4 reports it: the process
// with every thread and every child it waited for (fio's job processes,
// pagebench's runtime threads), so that both tools are counted the same
// way whatever each reports of itself.
func execCPU(ctx context.Context, bin string, args []string) ([]byte, time.Duration, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		return out, 0, fmt.Errorf("%s: %v: %s", filepath.Base(bin), err, lines[len(lines)-1])
	}
	return out, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// execOutput runs bin with args and returns its stdout, with the last
// line of stderr in the error.
func execOutput(ctx context.Context, bin string, args []string) ([]byte, error) {
	out, _, err := execCPU(ctx, bin, args)
	return out, err
}

// Metrics are the figures compared, from one run's JSON (all jobs summed;
// latency and CPU from the first job).
type Metrics struct {
	IOPS     float64
	BWBytes  float64 // bytes/s
	CPUPerIO float64 // seconds of CPU (usr+sys) per I/O, as the tool reports its jobs' CPU
	// CmdCPUPerIO is seconds of CPU per I/O of the whole command (every
	// process and thread of the run, start-up included), measured by
	// CompareFio the same way for both tools; 0 not measured.
	CmdCPUPerIO float64
	P99Clat     float64 // ns
	IOs         float64 // reads in all
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
	m.IOs = ios
	m.P99Clat = float64(out.Jobs[0].Read.ClatNs.Percentile[PercentileKey(99)])
	return m, nil
}

// CompareRow is one case in one mode: the medians of each side over the
// pairs.
type CompareRow struct {
	Case           string
	Mode           string   // ModeDefaults or ModeBest
	Flags          []string // the flags the mode added to the case's (none at defaults)
	Fio, Pagebench Metrics
	// PairRatio is the median over pairs of pagebench's IOPS over fio's
	// in the same pair; NaN without a pair where both sides ran.
	PairRatio     float64
	FioRuns       int // successful runs
	PagebenchRuns int
	FioErr        error // last error, if any run failed
	PagebenchErr  error
}

// CompareReport is CompareFio's outcome.
type CompareReport struct {
	Pairs    int
	Runtime  time.Duration
	FileSize int64
	Rows     []CompareRow
}

// CompareFio lays out one test file in a temporary directory under
// cfg.Dir, then per case runs fio and pagebench alternately cfg.Pairs
// times for cfg.Runtime each, in each mode (both tools at their defaults;
// both with fio's best read settings, BestFlags, for io_uring cases): a
// pair is one run of each tool per mode, who goes first alternates from
// pair to pair and mode to mode. It reports the medians. The file is
// removed at the end. A side that fails keeps its error in the row; only
// setup errors fail the whole comparison.
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
		type side struct{ fio, pb []Metrics }
		var rows []CompareRow
		var args [][]string
		for _, mode := range cfg.Modes {
			row := CompareRow{Case: c.Name, Mode: mode}
			if mode == ModeBest {
				if !isUring(c.Args) {
					continue
				}
				huge := cfg.HugeTLBFree > 0 && caseBuffers(c.Args)+(4<<20) <= cfg.HugeTLBFree
				row.Flags = BestFlags(cfg.BestBatch, huge)
			}
			rows = append(rows, row)
			args = append(args, append(slices.Clip(common), row.Flags...))
		}
		got := make([]side, len(rows))
		pairRatios := make([][]float64, len(rows))
		for p := range cfg.Pairs {
			for mi := range rows {
				order := []bool{true, false} // fio first
				if (p+ci+mi)%2 == 1 {
					order = []bool{false, true}
				}
				var fioIOPS, pbIOPS float64
				for _, isFio := range order {
					bin, name := cfg.Pagebench, "pagebench"
					if isFio {
						bin, name = cfg.Fio, "fio"
					}
					if ctx.Err() != nil {
						return rep, ctx.Err()
					}
					fmt.Fprintf(cfg.Stderr, "compare: %s, %s: pair %d/%d: %s\n", c.Name, rows[mi].Mode, p+1, cfg.Pairs, name)
					m, err := runSide(ctx, cfg.run, bin, args[mi])
					switch {
					case err != nil && isFio:
						rows[mi].FioErr = err
					case err != nil:
						rows[mi].PagebenchErr = err
					case isFio:
						got[mi].fio = append(got[mi].fio, m)
						fioIOPS = m.IOPS
					default:
						got[mi].pb = append(got[mi].pb, m)
						pbIOPS = m.IOPS
					}
				}
				if fioIOPS > 0 && pbIOPS > 0 {
					pairRatios[mi] = append(pairRatios[mi], pbIOPS/fioIOPS)
				}
			}
		}
		for mi := range rows {
			row := &rows[mi]
			row.Fio, row.FioRuns = medians(got[mi].fio), len(got[mi].fio)
			row.Pagebench, row.PagebenchRuns = medians(got[mi].pb), len(got[mi].pb)
			row.PairRatio = median(pairRatios[mi])
		}
		rep.Rows = append(rep.Rows, rows...)
	}
	return rep, nil
}

func runSide(ctx context.Context, run func(context.Context, string, []string) ([]byte, time.Duration, error), bin string, args []string) (Metrics, error) {
	out, cpu, err := run(ctx, bin, args)
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
	if cpu > 0 {
		m.CmdCPUPerIO = cpu.Seconds() / m.IOs
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
		IOPS:        col(func(m Metrics) float64 { return m.IOPS }),
		BWBytes:     col(func(m Metrics) float64 { return m.BWBytes }),
		CPUPerIO:    col(func(m Metrics) float64 { return m.CPUPerIO }),
		CmdCPUPerIO: col(func(m Metrics) float64 { return m.CmdCPUPerIO }),
		P99Clat:     col(func(m Metrics) float64 { return m.P99Clat }),
		IOs:         col(func(m Metrics) float64 { return m.IOs }),
	}
}

// WriteTable prints the medians and the pagebench/fio ratios, per case
// and mode. For IOPS and bandwidth higher is better; for CPU per I/O and
// p99 clat lower is. "pairs" is the median of the per-pair IOPS ratios.
func (r *CompareReport) WriteTable(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "pagebench vs fio: medians of %d alternating pairs, %s each, %s file, O_DIRECT\n",
		r.Pairs, r.Runtime, fmtBytes(float64(r.FileSize), true))
	fmt.Fprintf(&b, "defaults: both tools at their own defaults; best: both given the same flags\n")
	fmt.Fprintf(&b, "CPU/IO: as each tool reports it (fio its job processes, pagebench its whole process); whole command: every process and thread of the run, measured alike\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "case\tmode\tmetric\tfio\tpagebench\tratio pb/fio")
	for _, row := range r.Rows {
		lines := []struct {
			name    string
			fio, pb float64
			format  func(float64) string
		}{
			{"IOPS", row.Fio.IOPS, row.Pagebench.IOPS, fmtNum},
			{"BW", row.Fio.BWBytes, row.Pagebench.BWBytes, func(v float64) string { return fmtBytes(v, true) + "/s" }},
			{"CPU/IO (lower better)", row.Fio.CPUPerIO, row.Pagebench.CPUPerIO, func(v float64) string { return fmtDur(v * 1e9) }},
			{"CPU/IO, whole command (lower better)", row.Fio.CmdCPUPerIO, row.Pagebench.CmdCPUPerIO, func(v float64) string { return fmtDur(v * 1e9) }},
			{"p99 clat (lower better)", row.Fio.P99Clat, row.Pagebench.P99Clat, fmtDur},
		}
		for i, l := range lines {
			if l.fio == 0 && l.pb == 0 && strings.Contains(l.name, "whole command") {
				continue // not measured (an Exec given)
			}
			name, mode := "", ""
			if i == 0 {
				name, mode = row.Case, row.Mode
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, mode, l.name, orNA(l.fio, l.format), orNA(l.pb, l.format), ratio(l.pb, l.fio))
		}
		pr := "n/a"
		if !math.IsNaN(row.PairRatio) {
			pr = fmt.Sprintf("%.2f", row.PairRatio)
		}
		fmt.Fprintf(tw, "\t\tIOPS ratio, median of pairs\t\t\t%s\n", pr)
		if row.FioErr != nil {
			fmt.Fprintf(tw, "\t\tfio error (%d/%d ok)\t%v\t\t\n", row.FioRuns, r.Pairs, row.FioErr)
		}
		if row.PagebenchErr != nil {
			fmt.Fprintf(tw, "\t\tpagebench error (%d/%d ok)\t%v\t\t\n", row.PagebenchRuns, r.Pairs, row.PagebenchErr)
		}
	}
	tw.Flush()
	for _, row := range r.Rows {
		if len(row.Flags) > 0 {
			fmt.Fprintf(&b, "%s, %s: both ran with %s\n", row.Case, row.Mode, strings.Join(row.Flags, " "))
		}
	}
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
