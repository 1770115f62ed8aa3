package plot

import (
	"errors"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
)

func TestChartSave(t *testing.T) {
	base := filepath.Join(t.TempDir(), "sub", "bw")
	c := Chart{
		Title: "bandwidth", XLabel: "iodepth", YLabel: "bandwidth (MiB/s)", LogX: true,
		Series: []Series{
			{Label: "bs=4k", X: []float64{1, 2, 4}, Y: []float64{10, 20, 30}},
			{Label: "bs=64k", X: []float64{1, 2, 4}, Y: []float64{100, 150, 160}},
		},
	}
	if err := c.Save(base); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, base, "bs=64k", "bandwidth (MiB/s)")
}

// TestDegenerate: one point, or equal values, on log and linear axes.
func TestDegenerate(t *testing.T) {
	for _, log := range []bool{false, true} {
		base := filepath.Join(t.TempDir(), "one")
		c := Chart{Title: "one", LogX: log, LogY: log, Series: []Series{{Label: "a", X: []float64{1}, Y: []float64{1}}, {Label: "b", X: []float64{1}, Y: []float64{1}}}}
		if err := c.Save(base); err != nil {
			t.Fatalf("log=%v: %v", log, err)
		}
		checkFiles(t, base, "one")
	}
}

func TestBarsSave(t *testing.T) {
	base := filepath.Join(t.TempDir(), "loss")
	b := Bars{Title: "loss", YLabel: "validation loss (nats)", Labels: []string{"row", "none"}, Values: []float64{0.5, 2}}
	if err := b.Save(base); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, base, "none", "validation loss (nats)")
}

func checkFiles(t *testing.T, base string, want ...string) {
	t.Helper()
	svg, err := os.ReadFile(base + ".svg")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(string(svg), w) {
			t.Errorf("%s.svg lacks %q", base, w)
		}
	}
	f, err := os.Open(base + ".png")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s.png: %v", base, err)
	}
	if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 200 {
		t.Errorf("png is %v, want at least 300×200", b)
	}
}

func TestBadData(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		save func(string) error
	}{
		{"no series", (&Chart{Title: "x"}).Save},
		{"no points", (&Chart{Series: []Series{{Label: "a"}}}).Save},
		{"mismatch", (&Chart{Series: []Series{{Label: "a", X: []float64{1}, Y: []float64{1, 2}}}}).Save},
		{"nan", (&Chart{Series: []Series{{Label: "a", X: []float64{1}, Y: []float64{math.NaN()}}}}).Save},
		{"zero on log", (&Chart{LogX: true, Series: []Series{{Label: "a", X: []float64{0}, Y: []float64{1}}}}).Save},
		{"bars mismatch", (&Bars{Labels: []string{"a"}}).Save},
		{"bars inf", (&Bars{Labels: []string{"a"}, Values: []float64{math.Inf(1)}}).Save},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			if err := tc.save(base); !errors.Is(err, ErrData) {
				t.Fatalf("err = %v, want ErrData", err)
			}
			if _, err := os.Stat(base + ".svg"); err == nil {
				t.Error("a file was written for bad data")
			}
		})
	}
}

func TestPlain(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{567000, "567k"}, {566789, "567k"}, {1234567, "1.23M"}, {7.4e6, "7.4M"}, {27.2, "27.2"}, {0.25, "0.25"},
		{1000, "1k"}, {999.9, "1k"}, {100, "100"}, {12.5, "12.5"}, {3, "3"}, {2.5e9, "2.5G"}, {0, "0"}, {-1500, "-1.5k"},
		{0.0001, "0.0001"},
	} {
		if got := Plain(c.v); got != c.want {
			t.Errorf("Plain(%g) = %q, want %q", c.v, got, c.want)
		}
	}
}

