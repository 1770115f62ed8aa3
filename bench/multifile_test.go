package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSplitFilenames(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"a", []string{"a"}},
		{"/d/a:/d/b:/d/c", []string{"/d/a", "/d/b", "/d/c"}},
		{`a\:b`, []string{"a:b"}},
		{`a\:b:c\:`, []string{"a:b", "c:"}},
		{`a\b:c`, []string{`a\b`, "c"}}, // a backslash before anything but ':' is kept
		{`a\\:b`, []string{`a\:b`}},     // as fio: the backslash right before ':' escapes it
	}
	for _, tt := range tests {
		got, err := SplitFilenames(tt.in)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("SplitFilenames(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "a::b", ":a", "a:", ":"} {
		if got, err := SplitFilenames(in); !errors.Is(err, ErrBadOption) {
			t.Errorf("SplitFilenames(%q) = %q, %v; want ErrBadOption", in, got, err)
		}
	}
}

func TestFilenameListOption(t *testing.T) {
	s, err := ParseArgs([]string{"--name=l", `--filename=/d/a:/d/b\:1`})
	if err != nil {
		t.Fatal(err)
	}
	j := mustResolve(t, s.Jobs[0])
	if j.Filename != `/d/a:/d/b\:1` {
		t.Errorf("Filename %q, want the option as given", j.Filename)
	}
	if got, err := j.Filenames(); err != nil || !reflect.DeepEqual(got, []string{"/d/a", "/d/b:1"}) {
		t.Errorf("Filenames() = %q, %v", got, err)
	}
	for _, args := range [][]string{{"--filename=a::b"}, {"--filename=a:"}, {"--filename="}} {
		if _, err := ParseArgs(args); !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), "empty") {
			t.Errorf("ParseArgs(%q) = %v; want ErrBadOption about an empty name", args, err)
		}
	}
	if _, err := ParseJobFile("t.fio", strings.NewReader("[a]\nfilename=x::y\n")); !errors.Is(err, ErrJobFile) || !strings.Contains(err.Error(), "t.fio:2:") {
		t.Errorf("job file with an empty name: %v", err)
	}
	fs, err := ParseJobFile("t.fio", strings.NewReader("[a]\nfilename=x:y:z\n"))
	if err != nil {
		t.Fatal(err)
	}
	if j := mustResolve(t, fs.Jobs[0]); j.Filename != "x:y:z" {
		t.Errorf("job file Filename %q", j.Filename)
	}
}

// listFiles writes files of the given sizes in dir, each with its own
// pseudo-random bytes, and returns their paths and contents.
func listFiles(t *testing.T, dir string, sizes ...int) ([]string, map[string][]byte) {
	t.Helper()
	var paths []string
	data := map[string][]byte{}
	for i, n := range sizes {
		b := make([]byte, n)
		r := rng{s: uint64(i+1) * 0x51ed}
		for k := range b {
			if k%8 == 0 {
				v := r.next()
				for m := 0; m < 8 && k+m < n; m++ {
					b[k+m] = byte(v >> (8 * m))
				}
			}
		}
		p := filepath.Join(dir, fmt.Sprintf("f%d.dat", i))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
		data[p] = b
	}
	return paths, data
}

// multiRead is one read seen by onRead.
type multiRead struct {
	path string
	off  int64
	n    int
}

