package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const pinFixtures = "../../pin/testdata"

func runTopoCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runMain(append([]string{"topo"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestTopoJSON(t *testing.T) {
	code, out, errs := runTopoCmd(t, "--sysfs", filepath.Join(pinFixtures, "dgx"), "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if errs != "" {
		t.Errorf("stderr: %s", errs)
	}
	var r struct {
		CPUsOnline []int `json:"cpus_online"`
		NUMA       []struct {
			Node int   `json:"node"`
			CPUs []int `json:"cpus"`
		} `json:"numa"`
		GPUs []struct {
			PCI       string `json:"pci"`
			Vendor    string `json:"vendor"`
			NUMANode  int    `json:"numa_node"`
			LocalCPUs []int  `json:"local_cpus"`
		} `json:"gpus"`
		NVMe []struct {
			Name     string   `json:"name"`
			PCI      string   `json:"pci"`
			NUMANode int      `json:"numa_node"`
			Block    []string `json:"block"`
		} `json:"nvme"`
		Plan []struct {
			Rank      int      `json:"rank"`
			GPU       *string  `json:"gpu"`
			CPUs      []int    `json:"cpus"`
			NVMeLocal []string `json:"nvme_local"`
		} `json:"plan"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("decode: %v\n%s", err, out)
	}
	if len(r.CPUsOnline) != 224 || len(r.NUMA) != 2 || len(r.GPUs) != 8 || len(r.NVMe) != 8 || len(r.Plan) != 8 {
		t.Fatalf("counts: cpus %d numa %d gpus %d nvme %d plan %d", len(r.CPUsOnline), len(r.NUMA), len(r.GPUs), len(r.NVMe), len(r.Plan))
	}
	g := r.Plan[5]
	if g.Rank != 5 || g.GPU == nil || *g.GPU != "0000:c3:00.0" || len(g.CPUs) != 28 || g.CPUs[0] != 70 ||
		strings.Join(g.NVMeLocal, ",") != "nvme4,nvme5,nvme6,nvme7" {
		t.Errorf("plan[5] = %+v", g)
	}
	if r.GPUs[0].Vendor != "nvidia" || r.GPUs[4].NUMANode != 1 || r.NVMe[3].Block[0] != "nvme3n1" {
		t.Errorf("gpus %+v nvme %+v", r.GPUs[0], r.NVMe[3])
	}
}

func TestTopoJSONNoGPU(t *testing.T) {
	code, out, errs := runTopoCmd(t, "--sysfs", filepath.Join(pinFixtures, "cxl"), "--json", "--ranks", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{`"gpus":[]`, `"nvme":[]`, `"gpu":null`, `"cpus":[]`, `"rank":2`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
}

func TestTopoText(t *testing.T) {
	code, out, errs := runTopoCmd(t, "-sysfs", filepath.Join(pinFixtures, "workstation"), "-reserve", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"gpu  0000:01:00.0 nvidia node -1 local cpus 0-31\n",
		"nvme nvme0  0000:02:00.0 node -1 block nvme0n1\n",
		"plan: 1 ranks; trainer keeps cpus -\n",
		"rank 0   gpu 0000:01:00.0 node 0  cpus 0-31 (32) nvme local nvme0 remote -\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}

func TestTopoWarningsOnStderrInJSON(t *testing.T) {
	root := t.TempDir()
	for rel, s := range map[string]string{
		"devices/system/cpu/online":          "0-3\n",
		"devices/system/node/node0/cpulist":  "0-3\n",
		"devices/system/node/node0/distance": "1x\n",
	} {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := runTopoCmd(t, "--sysfs", root, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.Count(errs, "warning:") != 1 || !strings.Contains(errs, "node0/distance") {
		t.Errorf("stderr %q, want one warning about node0/distance", errs)
	}
	if strings.Count(out, "\n") != 1 || !json.Valid([]byte(out)) {
		t.Errorf("stdout is not one line of JSON:\n%s", out)
	}
}

func TestTopoErrors(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--sysfs", filepath.Join(pinFixtures, "nogpu"), "--ranks", "17"}, 1, "too many ranks"},
		{[]string{"--sysfs", filepath.Join(pinFixtures, "absent")}, 1, "no online CPUs"},
		{[]string{"--ranks", "-2"}, 1, "negative"},
		{[]string{"--bogus"}, 1, "flag provided but not defined"},
		{[]string{"extra"}, 1, "unexpected argument"},
		{[]string{"-h"}, 0, "usage: pagefeed topo"},
	}
	for _, tc := range tests {
		code, _, errs := runTopoCmd(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("topo %q: exit %d, stderr %q; want exit %d and %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
}
