package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/pagefeed/pagefeed/rinas"
)

// MinTuneRuntime is the shortest runtime per point that still measures
// something: below it, engine start and the first reads dominate.
const MinTuneRuntime = 200 * time.Millisecond

// maxTunePoints bounds a grid.
const maxTunePoints = 4096

// TuneConfig configures RunTune: a grid of fio-style random-read jobs over
// a raw file (Filename), or of loader runs over a Parquet dataset
// (Parquet). Zero fields take the defaults of Fill.
type TuneConfig struct {
	// Filename is the raw file to read (raw mode). A missing file is laid
	// out at Size bytes.
	Filename string
	// Size is the span of Filename used; default the file's size. Required
	// when Filename does not exist.
	Size int64
	// Parquet lists files, directories or globs (Parquet mode); Column
	// is the projection (default the first leaf column).
	Parquet []string
	Column  string

	IOEngines  []string // io_uring|psync|mmap (raw), io_uring|psync (Parquet); default io_uring
	IODepths   []int    // raw: queue depths; default 1,2,4,...,256
	BlockSizes []int    // raw: bytes; default 4k,16k,64k,256k,1m
	NumJobs    []int    // raw: clones; default 1
	Batches    []int    // Parquet: pages per batch; default 8,16,...,256
	Prefetch   []int    // Parquet: batches read ahead; default 1,2,4,8
	Direct     bool     // raw: O_DIRECT; Fill sets it to !NoDirect
	NoDirect   bool     // raw: turn O_DIRECT off (the zero value reads with O_DIRECT)
	// IOMode is how Parquet points read (rinas.Config.IOMode): auto (the
	// default), direct or buffered.
	IOMode  rinas.IOMode
	Runtime time.Duration // per point; default 2s, at least MinTuneRuntime
	Seed    uint64

	// OutDir receives results.csv, results.json and the charts; default ".".
	OutDir string
	// CompareFio runs fio on every raw point too, where fio is installed
	// (Fio names the binary; default "fio"); Exec runs it (tests).
	CompareFio bool
	Fio        string
	Exec       func(ctx context.Context, bin string, args []string) ([]byte, error)

	// Progress, when set, is called before each point with the points done,
	// the total and the point about to run.
	Progress func(done, total int, point string)
	// Logf receives notices; default discard. It may be called from the
	// engine's goroutines, concurrently.
	Logf func(format string, args ...any)
}

// parquet reports whether c is a Parquet-mode grid.
func (c *TuneConfig) parquet() bool { return len(c.Parquet) > 0 }