func TestMultiFileEngines(t *testing.T) {
	const bs = 2 * blk
	// Sizes differ, and the first is no multiple of bs: its last 100 bytes
	// are never read (fio reads whole blocks).
	paths, data := listFiles(t, t.TempDir(), 5*blk+100, 9*blk, 16*blk)
	if !directOK(paths[0]) {
		t.Skip("file system refuses O_DIRECT")
	}
	nblocks := map[string]int64{paths[0]: 2, paths[1]: 4, paths[2]: 8}
	list := strings.Join(paths, ":")
	engines := []struct {
		name   string
		engine string
		fixed  bool
	}{
		{"psync", EnginePsync, false},
		{"mmap", EngineMmap, false},
		{"io_uring", EngineIOUring, false},
		{"io_uring/fixedbufs+registerfiles", EngineIOUring, true},
	}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			job := DefaultJob()
			job.Name, job.Filename, job.IOEngine, job.BS, job.IODepth = "mf", list, e.engine, bs, 8
			job.Direct = e.engine != EngineMmap
			job.FixedBufs, job.RegisterFiles = e.fixed, e.fixed
			var reads []multiRead
			bad := 0
			check := func(_ int, path string, off int64, p []byte) {
				reads = append(reads, multiRead{path, off, len(p)})
				want, ok := data[path]
				switch {
				case !ok:
					t.Errorf("read of %q, not a file of the list", path)
				case off%bs != 0 || len(p) != bs || off+bs > nblocks[path]*bs:
					t.Errorf("%s: read of %d bytes at %d, outside its %d blocks or not bs-aligned", path, len(p), off, nblocks[path])
				case !bytes.Equal(p, want[off:off+bs]):
					bad++
				}
			}

			// Sequential, not time based: every block of every file once,
			// the files taken in turn until each is done, as fio does.
			rep, err := RunRaw(context.Background(), RawConfig{Jobs: []Job{job}, onRead: check})
			if err != nil {
				t.Fatal(err)
			}
			if bad > 0 {
				t.Errorf("%d reads returned bytes that are not the file's", bad)
			}
			seen := map[multiRead]int{}
			for _, r := range reads {
				seen[r]++
			}
			for _, p := range paths {
				for b := range nblocks[p] {
					if n := seen[multiRead{p, b * bs, bs}]; n != 1 {
						t.Errorf("%s block %d read %d times, want once", p, b, n)
					}
				}
			}
			if len(reads) != 14 {
				t.Errorf("%d reads, want 14", len(reads))
			}
			if e.engine != EngineIOUring { // one at a time: completion order is issue order
				var order []int
				for _, r := range reads {
					order = append(order, slices.Index(paths, r.path))
				}
				if want := []int{0, 1, 2, 0, 1, 2, 1, 2, 1, 2, 2, 2, 2, 2}; !reflect.DeepEqual(order, want) {
					t.Errorf("file order %v, want round robin %v", order, want)
				}
			}
			g := rep.Groups[0]
			if wantSize := int64(5*blk + 100 + 9*blk + 16*blk); g.Job.Size != wantSize || g.Job.Filename != list {
				t.Errorf("reported job size %d filename %q, want %d and the list", g.Job.Size, g.Job.Filename, wantSize)
			}
			if r := rep.Results()[0]; r.IOBytes != 14*bs {
				t.Errorf("io bytes %d, want %d", r.IOBytes, 14*bs)
			}

			// Random, time based: reads land in every file, aligned and right.
			job.RW, job.TimeBased, job.Runtime = RandRead, true, 150*time.Millisecond
			reads, bad = nil, 0
			if _, err := RunRaw(context.Background(), RawConfig{Jobs: []Job{job}, onRead: check}); err != nil {
				t.Fatal(err)
			}
			if bad > 0 {
				t.Errorf("%d random reads returned bytes that are not the file's", bad)
			}
			perFile := map[string]int{}
			offs := map[multiRead]bool{}
			for _, r := range reads {
				perFile[r.path]++
				offs[r] = true
			}
			for _, p := range paths {
				if perFile[p] == 0 {
					t.Errorf("%s never read in %d random reads", p, len(reads))
				}
			}
			if len(reads) > 200 && len(offs) < 12 {
				t.Errorf("%d random reads hit only %d blocks of 14", len(reads), len(offs))
			}
		})
	}
}

func TestMultiFileSize(t *testing.T) {
	dir := t.TempDir()
	paths, data := listFiles(t, dir, 2*blk, 40*blk)
	missing := filepath.Join(dir, "new.dat")
	job := DefaultJob()
	// --size is divided evenly: 16 blocks for each of the three files.
	job.Name, job.Filename, job.Size = "sz", paths[0]+":"+missing+":"+paths[1], 48*blk
	var notes bytes.Buffer
	files, _, err := prepareFiles(&job, &notes)
	if err != nil {
		t.Fatal(err)
	}
	want := []target{{paths[0], 16 * blk, 16 * blk}, {missing, 16 * blk, 16 * blk}, {paths[1], 16 * blk, 16 * blk}}
	if !reflect.DeepEqual(files, want) || job.Size != 48*blk {
		t.Errorf("files %+v size %d; want %+v, %d", files, job.Size, want, 48*blk)
	}
	// The short file is extended and the missing one laid out; the longer
	// one is used in part, never truncated.
	for _, p := range []string{paths[0], missing} {
		if st, err := os.Stat(p); err != nil || st.Size() != 16*blk || !strings.Contains(notes.String(), "laying out IO file "+p) {
			t.Errorf("%s: %v %v, notices %q", p, st, err, notes.String())
		}
	}
	if b, _ := os.ReadFile(paths[0]); !bytes.Equal(b[:2*blk], data[paths[0]]) {
		t.Error("extended file lost its prefix")
	}
	if b, _ := os.ReadFile(paths[1]); !bytes.Equal(b, data[paths[1]]) {
		t.Error("longer file changed")
	}
}

