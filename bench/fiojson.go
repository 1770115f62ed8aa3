package bench

import (
	"encoding/json"
	"io"
	"math"
	"strconv"
	"time"
)

// Version is reported as "fio version".
const Version = "pagebench-0.1"

// FioOutput is fio's --output-format=json document, with fio's field
// names. RunRaw's report encodes to it and fio's own output decodes into
// it, so one set of paths reads both (jobs[].read.iops,
// jobs[].read.clat_ns.percentile["99.000000"], jobs[].usr_cpu, ...).
type FioOutput struct {
	FioVersion    string            `json:"fio version"`
	Timestamp     int64             `json:"timestamp"`
	TimestampMs   int64             `json:"timestamp_ms"`
	Time          string            `json:"time"`
	GlobalOptions map[string]string `json:"global options,omitempty"`
	Jobs          []FioJob          `json:"jobs"`
	DiskUtil      []FioDiskUtil     `json:"disk_util,omitempty"` // fio only
}

// FioDiskUtil is fio's per-device utilization; pagebench does not emit it.
type FioDiskUtil struct {
	Name        string  `json:"name"`
	ReadIOs     int64   `json:"read_ios"`
	WriteIOs    int64   `json:"write_ios"`
	ReadMerges  int64   `json:"read_merges"`
	WriteMerges int64   `json:"write_merges"`
	ReadTicks   int64   `json:"read_ticks"`
	WriteTicks  int64   `json:"write_ticks"`
	InQueue     int64   `json:"in_queue"`
	Util        float64 `json:"util"`
}

// FioJob is one entry of jobs[]: a job clone, or a group under
// group_reporting.
type FioJob struct {
	JobName    string            `json:"jobname"`
	GroupID    int               `json:"groupid"`
	Error      int               `json:"error"`
	Eta        int               `json:"eta"`
	Elapsed    int64             `json:"elapsed"`
	JobOptions map[string]string `json:"job options"`
	Read       FioIO             `json:"read"`
	Write      FioIO             `json:"write"`
	Trim       FioIO             `json:"trim"`
	Sync       FioSync           `json:"sync"`
	JobRuntime int64             `json:"job_runtime"` // ms
	UsrCPU     float64           `json:"usr_cpu"`     // % of runtime
	SysCPU     float64           `json:"sys_cpu"`
	Ctx        int64             `json:"ctx"`
	Majf       int64             `json:"majf"`
	Minf       int64             `json:"minf"`
	// Depth distributions. pagebench derives these from the options (a
	// closed loop keeps iodepth in flight), it does not measure them.
	IODepthLevel    map[string]float64 `json:"iodepth_level"`
	IODepthSubmit   map[string]float64 `json:"iodepth_submit"`
	IODepthComplete map[string]float64 `json:"iodepth_complete"`
	// Completion-latency (clat) distribution, % of I/Os per bucket.
	LatencyNs         map[string]float64 `json:"latency_ns"`
	LatencyUs         map[string]float64 `json:"latency_us"`
	LatencyMs         map[string]float64 `json:"latency_ms"`
	LatencyDepth      int                `json:"latency_depth"`
	LatencyTarget     int64              `json:"latency_target"`
	LatencyPercentile float64            `json:"latency_percentile"`
	LatencyWindow     int64              `json:"latency_window"`
}

// FioIO is the read, write or trim block of a job.
type FioIO struct {
	IOBytes     int64   `json:"io_bytes"`
	IOKBytes    int64   `json:"io_kbytes"`
	BWBytes     int64   `json:"bw_bytes"` // bytes/s
	BW          int64   `json:"bw"`       // KiB/s
	IOPS        float64 `json:"iops"`
	Runtime     int64   `json:"runtime"` // ms
	TotalIOs    int64   `json:"total_ios"`
	ShortIOs    int64   `json:"short_ios"`
	DropIOs     int64   `json:"drop_ios"`
	SlatNs      FioLat  `json:"slat_ns"`
	ClatNs      FioLat  `json:"clat_ns"`
	LatNs       FioLat  `json:"lat_ns"`
	BWMin       int64   `json:"bw_min"`
	BWMax       int64   `json:"bw_max"`
	BWAgg       float64 `json:"bw_agg"`
	BWMean      float64 `json:"bw_mean"`
	BWDev       float64 `json:"bw_dev"`
	BWSamples   int     `json:"bw_samples"`
	IOPSMin     int64   `json:"iops_min"`
	IOPSMax     int64   `json:"iops_max"`
	IOPSMean    float64 `json:"iops_mean"`
	IOPSStddev  float64 `json:"iops_stddev"`
	IOPSSamples int     `json:"iops_samples"`
}

