package pin

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestPlanFixtures(t *testing.T) {
	nvmeLo := []string{"nvme0", "nvme1", "nvme2", "nvme3"}
	nvmeHi := []string{"nvme4", "nvme5", "nvme6", "nvme7"}
	tests := []struct {
		name     string
		fixture  string
		opts     Options
		groups   []string // CPU set per rank
		nodes    []int    // node per rank
		gpus     []string // GPU PCI per rank; nil: no GPU
		trainer  string
		local    [][]string // NVMeLocal per rank; nil: not checked
		remote   [][]string
		warnings int
	}{
		{
			name: "dgx default", fixture: "dgx",
			groups:  []string{"1-13,113-125", "14-27,126-139", "28-41,140-153", "42-55,154-167", "57-69,169-181", "70-83,182-195", "84-97,196-209", "98-111,210-223"},
			nodes:   []int{0, 0, 0, 0, 1, 1, 1, 1},
			gpus:    []string{"0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0", "0000:9d:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0"},
			trainer: "0,56,112,168",
			local:   [][]string{nvmeLo, nvmeLo, nvmeLo, nvmeLo, nvmeHi, nvmeHi, nvmeHi, nvmeHi},
			remote:  [][]string{nvmeHi, nvmeHi, nvmeHi, nvmeHi, nvmeLo, nvmeLo, nvmeLo, nvmeLo},
		},
		{
			name: "dgx no trainer reserve", fixture: "dgx", opts: Options{ReserveTrainer: -1},
			groups: []string{"0-13,112-125", "14-27,126-139", "28-41,140-153", "42-55,154-167", "56-69,168-181", "70-83,182-195", "84-97,196-209", "98-111,210-223"},
			nodes:  []int{0, 0, 0, 0, 1, 1, 1, 1},
			gpus:   []string{"0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0", "0000:9d:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0"},
		},
		{
			name: "dgx two ranks", fixture: "dgx", opts: Options{Ranks: 2, ReserveTrainer: 2},
			groups:  []string{"2-28,114-140", "29-55,141-167"},
			nodes:   []int{0, 0},
			gpus:    []string{"0000:1b:00.0", "0000:43:00.0"},
			trainer: "0-1,112-113",
			local:   [][]string{nvmeLo, nvmeLo},
		},
		{
			// Ranks beyond the GPUs wrap: rank 8 shares GPU 0 and its node.
			name: "dgx ranks wrap", fixture: "dgx", opts: Options{Ranks: 10},
			groups: []string{"1-9,113-121", "10-18,122-130", "19-27,131-139", "28-36,140-148", "57-69,169-181", "70-83,182-195", "84-97,196-209", "98-111,210-223", "37-45,149-157", "46-55,158-167"},
			nodes:  []int{0, 0, 0, 0, 1, 1, 1, 1, 0, 0},
			gpus:   []string{"0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0", "0000:9d:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0", "0000:1b:00.0", "0000:43:00.0"},
		},
		{
			name: "workstation", fixture: "workstation",
			groups: []string{"1-15,17-31"}, nodes: []int{0}, gpus: []string{"0000:01:00.0"}, trainer: "0,16",
			local: [][]string{{"nvme0"}}, remote: [][]string{nil},
		},
		{
			name: "workstation 20 ranks split siblings", fixture: "workstation", opts: Options{Ranks: 20},
			nodes: slices.Repeat([]int{0}, 20), gpus: slices.Repeat([]string{"0000:01:00.0"}, 20),
			warnings: 1, // no core left for the trainer
		},
		{
			name: "nogpu", fixture: "nogpu",
			groups: []string{"1-7", "9-15"}, nodes: []int{0, 1}, trainer: "0,8",
			local: [][]string{{"nvme1"}, {"nvme0"}}, remote: [][]string{{"nvme0"}, {"nvme1"}},
		},
		{
			name: "nogpu three ranks", fixture: "nogpu", opts: Options{Ranks: 3},
			groups: []string{"1-3", "9-15", "4-7"}, nodes: []int{0, 1, 0}, trainer: "0,8",
		},
		{
			name: "cxl memory node has no group", fixture: "cxl",
			groups: []string{"1-15", "17-31"}, nodes: []int{0, 1}, trainer: "0,16",
		},
		{
			name: "offline cpu excluded", fixture: "offline",
			groups: []string{"1-5,7"}, nodes: []int{0}, gpus: []string{"0000:c1:00.0"}, trainer: "0",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			topo := discover(t, fixture(t, tc.fixture))
			p, err := NewPlan(topo, tc.opts)
			if err != nil {
				t.Fatalf("NewPlan: %v", err)
			}
			checkPlan(t, topo, p, len(tc.nodes))
			if len(p.Warnings) != tc.warnings {
				t.Errorf("warnings %q, want %d", p.Warnings, tc.warnings)
			}
			if tc.groups != nil && !slices.Equal(groupCPUs(p), tc.groups) {
				t.Errorf("groups\n%q\nwant\n%q", groupCPUs(p), tc.groups)
			}
			if tc.trainer != "" && FormatCPUList(p.Trainer) != tc.trainer {
				t.Errorf("trainer %s, want %s", FormatCPUList(p.Trainer), tc.trainer)
			}
			for r, g := range p.Groups {
				if g.Node != tc.nodes[r] {
					t.Errorf("rank %d on node %d, want %d", r, g.Node, tc.nodes[r])
				}
				switch {
				case tc.gpus == nil && g.GPU != nil:
					t.Errorf("rank %d has GPU %s on a machine without", r, g.GPU.PCI)
				case tc.gpus != nil && (g.GPU == nil || g.GPU.PCI != tc.gpus[r]):
					t.Errorf("rank %d GPU %+v, want %s", r, g.GPU, tc.gpus[r])
				}
				if tc.local != nil && !slices.Equal(g.NVMeLocal, tc.local[r]) {
					t.Errorf("rank %d local NVMe %q, want %q", r, g.NVMeLocal, tc.local[r])
				}
				if tc.remote != nil && !slices.Equal(g.NVMeRemote, tc.remote[r]) {
					t.Errorf("rank %d remote NVMe %q, want %q", r, g.NVMeRemote, tc.remote[r])
				}
			}
		})
	}
}

