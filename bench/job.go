package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// Option is one fio option as written: key=value, or a bare key (a boolean
// set to true).
type Option struct {
	Key   string
	Value string
	Bare  bool
}

func (o Option) String() string {
	if o.Bare {
		return o.Key
	}
	return o.Key + "=" + o.Value
}

// JobSpec is one job as written: the global options in force where it was
// defined and its own options, in order. Later options override earlier ones.
type JobSpec struct {
	Name    string
	Global  []Option // command-line options before any --name, then [global] sections
	Options []Option // the job's own options
}

// Spec is a parsed command line or job file: the jobs in order. Jobs run
// one after another, each as its own reporting group, as if every job
// section had fio's stonewall; the numjobs clones of one job run together.
type Spec struct {
	Jobs []JobSpec
	// OutputFormat is fio's --output-format: "normal" (default), "json",
	// "json+", or several of them comma-separated ("normal,json"), each
	// written in turn (Formats).
	OutputFormat string
	// Output is fio's --output: the file the report goes to; "" is
	// standard output.
	Output string
}

// Formats returns the output formats in the order given.
func (s *Spec) Formats() []string { return strings.Split(s.OutputFormat, ",") }

// parseOutputFormat checks --output-format's comma-separated list.
func parseOutputFormat(v string) error {
	for _, f := range strings.Split(v, ",") {
		switch f {
		case "normal", "json", "json+":
		default:
			return fmt.Errorf("%w: --output-format=%s: %q is not normal, json or json+", ErrBadOption, v, f)
		}
	}
	return nil
}

// RW is the access pattern.
type RW int

const (
	Read     RW = iota // sequential, wrapping around at size
	RandRead           // uniform over bs-aligned offsets in [0, size-bs]
)

func (rw RW) String() string {
	if rw == RandRead {
		return "randread"
	}
	return "read"
}

// FileService is fio's file_service_type: how a job with several files
// chooses the file of its next I/O. The zero value is fio's default.
type FileService int

const (
	// ServiceRoundRobin takes the files in turn (fio's roundrobin).
	ServiceRoundRobin FileService = iota
	// ServiceSequential stays on one file until its share is read, then
	// moves to the next (fio's sequential). A time_based randread never
	// finishes a file, so it stays on its first file, as in fio.
	ServiceSequential
	// ServiceRandom picks a file uniformly at random, from the job's
	// seeded generator, among those with reads left (fio's random); in a
	// time_based randread, among all of them.
	ServiceRandom
)

func (s FileService) String() string {
	switch s {
	case ServiceSequential:
		return "sequential"
	case ServiceRandom:
		return "random"
	}
	return "roundrobin"
}

// Engine names accepted by ioengine=.
const (
	EngineIOUring = "io_uring"
	EnginePsync   = "psync"
	EngineMmap    = "mmap"
)

