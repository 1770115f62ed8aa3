package pin

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestDiscoverDGX(t *testing.T) {
	topo := discover(t, fixture(t, "dgx"))
	if len(topo.Warnings) != 0 {
		t.Fatalf("warnings: %q", topo.Warnings)
	}
	if want := seq(0, 223); !slices.Equal(topo.CPUsOnline, want) {
		t.Fatalf("online = %s", FormatCPUList(topo.CPUsOnline))
	}
	if len(topo.Nodes) != 2 ||
		FormatCPUList(topo.Nodes[0].CPUs) != "0-55,112-167" || FormatCPUList(topo.Nodes[1].CPUs) != "56-111,168-223" ||
		!slices.Equal(topo.Nodes[0].Distance, []int{10, 21}) || !slices.Equal(topo.Nodes[1].Distance, []int{21, 10}) {
		t.Fatalf("nodes = %+v", topo.Nodes)
	}
	if len(topo.Cores) != 112 {
		t.Fatalf("%d cores, want 112", len(topo.Cores))
	}
	for i, c := range topo.Cores {
		if !slices.Equal(c, []int{i, i + 112}) {
			t.Fatalf("core %d = %v", i, c)
		}
	}
	// The NVSwitch (0x068000) and the ASPEED VGA (vendor 0x1a03) are no GPUs.
	wantGPU := []string{"0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0", "0000:9d:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0"}
	if len(topo.GPUs) != len(wantGPU) {
		t.Fatalf("%d GPUs: %+v", len(topo.GPUs), topo.GPUs)
	}
	for i, g := range topo.GPUs {
		node := i / 4
		if g.PCI != wantGPU[i] || g.NUMANode != node || g.Vendor() != "nvidia" || g.Class != 0x030200 ||
			!slices.Equal(g.LocalCPUs, topo.Nodes[node].CPUs) {
			t.Errorf("GPU %d = %+v", i, g)
		}
	}
	wantNVMe := []string{"0000:24:00.0", "0000:25:00.0", "0000:4c:00.0", "0000:4d:00.0", "0000:a7:00.0", "0000:a8:00.0", "0000:ce:00.0", "0000:cf:00.0"}
	if len(topo.NVMe) != 8 {
		t.Fatalf("NVMe = %+v", topo.NVMe)
	}
	for i, c := range topo.NVMe {
		name := "nvme" + string(rune('0'+i))
		// nvme3 exposes only multipath's hidden nvme3c3n1.
		if c.Name != name || c.PCI != wantNVMe[i] || c.NUMANode != i/4 || !slices.Equal(c.Block, []string{name + "n1"}) {
			t.Errorf("NVMe %d = %+v", i, c)
		}
	}
}

