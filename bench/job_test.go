package bench

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func mustResolve(t *testing.T, js JobSpec) Job {
	t.Helper()
	j, err := js.Resolve()
	if err != nil {
		t.Fatalf("Resolve(%+v): %v", js, err)
	}
	return j
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, s *Spec)
	}{
		{
			name: "fio command line, equals form",
			args: []string{"--name=rr", "--filename=/f", "--size=2g", "--rw=randread", "--bs=4k", "--iodepth=64",
				"--iodepth_batch_submit=16", "--direct=1", "--ioengine=io_uring", "--numjobs=2", "--runtime=5",
				"--time_based", "--ramp_time=500ms", "--fixedbufs", "--registerfiles", "--group_reporting",
				"--readonly", "--output-format=json", "--seed=7"},
			check: func(t *testing.T, s *Spec) {
				if s.OutputFormat != "json" || len(s.Jobs) != 1 {
					t.Fatalf("spec %+v", s)
				}
				j := mustResolve(t, s.Jobs[0])
				want := Job{Name: "rr", Filename: "/f", Size: 2 << 30, RW: RandRead, BS: 4096, IODepth: 64, BatchSubmit: 16,
					Direct: true, IOEngine: EngineIOUring, NumJobs: 2, Runtime: 5 * time.Second, TimeBased: true,
					RampTime: 500 * time.Millisecond, FixedBufs: true, RegisterFiles: true, GroupReporting: true, Seed: 7, ReadOnly: true,
					RandRepeat: true, Dist: Distribution{Center: -1}}
				j.Global, j.Options = nil, nil
				if !reflect.DeepEqual(j, want) {
					t.Errorf("got  %+v\nwant %+v", j, want)
				}
			},
		},
		{
			name: "space-separated values and globals before --name",
			args: []string{"--filename", "/f", "--bs", "1m", "--name", "a", "--rw", "read", "--name", "b", "--bs=8k"},
			check: func(t *testing.T, s *Spec) {
				if len(s.Jobs) != 2 {
					t.Fatalf("want 2 jobs, got %d", len(s.Jobs))
				}
				a, b := mustResolve(t, s.Jobs[0]), mustResolve(t, s.Jobs[1])
				if a.Name != "a" || a.BS != 1<<20 || a.RW != Read || a.Filename != "/f" {
					t.Errorf("job a: %+v", a)
				}
				if b.Name != "b" || b.BS != 8192 || b.Filename != "/f" {
					t.Errorf("job b: %+v", b)
				}
			},
		},
		{
			name: "defaults are fio's",
			args: []string{"--filename=/f"},
			check: func(t *testing.T, s *Spec) {
				j := mustResolve(t, s.Jobs[0])
				if j.RW != Read || j.BS != 4096 || j.IODepth != 1 || j.IOEngine != EnginePsync || j.NumJobs != 1 || j.Direct {
					t.Errorf("defaults: %+v", j)
				}
				if s.OutputFormat != "normal" {
					t.Errorf("output format %q", s.OutputFormat)
				}
			},
		},
		{
			name: "batch clamps to iodepth; booleans take 0",
			args: []string{"--name=x", "--filename=/f", "--iodepth=8", "--iodepth_batch_submit=32", "--direct=0", "--time_based=0"},
			check: func(t *testing.T, s *Spec) {
				j := mustResolve(t, s.Jobs[0])
				if j.BatchSubmit != 8 || j.Direct || j.TimeBased {
					t.Errorf("%+v", j)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseArgs(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, s)
		})
	}
}