// Job is one resolved job: every option validated, defaults filled as fio
// fills them (rw=read, bs=4k, iodepth=1, ioengine=psync, numjobs=1).
//
// Size and several files: Size is divided as fio divides it. Each of n
// files gets Size/n bytes; the remainder (Size mod n), in whole bs blocks,
// gives one more block to each of the first files; what is left of it
// below bs is not used (fio drops it too). RunRaw sets Size to the total
// of the spans it uses, so its report shows what was actually read from.
type Job struct {
	Name     string
	Filename string // as given: one path or fio's colon-separated list ("a:b", "\:" escapes a colon); see Filenames
	Size     int64  // bytes to use over all the files, divided over them as said above; 0: each file's size
	RW       RW
	BS       int
	IODepth  int // 1..4096; psync and mmap always run one at a time
	// BatchSubmit is iodepth_batch_submit: reads per io_uring_enter, at
	// most IODepth (0 as written means IODepth, as in fio). Not given, it
	// is 0 here: the engine's adaptive chunk (see engine.Options.BatchSubmit).
	BatchSubmit    int
	Direct         bool
	IOEngine       string // EngineIOUring, EnginePsync or EngineMmap
	NumJobs        int
	Runtime        time.Duration // 0: until Size bytes are read (time_based needs it)
	TimeBased      bool
	RampTime       time.Duration // run before measuring; not in the stats
	FixedBufs      bool
	RegisterFiles  bool
	GroupReporting bool
	Seed           uint64
	ReadOnly       bool // fio's readonly: never lay out (write) a file; a missing or short one is an error
	// HugeMem is fio's iomem (or mem) set to mmaphuge or shmhuge: I/O
	// buffers on huge pages. pagebench backs them with transparent huge
	// pages (io_uring only). malloc, mmap and shm, fio's default family,
	// leave 4 KiB pages, so a fio command line reads alike in both.
	HugeMem bool

	// BatchCompleteMin is iodepth_batch_complete_min (alias
	// iodepth_batch_complete): completions an io_uring wait asks for, at
	// most the reads in flight; default 1. BatchCompleteMax is
	// iodepth_batch_complete_max: the most reaped at once; default (0)
	// BatchCompleteMin, as in fio, and never below it.
	BatchCompleteMin int
	BatchCompleteMax int
	// IODepthLow is iodepth_low: once the queue is full, let it drain to
	// this many reads in flight before filling it again; default (0)
	// IODepth, keep it full.
	IODepthLow int
	// Offset is where in each file I/O starts (offset=, bytes or a
	// percentage of the file in OffsetPct), and OffsetIncrement what each
	// numjobs clone adds to it (clone k starts at Offset+k·OffsetIncrement;
	// a percentage in OffsetIncrementPct). Size counts from the offset, so
	// a file laid out holds offset+size bytes. Offsets must respect
	// O_DIRECT alignment; percentages are rounded down to bs, as fio's
	// offset_align defaults to.
	Offset, OffsetIncrement       int64
	OffsetPct, OffsetIncrementPct float64
	// RandRepeat is fio's randrepeat (default true): the random sequence
	// repeats from run to run, from Seed. False seeds it from the clock.
	RandRepeat bool
	// NoRandomMap is fio's norandommap: random blocks are drawn with
	// repeats. Without it, a uniform randread reads each block once per
	// pass (fio's random map); non-uniform distributions always repeat.
	NoRandomMap bool
	// Dist is random_distribution (randread only).
	Dist Distribution
	// BWLog, LatLog and IOPSLog are write_bw_log, write_lat_log and
	// write_iops_log prefixes: files PREFIX_bw.N.log, PREFIX_{lat,clat,
	// slat}.N.log and PREFIX_iops.N.log for clone N (from 1), in fio's log
	// format ("msec, value, ddir, bs, offset" lines: KiB/s, ns, IOPS). A
	// bare option (or an empty value) takes the job name. LogAvgMsec is
	// log_avg_msec: 0 logs every I/O, N averages over N ms windows.
	BWLog, LatLog, IOPSLog string
	LogAvgMsec             int

	// FileService and FileServiceNr are fio's file_service_type=TYPE[:N]:
	// how the next I/O's file is chosen, and after how many I/Os to one
	// file the choice is made again (0 means 1, fio's default). A
	// sequential job ignores N, as fio's io_u.c does. N=0 as written
	// ("random:0") is 1<<32, since fio's unsigned count wraps.
	FileService   FileService
	FileServiceNr uint64

	Global  []Option // as written, for the report's "global options"
	Options []Option // as written, for the report's "job options"
}

// batchIODepth marks iodepth_batch_submit=0 until validate knows iodepth.
const batchIODepth = -1

// MaxIODepth is the deepest queue a job may ask for.
const MaxIODepth = 4096

// maxBS bounds bs so one slot per in-flight read stays reasonable.
const maxBS = 256 << 20

// DefaultJob returns fio's defaults.
func DefaultJob() Job {
	return Job{RW: Read, BS: 4096, IODepth: 1, IOEngine: EnginePsync, NumJobs: 1, Seed: 0x5eed, RandRepeat: true, Dist: Distribution{Center: -1}}
}

// Resolve applies the spec's options over DefaultJob and validates them.
func (js JobSpec) Resolve() (Job, error) {
	j := DefaultJob()
	j.Name = js.Name
	j.Global, j.Options = js.Global, js.Options
	for _, set := range [][]Option{js.Global, js.Options} {
		for _, o := range set {
			if err := j.Set(o); err != nil {
				return Job{}, err
			}
		}
	}
	if err := j.validate(); err != nil {
		return Job{}, err
	}
	return j, nil
}