func TestMultiFileErrors(t *testing.T) {
	dir := t.TempDir()
	paths, _ := listFiles(t, dir, 4*blk, 4*blk)
	missing := filepath.Join(dir, "nope.dat")
	tests := []struct {
		name, filename string
		bs             int
		path           string // the file the error must name
		msg            string
		size           int64 // --size
		readonly       bool
	}{
		{"missing without size", paths[0] + ":" + missing + ":" + paths[1], blk, missing, "no such file, and no --size", 0, false},
		{"directory in list", paths[0] + ":" + dir, blk, dir, "is a directory", 0, false},
		{"file below bs", paths[0] + ":" + paths[1], 8 * blk, paths[0], "smaller than bs", 0, false},
		{"readonly missing", paths[0] + ":" + missing, blk, missing, "--readonly forbids", 8 * blk, true},
		{"readonly short", paths[0] + ":" + paths[1], blk, paths[0], "--readonly forbids", 16 * blk, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := DefaultJob()
			job.Name, job.Filename, job.BS, job.Size, job.ReadOnly = "bad", tt.filename, tt.bs, tt.size, tt.readonly
			_, err := RunRaw(context.Background(), RawConfig{Jobs: []Job{job}})
			var e *Error
			if !errors.As(err, &e) || e.Path != tt.path || !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), tt.path) {
				t.Errorf("got %v; want *Error for %s containing %q", err, tt.path, tt.msg)
			}
			if _, err := os.Stat(missing); err == nil {
				t.Errorf("%s was laid out", missing)
			}
		})
	}
}

// TestMultiFileReadErrorNamesFile shrinks the second file to one block
// after the first round: the read that then finds its end must name that
// file and offset.
func TestMultiFileReadErrorNamesFile(t *testing.T) {
	paths, _ := listFiles(t, t.TempDir(), 4*blk, 4*blk, 4*blk)
	job := DefaultJob()
	job.Name, job.Filename, job.BS = "shrink", strings.Join(paths, ":"), blk
	n := 0
	cfg := RawConfig{Jobs: []Job{job}, onRead: func(int, string, int64, []byte) {
		if n++; n == 3 {
			if err := os.Truncate(paths[1], blk); err != nil {
				t.Error(err)
			}
		}
	}}
	_, err := RunRaw(context.Background(), cfg)
	var e *Error
	// Round robin: f0@0 f1@0 f2@0 (then the shrink) f0@4k, and f1@4k fails.
	if !errors.As(err, &e) || e.Path != paths[1] || e.Off != blk || e.Op != "read" ||
		!strings.Contains(err.Error(), fmt.Sprintf("%s at offset %d", paths[1], blk)) {
		t.Fatalf("got %v; want a read error for %s at offset %d", err, paths[1], blk)
	}
}

