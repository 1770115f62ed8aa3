package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/pagefeed/pagefeed/internal/cgroup"
	"github.com/pagefeed/pagefeed/rinas"
)

// The loader's read modes in both memory regimes: where the dataset fits
// in memory and the page cache is warm (a memory map's best case), and
// where it is several times larger than the memory the job may hold (a
// memory cgroup that the benchmark makes), with the device's own limit
// (fio at the dataset's page sizes and the loader's queue depth) beside
// it.

// Regime names, for RegimesConfig.Regimes.
const (
	RegimeFits   = "fits"   // dataset in memory, page cache warm
	RegimeLarger = "larger" // dataset several times the memory cgroup's limit
	RegimeDevice = "device" // fio random reads at the page sizes and depth
)

// RegimeContenders are the read modes compared in each regime: the
// loader at its defaults (auto), forced to O_DIRECT, forced to buffered
// reads, and a memory map with page shuffle (what a map-style loader over
// memory-mapped files, as Hugging Face datasets, does).
var RegimeContenders = []ParquetCase{
	{"pagefeed at defaults (auto)", "auto", func(c *ParquetConfig) { c.IOMode = rinas.IOAuto }},
	{"pagefeed, O_DIRECT", "direct", func(c *ParquetConfig) { c.IOMode = rinas.IODirect }},
	{"pagefeed, buffered", "buffered", func(c *ParquetConfig) { c.IOMode = rinas.IOBuffered }},
	{"mmap page shuffle (page cache)", "mmap", func(c *ParquetConfig) { c.IOEngine = ParquetMmap }},
}

// RegimesConfig configures CompareRegimes. Zero fields take the defaults
// of fill.
type RegimesConfig struct {
	// Base is the dataset and the loader's settings; each contender
	// changes its read mode only.
	Base  ParquetConfig
	Cases []ParquetCase // default RegimeContenders (the first is the loader at defaults)
	// Regimes to run, of RegimeFits, RegimeLarger and RegimeDevice;
	// default all.
	Regimes []string
	Runtime time.Duration // per run; default 5s
	Rounds  int           // rounds of alternating runs in each regime, fio included (medians); default 1
	// Memory is the memory cgroup's limit for the larger-than-memory
	// regime; default a quarter of the dataset's projected bytes (the
	// dataset 4× the memory).
	Memory int64
	// Pagebench is the binary each contender of a cgroup runs as
	// (pagebench --parquet ... --output-format=json); default this
	// executable. Env is added to its environment.
	Pagebench string
	Env       []string
	Fio       string    // fio binary; default "fio"
	Progress  io.Writer // a line per run; default discard

	// System hooks, for tests: nil takes the real ones.
	CreateGroup func(name string, limit int64) (*cgroup.Group, error)
	DropCaches  func() error
}

func (c *RegimesConfig) fill() error {
	if err := c.Base.fill(); err != nil {
		return err
	}
	if len(c.Cases) == 0 {
		c.Cases = RegimeContenders
	}
	if len(c.Regimes) == 0 {
		c.Regimes = []string{RegimeFits, RegimeLarger, RegimeDevice}
	}
	for _, r := range c.Regimes {
		if r != RegimeFits && r != RegimeLarger && r != RegimeDevice {
			return fmt.Errorf("%w: regime %q (want %s, %s or %s)", ErrBadOption, r, RegimeFits, RegimeLarger, RegimeDevice)
		}
	}
	if c.Runtime <= 0 {
		c.Runtime = 5 * time.Second
	}
	if c.Rounds <= 0 {
		c.Rounds = 1
	}
	if c.Memory < 0 {
		return fmt.Errorf("%w: memory %d", ErrBadOption, c.Memory)
	}
	if c.Pagebench == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("%w: cannot find the pagebench binary: %v", ErrBadOption, err)
		}
		c.Pagebench = exe
	}
	if c.Fio == "" {
		c.Fio = "fio"
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.CreateGroup == nil {
		c.CreateGroup = cgroup.Create
	}
	if c.DropCaches == nil {
		c.DropCaches = cgroup.DropCaches
	}
	return nil
}

func (c *RegimesConfig) wants(r string) bool { return slices.Contains(c.Regimes, r) }

// DatasetFacts are what the regimes are sized by: the dataset's files and
// its projected bytes (the pages and dictionaries of the projected
// columns, what the loader reads), and the mix of read sizes the loader's
// O_DIRECT reads of its pages make (each page rounded out to 4 KiB), as
// fio's bssplit.
type DatasetFacts struct {
	Files     []string `json:"files"`
	FileBytes int64    `json:"file_bytes"`
	Projected int64    `json:"projected_bytes"`
	Pages     int64    `json:"pages"`
	BSSplit   string   `json:"bssplit"` // e.g. "8k/12:12k/70:16k/18"
}