func (j *Job) validate() error {
	if j.Name == "" {
		j.Name = "pagebench"
	}
	if j.Filename == "" {
		return fmt.Errorf("%w: job %s: no --filename", ErrBadOption, j.Name)
	}
	if j.TimeBased && j.Runtime <= 0 {
		return fmt.Errorf("%w: job %s: time_based needs a runtime", ErrBadOption, j.Name)
	}
	if j.BatchSubmit > j.IODepth || j.BatchSubmit == batchIODepth {
		j.BatchSubmit = j.IODepth // as fio does
	}
	if j.BatchCompleteMin > j.IODepth {
		j.BatchCompleteMin = j.IODepth
	}
	if j.BatchCompleteMax < j.BatchCompleteMin {
		j.BatchCompleteMax = j.BatchCompleteMin // fio's default and floor
	}
	if j.IODepthLow > j.IODepth {
		j.IODepthLow = j.IODepth
	}
	if j.Dist.Kind != DistRandom && j.RW != RandRead {
		return fmt.Errorf("%w: job %s: random_distribution=%s needs rw=randread", ErrBadOption, j.Name, j.Dist)
	}
	if j.HugeMem && j.IOEngine != "" && j.IOEngine != EngineIOUring {
		return fmt.Errorf("%w: job %s: iomem on huge pages needs ioengine=io_uring, not %s", ErrBadOption, j.Name, j.IOEngine)
	}
	return nil
}