func TestFileServiceOption(t *testing.T) {
	good := []struct {
		in   string
		want FileService
		nr   uint64
	}{
		{"roundrobin", ServiceRoundRobin, 0},
		{"sequential", ServiceSequential, 0},
		{"random", ServiceRandom, 0},
		{"random:4", ServiceRandom, 4},
		{"roundrobin:2", ServiceRoundRobin, 2},
		{"sequential:8", ServiceSequential, 8},
		{"random:0", ServiceRandom, 1 << 32}, // fio's unsigned count wraps
	}
	for _, tt := range good {
		for _, args := range [][]string{
			{"--name=a", "--filename=/f", "--file_service_type=" + tt.in},
			{"--name=a", "--filename=/f", "--file_service_type", tt.in},
		} {
			s, err := ParseArgs(args)
			if err != nil {
				t.Errorf("ParseArgs(%q): %v", args, err)
				continue
			}
			if j := mustResolve(t, s.Jobs[0]); j.FileService != tt.want || j.FileServiceNr != tt.nr {
				t.Errorf("%q: FileService %v nr %d, want %v %d", args, j.FileService, j.FileServiceNr, tt.want, tt.nr)
			}
		}
	}
	if j := DefaultJob(); j.FileService != ServiceRoundRobin || j.FileServiceNr != 0 || j.FileService.String() != "roundrobin" {
		t.Errorf("default file service %v:%d, want roundrobin", j.FileService, j.FileServiceNr)
	}

	// Job files; the job's own option overrides the global one, count included.
	fs, err := ParseJobFile("t.fio", strings.NewReader("[global]\nfile_service_type=random:4\n[a]\nfilename=/f\n[b]\nfilename=/f\nfile_service_type=sequential\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a := mustResolve(t, fs.Jobs[0]); a.FileService != ServiceRandom || a.FileServiceNr != 4 {
		t.Errorf("job a: %v:%d, want random:4", a.FileService, a.FileServiceNr)
	}
	if b := mustResolve(t, fs.Jobs[1]); b.FileService != ServiceSequential || b.FileServiceNr != 0 {
		t.Errorf("job b: %v:%d, want sequential", b.FileService, b.FileServiceNr)
	}

	for _, v := range []string{"", "rand", "Random", "zipf", "gauss:1.5", "random:", "random:x", "random:-1", "roundrobin:4294967296", "sequential:2:3"} {
		_, err := ParseArgs([]string{"--name=a", "--filename=/f", "--file_service_type=" + v})
		if !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), "file_service_type="+v) {
			t.Errorf("file_service_type=%q: %v; want ErrBadOption naming the option and the value", v, err)
		}
	}
	if _, err := ParseArgs([]string{"--name=a", "--filename=/f", "--file_service_type"}); !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), "file_service_type needs a value") {
		t.Errorf("bare --file_service_type: %v", err)
	}
	if _, err := ParseJobFile("t.fio", strings.NewReader("[a]\nfilename=/f\nfile_service_type=pareto\n")); !errors.Is(err, ErrJobFile) ||
		!strings.Contains(err.Error(), "t.fio:3:") || !strings.Contains(err.Error(), "file_service_type=pareto") {
		t.Errorf("job file with a bad file_service_type: %v", err)
	}
}

// fileOrder runs job (one clone) and returns the index in paths of the
// file of each read, in completion order, and the offsets.
func fileOrder(t *testing.T, job Job, paths []string) ([]int, []int64) {
	t.Helper()
	var order []int
	var offs []int64
	cfg := RawConfig{Jobs: []Job{job}, onRead: func(_ int, path string, off int64, _ []byte) {
		order = append(order, slices.Index(paths, path))
		offs = append(offs, off)
	}}
	_, err := RunRaw(context.Background(), cfg)
	if engineMissing(err) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return order, offs
}

// TestFileServiceOrder checks which file each read of three equal files
// went to under each file_service_type. psync and io_uring at iodepth 1
// complete reads in the order they are issued.
func TestFileServiceOrder(t *testing.T) {
	paths, _ := listFiles(t, t.TempDir(), 4*blk, 4*blk, 4*blk)
	list := strings.Join(paths, ":")
	for _, eng := range []string{EnginePsync, EngineIOUring} {
		t.Run(eng, func(t *testing.T) {
			base := DefaultJob()
			base.Name, base.Filename, base.IOEngine, base.BS = "fst", list, eng, blk
			withFST := func(j Job, v string) Job {
				t.Helper()
				if err := j.Set(Option{Key: "file_service_type", Value: v}); err != nil {
					t.Fatal(err)
				}
				return j
			}

			// Not time based, rw=read: every block of every file once.
			for _, tt := range []struct {
				fst  string
				want []int
			}{
				{"roundrobin", []int{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2}},
				{"roundrobin:2", []int{0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2}},
				// A file's run ends early when its share is done.
				{"roundrobin:3", []int{0, 0, 0, 1, 1, 1, 2, 2, 2, 0, 1, 2}},
				{"sequential", []int{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2}},
				// fio's get_next_file never switches a sequential file early.
				{"sequential:2", []int{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2}},
			} {
				if got, _ := fileOrder(t, withFST(base, tt.fst), paths); !reflect.DeepEqual(got, tt.want) {
					t.Errorf("%s: file order %v, want %v", tt.fst, got, tt.want)
				}
			}

			// random: each file still gets its share, in an order that the
			// seed alone decides.
			rnd := withFST(base, "random")
			rnd.RW = RandRead
			o1, offs1 := fileOrder(t, rnd, paths)
			o2, offs2 := fileOrder(t, rnd, paths)
			rnd.Seed++
			o3, offs3 := fileOrder(t, rnd, paths)
			for _, o := range [][]int{o1, o3} {
				per := [3]int{}
				for _, i := range o {
					per[i]++
				}
				if per != [3]int{4, 4, 4} {
					t.Errorf("random: reads per file %v, want 4 each", per)
				}
			}
			if !reflect.DeepEqual(o1, o2) || !reflect.DeepEqual(offs1, offs2) {
				t.Errorf("random, same seed: %v %v then %v %v", o1, offs1, o2, offs2)
			}
			if reflect.DeepEqual(o1, o3) || reflect.DeepEqual(offs1, offs3) {
				t.Errorf("random: seeds %d and %d gave the same reads: %v %v", rnd.Seed-1, rnd.Seed, o1, offs1)
			}
			if reflect.DeepEqual(o1, []int{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2}) {
				t.Errorf("random gave the round-robin order %v", o1)
			}

			// time_based randread: no file's share ever runs out, as in fio.
			tb := base
			tb.RW, tb.TimeBased, tb.Runtime = RandRead, true, 50*time.Millisecond
			if o, _ := fileOrder(t, withFST(tb, "sequential"), paths); len(o) <= 12 || slices.ContainsFunc(o, func(i int) bool { return i != 0 }) {
				t.Errorf("time_based sequential: %d reads, files %v; want more than 12, all on the first file", len(o), fileCounts(o))
			}
			o, _ := fileOrder(t, withFST(tb, "roundrobin"), paths)
			if len(o) <= 12 {
				t.Errorf("time_based roundrobin: %d reads, want more than 12", len(o))
			}
			for k, i := range o {
				if i != k%3 {
					t.Errorf("time_based roundrobin: read %d went to file %d, want %d", k, i, k%3)
					break
				}
			}
			o, _ = fileOrder(t, withFST(tb, "random:3"), paths)
			counts := fileCounts(o)
			if len(o) < 300 || slices.Min(counts) < len(o)/6 {
				t.Errorf("time_based random:3: %d reads, per file %v; want at least 300, every file about a third", len(o), counts)
			}
			for k := 1; k < len(o); k++ {
				if k%3 != 0 && o[k] != o[k-1] {
					t.Errorf("time_based random:3: read %d switched file (%d to %d) inside a run of 3", k, o[k-1], o[k])
					break
				}
			}
		})
	}
}

