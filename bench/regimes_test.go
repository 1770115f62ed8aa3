package bench

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestBSSplit(t *testing.T) {
	for _, tc := range []struct {
		sizes map[int64]int64
		want  string
	}{
		{map[int64]int64{12 << 10: 52, 16 << 10: 46, 20 << 10: 2}, "12k/52:16k/46:20k/2"},
		// Sizes under 1% are left out; the most common takes the rounding.
		{map[int64]int64{4 << 10: 1, 8 << 10: 333, 12 << 10: 333, 16 << 10: 333}, "8k/34:12k/33:16k/33"},
		{map[int64]int64{8 << 10: 7}, "8k/100"},
		{map[int64]int64{}, ""},
	} {
		var total int64
		for _, n := range tc.sizes {
			total += n
		}
		if got := bssplit(tc.sizes, total); got != tc.want {
			t.Errorf("bssplit(%v) = %q, want %q", tc.sizes, got, tc.want)
		}
	}
}

// TestSweepChart: rows/s against dataset ÷ memory on log axes, a line
// per case, failed points left out, saved as SVG and PNG; the table marks
// failed runs and auto's choices.
func TestSweepChart(t *testing.T) {
	r := &SweepResult{
		Dataset: DatasetFacts{Projected: 1 << 30}, Ratios: []float64{0.25, 1, 4}, Memory: []int64{4 << 30, 1 << 30, 256 << 20},
		Labels: []string{"auto", "mmap"}, Shorts: []string{"auto", "mmap"},
		RowsPerSec: [][]float64{{3e6, 2e6, 5e5}, {3.2e6, 0, 200}},
		Modes:      [][]string{{"buffered", "mixed", "direct"}, {"mmap", "", "mmap"}},
		Errs:       [][]string{{"", "", ""}, {"", "killed", ""}},
		Runtime:    time.Second,
	}
	c := r.Chart()
	if !c.LogX || !c.LogY || len(c.Series) != 2 || len(c.Series[0].X) != 3 || len(c.Series[1].X) != 2 {
		t.Fatalf("chart %+v", c)
	}
	dir := t.TempDir()
	base, err := r.SaveChart(dir, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{".svg", ".png"} {
		if st, err := os.Stat(base + ext); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", ext, err)
		}
	}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1/4 (4096MiB)", "4 (256MiB)", "2000000 mixed", "failed", "mmap at 1: killed"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if _, err := ParseRatios("1/4, 0.5,2"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "0", "-1", "1/0", "x"} {
		if _, err := ParseRatios(bad); err == nil {
			t.Errorf("ParseRatios(%q): no error", bad)
		}
	}
}

// TestRoundRatios: contenders run in reversed order every other round,
// and each ratio is the median over rounds of runs in the same round,
// leaving out rounds where either run failed.
func TestRoundRatios(t *testing.T) {
	cs := RegimeContenders // auto, direct, buffered, mmap
	if got := [][]int{roundOrder(0, cs), roundOrder(1, cs), roundOrder(2, cs)}; !reflect.DeepEqual(got, [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {0, 1, 2, 3}}) {
		t.Fatalf("round orders %v", got)
	}
	// The fits regime: auto between buffered and the memory map.
	if got := [][]int{roundOrder(0, cs, "buffered", "auto", "mmap"), roundOrder(1, cs, "buffered", "auto", "mmap")}; !reflect.DeepEqual(got, [][]int{{2, 0, 3, 1}, {1, 3, 0, 2}}) {
		t.Fatalf("fits round orders %v", got)
	}
	rows := []RegimeRow{{Short: "auto"}, {Short: "direct"}, {Short: "buffered"}, {Short: "mmap"}}
	tab := newRoundTable(4, 4)
	// The machine slows down by half over the rounds; auto reads 0.9×
	// the memory map and 1.2× buffered in every round.
	for r, speed := range []float64{1, 0.8, 0.6, 0.5} {
		tab[r] = []float64{90 * speed, 50 * speed, 75 * speed, 100 * speed}
	}
	tab[2][3] = 0 // the memory map failed in round 3
	tab[3][1] = 0 // O_DIRECT failed in round 4
	tab.pair(rows)
	near := func(a, b float64) bool { return a > b-1e-9 && a < b+1e-9 }
	if !near(rows[0].VsMmap, 0.9) || !near(rows[0].VsBest, 1.2) || !near(rows[2].VsMmap, 0.75) || !near(rows[3].VsMmap, 1) {
		t.Fatalf("ratios: auto %v/%v, buffered %v, mmap %v", rows[0].VsMmap, rows[0].VsBest, rows[2].VsMmap, rows[3].VsMmap)
	}
	if want := []float64{90, 72, 54, 45}; !reflect.DeepEqual(rows[0].RoundRowsPerSec, want) {
		t.Fatalf("auto's rounds %v, want %v", rows[0].RoundRowsPerSec, want)
	}
	// A ratio of medians would read auto's median (63) over the memory
	// map's (80): 0.79, the drift's and the failure's.
	if r := median([]float64{90, 72, 54, 45}) / median([]float64{100, 80, 50}); near(r, 0.9) {
		t.Fatalf("the ratio of medians is %v too", r)
	}
}
