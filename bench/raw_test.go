package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

const blk = 4096

// knownFile writes n blocks where every 8-byte word holds its own offset,
// so any read can be checked against where it claims to come from.
func knownFile(t *testing.T, n int) (string, uint32) {
	t.Helper()
	b := make([]byte, n*blk)
	for i := 0; i < len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], uint64(i)*0x9e37+1)
	}
	p := filepath.Join(t.TempDir(), "known.dat")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, crc32.ChecksumIEEE(b)
}

func checkBlock(off int64, p []byte) bool {
	for i := 0; i+8 <= len(p); i += 8 {
		if binary.LittleEndian.Uint64(p[i:]) != uint64(off+int64(i))*0x9e37+1 {
			return false
		}
	}
	return true
}

// directOK reports whether the test directory's file system takes O_DIRECT.
func directOK(path string) bool {
	_, _, err := dioAlign(path)
	return err == nil
}

func TestEnginesReadCorrectBytes(t *testing.T) {
	const nblk = 256
	path, want := knownFile(t, nblk)
	engines := []struct {
		engine string
		direct bool
		fixed  bool // fixedbufs and registerfiles
	}{
		{EnginePsync, false, false},
		{EnginePsync, true, false},
		{EngineMmap, false, false},
		{EngineIOUring, true, false},
		{EngineIOUring, false, false},
		{EngineIOUring, true, true},
	}
	for _, e := range engines {
		name := e.engine
		if e.direct {
			name += "/direct"
		}
		if e.fixed {
			name += "/fixedbufs+registerfiles"
		}
		t.Run(name, func(t *testing.T) {
			if e.direct && !directOK(path) {
				t.Skip("file system refuses O_DIRECT")
			}
			// Sequential, not time based: every block exactly once, in order
			// for one-at-a-time engines; any order for io_uring.
			job := DefaultJob()
			job.Name, job.Filename, job.IOEngine, job.Direct, job.BS = "seq", path, e.engine, e.direct, 2*blk
			job.FixedBufs, job.RegisterFiles = e.fixed, e.fixed
			if e.engine == EngineIOUring {
				job.IODepth = 8
			}
			got := make([]byte, nblk*blk)
			seen := map[int64]bool{}
			bad := 0
			cfg := RawConfig{Jobs: []Job{job}, onRead: func(_ int, _ string, off int64, p []byte) {
				if !checkBlock(off, p) {
					bad++
				}
				if seen[off] {
					t.Errorf("offset %d read twice", off)
				}
				seen[off] = true
				copy(got[off:], p)
			}}
			rep, err := RunRaw(context.Background(), cfg)
			if e.engine == EngineIOUring && engineMissing(err) {
				t.Skipf("engine not ready: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			if bad > 0 {
				t.Errorf("%d reads returned bytes of another offset", bad)
			}
			if c := crc32.ChecksumIEEE(got); c != want {
				t.Errorf("checksum of what was read %08x, want %08x", c, want)
			}
			r := rep.Results()[0]
			t.Logf("engine: %q", r.EngineInfo)
			if e.fixed && !strings.Contains(r.EngineInfo, "registerfiles") {
				t.Errorf("registerfiles asked for, engine reports %q", r.EngineInfo)
			}
			// One clone leaves a P free wherever GOMAXPROCS > 1: held waits.
			if held := strings.Contains(r.EngineInfo, "waitholdsp"); e.engine == EngineIOUring && held != (runtime.GOMAXPROCS(0) > 1) {
				t.Errorf("GOMAXPROCS %d, 1 clone: engine reports %q", runtime.GOMAXPROCS(0), r.EngineInfo)
			}
			if r.IOs != nblk/2 || r.IOBytes != nblk*blk || r.Clat.N() != r.IOs || r.Lat.N() != r.IOs {
				t.Errorf("ios %d bytes %d clat.N %d", r.IOs, r.IOBytes, r.Clat.N())
			}

			// Random, time based: every read must be aligned and correct.
			job.RW, job.TimeBased, job.Runtime, job.BS = RandRead, true, 150*time.Millisecond, blk
			bad, n := 0, 0
			offsets := map[int64]bool{}
			cfg = RawConfig{Jobs: []Job{job}, onRead: func(_ int, _ string, off int64, p []byte) {
				n++
				offsets[off] = true
				if off%blk != 0 || len(p) != blk || !checkBlock(off, p) {
					bad++
				}
			}}
			if _, err := RunRaw(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			if n == 0 || bad > 0 {
				t.Errorf("%d random reads, %d bad", n, bad)
			}
			if n > 100 && len(offsets) < 50 {
				t.Errorf("%d random reads hit only %d offsets", n, len(offsets))
			}
		})
	}
}

// engineMissing reports the engine owner's placeholder error.
func engineMissing(err error) bool {
	return err != nil && strings.Contains(err.Error(), "not implemented")
}

func TestNumJobsAndGroupReporting(t *testing.T) {
	for _, eng := range []string{EnginePsync, EngineIOUring} {
		t.Run(eng, func(t *testing.T) { testNumJobs(t, eng) })
	}
}

func testNumJobs(t *testing.T, eng string) {
	path, _ := knownFile(t, 64)
	job := DefaultJob()
	job.Name, job.Filename, job.NumJobs, job.GroupReporting = "g", path, 3, true
	job.IOEngine, job.IODepth = eng, 4
	job.RW = RandRead
	job.Size = 64 * blk
	rep, err := RunRaw(context.Background(), RawConfig{Jobs: []Job{job, job}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Groups) != 2 || len(rep.Groups[0].Clones) != 3 {
		t.Fatalf("groups %d", len(rep.Groups))
	}
	res := rep.Results()
	if len(res) != 2 || res[0].Jobs != 3 || res[1].GroupID != 1 {
		t.Fatalf("results %+v", res)
	}
	// Not time based: each clone reads size bytes.
	if res[0].IOBytes != 3*64*blk || res[0].IOs != 3*64 {
		t.Errorf("merged io %d bytes in %d ios", res[0].IOBytes, res[0].IOs)
	}
	job.GroupReporting = false
	rep, err = RunRaw(context.Background(), RawConfig{Jobs: []Job{job}})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(rep.Results()); got != 3 {
		t.Errorf("%d results without group_reporting, want 3", got)
	}
}

func TestLayout(t *testing.T) {
	dir := t.TempDir()
	var notes bytes.Buffer
	run := func(path string, size int64) error {
		job := DefaultJob()
		job.Name, job.Filename, job.Size = "lay", path, size
		_, err := RunRaw(context.Background(), RawConfig{Jobs: []Job{job}, Stderr: &notes})
		return err
	}
	// Missing: created at size.
	p := filepath.Join(dir, "new.dat")
	if err := run(p, 3*layoutChunk/2); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(p); err != nil || st.Size() != 3*layoutChunk/2 {
		t.Fatalf("laid out file: %v %v", st, err)
	}
	if !strings.Contains(notes.String(), "laying out IO file "+p) {
		t.Errorf("no layout notice: %q", notes.String())
	}
	b, _ := os.ReadFile(p)
	if bytes.Count(b, []byte{0}) > len(b)/100 {
		t.Errorf("layout wrote mostly zeros")
	}
	// Longer: never truncated.
	long := filepath.Join(dir, "long.dat")
	orig := bytes.Repeat([]byte("pagefeed"), 4*blk)
	os.WriteFile(long, orig, 0o644)
	notes.Reset()
	if err := run(long, blk); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(long); !bytes.Equal(b, orig) || notes.Len() != 0 {
		t.Errorf("longer file changed (len %d) or laid out: %q", len(b), notes.String())
	}
	// Shorter: extended, prefix kept.
	if err := run(long, int64(len(orig))+2*blk); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(long); len(b) != len(orig)+2*blk || !bytes.Equal(b[:len(orig)], orig) {
		t.Errorf("extended file: len %d, prefix kept %v", len(b), bytes.Equal(b[:len(orig)], orig))
	}
}

func TestRunRawErrors(t *testing.T) {
	dir := t.TempDir()
	path, _ := knownFile(t, 4)
	tests := []struct {
		name string
		mod  func(j *Job)
		want error
		msg  string
	}{
		{"missing without size", func(j *Job) { j.Filename = filepath.Join(dir, "nope") }, nil, "no such file, and no --size"},
		{"directory", func(j *Job) { j.Filename = dir }, nil, "is a directory"},
		{"size below bs", func(j *Job) { j.BS = 8 * blk }, ErrBadOption, "smaller than bs"},
		{"direct misaligned bs", func(j *Job) { j.Direct, j.BS = true, 1000 }, ErrAlignment, "O_DIRECT alignment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want == ErrAlignment && !directOK(path) {
				t.Skip("file system refuses O_DIRECT")
			}
			job := DefaultJob()
			job.Name, job.Filename = "bad", path
			tt.mod(&job)
			_, err := RunRaw(context.Background(), RawConfig{Jobs: []Job{job}})
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(err.Error(), tt.msg) || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("got %v; want *Error containing %q", err, tt.msg)
			}
		})
	}
}