// Fill applies the defaults and validates c before anything runs: grids,
// runtime, the input, and that OutDir can be created and written. Errors
// wrap ErrBadOption or ErrAlignment and read as one line.
func (c *TuneConfig) Fill() error {
	if (c.Filename == "") == !c.parquet() {
		return fmt.Errorf("%w: want exactly one of --filename and --parquet", ErrBadOption)
	}
	if len(c.IOEngines) == 0 {
		c.IOEngines = []string{EngineIOUring}
	}
	for _, e := range c.IOEngines {
		switch {
		case e == EngineIOUring || e == EnginePsync:
		case e == EngineMmap && !c.parquet():
		default:
			return fmt.Errorf("%w: ioengine %q (want io_uring, psync%s)", ErrBadOption, e, map[bool]string{false: " or mmap", true: ""}[c.parquet()])
		}
	}
	def := func(p *[]int, vs ...int) {
		if len(*p) == 0 {
			*p = vs
		}
	}
	def(&c.IODepths, 1, 2, 4, 8, 16, 32, 64, 128, 256)
	def(&c.BlockSizes, 4<<10, 16<<10, 64<<10, 256<<10, 1<<20)
	def(&c.NumJobs, 1)
	def(&c.Batches, 8, 16, 32, 64, 128, 256)
	def(&c.Prefetch, 1, 2, 4, 8)
	in := func(name string, vs []int, lo, hi int) error {
		for _, v := range vs {
			if v < lo || v > hi {
				return fmt.Errorf("%w: %s %d out of range [%d, %d]", ErrBadOption, name, v, lo, hi)
			}
		}
		return nil
	}
	if err := errors.Join(in("iodepth", c.IODepths, 1, MaxIODepth), in("bs", c.BlockSizes, 512, maxBS),
		in("numjobs", c.NumJobs, 1, 256), in("batch", c.Batches, 1, 1<<16), in("prefetch", c.Prefetch, 1, 64)); err != nil {
		return err
	}
	if c.Runtime == 0 {
		c.Runtime = 2 * time.Second
	}
	if c.Runtime < MinTuneRuntime {
		return fmt.Errorf("%w: runtime %v is too short to measure (want at least %v)", ErrBadOption, c.Runtime, MinTuneRuntime)
	}
	c.Direct = !c.NoDirect
	if c.OutDir == "" {
		c.OutDir = "."
	}
	if c.Fio == "" {
		c.Fio = "fio"
	}
	if c.Exec == nil {
		c.Exec = execOutput
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	if n := c.NumPoints(); n > maxTunePoints {
		return fmt.Errorf("%w: the grid has %d points (at most %d)", ErrBadOption, n, maxTunePoints)
	}
	if err := c.checkInput(); err != nil {
		return err
	}
	return checkWritable(c.OutDir)
}

// NumPoints is the number of grid points (fio runs not counted).
func (c *TuneConfig) NumPoints() int {
	if c.parquet() {
		return len(c.IOEngines) * len(c.Batches) * len(c.Prefetch)
	}
	return len(c.IOEngines) * len(c.NumJobs) * len(c.BlockSizes) * len(c.IODepths)
}

func (c *TuneConfig) checkInput() error {
	if c.parquet() {
		_, err := expandParquet(c.Parquet) // stats every file
		return err
	}
	st, err := os.Stat(c.Filename)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if c.Size <= 0 {
			return &Error{Op: "open", Path: c.Filename, Off: -1, Err: errors.New("no such file, and no --size to lay it out")}
		}
		for _, bs := range c.BlockSizes {
			if int64(bs) > c.Size {
				return fmt.Errorf("%w: bs %d is larger than --size %d", ErrBadOption, bs, c.Size)
			}
		}
		return checkWritable(filepath.Dir(c.Filename))
	case err != nil:
		return &Error{Op: "stat", Path: c.Filename, Off: -1, Err: err}
	case st.Mode()&os.ModeDevice != 0 && st.Mode()&os.ModeCharDevice == 0:
		// Block devices are read, never written.
	case !st.Mode().IsRegular():
		return &Error{Op: "open", Path: c.Filename, Off: -1, Err: errors.New("not a regular file or block device")}
	}
	size := c.Size
	if size == 0 {
		size = st.Size()
		if st.Mode()&os.ModeDevice != 0 {
			dev, err := blockDeviceSize(c.Filename)
			if err != nil {
				return err
			}
			size = dev
		}
	}
	for _, bs := range c.BlockSizes {
		if int64(bs) > size {
			return fmt.Errorf("%w: bs %d is larger than the %d bytes of %s", ErrBadOption, bs, size, c.Filename)
		}
	}
	if c.Direct {
		align, how, err := dioAlign(c.Filename)
		if err != nil {
			return err
		}
		for _, bs := range c.BlockSizes {
			if bs%align != 0 {
				return fmt.Errorf("%w: bs %d is not a multiple of the %d-byte O_DIRECT alignment of %s (%s)", ErrAlignment, bs, align, c.Filename, how)
			}
		}
	}
	return nil
}

// checkWritable creates dir if needed and proves a file can be written in it.
func checkWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return &Error{Op: "mkdir", Path: dir, Off: -1, Err: err}
	}
	f, err := os.CreateTemp(dir, ".pagefeed-tune-*")
	if err != nil {
		return &Error{Op: "write", Path: dir, Off: -1, Err: err}
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// TunePoint is one measured grid point. Raw points fill IOPS, BWBytes and
// the completion latency percentiles; Parquet points fill PagesPerSec,
// BWBytes (disk bytes/s) and the batch latency percentiles.
type TunePoint struct {
	Tool      string  `json:"tool"` // "pagefeed" or "fio"
	Mode      string  `json:"mode"` // "raw" or "parquet"
	IOEngine  string  `json:"ioengine"`
	NumJobs   int     `json:"numjobs,omitempty"`
	BS        int     `json:"bs,omitempty"`
	IODepth   int     `json:"iodepth,omitempty"`
	Batch     int     `json:"batch,omitempty"`
	Prefetch  int     `json:"prefetch,omitempty"`
	RuntimeS  float64 `json:"runtime_s"`
	IOPS      float64 `json:"iops"`
	BWBytes   float64 `json:"bw_bytes"`
	LatP50Ns  float64 `json:"lat_p50_ns"`
	LatP99Ns  float64 `json:"lat_p99_ns"`
	PagesPerS float64 `json:"pages_per_sec,omitempty"`
	Err       string  `json:"error,omitempty"`
}

// Label names the point for progress lines.
func (p *TunePoint) Label() string {
	if p.Mode == "parquet" {
		return fmt.Sprintf("%s %s batch=%d prefetch=%d", p.Tool, p.IOEngine, p.Batch, p.Prefetch)
	}
	return fmt.Sprintf("%s %s numjobs=%d bs=%s iodepth=%d", p.Tool, p.IOEngine, p.NumJobs, sizeName(p.BS), p.IODepth)
}

// sizeName writes a block size as fio would ("4k", "1m").
func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "m"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "k"
	}
	return strconv.Itoa(n)
}