// FioLat is a latency summary in ns; Percentile keys are "%f" of the
// percentile ("99.000000"). fio prints percentiles for clat only.
type FioLat struct {
	Min        int64            `json:"min"`
	Max        int64            `json:"max"`
	Mean       float64          `json:"mean"`
	Stddev     float64          `json:"stddev"`
	N          int64            `json:"N"`
	Percentile map[string]int64 `json:"percentile,omitempty"`
	// Bins is json+'s histogram: fio's bucket values (ns) to counts,
	// non-empty buckets only.
	Bins map[string]int64 `json:"bins,omitempty"`
}

// FioSync is fio's sync block.
type FioSync struct {
	TotalIOs int64  `json:"total_ios"`
	LatNs    FioLat `json:"lat_ns"`
}

// DecodeFio decodes a fio (or pagebench) JSON document. fio may print
// notices before the JSON; they are skipped.
func DecodeFio(b []byte) (*FioOutput, error) {
	for i, c := range b {
		if c == '{' {
			b = b[i:]
			break
		}
	}
	var out FioOutput
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// JSON converts the report to fio's JSON document.
func (r *Report) JSON() *FioOutput {
	out := &FioOutput{
		FioVersion:  Version,
		Timestamp:   r.Start.Unix(),
		TimestampMs: r.Start.UnixMilli(),
		Time:        r.Start.Format("Mon Jan _2 15:04:05 2006"),
	}
	if len(r.Groups) > 0 && len(r.Groups[0].Job.Global) > 0 {
		out.GlobalOptions = optionMap(r.Groups[0].Job.Global)
	}
	for _, res := range r.Results() {
		job := r.Groups[res.GroupID].Job
		out.Jobs = append(out.Jobs, res.fioJob(&job, r.Start))
	}
	return out
}

// WriteJSON writes the report as fio's JSON, indented as fio does.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r.JSON())
}

