package pin

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
)

// keysOf asserts v is a JSON object with exactly the keys want.
func keysOf(t *testing.T, where string, v any, want ...string) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: %T, want an object", where, v)
	}
	got := slices.Sorted(maps.Keys(m))
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s keys %q, want %q", where, got, want)
	}
	return m
}

func array(t *testing.T, where string, v any) []any {
	t.Helper()
	a, ok := v.([]any)
	if !ok {
		t.Fatalf("%s: %T (%v), want an array", where, v, v)
	}
	return a
}

func TestReportJSONShape(t *testing.T) {
	for _, name := range []string{"dgx", "workstation", "nogpu", "cxl", "offline"} {
		t.Run(name, func(t *testing.T) {
			topo := discover(t, fixture(t, name))
			p, err := NewPlan(topo, Options{})
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(NewReport(topo, p))
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			top := keysOf(t, "top", v, "cpus_online", "numa", "gpus", "nvme", "plan")
			if n := len(array(t, "cpus_online", top["cpus_online"])); n != len(topo.CPUsOnline) {
				t.Errorf("cpus_online has %d entries", n)
			}
			for _, n := range array(t, "numa", top["numa"]) {
				m := keysOf(t, "numa[]", n, "node", "cpus")
				array(t, "numa[].cpus", m["cpus"]) // [] for a memory-only node, never null
			}
			gpus := array(t, "gpus", top["gpus"])
			if len(gpus) != len(topo.GPUs) {
				t.Errorf("%d gpus", len(gpus))
			}
			for _, g := range gpus {
				m := keysOf(t, "gpus[]", g, "pci", "vendor", "numa_node", "local_cpus")
				array(t, "gpus[].local_cpus", m["local_cpus"])
				if v := m["vendor"]; v != "nvidia" && v != "amd" {
					t.Errorf("vendor %v", v)
				}
			}
			for _, c := range array(t, "nvme", top["nvme"]) {
				m := keysOf(t, "nvme[]", c, "name", "pci", "numa_node", "block")
				if len(array(t, "nvme[].block", m["block"])) == 0 {
					t.Error("nvme without block devices")
				}
			}
			plan := array(t, "plan", top["plan"])
			if len(plan) != len(p.Groups) {
				t.Fatalf("%d plan entries", len(plan))
			}
			for i, g := range plan {
				m := keysOf(t, "plan[]", g, "rank", "gpu", "cpus", "nvme_local")
				if m["rank"] != float64(i) {
					t.Errorf("plan[%d].rank = %v", i, m["rank"])
				}
				switch gpu := m["gpu"].(type) {
				case nil:
					if len(topo.GPUs) > 0 {
						t.Errorf("plan[%d].gpu is null on a machine with GPUs", i)
					}
				case string:
					if gpu != p.Groups[i].GPU.PCI {
						t.Errorf("plan[%d].gpu = %q", i, gpu)
					}
				default:
					t.Errorf("plan[%d].gpu is %T", i, gpu)
				}
				if len(array(t, "plan[].cpus", m["cpus"])) == 0 {
					t.Errorf("plan[%d] has no cpus", i)
				}
				array(t, "plan[].nvme_local", m["nvme_local"])
			}
		})
	}
}

func TestReportJSONWorkstation(t *testing.T) {
	topo := discover(t, fixture(t, "workstation"))
	p, err := NewPlan(topo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(NewReport(topo, p))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"cpus_online":` + ints(seq(0, 31)) +
		`,"numa":[{"node":0,"cpus":` + ints(seq(0, 31)) + `}]` +
		`,"gpus":[{"pci":"0000:01:00.0","vendor":"nvidia","numa_node":-1,"local_cpus":` + ints(seq(0, 31)) + `}]` +
		`,"nvme":[{"name":"nvme0","pci":"0000:02:00.0","numa_node":-1,"block":["nvme0n1"]}]` +
		`,"plan":[{"rank":0,"gpu":"0000:01:00.0","cpus":` + ints(append(seq(1, 15), seq(17, 31)...)) + `,"nvme_local":["nvme0"]}]}`
	if string(b) != want {
		t.Errorf("JSON\n%s\nwant\n%s", b, want)
	}
}

func ints(s []int) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestWriteText(t *testing.T) {
	topo := discover(t, fixture(t, "nogpu"))
	p, err := NewPlan(topo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	topo.Warnings = []string{"a warning"}
	var buf bytes.Buffer
	if err := WriteText(&buf, topo, p); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"cpus online  0-15 (16)\n",
		"numa node 1  cpus 8-15 (8) distance 20 10\n",
		"gpu  none\n",
		"nvme nvme1  0000:18:00.0 node 0  block nvme1n1,nvme1n2\n",
		"plan: 2 ranks; trainer keeps cpus 0,8\n",
		"rank 0   gpu - node 0  cpus 1-7 (7) nvme local nvme1 remote nvme0\n",
		"warning: a warning\n",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, buf.String())
		}
	}
}