// TuneResult is RunTune's outcome.
type TuneResult struct {
	Mode        string      `json:"mode"`
	Target      string      `json:"target"`
	RuntimeS    float64     `json:"runtime_per_point_s"`
	Direct      bool        `json:"direct"`
	Points      []TunePoint `json:"points"`
	Knees       []Knee      `json:"knees"`
	Recommended *Knee       `json:"recommended,omitempty"`
	FioSkipped  string      `json:"fio_skipped,omitempty"` // why --compare-fio did nothing
}

// RunTune runs the grid, one point after another, and computes the knees.
// A point that fails keeps its error and the grid goes on; RunTune fails
// when the configuration is bad (before anything runs), when ctx ends (with
// the points measured so far) or when every point failed.
func RunTune(ctx context.Context, cfg TuneConfig) (*TuneResult, error) {
	if err := cfg.Fill(); err != nil {
		return nil, err
	}
	res := &TuneResult{Mode: "raw", Target: cfg.Filename, RuntimeS: cfg.Runtime.Seconds(), Direct: cfg.Direct}
	var plan []TunePoint
	if cfg.parquet() {
		res.Mode, res.Target = "parquet", fmt.Sprint(cfg.Parquet)
		for _, e := range cfg.IOEngines {
			for _, pf := range cfg.Prefetch {
				for _, b := range cfg.Batches {
					plan = append(plan, TunePoint{Tool: "pagefeed", Mode: "parquet", IOEngine: e, Batch: b, Prefetch: pf})
				}
			}
		}
	} else {
		fio := cfg.CompareFio
		if fio {
			if _, err := exec.LookPath(cfg.Fio); err != nil {
				res.FioSkipped = fmt.Sprintf("%s not found: %v", cfg.Fio, err)
				cfg.Logf("--compare-fio: %s; fio's curve is left out", res.FioSkipped)
				fio = false
			}
		}
		for _, e := range cfg.IOEngines {
			for _, nj := range cfg.NumJobs {
				for _, bs := range cfg.BlockSizes {
					for _, d := range cfg.IODepths {
						p := TunePoint{Tool: "pagefeed", Mode: "raw", IOEngine: e, NumJobs: nj, BS: bs, IODepth: d}
						plan = append(plan, p)
						if fio && e != EngineMmap {
							p.Tool = "fio"
							plan = append(plan, p)
						}
					}
				}
			}
		}
	}
	failed := 0
	for i := range plan {
		if err := ctx.Err(); err != nil {
			res.Knees = Knees(res.Points)
			return res, err
		}
		p := plan[i]
		if cfg.Progress != nil {
			cfg.Progress(i, len(plan), p.Label())
		}
		var err error
		switch {
		case p.Mode == "parquet":
			err = tuneParquet(ctx, &cfg, &p)
		case p.Tool == "fio":
			err = tuneFio(ctx, &cfg, &p)
		default:
			err = tuneRaw(ctx, &cfg, &p)
		}
		if err != nil {
			if ctx.Err() != nil {
				res.Knees = Knees(res.Points)
				return res, ctx.Err()
			}
			p.Err = err.Error()
			failed++
			cfg.Logf("%s: %v", p.Label(), err)
		}
		res.Points = append(res.Points, p)
	}
	if cfg.Progress != nil {
		cfg.Progress(len(plan), len(plan), "done")
	}
	if failed == len(plan) {
		return res, fmt.Errorf("every point failed; the first: %s", res.Points[0].Err)
	}
	res.Knees = Knees(res.Points)
	res.Recommended = Recommend(res.Knees)
	return res, nil
}

