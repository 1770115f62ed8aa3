package bench

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
)

// ioLogs are one job clone's fio-format logs (write_bw_log, write_lat_log,
// write_iops_log): lines "msec, value, ddir, bs, offset", ddir 0 (read),
// offset 0 (fio's default log_offset=0), times from the end of ramp_time,
// as fio's own, which fio2gnuplot and fio-plot read. Without log_avg_msec
// every I/O is a line: bw is its bytes over its latency (bytes/ms, fio's
// per-I/O unit), iops is 1, latencies in ns, bs its size. With it, each
// window of log_avg_msec ends in one line per log: KiB/s, I/Os per
// second, the mean latency of the window (no line when it had no I/O), and
// bs 0. Owned by the clone's goroutine; add does not allocate.
type ioLogs struct {
	files []*logFile // bw, iops, lat, clat, slat; nil where not asked for
	avgNs int64
	bs    int64

	winEnd                   int64 // ns after the start; 0 until the first I/O
	bytes, ios               int64
	latSum, clatSum, slatSum float64
	latN, clatN, slatN       int64
}

const (
	logBW = iota
	logIOPS
	logLat
	logClat
	logSlat
	nLogs
)

type logFile struct {
	path string
	f    *os.File
	w    *bufio.Writer
	line []byte
}

// openIOLogs creates job's log files for clone index idx (from 1). It
// returns nil when the job logs nothing.
func openIOLogs(job *Job, idx int) (*ioLogs, error) {
	names := [nLogs]string{}
	if job.BWLog != "" {
		names[logBW] = fmt.Sprintf("%s_bw.%d.log", job.BWLog, idx)
	}
	if job.IOPSLog != "" {
		names[logIOPS] = fmt.Sprintf("%s_iops.%d.log", job.IOPSLog, idx)
	}
	if job.LatLog != "" {
		names[logLat] = fmt.Sprintf("%s_lat.%d.log", job.LatLog, idx)
		names[logClat] = fmt.Sprintf("%s_clat.%d.log", job.LatLog, idx)
		names[logSlat] = fmt.Sprintf("%s_slat.%d.log", job.LatLog, idx)
	}
	l := &ioLogs{files: make([]*logFile, nLogs), avgNs: int64(job.LogAvgMsec) * 1e6, bs: int64(job.BS)}
	any := false
	for k, name := range names {
		if name == "" {
			continue
		}
		f, err := os.Create(name)
		if err != nil {
			l.close()
			return nil, &Error{Op: "create log", Path: name, Off: -1, Err: err}
		}
		l.files[k] = &logFile{path: name, f: f, w: bufio.NewWriterSize(f, 256<<10), line: make([]byte, 0, 64)}
		any = true
	}
	if !any {
		return nil, nil
	}
	return l, nil
}

// put writes one line to log k, if it is open.
func (l *ioLogs) put(k int, tNs int64, v, bs int64) {
	lf := l.files[k]
	if lf == nil {
		return
	}
	b := strconv.AppendInt(lf.line[:0], tNs/1e6, 10)
	b = append(b, ", "...)
	b = strconv.AppendInt(b, v, 10)
	b = append(b, ", 0, "...)
	b = strconv.AppendInt(b, bs, 10)
	b = append(b, ", 0\n"...)
	lf.line = b
	lf.w.Write(b) // errors stick in the bufio.Writer; close reports them
}

// add records one read of n bytes completed t ns after the start; slat < 0
// means none (psync, mmap).
func (l *ioLogs) add(t, n, clat, slat, lat int64) {
	if l.avgNs == 0 {
		if lat > 0 {
			l.put(logBW, t, n*1e6/lat, n)
		}
		l.put(logIOPS, t, 1, n)
		l.put(logLat, t, lat, n)
		l.put(logClat, t, clat, n)
		if slat >= 0 {
			l.put(logSlat, t, slat, n)
		}
		return
	}
	if l.winEnd == 0 {
		l.winEnd = l.avgNs
	}
	for t >= l.winEnd {
		l.flushWindow()
	}
	l.bytes += n
	l.ios++
	l.latSum += float64(lat)
	l.latN++
	l.clatSum += float64(clat)
	l.clatN++
	if slat >= 0 {
		l.slatSum += float64(slat)
		l.slatN++
	}
}

// flushWindow writes the window ending at winEnd and starts the next.
func (l *ioLogs) flushWindow() {
	sec := float64(l.avgNs) / 1e9
	l.put(logBW, l.winEnd, int64(float64(l.bytes)/1024/sec), 0)
	l.put(logIOPS, l.winEnd, int64(float64(l.ios)/sec+0.5), 0)
	for _, m := range [...]struct {
		k   int
		sum float64
		n   int64
	}{{logLat, l.latSum, l.latN}, {logClat, l.clatSum, l.clatN}, {logSlat, l.slatSum, l.slatN}} {
		if m.n > 0 {
			l.put(m.k, l.winEnd, int64(m.sum/float64(m.n)+0.5), 0)
		}
	}
	l.bytes, l.ios = 0, 0
	l.latSum, l.clatSum, l.slatSum = 0, 0, 0
	l.latN, l.clatN, l.slatN = 0, 0, 0
	l.winEnd += l.avgNs
}

// close flushes and closes the files (a partial last window is not
// written, as its rate would be over a shorter time) and returns the
// first error, naming the file.
func (l *ioLogs) close() error {
	var first error
	for _, lf := range l.files {
		if lf == nil {
			continue
		}
		err := lf.w.Flush()
		if cerr := lf.f.Close(); err == nil {
			err = cerr
		}
		if err != nil && first == nil {
			first = &Error{Op: "write log", Path: lf.path, Off: -1, Err: err}
		}
	}
	return first
}
