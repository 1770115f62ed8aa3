package bench

import (
	"bytes"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fioOptionCases are the read options taken with fio's meaning: the
// options as written, and what fio's documentation (HOWTO, "Job file
// parameters") says they set. Each case is checked on the command line,
// in a job file, and, where fio is installed, against fio's own parse.
var fioOptionCases = []struct {
	name  string
	opts  []string // without name and filename
	check func(j Job) bool
	// fioOut are values fio's --debug=parse prints ("out=N") for
	// options of the case, by option name.
	fioOut map[string]int64
}{
	// iodepth_batch_complete_min (alias iodepth_batch_complete): how many
	// completions to wait for; iodepth_batch_complete_max defaults to it.
	{"complete_min", []string{"--iodepth=32", "--iodepth_batch_complete_min=4"},
		func(j Job) bool { return j.BatchCompleteMin == 4 && j.BatchCompleteMax == 4 }, map[string]int64{"iodepth": 32, "iodepth_batch_complete_min": 4}},
	{"complete alias", []string{"--iodepth=32", "--iodepth_batch_complete=3"},
		func(j Job) bool { return j.BatchCompleteMin == 3 && j.BatchCompleteMax == 3 }, nil},
	{"complete_max", []string{"--iodepth=32", "--iodepth_batch_complete_min=1", "--iodepth_batch_complete_max=16"},
		func(j Job) bool { return j.BatchCompleteMin == 1 && j.BatchCompleteMax == 16 }, map[string]int64{"iodepth_batch_complete_min": 1, "iodepth_batch_complete_max": 16}},
	{"complete_max below min", []string{"--iodepth=32", "--iodepth_batch_complete_min=8", "--iodepth_batch_complete_max=2"},
		func(j Job) bool { return j.BatchCompleteMin == 8 && j.BatchCompleteMax == 8 }, map[string]int64{"iodepth_batch_complete_min": 8, "iodepth_batch_complete_max": 2}},
	// iodepth_batch_submit=0 means iodepth; not given, the engine adapts.
	{"batch_submit 0", []string{"--iodepth=32", "--iodepth_batch_submit=0"},
		func(j Job) bool { return j.BatchSubmit == 32 }, map[string]int64{"iodepth_batch": 0}},
	{"batch_submit unset", []string{"--iodepth=32"},
		func(j Job) bool { return j.BatchSubmit == 0 && j.BatchCompleteMin == 0 }, map[string]int64{"iodepth": 32}},
	// iodepth_low: the low water mark; defaults to iodepth (keep full).
	{"iodepth_low", []string{"--iodepth=16", "--iodepth_low=4"},
		func(j Job) bool { return j.IODepthLow == 4 }, map[string]int64{"iodepth_low": 4}},
	{"iodepth_low above iodepth", []string{"--iodepth=16", "--iodepth_low=64"},
		func(j Job) bool { return j.IODepthLow == 16 }, map[string]int64{"iodepth_low": 64}},
	// numjobs clones, group_reporting folds them into one result.
	{"numjobs", []string{"--numjobs=4", "--group_reporting"},
		func(j Job) bool { return j.NumJobs == 4 && j.GroupReporting }, map[string]int64{"numjobs": 4, "group_reporting": 1}},
	// offset: bytes or a percentage of the file; offset_increment: added
	// per clone.
	{"offset", []string{"--offset=1m", "--offset_increment=64m"},
		func(j Job) bool { return j.Offset == 1<<20 && j.OffsetIncrement == 64<<20 }, map[string]int64{"offset": 1 << 20, "offset_increment": 64 << 20}},
	{"offset percent", []string{"--offset=25%", "--offset_increment=10%"},
		func(j Job) bool { return j.OffsetPct == 25 && j.OffsetIncrementPct == 10 && j.Offset == 0 }, nil},
	// randrepeat defaults to true; randseed sets the seed.
	{"randrepeat default", nil, func(j Job) bool { return j.RandRepeat && !j.NoRandomMap }, nil},
	{"randrepeat off", []string{"--randrepeat=0", "--randseed=42"},
		func(j Job) bool { return !j.RandRepeat && j.Seed == 42 }, map[string]int64{"randrepeat": 0, "randseed": 42}},
	{"norandommap", []string{"--norandommap"}, func(j Job) bool { return j.NoRandomMap }, map[string]int64{"norandommap": 1}},
	// random_distribution: zipf:θ, pareto:h, normal:σ, optional center.
	{"zipf", []string{"--rw=randread", "--random_distribution=zipf:1.2"},
		func(j Job) bool { return j.Dist == Distribution{DistZipf, 1.2, -1} }, nil},
	{"zipf default theta", []string{"--rw=randread", "--random_distribution=zipf"},
		func(j Job) bool { return j.Dist == Distribution{DistZipf, 1.1, -1} }, nil},
	{"pareto center", []string{"--rw=randread", "--random_distribution=pareto:0.3:0.25"},
		func(j Job) bool { return j.Dist == Distribution{DistPareto, 0.3, 0.25} }, nil},
	{"normal", []string{"--rw=randread", "--random_distribution=normal:5"},
		func(j Job) bool { return j.Dist == Distribution{DistNormal, 5, -1} }, nil},
	{"random", []string{"--rw=randread", "--random_distribution=random"},
		func(j Job) bool { return j.Dist.Kind == DistRandom }, nil},
	// ramp_time: fio keeps microseconds.
	{"ramp_time", []string{"--ramp_time=2s"}, func(j Job) bool { return j.RampTime == 2*time.Second }, map[string]int64{"ramp_time": 2000000}},
	{"ramp_time ms", []string{"--ramp_time=250ms"}, func(j Job) bool { return j.RampTime == 250*time.Millisecond }, map[string]int64{"ramp_time": 250000}},
	// Logs: a prefix, or the job name when bare; log_avg_msec in ms.
	{"logs", []string{"--write_bw_log=foo", "--write_lat_log=bar", "--write_iops_log=baz", "--log_avg_msec=500"},
		func(j Job) bool {
			return j.BWLog == "foo" && j.LatLog == "bar" && j.IOPSLog == "baz" && j.LogAvgMsec == 500
		}, map[string]int64{"log_avg_msec": 500}},
	// The options pagebench took before: sizes in bytes, times in
	// microseconds (fio's unit), booleans as 1.
	{"job basics", []string{"--rw=randread", "--bs=4k", "--size=1g", "--iodepth=64", "--direct=1", "--runtime=5", "--time_based"},
		func(j Job) bool {
			return j.RW == RandRead && j.BS == 4096 && j.Size == 1<<30 && j.IODepth == 64 && j.Direct &&
				j.Runtime == 5*time.Second && j.TimeBased
		}, map[string]int64{"bs": 4096, "size": 1 << 30, "iodepth": 64, "direct": 1, "runtime": 5000000, "time_based": 1}},
	{"io_uring options", []string{"--ioengine=io_uring", "--fixedbufs", "--registerfiles", "--iodepth_batch_submit=16", "--iodepth=64"},
		func(j Job) bool {
			return j.IOEngine == EngineIOUring && j.FixedBufs && j.RegisterFiles && j.BatchSubmit == 16
		}, map[string]int64{"fixedbufs": 1, "registerfiles": 1, "iodepth_batch": 16}},
	{"iomem", []string{"--ioengine=io_uring", "--iomem=shmhuge"}, func(j Job) bool { return j.HugeMem }, nil},
	{"file service", []string{"--file_service_type=random:4"},
		func(j Job) bool { return j.FileService == ServiceRandom && j.FileServiceNr == 4 }, nil},
	{"readonly", []string{"--readonly"}, func(j Job) bool { return j.ReadOnly }, nil}, // fio: a command-line flag
}

// TestFioOptionsMeaning checks each case's parse, from the command line
// and from a job file.
func TestFioOptionsMeaning(t *testing.T) {
	for _, c := range fioOptionCases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"--name=x", "--filename=/f"}, c.opts...)
			spec, err := ParseArgs(args)
			if err != nil {
				t.Fatalf("ParseArgs(%q): %v", args, err)
			}
			j := mustResolve(t, spec.Jobs[0])
			if !c.check(j) {
				t.Errorf("command line %q: %+v", c.opts, j)
			}
			var file strings.Builder
			file.WriteString("[global]\nfilename=/f\n[x]\n")
			for _, o := range c.opts {
				file.WriteString(strings.TrimPrefix(o, "--") + "\n")
			}
			fs, err := ParseJobFile("t.fio", strings.NewReader(file.String()))
			if err != nil {
				t.Fatalf("job file:\n%s: %v", file.String(), err)
			}
			if j := mustResolve(t, fs.Jobs[0]); !c.check(j) {
				t.Errorf("job file %q: %+v", c.opts, j)
			}
		})
	}
}