// BenchmarkRandRead4k runs one closed-loop pass over an 8 MiB file per
// iteration (2048 reads of 4 KiB) on each engine, buffered so it measures
// the runner's overhead rather than the disk. allocs/op are per pass.
func BenchmarkRandRead4k(b *testing.B) {
	path := filepath.Join(b.TempDir(), "f")
	if err := layout(path, 0, 8<<20, "b", newBuf()); err != nil {
		b.Fatal(err)
	}
	for _, eng := range []string{EnginePsync, EngineMmap, EngineIOUring} {
		b.Run(eng, func(b *testing.B) {
			job := DefaultJob()
			job.Name, job.Filename, job.RW, job.IOEngine, job.Size = "b", path, RandRead, eng, 8<<20
			if eng == EngineIOUring {
				job.IODepth = 32
			}
			b.SetBytes(8 << 20) // one pass over the file per iteration
			b.ReportAllocs()
			var ios int64
			for b.Loop() {
				rep, err := RunRaw(context.Background(), RawConfig{Jobs: []Job{job}})
				if engineMissing(err) {
					b.Skip(err)
				}
				if err != nil {
					b.Fatal(err)
				}
				ios += rep.Results()[0].IOs
			}
			b.ReportMetric(float64(ios)/b.Elapsed().Seconds(), "IOPS")
		})
	}
}

