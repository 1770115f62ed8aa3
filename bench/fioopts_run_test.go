package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// runOpts resolves fio-style args over path and runs them, recording every
// measured read's clone and offset.
func runOpts(t *testing.T, args ...string) (*Report, map[int][]int64) {
	t.Helper()
	spec, err := ParseArgs(args)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []Job
	for _, js := range spec.Jobs {
		jobs = append(jobs, mustResolve(t, js))
	}
	var mu sync.Mutex
	offs := map[int][]int64{}
	rep, err := RunRaw(context.Background(), RawConfig{Jobs: jobs, onRead: func(clone int, _ string, off int64, p []byte) {
		if !checkBlock(off, p) {
			t.Errorf("clone %d: bytes at %d are not the file's", clone, off)
		}
		mu.Lock()
		offs[clone] = append(offs[clone], off)
		mu.Unlock()
	}})
	if engineMissing(err) {
		t.Skipf("engine not ready: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return rep, offs
}

// TestOffsetIncrement checks fio's offset and offset_increment: clone k
// reads [offset + k·increment, + size), for absolute and percentage forms.
func TestOffsetIncrement(t *testing.T) {
	path, _ := knownFile(t, 256)
	for _, c := range []struct {
		opts   []string
		starts []int64
		span   int64
	}{
		{[]string{"--offset=16k", "--offset_increment=256k", "--size=64k"}, []int64{16 << 10, 272 << 10, 528 << 10}, 64 << 10},
		{[]string{"--offset=25%", "--offset_increment=10%", "--size=40k"}, []int64{256 << 10, (256 + 100) << 10, (256 + 200) << 10}, 40 << 10},
	} {
		_, offs := runOpts(t, append([]string{"--name=o", "--filename=" + path, "--bs=4k", "--rw=read", "--numjobs=3"}, c.opts...)...)
		for k, start := range c.starts {
			got := offs[k]
			if len(got) > 0 && got[0] != start {
				t.Errorf("%q: clone %d began at %d, not at its offset %d", c.opts, k, got[0], start)
			}
			sort.Slice(got, func(a, b int) bool { return got[a] < got[b] })
			if int64(len(got)) != c.span/blk || got[0] != start || got[len(got)-1] != start+c.span-blk {
				t.Errorf("%q: clone %d read %d blocks from %d to %d; want %d from %d", c.opts, k, len(got), got[0], got[len(got)-1], c.span/blk, start)
			}
		}
	}
}

// TestRandomMap checks fio's random map: without norandommap a randread
// pass reads every block once; with it, blocks repeat.
func TestRandomMap(t *testing.T) {
	path, _ := knownFile(t, 512)
	_, offs := runOpts(t, "--name=m", "--filename="+path, "--bs=4k", "--rw=randread")
	seen := map[int64]int{}
	for _, o := range offs[0] {
		seen[o]++
	}
	if len(offs[0]) != 512 || len(seen) != 512 {
		t.Errorf("random map: %d reads over %d blocks, want each of 512 once", len(offs[0]), len(seen))
	}
	_, offs = runOpts(t, "--name=m", "--filename="+path, "--bs=4k", "--rw=randread", "--norandommap")
	seen = map[int64]int{}
	for _, o := range offs[0] {
		seen[o]++
	}
	// 512 uniform draws over 512 blocks leave about 1/e of them unread.
	if len(offs[0]) != 512 || len(seen) > 400 {
		t.Errorf("norandommap: %d reads over %d distinct blocks; want repeats", len(offs[0]), len(seen))
	}
	m := newRandomMap(130)
	got := map[uint64]bool{}
	for range 130 {
		got[m.take(129)] = true // always ask for the last: it must wrap
	}
	if len(got) != 130 || m.left != 0 {
		t.Fatalf("random map gave %d distinct of 130", len(got))
	}
	if b := m.take(5); b != 5 || m.left != 129 {
		t.Fatalf("new pass: took %d, %d left", b, m.left)
	}
}

// TestRandRepeat checks randrepeat and randseed: the same seed gives the
// same offsets, randseed changes them, randrepeat=0 changes them per run.
func TestRandRepeat(t *testing.T) {
	path, _ := knownFile(t, 256)
	run := func(opts ...string) string {
		_, offs := runOpts(t, append([]string{"--name=r", "--filename=" + path, "--bs=4k", "--rw=randread", "--size=256k"}, opts...)...)
		return strconv.Quote(strings.Trim(strings.Join(strings.Fields(strconv.Itoa(len(offs[0]))+" "+fmtInts(offs[0])), ","), " "))
	}
	a, b := run(), run()
	if a != b {
		t.Error("randrepeat (default): two runs read different sequences")
	}
	if c := run("--randseed=99"); c == a {
		t.Error("randseed=99 read the default seed's sequence")
	}
	if d, e := run("--randrepeat=0"), run("--randrepeat=0"); d == e {
		t.Error("randrepeat=0: two runs read the same sequence")
	}
}

func fmtInts(xs []int64) string {
	var b strings.Builder
	for _, x := range xs {
		b.WriteString(strconv.FormatInt(x, 10))
		b.WriteByte(',')
	}
	return b.String()
}

// TestDistributions checks the skew of fio's distributions: zipf and
// pareto concentrate reads on few blocks (more with a larger θ or a
// smaller h), normal around the middle when given a center; uniform does
// not concentrate.
func TestDistributions(t *testing.T) {
	const n = 1 << 16
	const draws = 200000
	top := func(d Distribution) (float64, []int) {
		r := rng{s: 7}
		s := newSampler(d, n, &r)
		counts := make([]int, n)
		for range draws {
			v := s.next(&r)
			if v >= n {
				t.Fatalf("%v: block %d out of range", d, v)
			}
			counts[v]++
		}
		c := append([]int(nil), counts...)
		sort.Sort(sort.Reverse(sort.IntSlice(c)))
		hot := 0
		for _, x := range c[:n/100] {
			hot += x
		}
		return float64(hot) / draws, counts
	}
	uni, _ := top(Distribution{Kind: DistRandom, Center: -1})
	z12, _ := top(Distribution{DistZipf, 1.2, -1})
	z08, _ := top(Distribution{DistZipf, 0.8, -1})
	p2, _ := top(Distribution{DistPareto, 0.2, -1})
	p4, _ := top(Distribution{DistPareto, 0.4, -1})
	t.Logf("share of reads on the hottest 1%% of blocks: uniform %.3f zipf:1.2 %.3f zipf:0.8 %.3f pareto:0.2 %.3f pareto:0.4 %.3f", uni, z12, z08, p2, p4)
	if uni > 0.03 || z12 < 0.5 || z08 > z12 || z08 < 0.1 || p2 < 0.5 || p4 > p2 {
		t.Error("skew out of order")
	}
	// normal:5 centered on 0.25: fio's generator averages 12 uniform
	// draws (a deviation of n/12) and adds a uniform one of σ% of n, so
	// reads cluster around n/4 with a spread of about n/11.
	_, counts := top(Distribution{DistNormal, 5, 0.25})
	near, sum := 0, 0.0
	for i := n/4 - n/4; i < n/4+n/4; i++ {
		near += counts[i]
		sum += float64(i * counts[i])
	}
	if mean := sum / float64(near); float64(near)/draws < 0.99 || math.Abs(mean-n/4) > n/100 {
		t.Errorf("normal:5:0.25: %.3f of reads within n/4 of n/4, their mean %.0f", float64(near)/draws, mean)
	}
	// Zipf's hottest block, with a center and so without the hash, is
	// the center itself.
	_, counts = top(Distribution{DistZipf, 1.2, 0.5})
	best := 0
	for i, c := range counts {
		if c > counts[best] {
			best = i
		}
	}
	if best != n/2 {
		t.Errorf("zipf:1.2:0.5: hottest block %d, want %d", best, n/2)
	}
}

// TestIODepthLow checks iodepth_low: once full, the queue drains to the
// low mark before it is filled again, so reads are issued in bursts of
// iodepth-low, and every block is still read once.
func TestIODepthLow(t *testing.T) {
	path, _ := knownFile(t, 256)
	rep, offs := runOpts(t, "--name=l", "--filename="+path, "--bs=4k", "--rw=read", "--ioengine=io_uring",
		"--iodepth=16", "--iodepth_low=4", "--iodepth_batch_complete_min=2", "--iodepth_batch_complete_max=4")
	seen := map[int64]bool{}
	for _, o := range offs[0] {
		seen[o] = true
	}
	if len(offs[0]) != 256 || len(seen) != 256 {
		t.Fatalf("%d reads over %d blocks, want 256 once each", len(offs[0]), len(seen))
	}
	if r := rep.Results()[0]; r.IOs != 256 {
		t.Errorf("ios %d", r.IOs)
	}
	// The depth seen at completions drains from 16 to 5 (the low mark
	// and the completing read), then the queue is filled to 16 again.
	spec, err := ParseArgs([]string{"--name=l", "--filename=" + path, "--bs=4k", "--rw=randread", "--ioengine=io_uring",
		"--iodepth=16", "--iodepth_low=4", "--time_based", "--runtime=200ms"})
	if err != nil {
		t.Fatal(err)
	}
	var depths []int64
	if _, err := RunRaw(context.Background(), RawConfig{Jobs: []Job{mustResolve(t, spec.Jobs[0])},
		onDepth: func(n int64) { depths = append(depths, n) }}); err != nil {
		t.Fatal(err)
	}
	refills := 0
	for i := 1; i < len(depths); i++ {
		d, prev := depths[i], depths[i-1]
		switch {
		case d == prev-1:
		case prev == 5 && d == 16:
			refills++
		case prev == 5 && d > 5 && i > len(depths)-32: // a refill cut short by the end of the run
		case d < prev: // the last reads of the run
		default:
			t.Fatalf("depth %d after %d at completion %d: %v", d, prev, i, depths[max(0, i-20):i+1])
		}
		if d < 5 && i < len(depths)-16 {
			t.Fatalf("depth %d below the low mark before the end", d)
		}
	}
	if refills < 3 {
		t.Errorf("%d refills in %d completions", refills, len(depths))
	}
}

// TestIOLogs checks the fio-format logs: file names, "msec, value, ddir,
// bs, offset" lines, one per I/O without log_avg_msec and one per window
// with it, values in fio's units.
func TestIOLogs(t *testing.T) {
	path, _ := knownFile(t, 64)
	dir := t.TempDir()
	t.Chdir(dir)
	rep, _ := runOpts(t, "--name=g", "--filename="+path, "--bs=4k", "--rw=read", "--numjobs=2",
		"--write_bw_log=a", "--write_lat_log=a", "--write_iops_log=a")
	r := rep.Results()
	for clone := 1; clone <= 2; clone++ {
		for _, kind := range []string{"bw", "iops", "lat", "clat"} {
			lines := readLog(t, filepath.Join(dir, "a_"+kind+"."+strconv.Itoa(clone)+".log"))
			if len(lines) != int(r[clone-1].IOs) {
				t.Errorf("%s log of clone %d: %d lines for %d I/Os", kind, clone, len(lines), r[clone-1].IOs)
				continue
			}
			for _, l := range lines {
				if l[2] != 0 || l[3] != blk || l[4] != 0 || l[0] < 0 || l[1] <= 0 {
					t.Fatalf("%s log line %v", kind, l)
				}
				if kind == "iops" && l[1] != 1 {
					t.Fatalf("per-I/O iops value %d, want 1", l[1])
				}
			}
		}
	}
	// A job of its own is numbered after the two clones, as fio numbers
	// jobs over the whole run; averaged windows of 50 ms.
	spec, err := ParseArgs([]string{"--name=a", "--filename=" + path, "--bs=4k", "--rw=randread", "--numjobs=2",
		"--name=b", "--filename=" + path, "--bs=4k", "--rw=randread", "--time_based", "--runtime=330ms",
		"--write_bw_log=w", "--write_iops_log=w", "--write_lat_log=w", "--log_avg_msec=50", "--ioengine=io_uring", "--iodepth=4"})
	if err != nil {
		t.Fatal(err)
	}
	jobs := []Job{mustResolve(t, spec.Jobs[0]), mustResolve(t, spec.Jobs[1])}
	rep, err = RunRaw(context.Background(), RawConfig{Jobs: jobs})
	if engineMissing(err) {
		t.Skipf("engine not ready: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	bw := readLog(t, filepath.Join(dir, "w_bw.3.log"))
	iops := readLog(t, filepath.Join(dir, "w_iops.3.log"))
	lat := readLog(t, filepath.Join(dir, "w_clat.3.log"))
	if len(bw) < 5 || len(bw) > 7 || len(iops) != len(bw) || len(lat) == 0 {
		t.Fatalf("330 ms in 50 ms windows: %d bw, %d iops, %d clat lines", len(bw), len(iops), len(lat))
	}
	var ios int64
	for i, l := range bw {
		if l[0] != int64(50*(i+1)) || l[3] != 0 {
			t.Errorf("window %d: %v", i, l)
		}
		// KiB/s = IOPS × 4 KiB / 1 KiB, up to rounding.
		if d := l[1] - iops[i][1]*4; d < -4 || d > 4 {
			t.Errorf("window %d: bw %d KiB/s for %d IOPS", i, l[1], iops[i][1])
		}
		ios += iops[i][1] * 50 / 1000
	}
	if res := rep.Results()[2]; ios > res.IOs || ios < res.IOs/2 {
		t.Errorf("windows add up to %d I/Os of %d", ios, res.IOs)
	}
	if _, err := os.Stat(filepath.Join(dir, "w_bw.1.log")); err == nil {
		t.Error("a job without logs wrote one")
	}
}

func readLog(t *testing.T, path string) [][5]int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][5]int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Split(sc.Text(), ", ")
		if len(fs) != 5 {
			t.Fatalf("%s: line %q: want 5 fields", path, sc.Text())
		}
		var l [5]int64
		for i, s := range fs {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatalf("%s: line %q", path, sc.Text())
			}
			l[i] = n
		}
		out = append(out, l)
	}
	return out
}