func TestParseArgsErrors(t *testing.T) {
	tests := []struct {
		args []string
		want error
		msg  string
	}{
		{[]string{"--bogus=1", "--filename=/f"}, ErrBadOption, `unknown option "bogus"`},
		{[]string{"--filename=/f", "--ioengine=libaio"}, ErrEngine, "unknown ioengine"},
		{[]string{"--filename=/f", "--iodepth=0"}, ErrBadOption, "iodepth=0 out of range"},
		{[]string{"--filename=/f", "--iodepth=4097"}, ErrBadOption, "iodepth=4097 out of range"},
		{[]string{"--filename=/f", "--rw=write"}, ErrWriteOnly, "rw=write writes or trims; pagebench only reads"},
		{[]string{"--filename=/f", "--rw=randwrite"}, ErrWriteOnly, "rw=randwrite writes"},
		{[]string{"--filename=/f", "--readwrite=randrw"}, ErrWriteOnly, "readwrite=randrw writes"},
		{[]string{"--filename=/f", "--rw=rw"}, ErrWriteOnly, "pagebench only reads"},
		{[]string{"--filename=/f", "--rw=trimwrite"}, ErrWriteOnly, "pagebench only reads"},
		{[]string{"--filename=/f", "--verify=crc32c"}, ErrWriteOnly, "verify=crc32c checks data it wrote"},
		{[]string{"--filename=/f", "--verify=md5"}, ErrWriteOnly, "pagebench only reads"},
		{[]string{"--filename=/f", "--rw=readd"}, ErrBadOption, "only read and randread"},
		{[]string{"--filename=/f", "--random_distribution=zipf:1"}, ErrBadOption, "different from 1"},
		{[]string{"--filename=/f", "--random_distribution=zipf:1.2:1.5"}, ErrBadOption, "center"},
		{[]string{"--filename=/f", "--random_distribution=zipf:x"}, ErrBadOption, "not a number"},
		{[]string{"--filename=/f", "--random_distribution=pareto:1.5"}, ErrBadOption, "(0, 1)"},
		{[]string{"--filename=/f", "--random_distribution=normal:100"}, ErrBadOption, "[0, 100)"},
		{[]string{"--filename=/f", "--random_distribution=zoned:50/5:50/95"}, ErrBadOption, "zoned distributions are not supported"},
		{[]string{"--filename=/f", "--offset=12%%"}, ErrBadOption, "offset="},
		{[]string{"--filename=/f", "--offset=150%"}, ErrBadOption, "percentage in [0, 100]"},
		{[]string{"--filename=/f", "--log_avg_msec=-1"}, ErrBadOption, "log_avg_msec"},
		{[]string{"--filename=/f", "--bs=4q"}, ErrBadOption, "bs"},
		{[]string{"--filename=/f", "--direct=maybe"}, ErrBadOption, "not a boolean"},
		{[]string{"--filename=/f", "--runtime=soon"}, ErrBadOption, "time"},
		{[]string{"--filename=/f", "--output-format=xml"}, ErrBadOption, "output-format"},
		{[]string{"--filename"}, ErrBadOption, "needs a value"},
		{[]string{"--frob"}, ErrBadOption, `unknown option "frob"`},
		{[]string{"--frob", "x", "--filename=/f"}, ErrBadOption, `unknown option "frob"`},
		{[]string{"--name"}, ErrBadOption, "needs a value"},
		{[]string{"--output-format=json"}, ErrBadOption, "no job"},
		{[]string{"/no/such/job.fio"}, ErrJobFile, "no such file"},
		{[]string{"--filename=/f", "--iomem=cudamalloc"}, ErrBadOption, `iomem="cudamalloc"`},
		{[]string{"--filename=/f", "--mem"}, ErrBadOption, "needs a value"},
	}
	for _, tt := range tests {
		_, err := ParseArgs(tt.args)
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("ParseArgs(%q) = %v; want %v containing %q", tt.args, err, tt.want, tt.msg)
		}
	}
}

func TestResolveErrors(t *testing.T) {
	tests := []struct {
		js  JobSpec
		msg string
	}{
		{JobSpec{Name: "a"}, "no --filename"},
		{JobSpec{Name: "a", Options: []Option{{Key: "filename", Value: "/f"}, {Key: "time_based", Bare: true}}}, "time_based needs a runtime"},
		{JobSpec{Name: "a", Options: []Option{{Key: "filename", Value: "/f"}, {Key: "iomem", Value: "shmhuge"}, {Key: "ioengine", Value: "psync"}}}, "needs ioengine=io_uring"},
	}
	for _, tt := range tests {
		if _, err := tt.js.Resolve(); err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("Resolve(%+v) = %v, want %q", tt.js, err, tt.msg)
		}
	}
}