// newBuf is a notice sink for benchmarks.
func newBuf() *bytes.Buffer { return new(bytes.Buffer) }

func TestWorkerRampAndLimits(t *testing.T) {
	job := DefaultJob()
	job.Name, job.Filename, job.RW, job.RampTime = "w", "/f", RandRead, time.Microsecond
	w := newWorker(&job, 0, 0, []target{{"/f", 16 * blk, 16 * blk}}, 1, time.Now(), &RawConfig{})
	p := make([]byte, blk)
	// During ramp_time nothing is recorded and nothing counts to the limit.
	if w.complete(500, "/f", 0, p, 10, -1, 10) || w.res.IOs != 0 {
		t.Fatalf("ramp completion recorded: %d", w.res.IOs)
	}
	if _, _, ok := w.next(500); !ok || w.issued != 0 {
		t.Fatalf("ramp issue counted: %d", w.issued)
	}
	// After it, exactly size bytes are issued (not time based).
	n := 0
	for {
		_, off, ok := w.next(2000)
		if !ok {
			break
		}
		if off%blk != 0 || off > 15*blk {
			t.Fatalf("offset %d", off)
		}
		n++
	}
	if n != 16 {
		t.Errorf("issued %d reads after ramp, want 16", n)
	}
	for i := range 16 {
		stop := w.complete(2000, "/f", int64(i)*blk, p, 10, -1, 10)
		if stop != (i == 15) {
			t.Errorf("completion %d: stop=%v", i, stop)
		}
	}
	if w.res.IOs != 16 || w.res.IOBytes != 16*blk || w.res.Slat.N() != 0 {
		t.Errorf("ios %d bytes %d slat.N %d", w.res.IOs, w.res.IOBytes, w.res.Slat.N())
	}
	// Time based: stops at ramp + runtime.
	job.TimeBased, job.Runtime = true, time.Microsecond
	w = newWorker(&job, 0, 0, []target{{"/f", 16 * blk, 16 * blk}}, 1, time.Now(), &RawConfig{})
	if _, _, ok := w.next(1500); !ok {
		t.Error("stopped before ramp+runtime")
	}
	if _, _, ok := w.next(2000); ok {
		t.Error("issued after ramp+runtime")
	}
	// Sequential wraps around.
	job = DefaultJob()
	job.TimeBased, job.Runtime = true, time.Hour
	w = newWorker(&job, 0, 0, []target{{"/f", 3 * blk, 3 * blk}}, 1, time.Now(), &RawConfig{})
	var offs []int64
	for range 5 {
		_, off, _ := w.next(0)
		offs = append(offs, off)
	}
	if want := []int64{0, blk, 2 * blk, 0, blk}; !reflect.DeepEqual(offs, want) {
		t.Errorf("sequential offsets %v, want %v", offs, want)
	}
}