// fioParse runs fio's own parser on opts and returns whether it accepted
// them and the values it printed, by option (fio's alias names map to
// the name fio prints, e.g. iodepth_batch_submit to iodepth_batch). It
// skips the test where fio is absent.
func fioParse(t *testing.T, opts []string) (bool, map[string]int64) {
	t.Helper()
	bin, err := exec.LookPath("fio")
	if err != nil {
		t.Skip("fio not installed")
	}
	args := append([]string{"--parse-only", "--debug=parse", "--name=x", "--filename=" + t.TempDir() + "/none"}, opts...)
	var out bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	vals := map[string]int64{}
	cur := ""
	for _, m := range regexp.MustCompile(`(?m) handle_option=(\S+),|ret=0, out=(-?\d+)`).FindAllStringSubmatch(out.String(), -1) {
		if m[1] != "" {
			cur = m[1]
			continue
		}
		if _, seen := vals[cur]; cur != "" && !seen {
			vals[cur], _ = strconv.ParseInt(m[2], 10, 64)
		}
	}
	return err == nil, vals
}

// TestFioOptionsAgainstFio checks that fio accepts every case and prints
// the values the case expects, and that fio and pagebench reject the same
// bad distributions.
func TestFioOptionsAgainstFio(t *testing.T) {
	for _, c := range fioOptionCases {
		ok, vals := fioParse(t, c.opts)
		if !ok {
			t.Errorf("%s: fio refuses %q", c.name, c.opts)
			continue
		}
		for k, want := range c.fioOut {
			if got, ok := vals[k]; !ok || got != want {
				t.Errorf("%s: fio parsed %s of %q to %d (%v), the case says %d", c.name, k, c.opts, got, ok, want)
			}
		}
	}
	for _, v := range []string{"zipf:1", "zipf:0", "zipf:1.2:1.5", "zipf:1.2:0.5", "pareto:0", "pareto:1", "pareto:0.5",
		"normal:100", "normal:99.5", "normal:0", "random:1"} {
		opt := "--random_distribution=" + v
		fioOK, _ := fioParse(t, []string{opt})
		_, err := ParseArgs([]string{"--filename=/f", opt})
		if fioOK != (err == nil) {
			t.Errorf("%s: fio accepts: %v; pagebench: %v", opt, fioOK, err)
		}
	}
}

