package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// RawConfig configures RunRaw.
type RawConfig struct {
	// Jobs run one after another, each as its own group (groupid = index),
	// as if every job had fio's stonewall. A job's NumJobs clones run
	// concurrently, each with its own engine and offsets (seed + clone).
	Jobs []Job
	// Stderr receives notices: file layout, engine fallbacks. Default: discard.
	Stderr io.Writer
	// Status, when set, receives a live fio-like status line refreshed about
	// once a second and erased at the end. Set it only for a terminal.
	Status io.Writer

	// onRead, when set (tests), sees every measured read's file, offset
	// and bytes on the job's goroutine before the buffer is reused.
	onRead func(clone int, path string, off int64, p []byte)
	// onDepth, when set (tests), sees the io_uring reads in flight, the
	// completing one included, at every completion.
	onDepth func(inflight int64)
}

// Report is the outcome of RunRaw: one group per job, in order.
type Report struct {
	Start  time.Time
	Groups []*GroupResult
}

// GroupResult holds the clones of one job.
type GroupResult struct {
	ID     int
	Job    Job
	Clones []*JobResult
}

// JobResult is one job clone's measured statistics, after ramp_time.
type JobResult struct {
	Name     string
	GroupID  int
	Jobs     int // clones merged into this result (group_reporting), else 1
	IOBytes  int64
	IOs      int64
	ShortIOs int64
	Runtime  time.Duration // from the end of ramp_time to the last counted completion
	Clat     *Latency      // submission to completion (engine timestamps for io_uring)
	Slat     *Latency      // issue to submission; empty for psync and mmap
	Lat      *Latency      // issue to completion seen by the job
	buckets  latBuckets
	plat     *platHist // clat in fio's buckets, for json+

	BWSamples   []float64 // KiB/s, one per 500 ms
	IOPSSamples []float64

	// CPU is measured with getrusage(RUSAGE_SELF) over the group's measured
	// window (the whole process: engine workers, runtime and GC included),
	// shared evenly between the group's clones, as a percentage of the
	// window like fio's usr_cpu and sys_cpu.
	UsrCPU, SysCPU   float64
	Ctx, Majf, Minf  int64
	EngineInfo       string // e.g. "io_uring SINGLE_ISSUER|DEFER_TASKRUN fixedbufs"
	Direct           bool
	IODepth, BatchSz int
}

func newJobResult(name string, gid int) *JobResult {
	return &JobResult{Name: name, GroupID: gid, Jobs: 1, Clat: NewLatency(), Slat: NewLatency(), Lat: NewLatency(), plat: new(platHist)}
}

// Merge folds clones into one result (fio's group_reporting): sums of I/O,
// merged latencies, the longest runtime, CPU averaged.
func Merge(name string, rs []*JobResult) *JobResult {
	m := newJobResult(name, 0)
	m.Jobs = 0
	for i, r := range rs {
		if i == 0 {
			m.GroupID, m.EngineInfo, m.Direct, m.IODepth, m.BatchSz = r.GroupID, r.EngineInfo, r.Direct, r.IODepth, r.BatchSz
		}
		m.Jobs += r.Jobs
		m.IOBytes += r.IOBytes
		m.IOs += r.IOs
		m.ShortIOs += r.ShortIOs
		m.Runtime = max(m.Runtime, r.Runtime)
		m.Clat.Merge(r.Clat)
		m.Slat.Merge(r.Slat)
		m.Lat.Merge(r.Lat)
		m.buckets.merge(&r.buckets)
		m.plat.merge(r.plat)
		m.UsrCPU += r.UsrCPU / float64(len(rs))
		m.SysCPU += r.SysCPU / float64(len(rs))
		m.Ctx += r.Ctx
		m.Majf += r.Majf
		m.Minf += r.Minf
		for k, v := range r.BWSamples {
			if k < len(m.BWSamples) {
				m.BWSamples[k] += v
				m.IOPSSamples[k] += r.IOPSSamples[k]
			} else {
				m.BWSamples = append(m.BWSamples, v)
				m.IOPSSamples = append(m.IOPSSamples, r.IOPSSamples[k])
			}
		}
	}
	return m
}