func TestParseJobFile(t *testing.T) {
	const src = `; a comment
# another
[global]
filename=/data/f
size=1g   ; trailing comment
direct=1
time_based
runtime=2

[rr4k]
rw=randread
bs=4k
ioengine=io_uring
iodepth=64

[global]
bs=1m

[seq]
rw=read
`
	s, err := ParseJobFile("t.fio", strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Jobs) != 2 {
		t.Fatalf("want 2 jobs, got %d", len(s.Jobs))
	}
	a, b := mustResolve(t, s.Jobs[0]), mustResolve(t, s.Jobs[1])
	if a.Name != "rr4k" || a.Filename != "/data/f" || a.Size != 1<<30 || !a.Direct || !a.TimeBased ||
		a.Runtime != 2*time.Second || a.RW != RandRead || a.BS != 4096 || a.IOEngine != EngineIOUring || a.IODepth != 64 {
		t.Errorf("rr4k: %+v", a)
	}
	// The second [global] applies only to jobs after it.
	if b.Name != "seq" || b.BS != 1<<20 || b.RW != Read || b.IOEngine != EnginePsync {
		t.Errorf("seq: %+v", b)
	}
}

func TestParseJobFileErrors(t *testing.T) {
	tests := []struct {
		src, msg string
	}{
		{"", "no job section"},
		{"bs=4k\n", `t.fio:1: option "bs" outside a section`},
		{"[a\n", "t.fio:1: unterminated section"},
		{"[]\n", "t.fio:1: bad section name"},
		{"[a]\nbogus=1\n", `t.fio:2: bench: bad option: unknown option "bogus"`},
		{"[a]\niodepth=0\n", "t.fio:2:"},
		{"[a]\n=4\n", "t.fio:2: option without a key"},
		{"[a]\nname=x\n", "t.fio:2: name is not allowed"},
		{"[a]\n" + strings.Repeat("x", maxJobFile+10), "larger than 1048576 bytes"},
	}
	for _, tt := range tests {
		_, err := ParseJobFile("t.fio", strings.NewReader(tt.src))
		if !errors.Is(err, ErrJobFile) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("ParseJobFile(%.40q) = %v; want ErrJobFile containing %q", tt.src, err, tt.msg)
		}
	}
}

func TestParseArgsJobFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "j.fio")
	if err := os.WriteFile(p, []byte("[global]\nbs=8k\n[one]\nrw=randread\n[two]\nbs=16k\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := ParseArgs([]string{"--filename=/f", "--bs=1m", "--output-format=json", p})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Jobs) != 2 || s.OutputFormat != "json" {
		t.Fatalf("%+v", s)
	}
	one, two := mustResolve(t, s.Jobs[0]), mustResolve(t, s.Jobs[1])
	// Command-line globals come first; the file's [global] overrides them.
	if one.Filename != "/f" || one.BS != 8192 || one.RW != RandRead || two.BS != 16384 {
		t.Errorf("one %+v two %+v", one, two)
	}
}

// FuzzJobFile checks that no job file makes the parser or the resolver
// panic, and that accepted files resolve or fail with an error.
func FuzzJobFile(f *testing.F) {
	f.Add("[global]\nfilename=/f\n[a]\nrw=randread\nbs=4k\n")
	f.Add("[a]\nfilename=/f\ntime_based\nruntime=1\n")
	f.Fuzz(func(t *testing.T, src string) {
		s, err := ParseJobFile("fuzz.fio", strings.NewReader(src))
		if err != nil {
			if !errors.Is(err, ErrJobFile) {
				t.Fatalf("error %v is not ErrJobFile", err)
			}
			return
		}
		if len(s.Jobs) == 0 {
			t.Fatal("no jobs and no error")
		}
		for _, js := range s.Jobs {
			if j, err := js.Resolve(); err == nil && (j.BS < 1 || j.IODepth < 1 || j.IODepth > MaxIODepth || j.NumJobs < 1 ||
				j.BatchSubmit < 0 || j.BatchSubmit > j.IODepth || j.BatchCompleteMax < j.BatchCompleteMin ||
				j.BatchCompleteMin > j.IODepth || j.IODepthLow > j.IODepth || j.Offset < 0 || j.LogAvgMsec < 0) {
				t.Fatalf("resolved out of range: %+v", j)
			}
		}
	})
}