func TestDiscoverFixtures(t *testing.T) {
	tests := []struct {
		name     string
		online   string
		nodes    []string // cpulist per node
		cores    int      // 0: unknown
		gpus     []GPU    // PCI, VendorID, Class, NUMANode, LocalCPUs
		nvme     []NVMe
		warnings int
	}{
		{
			name: "workstation", online: "0-31", nodes: []string{"0-31"}, cores: 16,
			gpus: []GPU{{PCI: "0000:01:00.0", VendorID: VendorNVIDIA, Class: 0x030000, NUMANode: -1, LocalCPUs: seq(0, 31)}},
			nvme: []NVMe{{Name: "nvme0", PCI: "0000:02:00.0", NUMANode: -1, Block: []string{"nvme0n1"}}},
		},
		{
			name: "nogpu", online: "0-15", nodes: []string{"0-7", "8-15"},
			nvme: []NVMe{
				{Name: "nvme0", PCI: "0000:af:00.0", NUMANode: 1, Block: []string{"nvme0n1"}},
				{Name: "nvme1", PCI: "0000:18:00.0", NUMANode: 0, Block: []string{"nvme1n1", "nvme1n2"}},
			},
		},
		{name: "cxl", online: "0-31", nodes: []string{"0-15", "16-31", ""}},
		{
			name: "offline", online: "0-5,7", nodes: []string{"0-7"},
			gpus: []GPU{{PCI: "0000:c1:00.0", VendorID: VendorAMD, Class: 0x038000, NUMANode: 0, LocalCPUs: seq(0, 7)}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			topo := discover(t, fixture(t, tc.name))
			if len(topo.Warnings) != tc.warnings {
				t.Errorf("warnings: %q", topo.Warnings)
			}
			if got := FormatCPUList(topo.CPUsOnline); got != tc.online {
				t.Errorf("online = %s, want %s", got, tc.online)
			}
			var nodes []string
			for i, n := range topo.Nodes {
				if n.ID != i || len(n.Distance) != len(tc.nodes) {
					t.Errorf("node %d = %+v", i, n)
				}
				nodes = append(nodes, FormatCPUList(n.CPUs))
			}
			if !slices.Equal(nodes, tc.nodes) {
				t.Errorf("nodes = %q, want %q", nodes, tc.nodes)
			}
			if len(topo.Cores) != tc.cores {
				t.Errorf("%d cores, want %d", len(topo.Cores), tc.cores)
			}
			if len(topo.GPUs) != len(tc.gpus) {
				t.Fatalf("GPUs = %+v, want %+v", topo.GPUs, tc.gpus)
			}
			for i, g := range topo.GPUs {
				w := tc.gpus[i]
				if g.PCI != w.PCI || g.VendorID != w.VendorID || g.Class != w.Class || g.NUMANode != w.NUMANode || !slices.Equal(g.LocalCPUs, w.LocalCPUs) {
					t.Errorf("GPU %d = %+v, want %+v", i, g, w)
				}
			}
			if len(topo.NVMe) != len(tc.nvme) {
				t.Fatalf("NVMe = %+v, want %+v", topo.NVMe, tc.nvme)
			}
			for i, c := range topo.NVMe {
				w := tc.nvme[i]
				if c.Name != w.Name || c.PCI != w.PCI || c.NUMANode != w.NUMANode || !slices.Equal(c.Block, w.Block) {
					t.Errorf("NVMe %d = %+v, want %+v", i, c, w)
				}
			}
		})
	}
}

func TestDiscoverNoCPUs(t *testing.T) {
	for _, root := range []string{t.TempDir(), filepath.Join(t.TempDir(), "absent")} {
		_, err := Discover(root)
		if !errors.Is(err, ErrNoCPUs) || !strings.Contains(err.Error(), root) {
			t.Errorf("Discover(%s) = %v, want ErrNoCPUs naming the root", root, err)
		}
	}
}