// RegimeRow is one contender's median over its runs.
type RegimeRow struct {
	Label       string  `json:"label"`
	Short       string  `json:"short"`
	RowsPerSec  float64 `json:"rows_per_sec"`
	PagesPerSec float64 `json:"pages_per_sec"`
	DiskBps     float64 `json:"read_bytes_per_sec"` // bytes read per second (O_DIRECT reads rounded out)
	BatchP99Ns  float64 `json:"batch_p99_ns"`
	RSSPeak     int64   `json:"rss_peak_bytes"`
	Depth       float64 `json:"iodepth_kept,omitempty"` // reads in the kernel on average at the engine's waits (io_uring)
	IOMode      string  `json:"io_mode"`                // the mode the run read in (auto: its choice)
	IOReason    string  `json:"io_mode_reason,omitempty"`
	Runs        int     `json:"runs"`
	Err         string  `json:"error,omitempty"` // the run failed (e.g. killed by the cgroup's OOM killer)
	// RoundRowsPerSec is each round's run, in round order (0: it failed).
	RoundRowsPerSec []float64 `json:"round_rows_per_sec,omitempty"`
	// VsMmap and VsBest are the medians over the rounds of this run's
	// rows/s over the memory map's and over the better of O_DIRECT's and
	// buffered's in the same round (rounds where either failed left out;
	// 0: none left): ratios of neighbouring runs, which the machine's
	// drift over a regime's minutes moves less than a ratio of medians.
	VsMmap float64 `json:"vs_mmap,omitempty"`
	VsBest float64 `json:"vs_best,omitempty"`
}

// Regime is one regime's measurements, or why it was skipped.
type Regime struct {
	Name    string      `json:"name"`
	Memory  int64       `json:"memory_bytes"` // the memory cgroup's limit (larger), the node's MemAvailable (fits)
	Rows    []RegimeRow `json:"rows"`
	Skipped string      `json:"skipped,omitempty"` // set when the regime was not measured, with the reason
	Notes   []string    `json:"notes,omitempty"`   // what ran otherwise than asked (drop_caches refused, ...)
	Load    string      `json:"load"`              // /proc/loadavg's 1-minute figure before and after
}

// DeviceLimit is fio's random reads over the dataset's files at the
// dataset's read-size mix, O_DIRECT, in the same memory cgroup as the
// larger-than-memory regime: at the loader's configured depth
// (--iodepth), and at the depth each loader run kept in the kernel on
// average (its engine's, measured at its waits), with the loader's
// bytes per second (larger than memory, each loader run beside fio's in
// the same round) as a share of fio's.
type DeviceLimit struct {
	Args    []string `json:"fio_args"` // at the configured depth
	BWBytes float64  `json:"fio_bytes_per_sec"`
	IOPS    float64  `json:"fio_iops"`
	// Fio is fio's median at the configured depth, then at each loader's
	// kept depth (its runs' median, rounded).
	Fio []FioRun `json:"fio_runs"`
	// Loaders are the loader's runs larger than memory that read from
	// the device (auto and O_DIRECT), medians over the rounds. Auto's
	// bytes include what it read from the page cache.
	Loaders []DeviceShare `json:"loaders"`
	Skipped string        `json:"skipped,omitempty"`
	Load    string        `json:"load"`
}

// FioRun is one fio run of DeviceLimit.
type FioRun struct {
	Depth   int     `json:"iodepth"`
	BWBytes float64 `json:"bytes_per_sec"`
	IOPS    float64 `json:"iops"`
	Err     string  `json:"error,omitempty"`
}

// DeviceShare is a loader run's read bytes per second against fio's at
// the configured depth and at the depth the run kept in the kernel.
type DeviceShare struct {
	Label string  `json:"label"`
	Short string  `json:"short"`
	Bps   float64 `json:"read_bytes_per_sec"`
	Ratio float64 `json:"ratio_to_fio"` // against fio at the configured depth
	// Depth is the reads the run kept in the kernel on average (at its
	// engine's waits); RatioSameDepth its bytes/s over fio's at that
	// depth (0: not measured).
	Depth          float64 `json:"iodepth_kept"`
	RatioSameDepth float64 `json:"ratio_to_fio_same_depth"`
	// Rounds is how many rounds the ratios are the medians of: a loader
	// run and fio's beside it, in the same round.
	Rounds int    `json:"rounds"`
	Err    string `json:"error,omitempty"` // every run of the loader failed: the first error
}

// RegimesResult is CompareRegimes' answer.
type RegimesResult struct {
	Dataset DatasetFacts  `json:"dataset"`
	Fits    Regime        `json:"fits"`
	Larger  Regime        `json:"larger"`
	Device  DeviceLimit   `json:"device"`
	Runtime time.Duration `json:"runtime_ns"`
}

