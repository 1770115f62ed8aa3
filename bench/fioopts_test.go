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
	// fioOut are the values fio's --debug=parse prints ("out=N") for the
	// options, in order, where it prints one.
	fioOut []int64
}{
	// iodepth_batch_complete_min (alias iodepth_batch_complete): how many
	// completions to wait for; iodepth_batch_complete_max defaults to it.
	{"complete_min", []string{"--iodepth=32", "--iodepth_batch_complete_min=4"},
		func(j Job) bool { return j.BatchCompleteMin == 4 && j.BatchCompleteMax == 4 }, []int64{32, 4}},
	{"complete alias", []string{"--iodepth=32", "--iodepth_batch_complete=3"},
		func(j Job) bool { return j.BatchCompleteMin == 3 && j.BatchCompleteMax == 3 }, nil},
	{"complete_max", []string{"--iodepth=32", "--iodepth_batch_complete_min=1", "--iodepth_batch_complete_max=16"},
		func(j Job) bool { return j.BatchCompleteMin == 1 && j.BatchCompleteMax == 16 }, []int64{32, 1, 16}},
	{"complete_max below min", []string{"--iodepth=32", "--iodepth_batch_complete_min=8", "--iodepth_batch_complete_max=2"},
		func(j Job) bool { return j.BatchCompleteMin == 8 && j.BatchCompleteMax == 8 }, []int64{32, 8, 2}},
	// iodepth_batch_submit=0 means iodepth; not given, the engine adapts.
	{"batch_submit 0", []string{"--iodepth=32", "--iodepth_batch_submit=0"},
		func(j Job) bool { return j.BatchSubmit == 32 }, []int64{32, 0}},
	{"batch_submit unset", []string{"--iodepth=32"},
		func(j Job) bool { return j.BatchSubmit == 0 && j.BatchCompleteMin == 0 }, []int64{32}},
	// iodepth_low: the low water mark; defaults to iodepth (keep full).
	{"iodepth_low", []string{"--iodepth=16", "--iodepth_low=4"},
		func(j Job) bool { return j.IODepthLow == 4 }, []int64{16, 4}},
	{"iodepth_low above iodepth", []string{"--iodepth=16", "--iodepth_low=64"},
		func(j Job) bool { return j.IODepthLow == 16 }, []int64{16, 64}},
	// numjobs clones, group_reporting folds them into one result.
	{"numjobs", []string{"--numjobs=4", "--group_reporting"},
		func(j Job) bool { return j.NumJobs == 4 && j.GroupReporting }, []int64{4, 1}},
	// offset: bytes or a percentage of the file; offset_increment: added
	// per clone.
	{"offset", []string{"--offset=1m", "--offset_increment=64m"},
		func(j Job) bool { return j.Offset == 1<<20 && j.OffsetIncrement == 64<<20 }, []int64{1 << 20, 64 << 20}},
	{"offset percent", []string{"--offset=25%", "--offset_increment=10%"},
		func(j Job) bool { return j.OffsetPct == 25 && j.OffsetIncrementPct == 10 && j.Offset == 0 }, nil},
	// randrepeat defaults to true; randseed sets the seed.
	{"randrepeat default", nil, func(j Job) bool { return j.RandRepeat && !j.NoRandomMap }, nil},
	{"randrepeat off", []string{"--randrepeat=0", "--randseed=42"},
		func(j Job) bool { return !j.RandRepeat && j.Seed == 42 }, []int64{0, 42}},
	{"norandommap", []string{"--norandommap"}, func(j Job) bool { return j.NoRandomMap }, []int64{1}},
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
	{"ramp_time", []string{"--ramp_time=2s"}, func(j Job) bool { return j.RampTime == 2*time.Second }, []int64{2000000}},
	{"ramp_time ms", []string{"--ramp_time=250ms"}, func(j Job) bool { return j.RampTime == 250*time.Millisecond }, []int64{250000}},
	// Logs: a prefix, or the job name when bare; log_avg_msec in ms.
	{"logs", []string{"--write_bw_log=foo", "--write_lat_log=bar", "--write_iops_log=baz", "--log_avg_msec=500"},
		func(j Job) bool {
			return j.BWLog == "foo" && j.LatLog == "bar" && j.IOPSLog == "baz" && j.LogAvgMsec == 500
		}, []int64{500}},
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
// them and the values it printed. It skips the test where fio is absent.
func fioParse(t *testing.T, opts []string) (bool, []int64) {
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
	var vals []int64
	seenName := 0
	for _, m := range regexp.MustCompile(`(?m)handle_option=(\S+),|ret=0, out=(-?\d+)`).FindAllStringSubmatch(out.String(), -1) {
		if m[1] != "" {
			seenName++
			continue
		}
		if seenName > 2 { // after name and filename
			n, _ := strconv.ParseInt(m[2], 10, 64)
			vals = append(vals, n)
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
		if c.fioOut != nil && !slicesEqual(vals, c.fioOut) {
			t.Errorf("%s: fio parsed %q to %v, the case says %v", c.name, c.opts, vals, c.fioOut)
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

func slicesEqual(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
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