// Groups keep hyperthread siblings together, and split a node evenly.
func TestPlanDGXCoresWhole(t *testing.T) {
	topo := discover(t, fixture(t, "dgx"))
	for _, ranks := range []int{1, 3, 8, 16, 32} {
		p, err := NewPlan(topo, Options{Ranks: ranks})
		if err != nil {
			t.Fatalf("%d ranks: %v", ranks, err)
		}
		checkPlan(t, topo, p, ranks)
		sizes := map[int][]int{}
		for _, g := range p.Groups {
			for _, c := range g.CPUs {
				sib := (c + 112) % 224
				if !slices.Contains(g.CPUs, sib) {
					t.Errorf("%d ranks: rank %d has cpu %d without its sibling %d", ranks, g.Rank, c, sib)
				}
			}
			sizes[g.Node] = append(sizes[g.Node], len(g.CPUs))
		}
		for node, s := range sizes {
			if slices.Max(s)-slices.Min(s) > 2 {
				t.Errorf("%d ranks: node %d group sizes %v differ by more than a core", ranks, node, s)
			}
		}
	}
}

func TestPlanTooManyRanks(t *testing.T) {
	tests := []struct {
		fixture string
		ranks   int
	}{
		{"dgx", 500},        // 250 on node 0, which has 112 CPUs
		{"workstation", 33}, // 32 CPUs
		{"nogpu", 17},       // 9 on node 0, which has 8
		{"offline", 8},      // 7 online
		{"cxl", 33},         // 17 on a node of 16
	}
	for _, tc := range tests {
		topo := discover(t, fixture(t, tc.fixture))
		_, err := NewPlan(topo, Options{Ranks: tc.ranks})
		if !errors.Is(err, ErrTooManyRanks) || !strings.Contains(err.Error(), "CPUs") {
			t.Errorf("%s with %d ranks: %v, want ErrTooManyRanks", tc.fixture, tc.ranks, err)
		}
		// One rank fewer fits, with the trainer's core given up.
		if tc.fixture == "workstation" || tc.fixture == "offline" {
			p, err := NewPlan(topo, Options{Ranks: tc.ranks - 1})
			if err != nil {
				t.Errorf("%s with %d ranks: %v", tc.fixture, tc.ranks-1, err)
			} else {
				checkPlan(t, topo, p, tc.ranks-1)
			}
		}
	}
}