// Results returns the results to report: one per clone, or one per group
// where the job asked for group_reporting.
func (r *Report) Results() []*JobResult {
	var out []*JobResult
	for _, g := range r.Groups {
		if g.Job.GroupReporting && len(g.Clones) > 1 {
			out = append(out, Merge(g.Job.Name, g.Clones))
		} else {
			out = append(out, g.Clones...)
		}
	}
	return out
}

// RunRaw runs cfg's jobs in order and returns their report. It stops early,
// keeping what was measured, when ctx ends. An error names the job, the
// file and the cause; a group that failed is not in the report.
func RunRaw(ctx context.Context, cfg RawConfig) (*Report, error) {
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	rep := &Report{Start: time.Now()}
	logIdx := 1 // fio numbers log files by job, from 1, over the whole run
	for gid := range cfg.Jobs {
		if ctx.Err() != nil {
			break
		}
		g, err := runGroup(ctx, &cfg, gid, cfg.Jobs[gid], logIdx)
		logIdx += cfg.Jobs[gid].NumJobs
		if err != nil {
			return rep, fmt.Errorf("job %s: %w", cfg.Jobs[gid].Name, err)
		}
		rep.Groups = append(rep.Groups, g)
	}
	return rep, nil
}

// sampleEvery is fio's default bandwidth/IOPS averaging interval.
const sampleEvery = 500 * time.Millisecond

func runGroup(ctx context.Context, cfg *RawConfig, gid int, job Job, logIdx int) (*GroupResult, error) {
	files, align, err := prepareFiles(&job, cfg.Stderr)
	if err != nil {
		return nil, err
	}
	if job.Direct && job.IOEngine == EngineMmap {
		fmt.Fprintf(cfg.Stderr, "pagebench: %s: ioengine=mmap ignores direct=1 (it maps the page cache)\n", job.Name)
	}
	base := time.Now()
	ws, err := newGroupWorkers(cfg, gid, &job, files, align, base, logIdx)
	if err != nil {
		return nil, err
	}

	// begun: every clone issued its first read (or gave up); ended: every
	// clone counted its last. CPU is measured between the end of ramp_time
	// after begun and ended, so engine setup and teardown stay out of it.
	var wg, begun, ended sync.WaitGroup
	allDone := make(chan struct{})
	for _, w := range ws {
		wg.Add(1)
		begun.Add(1)
		ended.Add(1)
		w.begun, w.ended = &begun, &ended
		go func() {
			defer wg.Done()
			w.run()
		}()
	}
	go func() { wg.Wait(); close(allDone) }()
	begunCh, endedCh := waitChan(&begun), waitChan(&ended)

	// The sampler owns the status line; it ends before runGroup returns.
	sampDone := make(chan struct{})
	stopSampler := make(chan struct{})
	go func() {
		defer close(sampDone)
		sample(ws, &job, base, cfg.Status, stopSampler)
	}()

	stopAll := func() {
		for _, w := range ws {
			w.stop.Store(true)
		}
	}
	select {
	case <-begunCh:
	case <-ctx.Done():
		stopAll()
		<-begunCh
	}
	var ru0, ru1 unix.Rusage
	ramp := time.NewTimer(job.RampTime)
	select {
	case <-ramp.C:
	case <-endedCh:
	case <-ctx.Done():
	}
	ramp.Stop()
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru0)
	t0 := time.Now()
	select {
	case <-endedCh:
	case <-ctx.Done():
		stopAll()
		<-endedCh
	}
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru1)
	window := time.Since(t0)
	<-allDone
	close(stopSampler)
	<-sampDone

	return collectGroup(gid, job, ws, &ru0, &ru1, window)
}

// newGroupWorkers makes the job's numjobs clones, each with its fio logs
// open; on an error the logs opened so far are closed.
func newGroupWorkers(cfg *RawConfig, gid int, job *Job, files []target, align int, base time.Time, logIdx int) ([]*worker, error) {
	ws := make([]*worker, job.NumJobs)
	for i := range ws {
		ws[i] = newWorker(job, gid, i, files, align, base, cfg)
		logs, err := openIOLogs(job, logIdx+i)
		if err != nil {
			for _, w := range ws[:i] {
				if w.logs != nil {
					w.logs.close()
				}
			}
			return nil, err
		}
		ws[i].logs = logs
	}
	return ws, nil
}