// TestBareLogOption checks fio's two spellings of a log without a prefix:
// bare in a job file takes the job name; empty on the command line is an
// error, as fio's getopt says "requires an argument".
func TestBareLogOption(t *testing.T) {
	fs, err := ParseJobFile("t.fio", strings.NewReader("[rr]\nfilename=/f\nwrite_lat_log\nwrite_bw_log\n"))
	if err != nil {
		t.Fatal(err)
	}
	if j := mustResolve(t, fs.Jobs[0]); j.LatLog != "rr" || j.BWLog != "rr" || j.IOPSLog != "" {
		t.Errorf("bare logs: %+v", j)
	}
	if _, err := ParseArgs([]string{"--filename=/f", "--write_lat_log="}); err == nil || !strings.Contains(err.Error(), "prefix") {
		t.Errorf("empty prefix: %v", err)
	}
	spec, err := ParseArgs([]string{"--name=a", "--filename=/f", "--write_iops_log", "pfx"})
	if err != nil {
		t.Fatal(err)
	}
	if j := mustResolve(t, spec.Jobs[0]); j.IOPSLog != "pfx" {
		t.Errorf("--write_iops_log pfx: %q", j.IOPSLog)
	}
}

// FuzzDistribution checks that no random_distribution value panics, that
// an accepted one prints back to a value that parses to itself, and that
// its sampler stays within the blocks.
func FuzzDistribution(f *testing.F) {
	for _, s := range []string{"zipf:1.2", "pareto:0.3:0.25", "normal:5", "normal:0:1", "random", "zipf", "zipf:-3", "zipf:1e308"} {
		f.Add(s, uint64(1000))
	}
	f.Fuzz(func(t *testing.T, v string, n uint64) {
		d, err := ParseDistribution(v)
		if err != nil {
			return
		}
		if d2, err := ParseDistribution(d.String()); err != nil || d2 != d {
			t.Fatalf("%q parsed to %v, which reparses to %v (%v)", v, d, d2, err)
		}
		n = n%100000 + 1 // zipf's setup sums up to n terms
		r := rng{s: n}
		s := newSampler(d, n, &r)
		for range 64 {
			if b := s.next(&r); b >= n {
				t.Fatalf("%v over %d blocks: block %d", d, n, b)
			}
		}
	})
}