// Set applies one option to j. Unknown keys and bad values are errors that
// name the key and the value. It is one long function because it is the
// option table: a switch with a short case per fio option, read and kept
// in step with fio's documentation as one list.
func (j *Job) Set(o Option) error {
	key, v := strings.TrimSpace(o.Key), strings.TrimSpace(o.Value)
	needValue := func() error {
		if o.Bare {
			return fmt.Errorf("%w: %s needs a value", ErrBadOption, key)
		}
		return nil
	}
	intIn := func(lo, hi int64) (int64, error) {
		if err := needValue(); err != nil {
			return 0, err
		}
		n, err := ParseSize(v)
		if err != nil {
			return 0, fmt.Errorf("%w: %s=%q is not a number", ErrBadOption, key, v)
		}
		if n < lo || n > hi {
			return 0, fmt.Errorf("%w: %s=%s out of range [%d, %d]", ErrBadOption, key, v, lo, hi)
		}
		return n, nil
	}
	var err error
	var n int64
	switch key {
	case "name":
		if err = needValue(); err == nil {
			j.Name = v
		}
	case "filename":
		if err = needValue(); err == nil {
			_, err = SplitFilenames(v)
			j.Filename = v
		}
	case "size":
		if n, err = intIn(1, 1<<62); err == nil {
			j.Size = n
		} else if !o.Bare {
			err = fmt.Errorf("%w: size=%q: want bytes or 4k, 1m, 2g", ErrBadOption, v)
		}
	case "rw", "readwrite":
		if err = needValue(); err == nil {
			switch mode, _, _ := strings.Cut(v, ":"); mode {
			case "read":
				j.RW = Read
			case "randread":
				j.RW = RandRead
			case "write", "randwrite", "rw", "readwrite", "randrw", "trim", "randtrim", "trimwrite", "randtrimwrite":
				err = fmt.Errorf("%w: %s=%s writes or trims; pagebench only reads (rw=read or randread)", ErrWriteOnly, key, v)
			default:
				err = fmt.Errorf("%w: rw=%s: only read and randread are supported", ErrBadOption, v)
			}
		}
	case "verify":
		if err = needValue(); err == nil && v != "0" && v != "none" {
			err = fmt.Errorf("%w: verify=%s checks data it wrote; pagebench only reads (use pagefeed verify for Parquet)", ErrWriteOnly, v)
		}
	case "iodepth_batch_complete_min", "iodepth_batch_complete":
		if n, err = intIn(0, MaxIODepth); err == nil {
			j.BatchCompleteMin = max(int(n), 1) // fio treats 0 as 1: wait for one
		}
	case "iodepth_batch_complete_max":
		if n, err = intIn(0, MaxIODepth); err == nil {
			j.BatchCompleteMax = int(n)
		}
	case "iodepth_low":
		if n, err = intIn(0, MaxIODepth); err == nil {
			j.IODepthLow = int(n)
		}
	case "offset", "fileoffset":
		if err = needValue(); err == nil {
			j.Offset, j.OffsetPct, err = parseOffset(key, v)
		}
	case "offset_increment":
		if err = needValue(); err == nil {
			j.OffsetIncrement, j.OffsetIncrementPct, err = parseOffset(key, v)
		}
	case "randrepeat", "rand_repeatable":
		j.RandRepeat, err = parseBool(key, v, o.Bare)
	case "norandommap":
		j.NoRandomMap, err = parseBool(key, v, o.Bare)
	case "random_distribution":
		if err = needValue(); err == nil {
			j.Dist, err = ParseDistribution(v)
		}
	case "write_bw_log", "write_lat_log", "write_iops_log":
		if !o.Bare && v == "" {
			return fmt.Errorf("%w: %s= needs a file name prefix (bare, in a job file, it takes the job name)", ErrBadOption, key)
		}
		prefix := v
		if prefix == "" {
			prefix = j.Name
			if prefix == "" {
				prefix = "pagebench"
			}
		}
		switch key {
		case "write_bw_log":
			j.BWLog = prefix
		case "write_lat_log":
			j.LatLog = prefix
		default:
			j.IOPSLog = prefix
		}
	case "log_avg_msec":
		if n, err = intIn(0, 1<<31-1); err == nil {
			j.LogAvgMsec = int(n)
		}
	case "bs", "blocksize":
		if n, err = intIn(1, maxBS); err == nil {
			j.BS = int(n)
		}
	case "iodepth":
		if n, err = intIn(1, MaxIODepth); err == nil {
			j.IODepth = int(n)
		}
	case "iodepth_batch_submit", "iodepth_batch":
		if n, err = intIn(0, MaxIODepth); err == nil {
			j.BatchSubmit = int(n)
			if n == 0 {
				j.BatchSubmit = batchIODepth
			}
		}
	case "direct":
		j.Direct, err = parseBool(key, v, o.Bare)
	case "ioengine":
		if err = needValue(); err == nil {
			switch v {
			case EngineIOUring, EnginePsync, EngineMmap:
				j.IOEngine = v
			default:
				err = fmt.Errorf("%w: unknown ioengine %q (want io_uring, psync or mmap)", ErrEngine, v)
			}
		}
	case "numjobs":
		if n, err = intIn(1, 256); err == nil {
			j.NumJobs = int(n)
		}
	case "runtime", "timeout":
		if err = needValue(); err == nil {
			j.Runtime, err = ParseTime(v)
		}
	case "ramp_time":
		if err = needValue(); err == nil {
			j.RampTime, err = ParseTime(v)
		}
	case "time_based":
		j.TimeBased, err = parseBool(key, v, o.Bare)
	case "fixedbufs":
		j.FixedBufs, err = parseBool(key, v, o.Bare)
	case "registerfiles":
		j.RegisterFiles, err = parseBool(key, v, o.Bare)
	case "group_reporting":
		j.GroupReporting, err = parseBool(key, v, o.Bare)
	case "readonly":
		j.ReadOnly, err = parseBool(key, v, o.Bare)
	case "seed", "randseed":
		if err = needValue(); err == nil {
			j.Seed, err = strconv.ParseUint(v, 0, 64)
			if err != nil {
				err = fmt.Errorf("%w: seed=%q is not an unsigned integer", ErrBadOption, v)
			}
		}
	case "iomem", "mem":
		if err = needValue(); err == nil {
			// fio's forms: type, or type:/path for the huge-page file.
			switch t, _, _ := strings.Cut(v, ":"); t {
			case "malloc", "mmap", "shm":
				j.HugeMem = false
			case "mmaphuge", "shmhuge":
				j.HugeMem = true
			default:
				err = fmt.Errorf("%w: %s=%q (want malloc, mmap, shm, mmaphuge or shmhuge)", ErrBadOption, key, v)
			}
		}
	case "file_service_type":
		if err = needValue(); err == nil {
			j.FileService, j.FileServiceNr, err = parseFileService(v)
		}
	case "stonewall", "wait_for_previous", "thread":
		// Jobs always run one after another, in their own goroutines.
		_, err = parseBool(key, v, o.Bare)
	default:
		err = fmt.Errorf("%w: %w %q", ErrBadOption, errUnknownOption, key)
	}
	return err
}

// parseOffset parses offset= or offset_increment=: bytes (fio's sizes)
// or a percentage of the file ("25%"). Errors name the option.
func parseOffset(key, v string) (int64, float64, error) {
	if p, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f < 0 || f > 100 {
			return 0, 0, fmt.Errorf("%w: %s=%s: want a percentage in [0, 100]", ErrBadOption, key, v)
		}
		return 0, f, nil
	}
	n, err := ParseSize(v)
	if err != nil || n < 0 {
		return 0, 0, fmt.Errorf("%w: %s=%q: want bytes (4k, 1m, ...) or a percentage", ErrBadOption, key, v)
	}
	return n, 0, nil
}