// WriteJSONPlus writes fio's json+: the JSON document with each job's
// clat_ns.bins, fio's latency histogram (platValue keys, in ns).
func (r *Report) WriteJSONPlus(w io.Writer) error {
	out := r.JSON()
	for i, res := range r.Results() {
		if i < len(out.Jobs) && res.plat != nil && res.Clat.N() > 0 {
			out.Jobs[i].Read.ClatNs.Bins = res.plat.bins()
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// Write writes the report in each of formats in turn ("normal", "json",
// "json+"), as fio does for --output-format=a,b.
func (r *Report) Write(w io.Writer, formats []string) error {
	for _, f := range formats {
		var err error
		switch f {
		case "json":
			err = r.WriteJSON(w)
		case "json+":
			err = r.WriteJSONPlus(w)
		default:
			err = r.WriteNormal(w)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func optionMap(opts []Option) map[string]string {
	m := make(map[string]string, len(opts))
	for _, o := range opts {
		m[o.Key] = o.Value
	}
	return m
}

func (res *JobResult) fioJob(job *Job, start time.Time) FioJob {
	ms := res.Runtime.Milliseconds()
	opts := optionMap(job.Options)
	opts["name"] = job.Name
	fj := FioJob{
		JobName:    res.Name,
		GroupID:    res.GroupID,
		Elapsed:    int64(math.Ceil(time.Since(start).Seconds())),
		JobOptions: opts,
		JobRuntime: ms,
		UsrCPU:     res.UsrCPU,
		SysCPU:     res.SysCPU,
		Ctx:        res.Ctx,
		Majf:       res.Majf,
		Minf:       res.Minf,
		Read:       res.fioIO(),
		Write:      emptyIO(),
		Trim:       emptyIO(),
		Sync:       FioSync{LatNs: FioLat{}},

		LatencyDepth:      res.IODepth,
		LatencyPercentile: 100,
	}
	depth := res.IODepth
	if job.IOEngine != EngineIOUring {
		depth = 1
	}
	fj.IODepthLevel = depthMap([]string{"1", "2", "4", "8", "16", "32", ">=64"}, []int{1, 2, 4, 8, 16, 32}, depth)
	batch := res.BatchSz
	if batch == 0 || job.IOEngine != EngineIOUring {
		batch = depth
	}
	keys := []string{"0", "4", "8", "16", "32", "64", ">=64"}
	edges := []int{0, 4, 8, 16, 32, 64}
	fj.IODepthSubmit = depthMap(keys, edges, batch)
	fj.IODepthComplete = depthMap(keys, edges, 1)
	fj.LatencyNs = bucketMap(latEdgesNsUs, res.buckets.ns[:], res.IOs, false)
	fj.LatencyUs = bucketMap(latEdgesNsUs, res.buckets.us[:], res.IOs, false)
	fj.LatencyMs = bucketMap(latEdgesMs, res.buckets.ms[:], res.IOs, true)
	return fj
}

// depthMap puts 100% in the first bucket whose edge is ≥ d.
func depthMap(keys []string, edges []int, d int) map[string]float64 {
	m := make(map[string]float64, len(keys))
	for _, k := range keys {
		m[k] = 0
	}
	k := keys[len(keys)-1]
	for i, e := range edges {
		if d <= e {
			k = keys[i]
			break
		}
	}
	m[k] = 100
	return m
}

func bucketMap(edges []int64, counts []int64, total int64, overflow bool) map[string]float64 {
	m := make(map[string]float64, len(counts))
	for i, e := range edges {
		m[strconv.FormatInt(e, 10)] = pct(counts[i], total)
	}
	if overflow {
		m[">=2000"] = pct(counts[len(edges)], total)
	}
	return m
}

func pct(n, total int64) float64 {
	if total == 0 {
		return 0
	}
	return 100 * float64(n) / float64(total)
}

func emptyIO() FioIO {
	return FioIO{SlatNs: FioLat{}, ClatNs: FioLat{}, LatNs: FioLat{}}
}

func (res *JobResult) fioIO() FioIO {
	secs := res.Runtime.Seconds()
	io := FioIO{
		IOBytes:  res.IOBytes,
		IOKBytes: res.IOBytes >> 10,
		Runtime:  res.Runtime.Milliseconds(),
		TotalIOs: res.IOs,
		ShortIOs: res.ShortIOs,
		SlatNs:   fioLat(res.Slat, false),
		ClatNs:   fioLat(res.Clat, true),
		LatNs:    fioLat(res.Lat, false),
	}
	if secs > 0 {
		io.BWBytes = int64(float64(res.IOBytes) / secs)
		io.BW = io.BWBytes >> 10
		io.IOPS = float64(res.IOs) / secs
	}
	io.BWMin, io.BWMax, io.BWMean, io.BWDev, io.BWSamples = sampleStats(res.BWSamples)
	io.IOPSMin, io.IOPSMax, io.IOPSMean, io.IOPSStddev, io.IOPSSamples = sampleStats(res.IOPSSamples)
	if io.BWSamples > 0 {
		io.BWAgg = 100
	}
	return io
}

func sampleStats(s []float64) (lo, hi int64, mean, dev float64, n int) {
	if len(s) == 0 {
		return 0, 0, 0, 0, 0
	}
	var sum, sq float64
	mn, mx := s[0], s[0]
	for _, v := range s {
		sum += v
		sq += v * v
		mn, mx = min(mn, v), max(mx, v)
	}
	n = len(s)
	mean = sum / float64(n)
	if n > 1 {
		dev = math.Sqrt(max((sq-float64(n)*mean*mean)/float64(n-1), 0))
	}
	return int64(mn), int64(mx), mean, dev, n
}

func fioLat(l *Latency, percentiles bool) FioLat {
	f := FioLat{N: l.N()}
	if l.N() == 0 {
		return f
	}
	f.Min, f.Max, f.Mean, f.Stddev = l.min, l.max, l.Mean(), l.Stddev()
	if percentiles {
		f.Percentile = make(map[string]int64, len(FioPercentiles))
		for _, p := range FioPercentiles {
			f.Percentile[PercentileKey(p)] = l.Percentile(p)
		}
	}
	return f
}
