package quality

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pagefeed/pagefeed/index"
)

func tinyExperiment(t *testing.T) Config {
	t.Helper()
	return Config{
		Data:      DataConfig{Dir: t.TempDir(), Topics: 4, Rows: 2048, ValRows: 128, Vocab: 256, DocLen: 16, RowGroupRows: 256, PageBytes: 512},
		BatchRows: 16, BufferRows: 128, EvalEvery: 8, LR: 4, Seed: 11, Logf: t.Logf,
	}
}

// TestQualityTiny runs every order on a tiny sorted dataset: file order
// has rank correlation 1, the row shuffle about 0, training under the row
// shuffle lowers the loss, and every order takes the same steps.
func TestQualityTiny(t *testing.T) {
	res, err := Run(context.Background(), tinyExperiment(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Orders) != len(Orders) || res.Pages < 3*res.RowGroups || res.RowGroups != 8 {
		t.Fatalf("%d orders, %d pages, %d row groups", len(res.Orders), res.Pages, res.RowGroups)
	}
	by := map[string]Row{}
	for _, o := range res.Orders {
		by[o.Order] = o
		if o.Rows != 2048 || o.Steps != 128 {
			t.Errorf("%s: %d rows in %d steps, want 2048 in 128", o.Order, o.Rows, o.Steps)
		}
		if len(o.CurveLoss) != 128/8+1 || o.CurveSteps[0] != 0 || o.CurveSteps[len(o.CurveSteps)-1] != 128 {
			t.Errorf("%s: curve at steps %v", o.Order, o.CurveSteps)
		}
	}
	if rc := by["none"].RankCorr; rc < 0.999 {
		t.Errorf("none: rank correlation %v, want 1", rc)
	}
	if rc := by["row"].RankCorr; math.Abs(rc) > 0.15 {
		t.Errorf("row: rank correlation %v, want about 0", rc)
	}
	row := by["row"]
	if row.ValLoss >= 0.85*res.UniformLoss || row.ValLoss >= row.CurveLoss[0] {
		t.Errorf("row: loss %v → %v, want a clear decrease from ln(4) = %v", row.CurveLoss[0], row.ValLoss, res.UniformLoss)
	}
	if by["none"].TopicsPerBatch > 1.1 || by["row"].TopicsPerBatch < 3 {
		t.Errorf("topics per batch: none %v, row %v", by["none"].TopicsPerBatch, by["row"].TopicsPerBatch)
	}
	if by["row"].PagesPerBatch <= by["page"].PagesPerBatch {
		t.Errorf("pages per batch: row %v, page %v", by["row"].PagesPerBatch, by["page"].PagesPerBatch)
	}

	var b bytes.Buffer
	if err := res.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| page+buffer |") {
		t.Errorf("table:\n%s", b.String())
	}
	b.Reset()
	if err := res.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Orders []struct {
			Order    string  `json:"order"`
			ValLoss  float64 `json:"val_loss"`
			RankCorr float64 `json:"rank_correlation"`
		} `json:"orders"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil || len(doc.Orders) != len(Orders) || doc.Orders[0].ValLoss != res.Orders[0].ValLoss {
		t.Fatalf("json %v: %s", err, b.String())
	}
	dir := t.TempDir()
	names, err := res.Charts(dir)
	if err != nil || len(names) != 2 {
		t.Fatalf("charts %v: %v", names, err)
	}
	for _, n := range names {
		for _, ext := range []string{".svg", ".png"} {
			if st, err := os.Stat(filepath.Join(dir, n+ext)); err != nil || st.Size() == 0 {
				t.Errorf("%s%s: %v", n, ext, err)
			}
		}
	}
}

// TestQualityDeterministic: the same seed gives the same losses.
func TestQualityDeterministic(t *testing.T) {
	run := func() []float64 {
		c := tinyExperiment(t)
		c.Orders = []string{"page+buffer", "stream"}
		res, err := Run(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		return []float64{res.Orders[0].ValLoss, res.Orders[0].RankCorr, res.Orders[1].ValLoss, res.Orders[1].RankCorr}
	}
	a, b := run(), run()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("run 1 %v, run 2 %v", a, b)
		}
	}
}

func TestQualityConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"order", func(c *Config) { c.Orders = []string{"random"} }, "order"},
		{"batch", func(c *Config) { c.BatchRows = -1 }, "batch"},
		{"buffer", func(c *Config) { c.BufferRows = -5 }, "buffer"},
		{"lr", func(c *Config) { c.LR = math.NaN() }, "learning rate"},
		{"fetch", func(c *Config) { c.Fetch = "sideways" }, "fetch"},
		{"data", func(c *Config) { c.Data.Topics = 1 }, "topics"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tinyExperiment(t)
			tc.mod(&c)
			_, err := Run(context.Background(), c)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrConfig about %q", err, tc.want)
			}
		})
	}
}

func TestSummarizeQuality(t *testing.T) {
	run := func(loss, rc float64) *Result {
		return &Result{Orders: []Row{{Order: "row", ValLoss: loss, TailLoss: loss, RankCorr: rc, PagesPerBatch: 4}}}
	}
	s := Summarize([]*Result{run(1, 0.1), run(3, -0.1)})
	if len(s) != 1 || s[0].Runs != 2 || s[0].ValLossMean != 2 || math.Abs(s[0].ValLossSD-math.Sqrt2) > 1e-12 || s[0].RankCorrMean != 0 || s[0].PagesPerBatch != 4 {
		t.Fatalf("summary %+v", s)
	}
	var b bytes.Buffer
	if err := WriteSummary(&b, s); err != nil || !strings.Contains(b.String(), "2.000 ± 1.414") {
		t.Fatalf("table %v:\n%s", err, b.String())
	}
}

// TestDefaultOrderIsTheLoadersDefaults: the default order's loader
// configuration sets nothing but what the experiment must (its index,
// batch, seed, one process, where notices go), so it trains on what a
// user gets with nothing set; the other orders name their buffer, so
// "page" stays page shuffle without one.
func TestDefaultOrderIsTheLoadersDefaults(t *testing.T) {
	cfg := tinyExperiment(t)
	if err := cfg.fill(); err != nil {
		t.Fatal(err)
	}
	ix := &index.Index{}
	lc := loaderConfig("default", &cfg, ix)
	allowed := map[string]bool{"SharedIndex": true, "BatchRows": true, "Seed": true, "World": true, "Engine": true, "Logf": true}
	v := reflect.ValueOf(lc)
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if !allowed[f.Name] && !v.Field(i).IsZero() {
			t.Errorf("default order sets Config.%s = %v", f.Name, v.Field(i))
		}
	}
	eng := lc.Engine
	eng.Logf = nil
	if !reflect.ValueOf(eng).IsZero() || lc.SharedIndex != ix || lc.BatchRows != cfg.BatchRows || lc.Seed != cfg.Seed || lc.World != 1 {
		t.Errorf("default order: %+v", lc)
	}
	for order, want := range map[string]int{"page": -1, "row": -1, "page+buffer": cfg.BufferRows, "stream": cfg.BufferRows} {
		if got := loaderConfig(order, &cfg, ix).BufferRows; got != want {
			t.Errorf("%s: BufferRows %d, want %d", order, got, want)
		}
	}
}

// TestDefaultOrderBuffers: trained at the loader's defaults, the default
// order buffers rows (unordered fetch) and mixes more pages per batch
// than page shuffle without the buffer.
func TestDefaultOrderBuffers(t *testing.T) {
	c := tinyExperiment(t)
	c.Orders = []string{"default", "page"}
	res, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	def, page := res.Orders[0], res.Orders[1]
	if def.BufferRows == 0 || def.Fetch != "unordered" || def.Shuffle != "page" || page.BufferRows != 0 || page.Fetch != "ordered" {
		t.Errorf("default: %s shuffle, buffer %d, %s fetch; page: buffer %d, %s fetch", def.Shuffle, def.BufferRows, def.Fetch, page.BufferRows, page.Fetch)
	}
	if def.PagesPerBatch < 2*page.PagesPerBatch {
		t.Errorf("pages per batch: default %.1f, page %.1f", def.PagesPerBatch, page.PagesPerBatch)
	}
}