// parseFileService parses file_service_type's TYPE[:N]. Errors name the
// option and the value.
func parseFileService(v string) (FileService, uint64, error) {
	name, nr, hasNr := strings.Cut(v, ":")
	var s FileService
	switch name {
	case "roundrobin":
		s = ServiceRoundRobin
	case "sequential":
		s = ServiceSequential
	case "random":
		s = ServiceRandom
	case "zipf", "pareto", "normal", "gauss":
		return 0, 0, fmt.Errorf("%w: file_service_type=%s: the %s distribution is not supported (want roundrobin, sequential or random)", ErrBadOption, v, name)
	default:
		return 0, 0, fmt.Errorf("%w: file_service_type=%s: want roundrobin, sequential or random, with an optional :N", ErrBadOption, v)
	}
	if !hasNr {
		return s, 0, nil
	}
	n, err := strconv.ParseUint(nr, 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: file_service_type=%s: %q after the colon is not a count of I/Os", ErrBadOption, v, nr)
	}
	if n == 0 {
		n = 1 << 32 // fio keeps n-1 left in an unsigned int: 0 wraps
	}
	return s, n, nil
}

// commandOptions are the options only the command line takes.
var commandOptions = map[string]bool{"output-format": true, "output": true}

// ParseArgs parses a fio-style command line: "--key=value", "--key value"
// or a bare "--key" for booleans. Options before the first --name are
// global; each --name starts a job. Other arguments are job files, read
// with ParseJobFile; command-line globals apply to their jobs first.
// With neither --name nor a job file, the global options form one job.
func ParseArgs(args []string) (*Spec, error) {
	spec := &Spec{OutputFormat: "normal"}
	var global []Option
	var cur *JobSpec
	var files []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			files = append(files, a)
			continue
		}
		key := strings.TrimLeft(a, "-")
		o := Option{Key: key, Bare: true}
		if k, v, ok := strings.Cut(key, "="); ok {
			o = Option{Key: k, Value: v}
		} else if !knownKey(key) {
			return nil, fmt.Errorf("%w: unknown option %q", ErrBadOption, key)
		} else if takesValue(key) {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("%w: --%s needs a value", ErrBadOption, key)
			}
			i++
			o = Option{Key: key, Value: args[i]}
		}
		if o.Key == "" {
			return nil, fmt.Errorf("%w: empty option %q", ErrBadOption, a)
		}
		switch {
		case o.Key == "output-format":
			if err := parseOutputFormat(o.Value); err != nil {
				return nil, err
			}
			spec.OutputFormat = o.Value
			continue
		case o.Key == "output":
			if o.Bare || o.Value == "" {
				return nil, fmt.Errorf("%w: --output needs a file name", ErrBadOption)
			}
			spec.Output = o.Value
			continue
		case o.Key == "name":
			if o.Bare || o.Value == "" {
				return nil, fmt.Errorf("%w: --name needs a value", ErrBadOption)
			}
			spec.Jobs = append(spec.Jobs, JobSpec{Name: o.Value, Global: global})
			cur = &spec.Jobs[len(spec.Jobs)-1]
			continue
		}
		// Validate the key now, so a typo is reported even in a global option.
		var probe Job
		if err := probe.Set(o); err != nil {
			return nil, err
		}
		if cur == nil {
			global = append(global, o)
		} else {
			cur.Options = append(cur.Options, o)
		}
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrJobFile, err)
		}
		fs, err := ParseJobFile(name, bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		for _, js := range fs.Jobs {
			js.Global = append(append([]Option(nil), global...), js.Global...)
			spec.Jobs = append(spec.Jobs, js)
		}
	}
	if len(spec.Jobs) == 0 {
		if len(global) == 0 {
			return nil, fmt.Errorf("%w: no job: give --name and --filename, or a job file", ErrBadOption)
		}
		spec.Jobs = append(spec.Jobs, JobSpec{Global: global})
	}
	return spec, nil
}

// SplitFilenames splits a filename option as fio does: paths separated
// by ':', where "\:" stands for a colon inside a path (a backslash before
// anything else is kept). An empty list or an empty path in it is an
// error (fio would silently stop reading the list there).
func SplitFilenames(s string) ([]string, error) {
	if s == "" {
		return nil, fmt.Errorf("%w: empty filename", ErrBadOption)
	}
	var names []string
	var cur strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == ':':
			cur.WriteByte(':')
			i++
		case s[i] == ':':
			names = append(names, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(s[i])
		}
	}
	names = append(names, cur.String())
	for k, n := range names {
		if n == "" {
			return nil, fmt.Errorf("%w: filename=%q: empty name at position %d of the colon-separated list", ErrBadOption, s, k+1)
		}
	}
	return names, nil
}