// TestPlatBuckets checks fio's histogram index against values worked out
// from fio's plat_val_to_idx and plat_idx_to_val.
func TestPlatBuckets(t *testing.T) {
	for _, c := range []struct {
		v   uint64
		idx int
		mid uint64
	}{
		{0, 0, 0}, {63, 63, 63}, {64, 64, 64}, {127, 127, 127},
		{128, 128, 129}, // msb 7: error bits 1, base 128, buckets of 2
		// msb 9: error bits 3, base (3+1)<<6 = 256, offset (1000>>3)&63 = 61;
		// back: base 1<<9 = 512, plus (61+0.5)·8.
		{1000, 317, 1004},
		{1 << 30, 1600, 1<<30 + 1<<23}, // msb 30: error bits 24, base 25<<6, offset 0
		{1 << 40, platNR - 1, 0},       // past the last group: the last bucket
	} {
		idx := platIndex(c.v)
		if c.v == 1<<40 {
			c.mid = platValue(platNR - 1)
		}
		if idx != c.idx || platValue(idx) != c.mid {
			t.Errorf("value %d: index %d (want %d), bucket value %d (want %d)", c.v, idx, c.idx, platValue(idx), c.mid)
		}
	}
	if platIndex(math.MaxUint64) != platNR-1 {
		t.Error("the largest value must land in the last bucket")
	}
	for i := 0; i < platNR-1; i++ {
		if platIndex(platValue(i)) != i {
			t.Fatalf("bucket %d's value %d indexes %d", i, platValue(i), platIndex(platValue(i)))
		}
	}
}