// datasetFacts indexes cfg's dataset and measures it.
func datasetFacts(ctx context.Context, cfg ParquetConfig) (DatasetFacts, error) {
	files, err := expandParquet(cfg.Paths)
	if err != nil {
		return DatasetFacts{}, err
	}
	d := DatasetFacts{Files: files}
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			d.FileBytes += st.Size()
		}
	}
	var res ParquetResult
	ix, err := buildIndex(ctx, cfg, files, &res)
	if err != nil {
		return d, err
	}
	sizes := map[int64]int64{} // 4 KiB-aligned read size → pages
	cols := ix.NumColumns()
	if cfg.Column == "" {
		cols = 1 // the loader's default projection: the first leaf
	}
	for k := 0; k < cols; k++ {
		for g := 0; g < ix.NumPages(k); g++ {
			loc := ix.Locate(k, g)
			d.Projected += int64(loc.Size)
			d.Pages++
			lo, hi := loc.Offset&^4095, (loc.Offset+int64(loc.Size)+4095)&^4095
			sizes[hi-lo]++
		}
		for c := 0; c < ix.NumChunks(); c++ {
			d.Projected += int64(ix.Chunk(k, c).DictSize)
		}
	}
	d.BSSplit = bssplit(sizes, d.Pages)
	return d, nil
}

// bssplit writes a read-size histogram as fio's bssplit: sizes of at
// least 1% of the reads, in percent summing to 100 (the most common size
// takes the rounding), at most 64 of them.
func bssplit(sizes map[int64]int64, total int64) string {
	type bucket struct{ size, n int64 }
	var bs []bucket
	for s, n := range sizes {
		bs = append(bs, bucket{s, n})
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].n > bs[j].n || (bs[i].n == bs[j].n && bs[i].size < bs[j].size) })
	var keep []bucket
	kept := int64(0)
	for _, b := range bs {
		if len(keep) == 64 || (len(keep) > 0 && b.n*100 < total) {
			break
		}
		keep = append(keep, b)
		kept += b.n
	}
	if len(keep) == 0 {
		return ""
	}
	pct := make([]int64, len(keep))
	sum := int64(0)
	for i, b := range keep {
		pct[i] = b.n * 100 / kept
		sum += pct[i]
	}
	pct[0] += 100 - sum
	order := make([]int, len(keep))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return keep[order[a]].size < keep[order[b]].size })
	var parts []string
	for _, i := range order {
		if pct[i] > 0 {
			parts = append(parts, fmt.Sprintf("%dk/%d", keep[i].size>>10, pct[i]))
		}
	}
	return strings.Join(parts, ":")
}

// warmFiles reads the files through the page cache, start to end.
func warmFiles(files []string) error {
	buf := make([]byte, 1<<20)
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return &Error{Op: "warm", Path: p, Err: err}
		}
		for {
			if _, err = f.Read(buf); err != nil {
				break
			}
		}
		f.Close()
		if err != io.EOF {
			return &Error{Op: "warm", Path: p, Err: err}
		}
	}
	return nil
}

// loadavg returns the 1-minute load average, "?" when unknown.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b) + " ?")[0]
}

// CompareRegimes measures the loader's read modes in both regimes and the
// device's limit (see RegimesConfig). A regime that cannot run here (no
// memory cgroup can be made, no fio) is skipped with its reason in
// Skipped and the rest still run; a page cache that cannot be dropped
// (drop_caches refused) is replaced by evicting the dataset's files, and
// said in Notes.
func CompareRegimes(ctx context.Context, cfg RegimesConfig) (*RegimesResult, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	d, err := datasetFacts(ctx, cfg.Base)
	if err != nil {
		return nil, err
	}
	res := &RegimesResult{Dataset: d, Runtime: cfg.Runtime}
	res.Fits.Name, res.Larger.Name = RegimeFits, RegimeLarger
	if cfg.wants(RegimeFits) {
		if err := cfg.fits(ctx, d, &res.Fits); err != nil {
			return res, err
		}
	} else {
		res.Fits.Skipped = "not asked for"
	}
	wantLarger, wantDevice := cfg.wants(RegimeLarger), cfg.wants(RegimeDevice)
	if !wantLarger {
		res.Larger.Skipped = "not asked for"
	}
	if !wantDevice {
		res.Device.Skipped = "not asked for"
	}
	if !wantLarger && !wantDevice {
		return res, nil
	}
	mem := cfg.Memory
	if mem == 0 {
		mem = d.Projected / 4
	}
	res.Larger.Memory = mem
	g, err := cfg.CreateGroup(fmt.Sprintf("pagefeed-bench-%d-%d", os.Getpid(), groupSeq.Add(1)), mem)
	if err != nil {
		why := fmt.Sprintf("no memory cgroup could be made here (%v)", err)
		res.Larger.Skipped = why
		if wantDevice {
			res.Device.Skipped = why
		}
		fmt.Fprintf(cfg.Progress, "larger than memory: skipped: %s\n", why)
		return res, nil
	}
	defer g.Remove()
	if wantLarger {
		if err := cfg.larger(ctx, d, g, &res.Larger); err != nil {
			return res, err
		}
	}
	if wantDevice {
		cfg.device(ctx, d, g, &res.Device)
	}
	return res, nil
}

