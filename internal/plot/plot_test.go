package plot

import (
	"errors"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