func tuneRaw(ctx context.Context, cfg *TuneConfig, p *TunePoint) error {
	j := DefaultJob()
	j.Name = "tune"
	j.Filename, j.Size, j.RW, j.BS, j.IODepth = cfg.Filename, cfg.Size, RandRead, p.BS, p.IODepth
	j.Direct, j.IOEngine, j.NumJobs = cfg.Direct, p.IOEngine, p.NumJobs
	j.Runtime, j.TimeBased, j.GroupReporting = cfg.Runtime, true, true
	j.Seed = cfg.Seed + 0x5eed
	rep, err := RunRaw(ctx, RawConfig{Jobs: []Job{j}, Stderr: logWriter{cfg.Logf}})
	if err != nil {
		return err
	}
	if len(rep.Groups) == 0 || len(rep.Groups[0].Clones) == 0 {
		return errors.New("no result")
	}
	r := Merge(j.Name, rep.Groups[0].Clones)
	if r.Runtime <= 0 || r.IOs == 0 {
		return errors.New("no I/O completed")
	}
	s := r.Runtime.Seconds()
	p.RuntimeS = s
	p.IOPS = float64(r.IOs) / s
	p.BWBytes = float64(r.IOBytes) / s
	p.LatP50Ns = float64(r.Clat.Percentile(50))
	p.LatP99Ns = float64(r.Clat.Percentile(99))
	return nil
}

func tuneFio(ctx context.Context, cfg *TuneConfig, p *TunePoint) error {
	args := []string{
		"--name=tune", "--filename=" + cfg.Filename, "--rw=randread",
		"--bs=" + strconv.Itoa(p.BS), "--iodepth=" + strconv.Itoa(p.IODepth),
		"--ioengine=" + p.IOEngine, "--numjobs=" + strconv.Itoa(p.NumJobs),
		"--direct=" + map[bool]string{true: "1", false: "0"}[cfg.Direct],
		"--runtime=" + strconv.FormatInt(cfg.Runtime.Milliseconds(), 10) + "ms", "--time_based",
		"--group_reporting", "--output-format=json",
		"--randseed=" + strconv.FormatUint(cfg.Seed+0x5eed, 10),
	}
	if cfg.Size > 0 {
		args = append(args, "--size="+strconv.FormatInt(cfg.Size, 10))
	}
	out, err := cfg.Exec(ctx, cfg.Fio, args)
	if err != nil {
		return err
	}
	fo, err := DecodeFio(out)
	if err != nil {
		return err
	}
	m, err := MetricsOf(fo)
	if err != nil {
		return err
	}
	p.IOPS, p.BWBytes, p.LatP99Ns = m.IOPS, m.BWBytes, m.P99Clat
	p.LatP50Ns = float64(fo.Jobs[0].Read.ClatNs.Percentile[PercentileKey(50)])
	p.RuntimeS = float64(fo.Jobs[0].Read.Runtime) / 1000
	return nil
}

func tuneParquet(ctx context.Context, cfg *TuneConfig, p *TunePoint) error {
	ioKind, err := ParseParquetIO(p.IOEngine)
	if err != nil {
		return err
	}
	pc := ParquetConfig{
		Name: "tune", Paths: cfg.Parquet, Column: cfg.Column, Shuffle: rinas.ShufflePage, Batch: p.Batch, Prefetch: p.Prefetch,
		IOEngine: ioKind, IOMode: cfg.IOMode, Runtime: cfg.Runtime, Seed: cfg.Seed, Logf: cfg.Logf,
	}
	r, err := RunParquet(ctx, pc, nil)
	if err != nil {
		return err
	}
	// Elapsed includes the index build; the rate is over reading only.
	s := (r.Elapsed - time.Duration(r.IndexBuildNs)).Seconds()
	if s <= 0 || r.Pages == 0 {
		return errors.New("no page read")
	}
	p.RuntimeS = s
	p.PagesPerS = float64(r.Pages) / s
	p.IOPS = p.PagesPerS
	p.BWBytes = float64(r.DiskBytes) / s
	p.LatP50Ns = float64(r.BatchLat.Percentile(50))
	p.LatP99Ns = float64(r.BatchLat.Percentile(99))
	return nil
}

// logWriter turns notices written to an io.Writer into Logf lines.
type logWriter struct{ logf func(string, ...any) }

func (w logWriter) Write(p []byte) (int, error) {
	n := len(p)
	if n > 0 && p[n-1] == '\n' {
		p = p[:n-1]
	}
	w.logf("%s", p)
	return n, nil
}

var _ io.Writer = logWriter{}