// groupSeq numbers the benchmark's cgroups within this process.
var groupSeq atomic.Int64

// fits runs every contender in this process with the dataset read into
// the page cache before each run, Rounds times alternating.
func (cfg *RegimesConfig) fits(ctx context.Context, d DatasetFacts, out *Regime) error {
	avail, err := cgroup.MemAvailable()
	if err == nil {
		out.Memory = avail
		if d.FileBytes > avail/2 {
			out.Skipped = fmt.Sprintf("the dataset (%s) does not fit comfortably in the node's available memory (%s)", fmtBytes(float64(d.FileBytes), true), fmtBytes(float64(avail), true))
			return nil
		}
	}
	if m, err := cgroup.Self(); err == nil && m.Limit != cgroup.Unlimited && d.FileBytes > m.Room()/2 {
		out.Skipped = fmt.Sprintf("the dataset (%s) does not fit comfortably in this process's memory cgroup (%s free for page cache)", fmtBytes(float64(d.FileBytes), true), fmtBytes(float64(m.Room()), true))
		return nil
	}
	out.Load = loadavg()
	runs := make([][]ParquetJob, len(cfg.Cases))
	round := newRoundTable(cfg.Rounds, len(cfg.Cases))
	for r := 0; r < cfg.Rounds; r++ {
		// The dataset fits: buffered reads and the memory map are what
		// auto is measured against; O_DIRECT is far behind.
		for _, i := range roundOrder(r, cfg.Cases, "buffered", "auto", "mmap") {
			c := cfg.Cases[i]
			if err := warmFiles(d.Files); err != nil {
				return err
			}
			pc := cfg.Base
			pc.Name, pc.Runtime, pc.Loops, pc.KeepCache = c.Label, cfg.Runtime, 0, true
			c.Mod(&pc)
			res, err := RunParquet(ctx, pc, nil)
			if err != nil {
				return fmt.Errorf("fits, %s: %w", c.Label, err)
			}
			j := res.JSON().Jobs[0]
			runs[i] = append(runs[i], j)
			round[r][i] = j.RowsPerSec
			fmt.Fprintf(cfg.Progress, "fits, warm, round %d/%d: %-32s %10.0f rows/s  %s\n", r+1, cfg.Rounds, c.Label, j.RowsPerSec, j.IOMode)
		}
	}
	out.Load += " → " + loadavg()
	for i, c := range cfg.Cases {
		out.Rows = append(out.Rows, regimeRow(c, runs[i], ""))
	}
	round.pair(out.Rows)
	return nil
}

// larger runs every contender inside g, Rounds times alternating, with
// the page cache dropped before each run.
func (cfg *RegimesConfig) larger(ctx context.Context, d DatasetFacts, g *cgroup.Group, out *Regime) error {
	out.Load = loadavg()
	runs := make([][]ParquetJob, len(cfg.Cases))
	errs := make([]string, len(cfg.Cases))
	round := newRoundTable(cfg.Rounds, len(cfg.Cases))
	for r := 0; r < cfg.Rounds; r++ {
		// Larger than memory: auto is measured against O_DIRECT; the
		// memory map is hundreds of times behind.
		for _, i := range roundOrder(r, cfg.Cases, "direct", "auto", "buffered") {
			c := cfg.Cases[i]
			pc := cfg.Base
			pc.Name, pc.Runtime, pc.Loops = c.Label, cfg.Runtime, 0
			c.Mod(&pc)
			if note := cfg.coldCache(d.Files); note != "" && !slices.Contains(out.Notes, note) {
				out.Notes = append(out.Notes, note)
			}
			j, err := cfg.runIn(ctx, g, pc)
			if err != nil {
				if errs[i] == "" {
					errs[i] = err.Error()
				}
				fmt.Fprintf(cfg.Progress, "larger than memory (%s cgroup), round %d/%d: %-32s failed: %v\n", fmtBytes(float64(g.Limit), true), r+1, cfg.Rounds, c.Label, err)
				continue
			}
			runs[i] = append(runs[i], *j)
			round[r][i] = j.RowsPerSec
			fmt.Fprintf(cfg.Progress, "larger than memory (%s cgroup), round %d/%d: %-32s %10.0f rows/s  %s\n", fmtBytes(float64(g.Limit), true), r+1, cfg.Rounds, c.Label, j.RowsPerSec, j.IOMode)
		}
	}
	for i, c := range cfg.Cases {
		e := ""
		if len(runs[i]) == 0 {
			e = errs[i]
		}
		out.Rows = append(out.Rows, regimeRow(c, runs[i], e))
	}
	round.pair(out.Rows)
	out.Load += " → " + loadavg()
	return nil
}