// fileCounts returns how many reads went to each of three files.
func fileCounts(order []int) []int {
	c := make([]int, 3)
	for _, i := range order {
		c[i]++
	}
	return c
}

// TestMultiFileSizeRemainder checks fio's division of --size: size/n each,
// then one more bs block for each of the first files while the remainder
// holds one; what is left below bs is not used, and job.Size says so.
func TestMultiFileSizeRemainder(t *testing.T) {
	tests := []struct {
		name string
		bs   int
		size int64
		want []int64
	}{
		{"remainder below bs", blk, 48*blk + 100, []int64{16*blk + 33, 16*blk + 33, 16*blk + 33}},
		{"remainder in whole blocks", 2, 5*100 + 4, []int64{102, 102, 100, 100, 100}},
		{"bs 1", 1, 3002, []int64{1001, 1001, 1000}},
		{"one file unchanged", blk, 3*blk + 5, []int64{3*blk + 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var paths []string
			var want []target
			var total int64
			for i, n := range tt.want {
				p := filepath.Join(dir, fmt.Sprintf("f%d", i))
				paths = append(paths, p)
				want = append(want, target{p, n, n})
				total += n
			}
			job := DefaultJob()
			job.Name, job.Filename, job.BS, job.Size = "rem", strings.Join(paths, ":"), tt.bs, tt.size
			files, _, err := prepareFiles(&job, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(files, want) || job.Size != total {
				t.Errorf("files %+v size %d; want %+v, %d", files, job.Size, want, total)
			}
			for _, f := range want {
				if st, err := os.Stat(f.path); err != nil || st.Size() != f.size {
					t.Errorf("%s laid out as %v %v, want %d bytes", f.path, st, err, f.size)
				}
			}
		})
	}

	// Through RunRaw: the report's size is the span used, and the reads
	// are the whole blocks of each file's share.
	paths, _ := listFiles(t, t.TempDir(), 16*blk, 16*blk, 16*blk)
	job := DefaultJob()
	job.Name, job.Filename, job.BS, job.Size = "rem", strings.Join(paths, ":"), blk, 48*blk+100
	rep, err := RunRaw(context.Background(), RawConfig{Jobs: []Job{job}})
	if err != nil {
		t.Fatal(err)
	}
	if g := rep.Groups[0]; g.Job.Size != 48*blk+99 || g.Clones[0].IOs != 48 {
		t.Errorf("reported size %d, %d reads; want %d and 48", g.Job.Size, g.Clones[0].IOs, 48*blk+99)
	}
}