// TestOutputFormats checks --output with json+ and normal: both documents
// in the file, in order, json+ with clat bins that count every I/O.
func TestOutputFormats(t *testing.T) {
	path, _ := knownFile(t, 64)
	out := filepath.Join(t.TempDir(), "out.txt")
	spec, err := ParseArgs([]string{"--name=o", "--filename=" + path, "--bs=4k", "--output=" + out, "--output-format=json+,normal"})
	if err != nil {
		t.Fatal(err)
	}
	if spec.Output != out || strings.Join(spec.Formats(), " ") != "json+ normal" {
		t.Fatalf("spec output %q formats %q", spec.Output, spec.Formats())
	}
	rep, err := RunRaw(context.Background(), RawConfig{Jobs: []Job{mustResolve(t, spec.Jobs[0])}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := rep.Write(&b, spec.Formats()); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	end := strings.Index(s, "\n}\n") + 3
	var doc FioOutput
	if err := json.Unmarshal([]byte(s[:end]), &doc); err != nil {
		t.Fatalf("json+ part: %v", err)
	}
	var n int64
	for k, c := range doc.Jobs[0].Read.ClatNs.Bins {
		if _, err := strconv.ParseUint(k, 10, 64); err != nil {
			t.Errorf("bin key %q", k)
		}
		n += c
	}
	if n != 64 || doc.Jobs[0].Read.TotalIOs != 64 {
		t.Errorf("bins count %d I/Os of %d", n, doc.Jobs[0].Read.TotalIOs)
	}
	if !strings.Contains(s[end:], "Run status group 0") {
		t.Errorf("normal part missing after json+:\n%s", s[end:])
	}
	if _, err := ParseArgs([]string{"--filename=/f", "--output-format=json,xml"}); err == nil {
		t.Error("output-format=json,xml accepted")
	}
}