// coldCache drops the node's page cache; where that is refused it evicts
// the dataset's files (posix_fadvise) and returns a note saying so.
func (cfg *RegimesConfig) coldCache(files []string) string {
	if err := cfg.DropCaches(); err != nil {
		evictCache(files)
		return fmt.Sprintf("page cache not dropped (%v): the dataset's files were evicted with posix_fadvise instead", err)
	}
	return ""
}

// runIn runs pc as a pagebench child inside g and returns its job.
func (cfg *RegimesConfig) runIn(ctx context.Context, g *cgroup.Group, pc ParquetConfig) (*ParquetJob, error) {
	args := append(pc.Args(), "--output-format=json")
	cmd := g.Command(ctx, cfg.Pagebench, args...)
	cmd.Env = append(os.Environ(), cfg.Env...)
	out, err := runCmd(cmd, "pagebench")
	if err != nil {
		return nil, err
	}
	var doc ParquetOutput
	if err := json.Unmarshal(out, &doc); err != nil || len(doc.Jobs) == 0 {
		return nil, fmt.Errorf("pagebench's JSON: %v", err)
	}
	return &doc.Jobs[0], nil
}

// runCmd runs cmd and returns its stdout, with the last line of stderr
// (or how it ended: a signal, the OOM killer's SIGKILL) in the error.
func runCmd(cmd *exec.Cmd, name string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		return out, fmt.Errorf("%s: %v: %s", name, err, lines[len(lines)-1])
	}
	return out, nil
}