// TestDiscoverDamaged damages one file of a fixture at a time: discovery
// and planning must go on with exactly one warning, naming the file, and
// a valid (possibly simpler) plan.
func TestDiscoverDamaged(t *testing.T) {
	// Cases share one copy per fixture: damage moves the original aside
	// and the subtest's cleanup puts it back, which is far cheaper than
	// copying the 400-file DGX tree for every case.
	nAside := 0
	aside := func(t *testing.T, root, rel string) {
		t.Helper()
		p := filepath.Join(root, rel)
		nAside++
		bak := filepath.Join(filepath.Dir(root), "aside"+strconv.Itoa(nAside))
		if err := os.Rename(p, bak); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := os.RemoveAll(p); err != nil {
				t.Error(err)
			}
			if err := os.Rename(bak, p); err != nil {
				t.Error(err)
			}
		})
	}
	write := func(rel, s string) func(t *testing.T, root string) {
		return func(t *testing.T, root string) {
			t.Helper()
			aside(t, root, rel)
			if err := os.WriteFile(filepath.Join(root, rel), []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	remove := func(rel string) func(t *testing.T, root string) {
		return func(t *testing.T, root string) {
			t.Helper()
			aside(t, root, rel)
		}
	}
	const gpu1 = "bus/pci/devices/0000:43:00.0/"
	dgxBase := []string{"1-13,113-125", "14-27,126-139", "28-41,140-153", "42-55,154-167", "57-69,169-181", "70-83,182-195", "84-97,196-209", "98-111,210-223"}
	tests := []struct {
		name    string
		fixture string
		damage  func(t *testing.T, root string)
		warn    string   // the one warning contains this
		groups  []string // want these CPU sets per rank; nil: only check validity
		check   func(t *testing.T, topo Topology, p Plan)
	}{
		{name: "online garbled", fixture: "dgx", damage: write("devices/system/cpu/online", "0-22x\n"),
			warn: "devices/system/cpu/online at byte 4", groups: dgxBase},
		{name: "online missing", fixture: "dgx", damage: remove("devices/system/cpu/online"),
			warn: "devices/system/cpu/online", groups: dgxBase},
		{name: "node cpulist garbled", fixture: "dgx", damage: write("devices/system/node/node1/cpulist", "56-111,168-\n"),
			warn: "node1/cpulist", groups: dgxBase, check: func(t *testing.T, topo Topology, p Plan) {
				if topo.Nodes != nil {
					t.Errorf("nodes kept: %+v", topo.Nodes)
				}
				if p.Groups[5].Node != 1 || FormatCPUList(p.Trainer) != "0,56,112,168" {
					t.Errorf("rank 5 node %d, trainer %v", p.Groups[5].Node, p.Trainer)
				}
				// NVMe locality survives: the devices name their nodes.
				if got := strings.Join(p.Groups[5].NVMeLocal, ","); got != "nvme4,nvme5,nvme6,nvme7" {
					t.Errorf("rank 5 local NVMe %s", got)
				}
			}},
		{name: "distance garbled", fixture: "dgx", damage: write("devices/system/node/node0/distance", "10 2x\n"),
			warn: "node0/distance", groups: dgxBase},
		{name: "distance short", fixture: "dgx", damage: write("devices/system/node/node1/distance", "10\n"),
			warn: "1 distances for 2 nodes", groups: dgxBase},
		{name: "gpu numa_node garbled", fixture: "dgx", damage: write(gpu1+"numa_node", "zero\n"),
			warn: "0000:43:00.0", groups: dgxBase},
		{name: "gpu local_cpulist garbled", fixture: "dgx", damage: write(gpu1+"local_cpulist", "0-55,112-\n"),
			warn: "0000:43:00.0/local_cpulist", groups: dgxBase},
		{name: "gpu locality gone", fixture: "dgx", damage: func(t *testing.T, root string) {
			write(gpu1+"numa_node", "-1\n")(t, root)
			remove(gpu1+"local_cpulist")(t, root)
		}, warn: "0000:43:00.0", check: func(t *testing.T, topo Topology, p Plan) {
			for _, g := range p.Groups {
				if g.Node != -1 {
					t.Errorf("rank %d on node %d after an even split", g.Rank, g.Node)
				}
			}
		}},
		{name: "gpu locality empty", fixture: "dgx", damage: func(t *testing.T, root string) {
			write(gpu1+"numa_node", "-1\n")(t, root)
			write(gpu1+"local_cpulist", "\n")(t, root)
		}, warn: "0000:43:00.0: locality unknown"},
		{name: "gpu class garbled", fixture: "dgx", damage: write(gpu1+"class", "0x03zz00\n"),
			warn: "0000:43:00.0/class", check: func(t *testing.T, topo Topology, p Plan) {
				if len(topo.GPUs) != 7 || len(p.Groups) != 7 {
					t.Errorf("%d GPUs, %d groups; want 7", len(topo.GPUs), len(p.Groups))
				}
			}},
		{name: "gpu vendor missing", fixture: "dgx", damage: remove(gpu1 + "vendor"),
			warn: "0000:43:00.0/vendor", check: func(t *testing.T, topo Topology, p Plan) {
				if len(p.Groups) != 7 {
					t.Errorf("%d groups, want 7", len(p.Groups))
				}
			}},
		{name: "siblings garbled", fixture: "dgx", damage: write("devices/system/cpu/cpu5/topology/thread_siblings_list", "5,\n"),
			warn: "cpu5/topology/thread_siblings_list", check: func(t *testing.T, topo Topology, p Plan) {
				if topo.Cores != nil {
					t.Error("cores kept")
				}
			}},
		{name: "siblings one missing", fixture: "dgx", damage: remove("devices/system/cpu/cpu170"),
			warn: "cpu170/topology/thread_siblings_list"},
		{name: "siblings omit self", fixture: "dgx", damage: write("devices/system/cpu/cpu3/topology/thread_siblings_list", "4,116\n"),
			warn: "omit cpu 3"},
		{name: "nvme numa_node garbled", fixture: "dgx", damage: write("class/nvme/nvme0/device/numa_node", "?\n"),
			warn: "NVMe nvme0", groups: dgxBase, check: func(t *testing.T, topo Topology, p Plan) {
				if slices.Contains(p.Groups[0].NVMeLocal, "nvme0") || !slices.Contains(p.Groups[0].NVMeRemote, "nvme0") {
					t.Errorf("nvme0 of unknown node is local: %+v", p.Groups[0])
				}
			}},
		{name: "nvme address gone", fixture: "workstation", damage: remove("class/nvme/nvme0/address"),
			warn: "NVMe nvme0: PCI address unknown", groups: []string{"1-15,17-31"}},
		{name: "workstation gpu numa_node missing", fixture: "workstation", damage: remove("bus/pci/devices/0000:01:00.0/numa_node"),
			warn: "0000:01:00.0/numa_node", groups: []string{"1-15,17-31"}},
		{name: "nogpu node distance missing", fixture: "nogpu", damage: remove("devices/system/node/node1/distance"),
			warn: "node1/distance", groups: []string{"1-7", "9-15"}},
		{name: "cxl memory node cpulist garbled", fixture: "cxl", damage: write("devices/system/node/node2/cpulist", "-\n"),
			warn: "node2/cpulist", groups: []string{"1-31"}},
		{name: "offline online garbled", fixture: "offline", damage: write("devices/system/cpu/online", "0-5,,7\n"),
			warn: "online", groups: []string{"1-7"}},
	}
	roots := map[string]string{}
	for _, tc := range tests {
		if _, ok := roots[tc.fixture]; !ok {
			roots[tc.fixture] = copyFixture(t, tc.fixture)
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := roots[tc.fixture]
			tc.damage(t, root)
			topo := discover(t, root)
			p, err := NewPlan(topo, Options{})
			if err != nil {
				t.Fatalf("NewPlan: %v", err)
			}
			warns := append(slices.Clone(topo.Warnings), p.Warnings...)
			if len(warns) != 1 || !strings.Contains(warns[0], tc.warn) {
				t.Fatalf("warnings %q, want exactly one containing %q", warns, tc.warn)
			}
			checkPlan(t, topo, p, len(p.Groups))
			if len(p.Groups) == 0 {
				t.Fatal("no groups")
			}
			if tc.groups != nil && !slices.Equal(groupCPUs(p), tc.groups) {
				t.Errorf("groups %q, want %q", groupCPUs(p), tc.groups)
			}
			if tc.check != nil {
				tc.check(t, topo, p)
			}
		})
	}
}

// A kernel without NUMA has no node directory: that is no warning, and
// GPUs are placed by their local_cpulist.
func TestDiscoverNoNUMADir(t *testing.T) {
	root := copyFixture(t, "dgx")
	if err := os.RemoveAll(filepath.Join(root, "devices/system/node")); err != nil {
		t.Fatal(err)
	}
	topo := discover(t, root)
	p, err := NewPlan(topo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.Warnings)+len(p.Warnings) != 0 {
		t.Fatalf("warnings %q %q", topo.Warnings, p.Warnings)
	}
	checkPlan(t, topo, p, 8)
	if got := groupCPUs(p); got[0] != "1-13,113-125" || got[7] != "98-111,210-223" {
		t.Errorf("groups %q", got)
	}
	if got := strings.Join(p.Groups[0].NVMeLocal, ","); got != "nvme0,nvme1,nvme2,nvme3" || p.Groups[0].Node != 0 {
		t.Errorf("rank 0 on node %d, local NVMe %s", p.Groups[0].Node, got)
	}
}

func BenchmarkDiscoverDGX(b *testing.B) {
	root := fixture(b, "dgx")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Discover(root); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "discoveries/s")
}

