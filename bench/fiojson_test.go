package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"
	"time"
)

const fioSample = "testdata/fio-3.33-randread-io_uring.json"

// keyPaths lists every key path of a decoded JSON document, with array
// elements as "[]". The contents of option maps vary by job and are skipped.
func keyPaths(v any, prefix string, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, sub := range x {
			p := prefix + "." + k
			out[p] = true
			if k == "job options" || k == "global options" {
				continue
			}
			keyPaths(sub, p, out)
		}
	case []any:
		for _, sub := range x {
			keyPaths(sub, prefix+"[]", out)
		}
	}
}

func pathsOf(t *testing.T, b []byte) map[string]bool {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	m := map[string]bool{}
	keyPaths(v, "", m)
	return m
}

// ourJSON runs a tiny psync job and returns its JSON.
func ourJSON(t *testing.T) []byte {
	t.Helper()
	path, _ := knownFile(t, 64)
	job := DefaultJob()
	job.Name, job.Filename, job.RW, job.Runtime, job.TimeBased = "shape", path, RandRead, 1200*time.Millisecond, true
	job.Options = []Option{{Key: "rw", Value: "randread"}}
	rep, err := RunRaw(context.Background(), RawConfig{Jobs: []Job{job}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestJSONFieldSetMatchesFio(t *testing.T) {
	fio, err := os.ReadFile(fioSample)
	if err != nil {
		t.Fatal(err)
	}
	ours := ourJSON(t)
	want, got := pathsOf(t, fio), pathsOf(t, ours)
	// fio alone reports disk utilization; pagebench has no psync slat and
	// no global options here. Everything else must match both ways.
	skip := func(p string) bool {
		return strings.HasPrefix(p, ".disk_util") || p == ".global options"
	}
	var missing, extra []string
	for p := range want {
		if !got[p] && !skip(p) {
			missing = append(missing, p)
		}
	}
	for p := range got {
		if !want[p] && !skip(p) {
			extra = append(extra, p)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("field set differs from fio 3.33\nmissing: %v\nextra: %v", missing, extra)
	}
}

func TestJSONDecodesWithFioPaths(t *testing.T) {
	fio, err := os.ReadFile(fioSample)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []struct {
		name string
		b    []byte
	}{{"fio", fio}, {"pagebench", ourJSON(t)}} {
		t.Run(doc.name, func(t *testing.T) {
			// The struct covers every field fio writes.
			dec := json.NewDecoder(bytes.NewReader(doc.b))
			dec.DisallowUnknownFields()
			var out FioOutput
			if err := dec.Decode(&out); err != nil {
				t.Fatal(err)
			}
			if len(out.Jobs) != 1 {
				t.Fatalf("%d jobs", len(out.Jobs))
			}
			j := out.Jobs[0]
			rd := j.Read
			if rd.IOPS <= 0 || rd.BWBytes <= 0 || rd.IOBytes <= 0 || rd.Runtime <= 0 || rd.TotalIOs <= 0 {
				t.Errorf("read block: %+v", rd)
			}
			if rd.BW != rd.BWBytes>>10 && rd.BW != rd.BWBytes/1024 {
				t.Errorf("bw %d KiB/s vs bw_bytes %d", rd.BW, rd.BWBytes)
			}
			if rd.IOKBytes != rd.IOBytes>>10 {
				t.Errorf("io_kbytes %d vs io_bytes %d", rd.IOKBytes, rd.IOBytes)
			}
			if got := rd.IOPS * float64(rd.Runtime) / 1000; got < 0.95*float64(rd.TotalIOs) || got > 1.05*float64(rd.TotalIOs) {
				t.Errorf("iops*runtime = %v, total_ios %d", got, rd.TotalIOs)
			}
			if len(rd.ClatNs.Percentile) != len(FioPercentiles) {
				t.Errorf("%d percentiles, want %d", len(rd.ClatNs.Percentile), len(FioPercentiles))
			}
			prev := int64(0)
			for _, p := range FioPercentiles {
				v, ok := rd.ClatNs.Percentile[PercentileKey(p)]
				if !ok || v < prev || v < rd.ClatNs.Min || v > rd.ClatNs.Max+rd.ClatNs.Max/50 {
					t.Errorf("percentile %s = %d (ok %v), prev %d, min %d max %d", PercentileKey(p), v, ok, prev, rd.ClatNs.Min, rd.ClatNs.Max)
				}
				prev = v
			}
			if rd.ClatNs.N != rd.TotalIOs || rd.LatNs.N != rd.TotalIOs {
				t.Errorf("clat N %d lat N %d total %d", rd.ClatNs.N, rd.LatNs.N, rd.TotalIOs)
			}
			if j.UsrCPU+j.SysCPU <= 0 || j.JobRuntime <= 0 {
				t.Errorf("cpu usr %v sys %v runtime %d", j.UsrCPU, j.SysCPU, j.JobRuntime)
			}
			var sum float64
			for _, m := range []map[string]float64{j.LatencyNs, j.LatencyUs, j.LatencyMs} {
				for _, v := range m {
					sum += v
				}
			}
			if sum < 99 || sum > 101 {
				t.Errorf("latency buckets sum to %v%%", sum)
			}
			if _, err := MetricsOf(&out); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestWriteNormal(t *testing.T) {
	path, _ := knownFile(t, 16)
	job := DefaultJob()
	job.Name, job.Filename = "txt", path
	rep, err := RunRaw(context.Background(), RawConfig{Jobs: []Job{job}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := rep.WriteNormal(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"txt: (groupid=0, jobs=1): err= 0:", "  read: IOPS=", "clat percentiles (", "99.99th=[",
		"  cpu          : usr=", "Run status group 0 (all jobs):", "   READ: bw=", "io=64KiB"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, b.String())
		}
	}
}

// TestDecodeFioSample decodes the whole fio sample, notice lines first, with
// DecodeFio and reads its metrics (FuzzDecodeFio fuzzes only its start).
func TestDecodeFioSample(t *testing.T) {
	b, err := os.ReadFile(fioSample)
	if err != nil {
		t.Fatal(err)
	}
	out, err := DecodeFio(append([]byte("fio: note: a notice\n"), b...))
	if err != nil {
		t.Fatal(err)
	}
	m, err := MetricsOf(out)
	if err != nil || m.IOPS <= 0 || m.P99Clat <= 0 {
		t.Fatalf("metrics %+v, %v", m, err)
	}
}

// maxFuzzFio bounds the bytes FuzzDecodeFio decodes: longer inputs are cut
// to this length. DecodeFio is linear (a scan for '{', then encoding/json),
// and every shape of fio's document fits in it; the whole sample is decoded
// by TestDecodeFioSample. The bound keeps the fuzzer's minimization of each new
// input short: Go minimizes with O(n²) candidate cuts, and every run costs
// ~0.3 ms here (coverage bookkeeping over all instrumented packages), so a
// multi-KiB input held a worker for the full -fuzzminimizetime (60 s) and
// the run reported 0 execs/s.
const maxFuzzFio = 256

// FuzzDecodeFio checks that no fio output, however mangled, panics the
// decoder or the metric extraction.
func FuzzDecodeFio(f *testing.F) {
	if b, err := os.ReadFile(fioSample); err == nil {
		f.Add(b) // fuzzed as its first maxFuzzFio bytes
	}
	f.Add([]byte(`warning\n{"jobs":[{"read":{"total_ios":1,"clat_ns":{"percentile":{"99.000000":5}}}}]}`))
	f.Add([]byte(`{"jobs":[]}`))
	// every kind of field fio prints, in maxFuzzFio bytes
	f.Add([]byte(`x\n{"timestamp":1,"global options":{"rw":"r"},"jobs":[{"jobname":"j","job options":{"bs":"4k"},` +
		`"read":{"iops":2.5,"total_ios":3,"clat_ns":{"N":3,"percentile":{"99.000000":5}}},"usr_cpu":1.5,` +
		`"latency_ns":{"2":0.5}}],"disk_util":[{"util":9.5}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		b = b[:min(len(b), maxFuzzFio)]
		out, err := DecodeFio(b)
		if err != nil {
			return
		}
		if m, err := MetricsOf(out); err == nil && len(out.Jobs) == 0 {
			t.Fatalf("metrics %+v from a document without jobs", m)
		}
	})
}