// device runs, inside g with the page cache dropped before each run, the
// loader at its defaults and with O_DIRECT, each followed by fio's random
// O_DIRECT reads over the dataset's files at its read-size mix and the
// depth that loader run kept in the kernel, then fio at the configured
// depth, Rounds times; each ratio is the median over rounds of a loader
// run over fio's in the same round.
func (cfg *RegimesConfig) device(ctx context.Context, d DatasetFacts, g *cgroup.Group, out *DeviceLimit) {
	if _, err := exec.LookPath(cfg.Fio); err != nil {
		out.Skipped = fmt.Sprintf("fio is not installed (%v; apt-get install fio)", err)
		fmt.Fprintf(cfg.Progress, "device limit: skipped: %s\n", out.Skipped)
		return
	}
	names := make([]string, len(d.Files))
	for i, f := range d.Files {
		names[i] = strings.ReplaceAll(f, ":", `\:`)
	}
	args := func(depth int) []string {
		return []string{"--name=device-limit", "--filename=" + strings.Join(names, ":"), "--rw=randread",
			"--bssplit=" + d.BSSplit, "--ioengine=io_uring", "--direct=1", "--iodepth=" + strconv.Itoa(depth),
			"--runtime=" + strconv.FormatInt(cfg.Runtime.Milliseconds(), 10) + "ms", "--time_based", "--output-format=json"}
	}
	out.Args = args(cfg.Base.IODepth)
	// The loaders that read from the device, each run again here beside
	// fio: a loader run, fio at the depth that run kept in the kernel,
	// then (once a round) fio at the configured depth. The ratios are of
	// runs in the same round, minutes apart at most, where the virtio
	// disk's speed drifts over longer spans.
	var loaders []ParquetCase
	for _, c := range cfg.Cases {
		if c.Short == "auto" || c.Short == "direct" {
			loaders = append(loaders, c)
		}
	}
	fio := func(r, depth int) (float64, float64, error) {
		cfg.coldCache(d.Files)
		b, err := runCmd(g.Command(ctx, cfg.Fio, args(depth)...), "fio")
		var m Metrics
		if err == nil {
			var fo *FioOutput
			if fo, err = DecodeFio(b); err == nil {
				m, err = MetricsOf(fo)
			}
		}
		if err != nil {
			fmt.Fprintf(cfg.Progress, "device limit, round %d/%d: fio at depth %d failed: %v\n", r+1, cfg.Rounds, depth, err)
			return 0, 0, err
		}
		fmt.Fprintf(cfg.Progress, "device limit, round %d/%d: fio at depth %d: %s\n", r+1, cfg.Rounds, depth, fmtBytesRate(m.BWBytes))
		return m.BWBytes, m.IOPS, nil
	}
	out.Load = loadavg()
	type pairs struct {
		bps, depth, ratio, same, fioSame []float64
		err                              string
	}
	lp := make([]pairs, len(loaders))
	var cfgBW, cfgIOPS []float64
	cfgErr := ""
	for r := 0; r < cfg.Rounds; r++ {
		bps := make([]float64, len(loaders))
		for i, c := range loaders {
			pc := cfg.Base
			pc.Name, pc.Runtime, pc.Loops = c.Label, cfg.Runtime, 0
			c.Mod(&pc)
			cfg.coldCache(d.Files)
			j, err := cfg.runIn(ctx, g, pc)
			if err != nil {
				if lp[i].err == "" {
					lp[i].err = err.Error()
				}
				fmt.Fprintf(cfg.Progress, "device limit, round %d/%d: %s failed: %v\n", r+1, cfg.Rounds, c.Label, err)
				continue
			}
			bps[i] = float64(j.Read.BWBytes)
			lp[i].bps = append(lp[i].bps, bps[i])
			fmt.Fprintf(cfg.Progress, "device limit, round %d/%d: %s: %s\n", r+1, cfg.Rounds, c.Label, fmtBytesRate(bps[i]))
			if st := j.EngineStats; st != nil && st.Waits > 0 {
				dep := float64(st.InKernelAtWaits) / float64(st.Waits)
				lp[i].depth = append(lp[i].depth, dep)
				if k := int(dep + 0.5); k >= 1 {
					if bw, _, err := fio(r, k); err == nil && bw > 0 {
						lp[i].same = append(lp[i].same, bps[i]/bw)
						lp[i].fioSame = append(lp[i].fioSame, bw)
					}
				}
			}
		}
		bw, io, err := fio(r, cfg.Base.IODepth)
		if err != nil {
			cfgErr = err.Error()
			continue
		}
		cfgBW, cfgIOPS = append(cfgBW, bw), append(cfgIOPS, io)
		for i := range loaders {
			if bps[i] > 0 && bw > 0 {
				lp[i].ratio = append(lp[i].ratio, bps[i]/bw)
			}
		}
	}
	run := FioRun{Depth: cfg.Base.IODepth}
	if len(cfgBW) == 0 {
		run.Err = cfgErr
	} else {
		run.BWBytes, run.IOPS = median(cfgBW), median(cfgIOPS)
	}
	out.Fio = append(out.Fio, run)
	out.Load += " → " + loadavg()
	if run.Err != "" {
		out.Skipped = "fio failed: " + run.Err
		return
	}
	out.BWBytes, out.IOPS = run.BWBytes, run.IOPS
	for i, c := range loaders {
		if len(lp[i].ratio) == 0 {
			if lp[i].err != "" {
				out.Loaders = append(out.Loaders, DeviceShare{Label: c.Label, Short: c.Short, Err: lp[i].err})
			}
			continue
		}
		sh := DeviceShare{Label: c.Label, Short: c.Short, Bps: median(lp[i].bps), Ratio: median(lp[i].ratio), Rounds: len(lp[i].ratio)}
		if len(lp[i].same) > 0 {
			sh.Depth, sh.RatioSameDepth = median(lp[i].depth), median(lp[i].same)
			out.Fio = append(out.Fio, FioRun{Depth: int(sh.Depth + 0.5), BWBytes: median(lp[i].fioSame)})
		}
		out.Loaders = append(out.Loaders, sh)
	}
}

// roundOrder is the order the contenders run in round r: those named in
// near (by Short) first, in that order, then the rest as listed; reversed
// in odd rounds, so that a drift of the machine's speed through a round
// favours no contender over the rounds. near puts next to the loader at
// its defaults the contenders it is compared with most closely.
func roundOrder(r int, cases []ParquetCase, near ...string) []int {
	var o []int
	for _, s := range near {
		for i, c := range cases {
			if c.Short == s && !slices.Contains(o, i) {
				o = append(o, i)
			}
		}
	}
	for i := range cases {
		if !slices.Contains(o, i) {
			o = append(o, i)
		}
	}
	if r%2 == 1 {
		slices.Reverse(o)
	}
	return o
}

// roundTable is each round's rows/s by contender (0: not run or failed).
type roundTable [][]float64

func newRoundTable(rounds, cases int) roundTable {
	t := make(roundTable, rounds)
	for r := range t {
		t[r] = make([]float64, cases)
	}
	return t
}