// Filenames returns the paths of j.Filename (SplitFilenames).
func (j *Job) Filenames() ([]string, error) { return SplitFilenames(j.Filename) }

// errUnknownOption marks Set's error for a key it does not know.
var errUnknownOption = errors.New("unknown option")

// knownKey reports whether key is an option ParseArgs accepts.
func knownKey(key string) bool {
	if commandOptions[key] || key == "name" {
		return true
	}
	var probe Job
	return !errors.Is(probe.Set(Option{Key: key, Bare: true}), errUnknownOption)
}

// takesValue reports whether a bare "--key" consumes the next argument.
// Booleans never do, as in fio.
func takesValue(key string) bool {
	switch key {
	case "direct", "time_based", "fixedbufs", "registerfiles", "group_reporting", "readonly",
		"stonewall", "wait_for_previous", "thread", "randrepeat", "rand_repeatable", "norandommap":
		return false
	}
	return true
}

// maxJobFile bounds a job file; anything larger is not a hand-written job.
const maxJobFile = 1 << 20

// ParseJobFile parses a fio job file, an INI subset: [global] and [jobname]
// sections, "key=value" or a bare key (a boolean), and comments starting
// with ';' or '#' (whole lines, or after whitespace). A [global] section
// applies to the jobs that follow it. name names the file in errors.
func ParseJobFile(name string, r io.Reader) (*Spec, error) {
	spec := &Spec{OutputFormat: "normal"}
	var global []Option
	var cur *JobSpec
	inGlobal := false
	sc := bufio.NewScanner(io.LimitReader(r, maxJobFile+1))
	sc.Buffer(make([]byte, 0, 4096), maxJobFile+1)
	line, total := 0, 0
	for sc.Scan() {
		line++
		raw := sc.Text()
		total += len(raw) + 1
		if total > maxJobFile {
			return nil, fmt.Errorf("%w: %s: larger than %d bytes", ErrJobFile, name, maxJobFile)
		}
		s := strings.TrimSpace(stripComment(raw))
		if s == "" {
			continue
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: %s:%d: %s", ErrJobFile, name, line, fmt.Sprintf(format, args...))
		}
		if s[0] == '[' {
			if s[len(s)-1] != ']' {
				return nil, bad("unterminated section %q", s)
			}
			sec := strings.TrimSpace(s[1 : len(s)-1])
			if sec == "" || strings.ContainsAny(sec, "[]") {
				return nil, bad("bad section name %q", s)
			}
			if sec == "global" {
				inGlobal, cur = true, nil
				continue
			}
			inGlobal = false
			spec.Jobs = append(spec.Jobs, JobSpec{Name: sec, Global: append([]Option(nil), global...)})
			cur = &spec.Jobs[len(spec.Jobs)-1]
			continue
		}
		o := Option{Key: s, Bare: true}
		if k, v, ok := strings.Cut(s, "="); ok {
			o = Option{Key: strings.TrimSpace(k), Value: strings.TrimSpace(v)}
		}
		if o.Key == "" {
			return nil, bad("option without a key")
		}
		if o.Key == "name" || commandOptions[o.Key] {
			return nil, bad("%s is not allowed in a job file", o.Key)
		}
		var probe Job
		if err := probe.Set(o); err != nil {
			return nil, bad("%v", err)
		}
		switch {
		case inGlobal:
			global = append(global, o)
		case cur != nil:
			cur.Options = append(cur.Options, o)
		default:
			return nil, bad("option %q outside a section", o.Key)
		}
	}
	if err := sc.Err(); err != nil {
		if err == bufio.ErrTooLong {
			return nil, fmt.Errorf("%w: %s:%d: line too long", ErrJobFile, name, line+1)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrJobFile, name, err)
	}
	if len(spec.Jobs) == 0 {
		return nil, fmt.Errorf("%w: %s: no job section", ErrJobFile, name)
	}
	return spec, nil
}

// stripComment drops a ';' or '#' comment: the whole line when it starts
// with one, else from the first one preceded by whitespace.
func stripComment(s string) string {
	t := strings.TrimLeft(s, " \t")
	if t != "" && (t[0] == ';' || t[0] == '#') {
		return ""
	}
	for i := 1; i < len(s); i++ {
		if (s[i] == ';' || s[i] == '#') && (s[i-1] == ' ' || s[i-1] == '\t') {
			return s[:i]
		}
	}
	return s
}