// NVMe layouts beyond the fixtures: namespaces under block/, multipath
// per-path names, a fabrics controller (no PCI, no warning), and names
// sorted as numbers.
func TestDiscoverNVMeLayouts(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"devices/system/cpu/online":                  "0-1\n",
		"class/nvme/nvme10/address":                  "0000:0a:00.0\n",
		"class/nvme/nvme10/device/numa_node":         "0\n",
		"class/nvme/nvme10/block/nvme10n1/size":      "1\n",
		"class/nvme/nvme10/nvme10c2n1/size":          "1\n",
		"class/nvme/nvme10/nvme10c2n2/size":          "1\n",
		"class/nvme/nvme2/transport":                 "tcp\n",
		"class/nvme/nvme2/address":                   "traddr=10.0.0.1,trsvcid=4420\n",
		"class/nvme/nvme2/nvme2c0n1/size":            "1\n",
		"class/nvme/nvme-fabrics/ignored":            "\n",
		"class/nvme/nvme3/device/numa_node":          "-1\n",
		"class/nvme/nvme3/address":                   "0000:03:00.0\n",
		"class/nvme/nvme3/nvme3n1/size":              "1\n",
		"class/nvme/nvme3/nvme3n10/size":             "1\n",
		"class/nvme/nvme3/nvme3n2/size":              "1\n",
		"class/nvme/nvme3/ng3n1/size":                "1\n", // char device, not a block device
		"class/nvme/nvme3/device/local_cpulist":      "0-1\n",
		"bus/pci/devices/0000:03:00.0/vendor":        "0x144d\n",
		"bus/pci/devices/0000:04:00.0/vendor":        "0x1002\n",
		"bus/pci/devices/0000:04:00.0/class":         "0x040300\n", // AMD HDMI audio
		"bus/pci/devices/0000:05:00.0/vendor":        "0x1002\n",
		"bus/pci/devices/0000:05:00.0/class":         "0x030000\n",
		"bus/pci/devices/0000:05:00.0/numa_node":     "-1\n",
		"bus/pci/devices/0000:05:00.0/local_cpulist": "0-1\n",
	}
	for rel, s := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	topo := discover(t, root)
	if len(topo.Warnings) != 0 {
		t.Errorf("warnings %q", topo.Warnings)
	}
	want := []NVMe{
		{Name: "nvme2", NUMANode: -1, Block: []string{"nvme2n1"}},
		{Name: "nvme3", PCI: "0000:03:00.0", NUMANode: -1, Block: []string{"nvme3n1", "nvme3n2", "nvme3n10"}},
		{Name: "nvme10", PCI: "0000:0a:00.0", NUMANode: 0, Block: []string{"nvme10n1", "nvme10n2"}},
	}
	if len(topo.NVMe) != len(want) {
		t.Fatalf("NVMe %+v", topo.NVMe)
	}
	for i, c := range topo.NVMe {
		w := want[i]
		if c.Name != w.Name || c.PCI != w.PCI || c.NUMANode != w.NUMANode || !slices.Equal(c.Block, w.Block) {
			t.Errorf("NVMe %d = %+v, want %+v", i, c, w)
		}
	}
	if len(topo.GPUs) != 1 || topo.GPUs[0].PCI != "0000:05:00.0" || topo.GPUs[0].Vendor() != "amd" {
		t.Errorf("GPUs %+v", topo.GPUs)
	}
}