func TestPlanHandBuilt(t *testing.T) {
	twoNodes := func() Topology {
		return Topology{
			CPUsOnline: seq(0, 15),
			Nodes: []Node{
				{ID: 0, CPUs: seq(0, 7), Distance: []int{10, 20, 14}},
				{ID: 1, CPUs: seq(8, 15), Distance: []int{20, 10, 24}},
				{ID: 2, Distance: []int{14, 24, 10}},
			},
		}
	}
	tests := []struct {
		name     string
		topo     func() Topology
		opts     Options
		groups   []string
		nodes    []int
		warnings int
	}{
		{
			name: "gpu on memory-only node goes to the nearest node",
			topo: func() Topology {
				t := twoNodes()
				t.GPUs = []GPU{{PCI: "0000:01:00.0", VendorID: VendorNVIDIA, NUMANode: 2}}
				return t
			},
			groups: []string{"1-7"}, nodes: []int{0},
		},
		{
			name: "gpu local list spanning nodes: even split",
			topo: func() Topology {
				t := twoNodes()
				t.GPUs = []GPU{
					{PCI: "0000:01:00.0", NUMANode: -1, LocalCPUs: seq(0, 15)},
					{PCI: "0000:02:00.0", NUMANode: 1, LocalCPUs: seq(8, 15)},
				}
				return t
			},
			groups: []string{"1-7", "8-15"}, nodes: []int{-1, -1}, warnings: 1,
		},
		{
			name: "gpu numa -1 with a node-sized local list",
			topo: func() Topology {
				t := twoNodes()
				t.GPUs = []GPU{{PCI: "0000:01:00.0", NUMANode: -1, LocalCPUs: seq(8, 15)}}
				return t
			},
			groups: []string{"9-15"}, nodes: []int{1},
		},
		{
			name: "no NUMA: disjoint local lists are pools",
			topo: func() Topology {
				return Topology{CPUsOnline: seq(0, 7), GPUs: []GPU{
					{PCI: "a", NUMANode: 0, LocalCPUs: seq(0, 3)},
					{PCI: "b", NUMANode: 1, LocalCPUs: seq(4, 7)},
				}}
			},
			groups: []string{"1-3", "5-7"}, nodes: []int{0, 1},
		},
		{
			name: "no NUMA: overlapping local lists, even split",
			topo: func() Topology {
				return Topology{CPUsOnline: seq(0, 7), GPUs: []GPU{
					{PCI: "a", NUMANode: -1, LocalCPUs: seq(0, 5)},
					{PCI: "b", NUMANode: -1, LocalCPUs: seq(4, 7)},
				}}
			},
			groups: []string{"1-3", "4-7"}, nodes: []int{-1, -1}, warnings: 1,
		},
		{
			name:   "no NUMA, no GPU: one group on the online CPUs",
			topo:   func() Topology { return Topology{CPUsOnline: []int{3, 1, 2, 0}} },
			groups: []string{"1-3"}, nodes: []int{-1},
		},
		{
			name:   "one CPU, no reserve possible",
			topo:   func() Topology { return Topology{CPUsOnline: []int{0}} },
			groups: []string{"0"}, nodes: []int{-1}, warnings: 1,
		},
		{
			name:   "one CPU, reserve off",
			topo:   func() Topology { return Topology{CPUsOnline: []int{0}} },
			opts:   Options{ReserveTrainer: -1},
			groups: []string{"0"}, nodes: []int{-1},
		},
		{
			name: "cores listing a CPU twice stay disjoint",
			topo: func() Topology {
				return Topology{CPUsOnline: seq(0, 3), Cores: [][]int{{0, 1}, {1, 2}, {3}}}
			},
			opts:   Options{Ranks: 3, ReserveTrainer: -1},
			groups: []string{"0-1", "2", "3"}, nodes: []int{-1, -1, -1},
		},
		{
			name: "bad distance rows are ignored",
			topo: func() Topology {
				t := twoNodes()
				t.Nodes[0].Distance = []int{10}
				t.NVMe = []NVMe{{Name: "nvme0", NUMANode: 1}}
				return t
			},
			groups: []string{"1-7", "9-15"}, nodes: []int{0, 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			topo := tc.topo()
			p, err := NewPlan(topo, tc.opts)
			if err != nil {
				t.Fatalf("NewPlan: %v", err)
			}
			checkPlan(t, normalize(topo), p, len(tc.groups))
			if !slices.Equal(groupCPUs(p), tc.groups) {
				t.Errorf("groups %q, want %q", groupCPUs(p), tc.groups)
			}
			for r, g := range p.Groups {
				if g.Node != tc.nodes[r] {
					t.Errorf("rank %d node %d, want %d", r, g.Node, tc.nodes[r])
				}
			}
			if len(p.Warnings) != tc.warnings {
				t.Errorf("warnings %q, want %d", p.Warnings, tc.warnings)
			}
		})
	}
}

