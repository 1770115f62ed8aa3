package pin

import (
	"fmt"
	"io"
	"strings"
)

// Report is the topology and plan in the shape `pagefeed topo --json`
// prints. Every list is non-nil, so it marshals as [] rather than null.
type Report struct {
	CPUsOnline []int         `json:"cpus_online"`
	NUMA       []ReportNode  `json:"numa"`
	GPUs       []ReportGPU   `json:"gpus"`
	NVMe       []ReportNVMe  `json:"nvme"`
	Plan       []ReportGroup `json:"plan"`
}

// ReportNode is one NUMA node of a Report.
type ReportNode struct {
	Node int   `json:"node"`
	CPUs []int `json:"cpus"`
}

// ReportGPU is one GPU of a Report.
type ReportGPU struct {
	PCI       string `json:"pci"`
	Vendor    string `json:"vendor"` // "nvidia" or "amd"
	NUMANode  int    `json:"numa_node"`
	LocalCPUs []int  `json:"local_cpus"`
}

// ReportNVMe is one NVMe controller of a Report.
type ReportNVMe struct {
	Name     string   `json:"name"`
	PCI      string   `json:"pci"`
	NUMANode int      `json:"numa_node"`
	Block    []string `json:"block"`
}

// ReportGroup is one rank's placement in a Report.
type ReportGroup struct {
	Rank      int      `json:"rank"`
	GPU       *string  `json:"gpu"` // PCI address; null without GPU
	CPUs      []int    `json:"cpus"`
	NVMeLocal []string `json:"nvme_local"`
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// NewReport gathers t and p for printing.
func NewReport(t Topology, p Plan) Report {
	r := Report{
		CPUsOnline: nonNil(t.CPUsOnline),
		NUMA:       []ReportNode{},
		GPUs:       []ReportGPU{},
		NVMe:       []ReportNVMe{},
		Plan:       []ReportGroup{},
	}
	for _, n := range t.Nodes {
		r.NUMA = append(r.NUMA, ReportNode{Node: n.ID, CPUs: nonNil(n.CPUs)})
	}
	for _, g := range t.GPUs {
		r.GPUs = append(r.GPUs, ReportGPU{PCI: g.PCI, Vendor: g.Vendor(), NUMANode: g.NUMANode, LocalCPUs: nonNil(g.LocalCPUs)})
	}
	for _, c := range t.NVMe {
		r.NVMe = append(r.NVMe, ReportNVMe{Name: c.Name, PCI: c.PCI, NUMANode: c.NUMANode, Block: nonNil(c.Block)})
	}
	for _, g := range p.Groups {
		rg := ReportGroup{Rank: g.Rank, CPUs: nonNil(g.CPUs), NVMeLocal: nonNil(g.NVMeLocal)}
		if g.GPU != nil {
			pci := g.GPU.PCI
			rg.GPU = &pci
		}
		r.Plan = append(r.Plan, rg)
	}
	return r
}

// WriteText writes t and p for people: one line per node, GPU, NVMe
// controller and rank, then the warnings.
func WriteText(w io.Writer, t Topology, p Plan) error {
	var b strings.Builder
	fmt.Fprintf(&b, "sysfs %s\n", t.Root)
	fmt.Fprintf(&b, "cpus online  %s (%d)", orDash(FormatCPUList(t.CPUsOnline)), len(t.CPUsOnline))
	if t.Cores != nil {
		fmt.Fprintf(&b, ", %d cores", len(t.Cores))
	}
	b.WriteByte('\n')
	if len(t.Nodes) == 0 {
		b.WriteString("numa         unknown\n")
	}
	for _, n := range t.Nodes {
		fmt.Fprintf(&b, "numa node %-2d cpus %s (%d)", n.ID, orDash(FormatCPUList(n.CPUs)), len(n.CPUs))
		if len(n.CPUs) == 0 {
			b.WriteString(" memory only")
		}
		if n.Distance != nil {
			fmt.Fprintf(&b, " distance %s", strings.Trim(fmt.Sprint(n.Distance), "[]"))
		}
		b.WriteByte('\n')
	}
	for _, g := range t.GPUs {
		fmt.Fprintf(&b, "gpu  %s %-6s node %-2d local cpus %s\n", g.PCI, g.Vendor(), g.NUMANode, orDash(FormatCPUList(g.LocalCPUs)))
	}
	if len(t.GPUs) == 0 {
		b.WriteString("gpu  none\n")
	}
	for _, c := range t.NVMe {
		fmt.Fprintf(&b, "nvme %-6s %s node %-2d block %s\n", c.Name, orDash(c.PCI), c.NUMANode, orDash(strings.Join(c.Block, ",")))
	}
	fmt.Fprintf(&b, "plan: %d ranks; trainer keeps cpus %s\n", len(p.Groups), orDash(FormatCPUList(p.Trainer)))
	for _, g := range p.Groups {
		gpu := "-"
		if g.GPU != nil {
			gpu = g.GPU.PCI
		}
		fmt.Fprintf(&b, "rank %-3d gpu %s node %-2d cpus %s (%d) nvme local %s remote %s\n", g.Rank, gpu, g.Node,
			FormatCPUList(g.CPUs), len(g.CPUs), orDash(strings.Join(g.NVMeLocal, ",")), orDash(strings.Join(g.NVMeRemote, ",")))
	}
	for _, s := range t.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", s)
	}
	for _, s := range p.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", s)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