// collectGroup gathers the clones' results, each with its share of the
// process's CPU and faults between ru0 and ru1 (window long), closes their
// logs and joins their errors.
func collectGroup(gid int, job Job, ws []*worker, ru0, ru1 *unix.Rusage, window time.Duration) (*GroupResult, error) {
	g := &GroupResult{ID: gid, Job: job}
	var errs []error
	n := float64(len(ws))
	for _, w := range ws {
		if w.err != nil {
			errs = append(errs, w.err)
		}
		if w.logs != nil {
			if err := w.logs.close(); err != nil {
				errs = append(errs, err)
			}
		}
		r := w.res
		if window > 0 {
			r.UsrCPU = 100 * float64(tvNs(ru1.Utime)-tvNs(ru0.Utime)) / float64(window) / n
			r.SysCPU = 100 * float64(tvNs(ru1.Stime)-tvNs(ru0.Stime)) / float64(window) / n
		}
		r.Ctx = int64(ru1.Nvcsw+ru1.Nivcsw-ru0.Nvcsw-ru0.Nivcsw) / int64(n)
		r.Majf = int64(ru1.Majflt-ru0.Majflt) / int64(n)
		r.Minf = int64(ru1.Minflt-ru0.Minflt) / int64(n)
		g.Clones = append(g.Clones, r)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return g, nil
}

// waitChan returns a channel closed when wg's count reaches zero.
func waitChan(wg *sync.WaitGroup) <-chan struct{} {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	return ch
}

func tvNs(tv unix.Timeval) int64 { return int64(tv.Sec)*1e9 + int64(tv.Usec)*1e3 }

// sample records each clone's bandwidth and IOPS every sampleEvery after
// ramp_time and writes the status line about once a second.
func sample(ws []*worker, job *Job, base time.Time, status io.Writer, stop <-chan struct{}) {
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	last := make([][2]int64, len(ws)) // bytes, ios at the previous tick
	lastT := base.Add(job.RampTime)
	prevTotal := int64(0)
	prevIOs := int64(0)
	wrote := 0
	for k := 0; ; k++ {
		select {
		case <-stop:
			if status != nil && wrote > 0 {
				fmt.Fprintf(status, "\r%*s\r", wrote, "")
			}
			return
		case now := <-tick.C:
			if now.Before(base.Add(job.RampTime)) {
				continue
			}
			dt := now.Sub(lastT).Seconds()
			lastT = now
			var total, ios int64
			running := 0
			for i, w := range ws {
				b, n := w.bytes.Load(), w.ios.Load()
				if dt > 0 && !w.finished.Load() {
					w.res.BWSamples = append(w.res.BWSamples, float64(b-last[i][0])/1024/dt)
					w.res.IOPSSamples = append(w.res.IOPSSamples, float64(n-last[i][1])/dt)
					running++
				}
				last[i] = [2]int64{b, n}
				total += b
				ios += n
			}
			if status == nil || k%2 == 0 {
				continue
			}
			bw := float64(total-prevTotal) / (2 * sampleEvery).Seconds()
			iops := float64(ios-prevIOs) / (2 * sampleEvery).Seconds()
			prevTotal, prevIOs = total, ios
			pct, eta := progress(job, now.Sub(base), total, len(ws))
			line := statusLine(running, pct, bw, iops, eta)
			pad := max(wrote-len(line), 0)
			fmt.Fprintf(status, "\r%s%*s", line, pad, "")
			wrote = len(line) + pad
		}
	}
}

// statusLine formats fio's live status line.
func statusLine(running int, pct, bw, iops float64, eta time.Duration) string {
	return fmt.Sprintf("Jobs: %d (f=%d): [%s][%.1f%%][r=%s/s][r=%s IOPS][eta %02dm:%02ds]",
		running, running, "r("+strconv.Itoa(running)+")", pct, fmtBytes(bw, true), fmtNum(iops), int(eta.Minutes()), int(eta.Seconds())%60)
}

// progress estimates the share done and the time left.
func progress(job *Job, elapsed time.Duration, bytes int64, clones int) (float64, time.Duration) {
	if job.Runtime > 0 {
		total := job.RampTime + job.Runtime
		pct := min(100*float64(elapsed)/float64(total), 100)
		return pct, max(total-elapsed, 0).Round(time.Second)
	}
	want := float64(job.Size) * float64(clones)
	if want <= 0 || bytes <= 0 {
		return 0, 0
	}
	pct := min(100*float64(bytes)/want, 100)
	eta := time.Duration(float64(elapsed) * (100 - pct) / pct)
	return pct, eta.Round(time.Second)
}

// target is one file of a job, prepared: its path, the bytes of the span
// each clone reads (from its own offset, see cloneOffset), and the bytes
// the file holds.
type target struct {
	path     string
	size     int64
	fileSize int64
}

// cloneOffset is where clone k of job starts in a file of fileSize bytes:
// offset + k·offset_increment, percentages taken of the file and rounded
// down to bs (fio's get_start_offset with offset_align's default).
func cloneOffset(job *Job, k int, fileSize int64) int64 {
	off, inc := job.Offset, job.OffsetIncrement
	bs := int64(max(job.BS, 1))
	if job.OffsetPct > 0 {
		off = int64(float64(fileSize)*job.OffsetPct/100) / bs * bs
	}
	if job.OffsetIncrementPct > 0 {
		inc = int64(float64(fileSize)*job.OffsetIncrementPct/100) / bs * bs
	}
	return off + int64(k)*inc
}

// prepareFiles prepares every file of job.Filename, in order: a missing
// or short file is laid out when --size asks for more than it holds, as
// fio does. Without --size each file is used at its own size; with it,
// size is divided as fio divides it (see Job): size/len(files) bytes
// each, plus one bs block for each of the first (size mod len(files))/bs
// files. It sets job.Size to the total span, what is actually used,
// checks bs against each file's size and O_DIRECT alignment, and returns
// the files and the largest alignment (1 when buffered). Errors name the
// file.
func prepareFiles(job *Job, stderr io.Writer) ([]target, int, error) {
	paths, err := job.Filenames()
	if err != nil {
		return nil, 0, err
	}
	n := int64(len(paths))
	per := job.Size / n
	if job.Size > 0 && per == 0 {
		return nil, 0, fmt.Errorf("%w: size %d is less than a byte for each of %d files", ErrBadOption, job.Size, len(paths))
	}
	extra := int64(0) // fio's nr_fs_extra
	if job.BS > 0 {
		extra = (job.Size - per*n) / int64(job.BS)
	}
	ts := make([]target, len(paths))
	total := int64(0)
	align := 1
	for i, path := range paths {
		want := per
		if int64(i) < extra {
			want += int64(job.BS)
		}
		// The last clone's offset, for an absolute offset; a percentage
		// is of the file as it is (or as --size lays it out).
		lastOff := int64(0)
		if want > 0 && job.OffsetPct == 0 && job.OffsetIncrementPct == 0 {
			lastOff = cloneOffset(job, job.NumJobs-1, 0)
		}
		fileSize, err := prepareTarget(path, want+lastOff, job, stderr)
		if err != nil {
			return nil, 0, err
		}
		size := fileSize - lastOff
		if want > 0 {
			size = want
		}
		if job.OffsetPct > 0 || job.OffsetIncrementPct > 0 || want == 0 {
			st, err := os.Stat(path)
			if err == nil && st.Mode().IsRegular() {
				fileSize = max(fileSize, st.Size())
			}
			size = fileSize - cloneOffset(job, job.NumJobs-1, fileSize)
			if want > 0 {
				size = min(want, size)
			}
		}
		if size < int64(job.BS) {
			return nil, 0, &Error{Op: "open", Path: path, Off: -1,
				Err: fmt.Errorf("%w: size %d is smaller than bs %d", ErrBadOption, size, job.BS)}
		}
		if job.Direct && job.IOEngine != EngineMmap {
			a, how, err := dioAlign(path)
			if err != nil {
				return nil, 0, err
			}
			if job.BS%a != 0 {
				return nil, 0, &Error{Op: "open", Path: path, Off: -1,
					Err: fmt.Errorf("%w: bs=%d is not a multiple of the %d-byte O_DIRECT alignment (%s); use a multiple of %d or --direct=0",
						ErrAlignment, job.BS, a, how, a)}
			}
			align = max(align, a)
			for k := range job.NumJobs {
				if off := cloneOffset(job, k, fileSize); off%int64(a) != 0 {
					return nil, 0, &Error{Op: "open", Path: path, Off: off,
						Err: fmt.Errorf("%w: clone %d starts at offset %d, not a multiple of the %d-byte O_DIRECT alignment (%s)", ErrAlignment, k, off, a, how)}
				}
			}
		}
		ts[i] = target{path: path, size: size, fileSize: fileSize}
		total += size
	}
	job.Size = total
	return ts, align, nil
}

// prepareTarget returns the span of path to read: want bytes, laying the
// file out when missing or short, or the file's size when want is 0.
// Block devices are never laid out; want is at most their size.
func prepareTarget(path string, want int64, job *Job, stderr io.Writer) (int64, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if want == 0 {
			return 0, &Error{Op: "open", Path: path, Off: -1, Err: errors.New("no such file, and no --size to lay it out")}
		}
		if job.ReadOnly {
			return 0, &Error{Op: "open", Path: path, Off: -1, Err: errors.New("no such file, and --readonly forbids laying it out")}
		}
		if err := layout(path, 0, want, job.Name, stderr); err != nil {
			return 0, err
		}
		return want, nil
	case err != nil:
		return 0, &Error{Op: "stat", Path: path, Off: -1, Err: err}
	case st.IsDir():
		return 0, &Error{Op: "open", Path: path, Off: -1, Err: errors.New("is a directory, want a file")}
	case st.Mode()&fs.ModeDevice != 0 && st.Mode()&fs.ModeCharDevice == 0:
		dev, err := blockDeviceSize(path)
		if err != nil {
			return 0, err
		}
		if want == 0 {
			return dev, nil
		}
		if want > dev {
			return 0, &Error{Op: "open", Path: path, Off: -1,
				Err: fmt.Errorf("%w: --size %d is larger than the block device (%d bytes); block devices are never written", ErrBadOption, want, dev)}
		}
		return want, nil
	case !st.Mode().IsRegular():
		return 0, &Error{Op: "open", Path: path, Off: -1, Err: errors.New("not a regular file or block device")}
	case want == 0:
		return st.Size(), nil
	case st.Size() < want:
		if job.ReadOnly {
			return 0, &Error{Op: "open", Path: path, Off: -1,
				Err: fmt.Errorf("%d bytes, shorter than the %d to read, and --readonly forbids extending it", st.Size(), want)}
		}
		if err := layout(path, st.Size(), want, job.Name, stderr); err != nil {
			return 0, err
		}
	}
	return want, nil
}

