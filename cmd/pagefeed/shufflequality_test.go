package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func runSQ(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runMain(append([]string{"shufflequality"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// TestShuffleQualityCommand runs a tiny experiment end to end.
func TestShuffleQualityCommand(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent()) // engines and loaders are closed
	out := filepath.Join(t.TempDir(), "res")
	code, stdout, stderr := runSQ(t, "--topics", "4", "--rows", "512", "--val-rows", "64", "--vocab", "128",
		"--row-group-rows", "128", "--page-size", "512", "--batch", "16", "--buffer", "64", "--lr", "4",
		"--orders", "row,none", "--seeds", "2", "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{"| row ", "| none ", "val loss (nats)", "4 topics, 512 training rows", "seed 1,", "seed 2,", "mean ± sd over 2 seeds"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("stdout lacks %q:\n%s", w, stdout)
		}
	}
	for _, f := range []string{"results.json", "results.md", "shuffle_quality_loss.svg", "shuffle_quality_loss.png",
		"shuffle_quality_curves.svg", "shuffle_quality_curves.png"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Runs []struct {
			Orders []struct {
				Order    string  `json:"order"`
				RankCorr float64 `json:"rank_correlation"`
			} `json:"orders"`
		} `json:"runs"`
		Summary []struct {
			Order string `json:"order"`
			Runs  int    `json:"runs"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Runs) != 2 || len(doc.Summary) != 2 || doc.Summary[0].Runs != 2 {
		t.Fatalf("results.json: %v %s", err, b)
	}
	for _, r := range doc.Runs {
		if len(r.Orders) != 2 || r.Orders[1].Order != "none" || r.Orders[1].RankCorr < 0.999 {
			t.Fatalf("results.json run %+v", r)
		}
	}
}

func TestShuffleQualityCommandErrors(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "blocker")
	os.WriteFile(blocker, nil, 0o644)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"bad order", []string{"--orders", "row,random"}, `order "random"`},
		{"zero batch", []string{"--batch", "0"}, "--batch 0"},
		{"negative lr", []string{"--lr", "-1"}, "--lr"},
		{"one topic", []string{"--topics", "1"}, "topics"},
		{"bad fetch", []string{"--fetch", "sideways"}, "fetch"},
		{"unwritable out", []string{"--out", filepath.Join(blocker, "x")}, "output folder"},
		{"stray arg", []string{"extra"}, "unexpected argument"},
		{"zero seeds", []string{"--seeds", "0"}, "--seeds 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--out", filepath.Join(dir, "out"), "--rows", "64", "--quiet"}, tc.args...)
			code, stdout, stderr := runSQ(t, args...)
			if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 and one line about %q", code, stdout, stderr, tc.want)
			}
		})
	}
}
