package bench

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pagefeed/pagefeed/internal/quality"
)

func TestParseGridList(t *testing.T) {
	cases := []struct {
		in      string
		want    []int64
		wantErr string
	}{
		{in: "1,2,4,...,256", want: []int64{1, 2, 4, 8, 16, 32, 64, 128, 256}},
		{in: "4k,16k,64k,256k,1m", want: []int64{4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20}},
		{in: "8,16,...,64", want: []int64{8, 16, 32, 64}},
		{in: "8,16,24,...,48", want: []int64{8, 16, 24, 32, 40, 48}},
		{in: "4k,8k,...,32k", want: []int64{4 << 10, 8 << 10, 16 << 10, 32 << 10}},
		{in: " 3 , 1 ", want: []int64{3, 1}},
		{in: "1,2,...,4,100", want: []int64{1, 2, 4, 100}},
		{in: "1", want: []int64{1}},
		{in: "", wantErr: "empty list"},
		{in: "1,,2", wantErr: "empty element"},
		{in: "0", wantErr: "out of range"},
		{in: "1,x", wantErr: `element "x"`},
		{in: "1,1", wantErr: "twice"},
		{in: "...,4", wantErr: "two values before"},
		{in: "1,2,...", wantErr: "two values before it and one after"},
		{in: "4,2,...,1", wantErr: "must grow"},
		{in: "1,2,4,...,100", wantErr: "not on the sequence"},
		{in: "1,2,...,2g", wantErr: "out of range"},
		{in: "1,2,3,...,100", wantErr: "more than 64"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseGridList(tc.in, 1, 1<<30, ParseSize)
			checkErr(t, err, tc.wantErr)
			if tc.wantErr == "" && !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want one containing %q", err, want)
	}
	if !errors.Is(err, ErrBadOption) {
		t.Fatalf("err = %v does not wrap ErrBadOption", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("err spans lines: %q", err)
	}
}

// FuzzGridList checks that the parser never panics and that what it
// accepts is in range, distinct and bounded.
func FuzzGridList(f *testing.F) {
	f.Add("1,2,4,...,256")
	f.Fuzz(func(t *testing.T, s string) {
		vs, err := ParseGridList(s, 1, 1<<30, ParseSize)
		if err != nil {
			if !errors.Is(err, ErrBadOption) {
				t.Fatalf("error %v does not wrap ErrBadOption", err)
			}
			return
		}
		if len(vs) == 0 || len(vs) > maxGridValues {
			t.Fatalf("%q: %d values", s, len(vs))
		}
		seen := map[int64]bool{}
		for _, v := range vs {
			if v < 1 || v > 1<<30 || seen[v] {
				t.Fatalf("%q: bad or repeated value %d in %v", s, v, vs)
			}
			seen[v] = true
		}
	})
}

func TestKneeIndex(t *testing.T) {
	cases := []struct {
		name       string
		ys         []float64
		knee, best int
	}{
		{"saturating", []float64{10, 50, 90, 96, 100, 99}, 3, 4},
		{"first is best", []float64{100, 80, 60}, 0, 0},
		{"exactly 95%", []float64{1, 95, 100}, 1, 2},
		{"just below", []float64{1, 94.9, 100}, 2, 2},
		{"zeros", []float64{0, 0}, -1, -1},
		{"empty", nil, -1, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k, b := KneeIndex(tc.ys, KneeFraction)
			if k != tc.knee || b != tc.best {
				t.Fatalf("KneeIndex(%v) = %d, %d; want %d, %d", tc.ys, k, b, tc.knee, tc.best)
			}
		})
	}
}

func rawPoint(bs, depth int, bw float64) TunePoint {
	return TunePoint{Tool: "pagefeed", Mode: "raw", IOEngine: "io_uring", NumJobs: 1, BS: bs, IODepth: depth,
		BWBytes: bw, IOPS: bw / float64(bs), LatP99Ns: float64(depth) * 1000, RuntimeS: 1}
}

func TestKneesAndRecommend(t *testing.T) {
	pts := []TunePoint{
		rawPoint(4096, 4, 300e6), rawPoint(4096, 1, 60e6), rawPoint(4096, 2, 120e6), rawPoint(4096, 8, 310e6),
		rawPoint(1<<20, 1, 1e9), rawPoint(1<<20, 2, 2e9), rawPoint(1<<20, 4, 2.05e9),
		{Tool: "pagefeed", Mode: "raw", IOEngine: "io_uring", NumJobs: 1, BS: 1 << 20, IODepth: 8, Err: "boom"},
		{Tool: "fio", Mode: "raw", IOEngine: "io_uring", NumJobs: 1, BS: 1 << 20, IODepth: 1, BWBytes: 9e9},
	}
	ks := Knees(pts)
	if len(ks) != 3 {
		t.Fatalf("%d knees, want 3: %+v", len(ks), ks)
	}
	if ks[0].BS != 4096 || ks[0].At != 4 || ks[0].BestAt != 8 {
		t.Errorf("4k knee = %+v, want at 4 (best at 8)", ks[0])
	}
	if ks[1].BS != 1<<20 || ks[1].At != 2 || ks[1].Best != 2.05e9 {
		t.Errorf("1m knee = %+v, want at 2", ks[1])
	}
	r := Recommend(ks)
	if r == nil || r.Tool != "pagefeed" || r.BS != 1<<20 || r.At != 2 {
		t.Fatalf("Recommend = %+v, want pagefeed bs=1m iodepth=2", r)
	}
}

func TestTuneOutputsShape(t *testing.T) {
	res := &TuneResult{Mode: "raw", Target: "f", RuntimeS: 1, Points: []TunePoint{rawPoint(4096, 1, 1e6), rawPoint(4096, 2, 2e6)}}
	res.Knees = Knees(res.Points)
	res.Recommended = Recommend(res.Knees)
	var b bytes.Buffer
	if err := res.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || !slices.Equal(rows[0], csvHeader) {
		t.Fatalf("csv rows %v", rows)
	}
	col := slices.Index(csvHeader, "iodepth")
	if rows[2][col] != "2" || rows[2][slices.Index(csvHeader, "bw_bytes")] != "2000000" {
		t.Fatalf("second row %v", rows[2])
	}
	b.Reset()
	if err := res.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Mode   string `json:"mode"`
		Points []map[string]any
		Knees  []struct {
			At    int    `json:"at"`
			Param string `json:"param"`
		} `json:"knees"`
		Recommended *struct {
			BS int `json:"bs"`
			At int `json:"at"`
		} `json:"recommended"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Mode != "raw" || len(doc.Points) != 2 || doc.Points[1]["iodepth"] != 2.0 || doc.Points[1]["bw_bytes"] != 2e6 {
		t.Fatalf("json %s", b.Bytes())
	}
	if len(doc.Knees) != 1 || doc.Knees[0].At != 2 || doc.Knees[0].Param != "iodepth" || doc.Recommended == nil || doc.Recommended.BS != 4096 {
		t.Fatalf("json knees %s", b.Bytes())
	}
	b.Reset()
	if err := res.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "recommended: --ioengine=io_uring --numjobs=1 --bs=4k --iodepth=2") {
		t.Fatalf("summary:\n%s", b.String())
	}
}

func TestTuneFillErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "data")
	if err := os.WriteFile(file, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	notDir := filepath.Join(dir, "notdir")
	os.WriteFile(notDir, nil, 0o644)
	cases := []struct {
		name string
		cfg  TuneConfig
		want string
	}{
		{"neither input", TuneConfig{}, "exactly one of"},
		{"both inputs", TuneConfig{Filename: file, Parquet: []string{dir}}, "exactly one of"},
		{"short runtime", TuneConfig{Filename: file, Runtime: 100 * time.Millisecond}, "too short"},
		{"bad depth", TuneConfig{Filename: file, IODepths: []int{0}}, "iodepth 0"},
		{"bad engine", TuneConfig{Filename: file, IOEngines: []string{"libaio"}}, "ioengine"},
		{"mmap parquet", TuneConfig{Parquet: []string{dir}, IOEngines: []string{"mmap"}}, "ioengine"},
		{"bs over file", TuneConfig{Filename: file, BlockSizes: []int{4 << 20}}, "larger than"},
		{"missing file no size", TuneConfig{Filename: filepath.Join(dir, "nope")}, "no --size"},
		{"bs over size", TuneConfig{Filename: filepath.Join(dir, "nope"), Size: 8192, BlockSizes: []int{16384}}, "larger than --size"},
		{"out under a file", TuneConfig{Filename: file, OutDir: filepath.Join(notDir, "x")}, "mkdir"},
		{"too many points", TuneConfig{Filename: file, IODepths: seq(64), BlockSizes: []int{4096, 8192}, NumJobs: seq(64)}, "points"},
	}
	if os.Geteuid() != 0 {
		cases = append(cases, struct {
			name string
			cfg  TuneConfig
			want string
		}{"unwritable out", TuneConfig{Filename: file, OutDir: ro}, "write"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cfg.OutDir == "" {
				tc.cfg.OutDir = t.TempDir()
			}
			_, err := RunTune(context.Background(), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// TestTuneTiny runs a two-point grid on a small file and checks every
// output is written and consistent with the points measured.
func TestTuneTiny(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "data")
	out := filepath.Join(dir, "out")
	var progress []int
	cfg := TuneConfig{
		Filename: file, Size: 8 << 20, IODepths: []int{1, 4}, BlockSizes: []int{4096},
		Runtime: MinTuneRuntime, OutDir: out,
		Progress: func(done, total int, _ string) { progress = append(progress, done, total) },
		Logf:     t.Logf,
	}
	res, err := RunTune(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 2 {
		t.Fatalf("%d points, want 2", len(res.Points))
	}
	for _, p := range res.Points {
		if p.Err != "" || p.IOPS <= 0 || p.BWBytes != p.IOPS*4096 || p.LatP99Ns <= 0 {
			t.Errorf("point %+v", p)
		}
	}
	if !slices.Equal(progress, []int{0, 2, 1, 2, 2, 2}) {
		t.Errorf("progress calls %v", progress)
	}
	if len(res.Knees) != 1 || res.Recommended == nil {
		t.Fatalf("knees %+v recommended %+v", res.Knees, res.Recommended)
	}
	files, err := res.WriteAll(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"results.csv", "results.json", "iops_vs_iodepth.svg", "iops_vs_iodepth.png",
		"bw_vs_iodepth.svg", "bw_vs_iodepth.png", "p99_vs_iodepth.svg", "p99_vs_iodepth.png"}
	if !slices.Equal(files, want) {
		t.Fatalf("files %v, want %v", files, want)
	}
	for _, f := range files {
		st, err := os.Stat(filepath.Join(out, f))
		if err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestTuneFioExec checks the fio side of --compare-fio with a fake fio.
func TestTuneFioExec(t *testing.T) {
	var args []string
	cfg := TuneConfig{Filename: "f", Runtime: time.Second, Direct: true,
		Exec: func(_ context.Context, _ string, a []string) ([]byte, error) {
			args = a
			return os.ReadFile("testdata/fio-3.33-randread-io_uring.json")
		}}
	p := TunePoint{Tool: "fio", Mode: "raw", IOEngine: "io_uring", NumJobs: 1, BS: 4096, IODepth: 64}
	if err := tuneFio(context.Background(), &cfg, &p); err != nil {
		t.Fatal(err)
	}
	if p.IOPS <= 0 || p.BWBytes <= 0 || p.LatP99Ns <= 0 {
		t.Fatalf("fio point %+v", p)
	}
	for _, w := range []string{"--iodepth=64", "--bs=4096", "--runtime=1000ms", "--direct=1", "--output-format=json"} {
		if !slices.Contains(args, w) {
			t.Errorf("fio args %v lack %s", args, w)
		}
	}
}

// TestTuneParquetTiny runs a two-point Parquet grid (batch 4 and 8) on a
// small generated dataset and checks the points and the charts.
func TestTuneParquetTiny(t *testing.T) {
	ds, err := quality.Write(quality.DataConfig{Dir: t.TempDir(), Topics: 2, Rows: 512, ValRows: 2, Vocab: 64, RowGroupRows: 256, PageBytes: 256})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	res, err := RunTune(context.Background(), TuneConfig{
		Parquet: []string{ds.Path}, Batches: []int{4, 8}, Prefetch: []int{1}, Runtime: MinTuneRuntime, OutDir: out, Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 2 || res.Mode != "parquet" {
		t.Fatalf("%+v", res)
	}
	for _, p := range res.Points {
		if p.Err != "" || p.PagesPerS <= 0 || p.BWBytes <= 0 || p.LatP99Ns <= 0 || p.IOPS != p.PagesPerS {
			t.Errorf("point %+v", p)
		}
	}
	if len(res.Knees) != 1 || res.Knees[0].Param != "batch" || res.Recommended == nil {
		t.Fatalf("knees %+v", res.Knees)
	}
	files, err := res.WriteAll(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"results.csv", "results.json", "pages_vs_batch.svg", "pages_vs_batch.png", "batch_latency_vs_batch.svg", "batch_latency_vs_batch.png"}
	if !slices.Equal(files, want) {
		t.Fatalf("files %v, want %v", files, want)
	}
	var b bytes.Buffer
	res.WriteSummary(&b)
	if !strings.Contains(b.String(), "recommended: --ioengine=io_uring --batch=") {
		t.Fatalf("summary:\n%s", b.String())
	}
}