// layoutChunk is the write size used to lay out files.
const layoutChunk = 1 << 20

// layout extends path from cur to size bytes with sequential writes of
// pseudo-random data, as fio lays out its files, and syncs it. It never
// truncates.
func layout(path string, cur, size int64, name string, stderr io.Writer) error {
	fmt.Fprintf(stderr, "pagebench: %s: laying out IO file %s (%s, %s to write)\n",
		name, path, fmtBytes(float64(size), true), fmtBytes(float64(size-cur), true))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return &Error{Op: "layout", Path: path, Off: -1, Err: err}
	}
	buf := make([]byte, layoutChunk)
	r := rng{s: uint64(size) ^ 0x1a7e}
	for off := cur; off < size; {
		n := min(int64(len(buf)), size-off)
		for i := 0; i+8 <= int(n); i += 8 {
			v := r.next()
			for k := range 8 {
				buf[i+k] = byte(v >> (8 * k))
			}
		}
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			f.Close()
			return &Error{Op: "layout", Path: path, Off: off, Err: err}
		}
		off += n
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return &Error{Op: "layout", Path: path, Off: -1, Err: err}
	}
	if err := f.Close(); err != nil {
		return &Error{Op: "layout", Path: path, Off: -1, Err: err}
	}
	return nil
}