// TestDecadeTicks: a labelled tick at every power of ten, unlabelled ones
// at 2..9 times it; 2× and 5× labelled too over two decades or less.
func TestDecadeTicks(t *testing.T) {
	labels := func(min, max float64) (l []string, n int) {
		for _, tk := range (decadeTicks{}).Ticks(min, max) {
			n++
			if tk.Label != "" {
				l = append(l, tk.Label)
			}
		}
		return l, n
	}
	l, n := labels(3, 2e6)
	if strings.Join(l, " ") != "10 100 1k 10k 100k 1M" || n != 7+9*5+2 {
		t.Errorf("3..2M: labels %q, %d ticks", l, n)
	}
	l, _ = labels(15, 900)
	if strings.Join(l, " ") != "20 50 100 200 500" {
		t.Errorf("15..900: labels %q", l)
	}
	if ts := (decadeTicks{}).Ticks(0, 10); ts != nil {
		t.Errorf("zero minimum: %v", ts)
	}
}

// TestKneeAndLegend: the knee must be one of the series' points; the
// legend is drawn inside the frame (no extra column: the PNG keeps the
// chart's width), with the dashed note and without NoLegend series.
func TestKneeAndLegend(t *testing.T) {
	dir := t.TempDir()
	c := Chart{Title: "iops", LogX: true, LogY: true, Pow2X: true, DashedNote: "dashed: fio",
		Series: []Series{
			{Label: "bs=4k", X: []float64{1, 2, 4, 8}, Y: []float64{1e3, 2e3, 4e3, 4.1e3}, ColorKey: "4k", KneeX: 4},
			{Label: "fio bs=4k", X: []float64{1, 2, 4, 8}, Y: []float64{1e3, 2e3, 3e3, 4e3}, ColorKey: "4k", Dashed: true, NoLegend: true},
		}}
	if err := c.Save(filepath.Join(dir, "k")); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, filepath.Join(dir, "k"), "knee 4", "dashed: fio", "bs=4k", "1k", "2k")
	svg, _ := os.ReadFile(filepath.Join(dir, "k.svg"))
	if strings.Contains(string(svg), "fio bs=4k") {
		t.Error("a NoLegend series is in the legend")
	}
	f, _ := os.Open(filepath.Join(dir, "k.png"))
	defer f.Close()
	if img, err := png.Decode(f); err != nil || img.Bounds().Dx() != int(width/vg.Inch*96) {
		t.Errorf("png %v (%v): want %d px wide, the legend inside", img.Bounds(), err, int(width/vg.Inch*96))
	}
	c.Series[0].KneeX = 3
	if err := c.Save(filepath.Join(dir, "bad")); !errors.Is(err, ErrData) {
		t.Errorf("knee off the points: %v", err)
	}
}

// TestBarsLogScale: values orders of magnitude apart get a log axis and
// plain-unit labels; a zero on a log axis is an error.
func TestBarsLogScale(t *testing.T) {
	dir := t.TempDir()
	b := Bars{Title: "rows", YLabel: "rows/s", Unit: "rows/s", Labels: []string{"a", "b", "c"}, Values: []float64{619000, 27.2, 7.4e6}}
	if err := b.Save(filepath.Join(dir, "r")); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, filepath.Join(dir, "r"), "619k rows/s", "27.2 rows/s", "7.4M rows/s", "100k", "1M")
	b.Values[1], b.LogY = 0, true
	if err := b.Save(filepath.Join(dir, "z")); !errors.Is(err, ErrData) {
		t.Errorf("zero on a forced log axis: %v", err)
	}
	b.LogY = false // 0 among values 12x apart: a linear axis draws it
	if err := b.Save(filepath.Join(dir, "z")); err != nil {
		t.Errorf("zero on a linear axis: %v", err)
	}
	// A zero beside values spread over orders of magnitude (a case
	// without batches in a latency chart): the automatic log axis gives
	// way to a linear one instead of failing the chart.
	spread := Bars{Title: "p99", Labels: []string{"a", "b", "c"}, Values: []float64{0.77, 461, 0}, Unit: "ms"}
	if err := spread.Save(filepath.Join(dir, "s")); err != nil {
		t.Errorf("zero among values 600x apart: %v", err)
	}
	lin := Bars{Title: "p99", Labels: []string{"a", "b"}, Values: []float64{3.2, 12.5}, Unit: "ms"}
	if err := lin.Save(filepath.Join(dir, "l")); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, filepath.Join(dir, "l"), "3.2 ms", "12.5 ms")
}