func TestPlanDoesNotAliasTopology(t *testing.T) {
	topo := discover(t, fixture(t, "workstation"))
	p, err := NewPlan(topo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.Groups[0].GPU.PCI = "changed"
	if topo.GPUs[0].PCI != "0000:01:00.0" {
		t.Fatal("plan's GPU aliases the topology's")
	}
}

func TestPlanNegativeRanks(t *testing.T) {
	if _, err := NewPlan(Topology{CPUsOnline: []int{0, 1}}, Options{Ranks: -1}); err == nil {
		t.Fatal("negative ranks accepted")
	}
}

func TestForLocalRank(t *testing.T) {
	topo := discover(t, fixture(t, "nogpu"))
	p, err := NewPlan(topo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for r := range 2 {
		g, err := p.ForLocalRank(r)
		if err != nil || g.Rank != r {
			t.Errorf("ForLocalRank(%d) = %+v, %v", r, g, err)
		}
	}
	for _, r := range []int{-1, 2} {
		if _, err := p.ForLocalRank(r); !errors.Is(err, ErrRankOutOfRange) {
			t.Errorf("ForLocalRank(%d): %v, want ErrRankOutOfRange", r, err)
		}
	}
}

func TestLocalRankFromEnv(t *testing.T) {
	tests := []struct {
		val  string
		want int
		ok   bool
	}{
		{"", 0, true},
		{"0", 0, true},
		{"3", 3, true},
		{" 7\n", 7, true},
		{"x", 0, false},
		{"-1", 0, false},
	}
	for _, tc := range tests {
		t.Setenv("LOCAL_RANK", tc.val)
		t.Setenv("LOCAL_WORLD_SIZE", tc.val)
		for _, f := range []func() (int, error){LocalRankFromEnv, LocalWorldSizeFromEnv} {
			got, err := f()
			if (err == nil) != tc.ok || got != tc.want {
				t.Errorf("%q: got %d, %v; want %d, ok=%v", tc.val, got, err, tc.want, tc.ok)
			}
		}
	}
}

func BenchmarkNewPlanDGX(b *testing.B) {
	topo := discover(b, fixture(b, "dgx"))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewPlan(topo, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "plans/s")
}