func TestCancelStopsJob(t *testing.T) {
	path, _ := knownFile(t, 64)
	for _, eng := range []string{EnginePsync, EngineMmap, EngineIOUring} {
		t.Run(eng, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			job := DefaultJob()
			job.Name, job.Filename, job.IOEngine, job.IODepth = "c", path, eng, 4
			job.RW, job.TimeBased, job.Runtime = RandRead, true, time.Hour
			reads := 0
			cfg := RawConfig{Jobs: []Job{job, job}, onRead: func(int, string, int64, []byte) {
				if reads++; reads == 100 {
					cancel()
				}
			}}
			rep, err := RunRaw(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			// The first job stops soon after the cancel; the second never starts.
			if len(rep.Groups) != 1 || rep.Results()[0].IOs < 100 {
				t.Fatalf("groups %d", len(rep.Groups))
			}
		})
	}
}

// TestIOMemHugePages: fio's iomem=shmhuge (or mmaphuge) puts the io_uring
// slots on transparent huge pages, and malloc, fio's default, does not;
// reads are right either way.
func TestIOMemHugePages(t *testing.T) {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(b), "[never]") {
		t.Skipf("transparent huge pages off: %q %v", b, err)
	}
	path, _ := knownFile(t, 64)
	for _, mem := range []string{"malloc", "shmhuge", "mmaphuge:/dev/hugepages/x"} {
		spec, err := ParseArgs([]string{"--name=h", "--filename=" + path, "--rw=randread", "--bs=4k", "--iodepth=8",
			"--ioengine=io_uring", "--size=256k", "--iomem=" + mem})
		if err != nil {
			t.Fatal(err)
		}
		job, err := spec.Jobs[0].Resolve()
		if err != nil {
			t.Fatal(err)
		}
		rep, err := RunRaw(context.Background(), RawConfig{Jobs: []Job{job}})
		if err != nil {
			t.Fatalf("iomem=%s: %v", mem, err)
		}
		res := rep.Results()[0]
		if huge := strings.Contains(res.EngineInfo, "hugepages"); huge != (mem != "malloc") || res.IOs != 64 {
			t.Fatalf("iomem=%s: engine %q, %d ios", mem, res.EngineInfo, res.IOs)
		}
	}
}

// TestHoldsP: a job's io_uring workers wait holding their Ps only while its
// clones leave one P free.
func TestHoldsP(t *testing.T) {
	for _, tc := range []struct {
		clones, procs int
		want          bool
	}{{1, 2, true}, {1, 16, true}, {15, 16, true}, {2, 2, false}, {1, 1, false}, {4, 2, false}} {
		if got := holdsP(tc.clones, tc.procs); got != tc.want {
			t.Errorf("holdsP(%d clones, %d procs) = %v", tc.clones, tc.procs, got)
		}
	}
}