// pair sets each row's RoundRowsPerSec and its paired ratios, VsMmap and
// VsBest (rows are in the contenders' order, as t's columns).
func (t roundTable) pair(rows []RegimeRow) {
	col := func(short string) int {
		for i, r := range rows {
			if r.Short == short {
				return i
			}
		}
		return -1
	}
	mm, di, bu := col("mmap"), col("direct"), col("buffered")
	at := func(r []float64, i int) float64 {
		if i < 0 {
			return 0
		}
		return r[i]
	}
	for i := range rows {
		var vm, vb []float64
		for _, r := range t {
			rows[i].RoundRowsPerSec = append(rows[i].RoundRowsPerSec, r[i])
			if r[i] <= 0 {
				continue
			}
			if m := at(r, mm); m > 0 {
				vm = append(vm, r[i]/m)
			}
			if b := max(at(r, di), at(r, bu)); b > 0 && at(r, di) > 0 && at(r, bu) > 0 {
				vb = append(vb, r[i]/b)
			}
		}
		if len(vm) > 0 {
			rows[i].VsMmap = median(vm)
		}
		if len(vb) > 0 {
			rows[i].VsBest = median(vb)
		}
	}
}

// regimeRow is the median of a contender's runs.
func regimeRow(c ParquetCase, js []ParquetJob, errText string) RegimeRow {
	r := RegimeRow{Label: c.Label, Short: c.Short, Runs: len(js), Err: errText}
	var rps, pps, bps, p99 []float64
	for _, j := range js {
		rps = append(rps, j.RowsPerSec)
		pps = append(pps, j.Read.IOPS)
		bps = append(bps, float64(j.Read.BWBytes))
		p99 = append(p99, float64(j.BatchLatNs.Percentile["99.000000"]))
		r.RSSPeak = max(r.RSSPeak, j.RSSPeakBytes)
		if st := j.EngineStats; st != nil && st.Waits > 0 {
			r.Depth = float64(st.InKernelAtWaits) / float64(st.Waits)
		}
		r.IOMode, r.IOReason = j.IOMode, j.IOReason
	}
	if len(js) > 0 {
		r.RowsPerSec, r.PagesPerSec, r.DiskBps, r.BatchP99Ns = median(rps), median(pps), median(bps), median(p99)
	}
	return r
}

// WriteRegimes prints the regimes as tables, each contender's rows/s as
// a ratio of the memory map's (the last contender) and of the better of
// O_DIRECT and buffered, and the device limit with the loader's share of
// it.
func WriteRegimes(w io.Writer, r *RegimesResult) error {
	d := r.Dataset
	fmt.Fprintf(w, "dataset: %d files, %s on disk, %s projected (%d pages; O_DIRECT read sizes %s)\n\n",
		len(d.Files), fmtBytes(float64(d.FileBytes), true), fmtBytes(float64(d.Projected), true), d.Pages, d.BSSplit)
	for _, g := range []*Regime{&r.Fits, &r.Larger} {
		title := "fits in memory, page cache warm"
		if g.Name == RegimeLarger {
			title = fmt.Sprintf("larger than memory: every contender in a memory cgroup of %s (the dataset %.1f× it), page cache dropped before each run",
				fmtBytes(float64(g.Memory), true), float64(d.Projected)/float64(max(g.Memory, 1)))
		}
		if g.Skipped != "" {
			fmt.Fprintf(w, "%s: skipped: %s\n\n", title, g.Skipped)
			continue
		}
		fmt.Fprintf(w, "%s (%v runs, load %s):\n", title, r.Runtime, g.Load)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "case\trows/s\tpages/s\tread MB/s\tbatch p99\tRSS peak\tread as\t÷ mmap\t÷ best of direct, buffered\t")
		base, best := regimeRefs(g.Rows)
		for _, row := range g.Rows {
			if row.Err != "" {
				fmt.Fprintf(tw, "%s\tfailed: %s\t\t\t\t\t\t\t\t\n", row.Label, row.Err)
				continue
			}
			vm, vb := ratioStr(row.RowsPerSec, base), ratioStr(row.RowsPerSec, best)
			if row.VsMmap > 0 {
				vm = fmt.Sprintf("%.2fx", row.VsMmap)
			}
			if row.VsBest > 0 {
				vb = fmt.Sprintf("%.2fx", row.VsBest)
			}
			fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.1f\t%s\t%s\t%s\t%s\t%s\t\n", row.Label, row.RowsPerSec, row.PagesPerSec, row.DiskBps/1e6,
				fmtDur(row.BatchP99Ns), fmtBytes(float64(row.RSSPeak), true), row.IOMode, vm, vb)
		}
		tw.Flush()
		if len(g.Rows) > 0 && g.Rows[0].Runs > 1 {
			fmt.Fprintln(w, "  rows/s: each contender's median run; ÷: the median over rounds of the ratio of runs in the same round")
		}
		for _, n := range g.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
		if len(g.Rows) > 0 && g.Rows[0].IOReason != "" {
			fmt.Fprintf(w, "  %s read: %s\n", g.Rows[0].Short, g.Rows[0].IOReason)
		}
		fmt.Fprintln(w)
	}
	dv := r.Device
	if dv.Skipped != "" {
		_, err := fmt.Fprintf(w, "device limit: skipped: %s\n", dv.Skipped)
		return err
	}
	fmt.Fprintf(w, "device limit (load %s): fio %s over the dataset's files, in the same cgroup:", dv.Load, strings.Join(dv.Args[2:len(dv.Args)-4], " "))
	for _, f := range dv.Fio {
		if f.Err != "" {
			fmt.Fprintf(w, " depth %d failed (%s);", f.Depth, f.Err)
			continue
		}
		fmt.Fprintf(w, " depth %d %s;", f.Depth, fmtBytesRate(f.BWBytes))
	}
	fmt.Fprintln(w)
	for _, l := range dv.Loaders {
		if l.Err != "" {
			fmt.Fprintf(w, "  %s, larger than memory: failed: %s\n", l.Label, l.Err)
			continue
		}
		same := ""
		if l.RatioSameDepth > 0 {
			same = fmt.Sprintf(", %.2f× fio at the depth it kept (%.0f)", l.RatioSameDepth, l.Depth)
		}
		fmt.Fprintf(w, "  %s, larger than memory: %s, %.2f× fio at depth %d%s\n", l.Label, fmtBytesRate(l.Bps), l.Ratio, dv.Fio[0].Depth, same)
	}
	return nil
}

// regimeRefs returns the rows/s a regime's rows are compared with: the
// memory map's (a case whose Short is "mmap") and the better of the
// O_DIRECT and buffered ones; 0 where absent.
func regimeRefs(rows []RegimeRow) (mmap, best float64) {
	for _, r := range rows {
		if r.Err != "" {
			continue
		}
		switch r.Short {
		case "mmap":
			mmap = r.RowsPerSec
		case "direct", "buffered":
			best = max(best, r.RowsPerSec)
		}
	}
	return mmap, best
}

func ratioStr(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

// Args returns the pagebench flags that run c (Parquet mode), as
// CompareRegimes and SweepMemory give their children: every field that
// differs from its default. Logf, DumpOrder and Pin are not passed.
func (c ParquetConfig) Args() []string {
	var a []string
	add := func(name, v string) { a = append(a, "--"+name+"="+v) }
	for _, p := range c.Paths {
		add("parquet", p)
	}
	if c.Name != "" {
		add("name", c.Name)
	}
	str := map[string]string{"column": c.Column, "lead-column": c.LeadColumn}
	for _, k := range []string{"column", "lead-column"} {
		if v := str[k]; v != "" {
			add(k, v)
		}
	}
	ints := []struct {
		name string
		v    int64
	}{{"coalesce", int64(c.Coalesce)}, {"side-cache", c.SideCache}, {"batch", int64(c.Batch)}, {"rows", int64(c.Rows)},
		{"buffer", int64(c.Buffer)}, {"iodepth", int64(c.IODepth)}, {"prefetch", int64(c.Prefetch)}, {"workers", int64(c.Workers)},
		{"loops", int64(c.Loops)}, {"rank", int64(c.Rank)}}
	for _, x := range ints {
		if x.v != 0 {
			add(x.name, strconv.FormatInt(x.v, 10))
		}
	}
	if c.World > 1 {
		add("world", strconv.Itoa(c.World))
	}
	if c.Seed != 0 {
		add("seed", strconv.FormatUint(c.Seed, 10))
	}
	if c.Epoch != 0 {
		add("epoch", strconv.FormatUint(c.Epoch, 10))
	}
	add("shuffle", c.Shuffle.String())
	add("fetch", c.Fetch.String())
	add("io-mode", c.IOMode.String())
	if c.IOEngine != ParquetIOAuto {
		add("ioengine", c.IOEngine.String())
	}
	if c.Engine != ParquetPagefeed {
		add("engine", c.Engine.String())
	}
	if c.Runtime > 0 && c.Loops <= 0 {
		add("runtime", strconv.FormatInt(c.Runtime.Milliseconds(), 10)+"ms")
	}
	for _, b := range []struct {
		name string
		on   bool
	}{{"drop-last", c.DropLast}, {"pad-last", c.PadLast}, {"keep-uneven", c.KeepUneven}, {"deterministic", c.Deterministic}, {"keep-cache", c.KeepCache}} {
		if b.on {
			a = append(a, "--"+b.name)
		}
	}
	return a
}
