package pin

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Options configures NewPlan. Zero fields take the defaults of fill.
type Options struct {
	// Ranks is the number of local ranks (loader processes on this
	// machine). Default: one per GPU, or one per NUMA node with CPUs when
	// there is no GPU. With more ranks than GPUs, rank r uses GPU
	// r mod len(GPUs) and the ranks sharing a GPU split its cores; likewise
	// ranks wrap over NUMA nodes when there is no GPU.
	Ranks int
	// ReserveTrainer is the number of physical cores per NUMA node kept
	// out of every group for the trainer's own threads: the node's
	// lowest-numbered cores. Default 1; a negative value keeps none. It
	// applies per CPU pool: per GPU local_cpulist when the node tables are
	// missing, once in all for an even split of the online CPUs, and only
	// to pools that host a rank. It shrinks, with a warning, where a pool
	// has too few cores for its ranks.
	ReserveTrainer int
}

func (o Options) fill() Options {
	if o.ReserveTrainer == 0 {
		o.ReserveTrainer = 1
	} else if o.ReserveTrainer < 0 {
		o.ReserveTrainer = 0
	}
	return o
}

// Group is the placement of one local rank: its GPU, the cores its loader
// threads may run on, and the NVMe controllers near and far from them.
type Group struct {
	Rank       int
	GPU        *GPU     // nil on a machine without GPUs
	CPUs       []int    // sorted, non-empty, disjoint from every other group's
	NVMeLocal  []string // controllers on the group's NUMA node, by name
	NVMeRemote []string // the others, nearest node first
	Node       int      // NUMA node of the CPUs; -1 when unknown
}

// Plan places every local rank. Build one with NewPlan.
type Plan struct {
	Groups   []Group // indexed by local rank
	Trainer  []int   // CPUs kept for the trainer, sorted
	Warnings []string
}

// ForLocalRank returns the group of local rank r.
func (p Plan) ForLocalRank(r int) (Group, error) {
	if r < 0 || r >= len(p.Groups) {
		return Group{}, fmt.Errorf("%w: rank %d, plan has %d groups", ErrRankOutOfRange, r, len(p.Groups))
	}
	return p.Groups[r], nil
}

// LocalRankFromEnv returns the LOCAL_RANK environment variable that
// torchrun and most launchers set, or 0 when it is unset or empty.
func LocalRankFromEnv() (int, error) { return intFromEnv("LOCAL_RANK") }

// LocalWorldSizeFromEnv returns LOCAL_WORLD_SIZE (the number of ranks on
// this machine, for Options.Ranks), or 0 when it is unset or empty.
func LocalWorldSizeFromEnv() (int, error) { return intFromEnv("LOCAL_WORLD_SIZE") }

func intFromEnv(name string) (int, error) {
	s := strings.TrimSpace(os.Getenv(name))
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("pin: environment variable %s=%q is not a non-negative integer", name, s)
	}
	return n, nil
}

// pool is a set of CPUs split among the ranks placed on it.
type pool struct {
	node  int
	cpus  []int
	ranks []int
}

// NewPlan places opts.Ranks local ranks on t:
//
//   - Each GPU takes cores from its own NUMA node. A numa_node of -1 falls
//     back to the node that holds the GPU's local_cpulist; a memory-only
//     node to the nearest node with CPUs. When some GPU's locality is
//     unknown, every rank gets an even share of the online CPUs instead,
//     with a warning.
//   - The ranks on one node split its cores evenly (sizes differ by at
//     most one core), whole physical cores first, after ReserveTrainer
//     cores are set aside; groups never share a CPU.
//   - Without GPUs, groups follow the NUMA nodes that have CPUs.
//   - Offline CPUs are never used.
//
// More ranks on a node than it has CPUs fails with ErrTooManyRanks.
// NVMe controllers are local to a group when on its node; on a machine
// with one node with CPUs, all are local.
func NewPlan(t Topology, opts Options) (Plan, error) {
	opts = opts.fill()
	if opts.Ranks < 0 {
		return Plan{}, fmt.Errorf("pin: negative rank count %d", opts.Ranks)
	}
	t = normalize(t)
	if opts.Ranks > len(t.CPUsOnline) { // before sizing anything by ranks
		return Plan{}, fmt.Errorf("%w: %d ranks, %d online CPUs", ErrTooManyRanks, opts.Ranks, len(t.CPUsOnline))
	}
	pl := planner{t: &t, cpuNodes: map[int][]int{}, nodeIdx: map[int]int{}}
	for i, n := range t.Nodes {
		pl.nodeIdx[n.ID] = i
		if c := intersect(n.CPUs, t.CPUsOnline); len(c) > 0 {
			pl.cpuNodes[n.ID] = c
		}
	}
	var pools []*pool
	var gpuOf []*GPU // per rank
	ranks := opts.Ranks
	if len(t.GPUs) > 0 {
		if ranks == 0 {
			ranks = len(t.GPUs)
		}
		gp := pl.gpuPools()
		if gp == nil {
			pools = []*pool{{node: -1, cpus: t.CPUsOnline}}
		}
		for r := range ranks {
			i := r % len(t.GPUs)
			gpuOf = append(gpuOf, &t.GPUs[i])
			var p *pool
			if gp == nil {
				p = pools[0]
			} else if p = gp[i]; !slices.Contains(pools, p) {
				pools = append(pools, p)
			}
			p.ranks = append(p.ranks, r)
		}
	} else {
		for _, n := range t.Nodes {
			if c, ok := pl.cpuNodes[n.ID]; ok {
				pools = append(pools, &pool{node: n.ID, cpus: c})
			}
		}
		if len(pools) == 0 {
			pools = []*pool{{node: -1, cpus: t.CPUsOnline}}
		}
		if ranks == 0 {
			ranks = len(pools)
		}
		for r := range ranks {
			p := pools[r%len(pools)]
			p.ranks = append(p.ranks, r)
		}
	}
	plan := Plan{Groups: make([]Group, ranks)}
	for _, p := range pools {
		if len(p.ranks) == 0 {
			continue
		}
		if err := pl.split(&plan, p, opts.ReserveTrainer, ranks); err != nil {
			return Plan{}, err
		}
	}
	for r := range plan.Groups {
		g := &plan.Groups[r]
		if gpuOf != nil {
			g.GPU = gpuOf[r]
		}
		g.NVMeLocal, g.NVMeRemote = pl.nvmeFor(g.Node)
	}
	slices.Sort(plan.Trainer)
	plan.Warnings = pl.warnings
	return plan, nil
}

type planner struct {
	t        *Topology
	cpuNodes map[int][]int // node ID -> its online CPUs, for nodes with any
	nodeIdx  map[int]int   // node ID -> index in t.Nodes
	warnings []string
}

// gpuPools returns the pool of each GPU, or nil when some GPU's locality
// is unknown or GPUs' local CPU lists overlap without matching: then the
// online CPUs are split evenly.
func (pl *planner) gpuPools() []*pool {
	byKey := map[string]*pool{}
	out := make([]*pool, len(pl.t.GPUs))
	var keys []string
	for i := range pl.t.GPUs {
		g := &pl.t.GPUs[i]
		node, cpus, ok := pl.locate(g)
		if !ok {
			if !g.warned {
				pl.warnf("GPU %s: locality unknown (numa_node %d, local_cpulist %q); splitting the online CPUs evenly",
					g.PCI, g.NUMANode, FormatCPUList(g.LocalCPUs))
			}
			return nil
		}
		key := FormatCPUList(cpus)
		p := byKey[key]
		if p == nil {
			p = &pool{node: node, cpus: cpus}
			byKey[key] = p
			keys = append(keys, key)
		}
		out[i] = p
	}
	for i, a := range keys {
		for _, b := range keys[i+1:] {
			if len(intersect(byKey[a].cpus, byKey[b].cpus)) > 0 {
				pl.warnf("GPU local CPU lists %s and %s overlap; splitting the online CPUs evenly", a, b)
				return nil
			}
		}
	}
	return out
}

// locate finds the node and CPUs a GPU's loader should use.
func (pl *planner) locate(g *GPU) (node int, cpus []int, ok bool) {
	if g.NUMANode >= 0 {
		if c, ok := pl.cpuNodes[g.NUMANode]; ok {
			return g.NUMANode, c, true
		}
		if n, ok := pl.nearestCPUNode(g.NUMANode); ok {
			return n, pl.cpuNodes[n], true
		}
	}
	local := intersect(g.LocalCPUs, pl.t.CPUsOnline)
	if len(local) == 0 {
		return 0, nil, false
	}
	if len(pl.cpuNodes) == 0 {
		return g.NUMANode, local, true
	}
	for _, n := range pl.t.Nodes {
		c, has := pl.cpuNodes[n.ID]
		if has && len(intersect(local, c)) == len(local) {
			return n.ID, c, true
		}
	}
	return 0, nil, false // spans nodes: the firmware gave no locality
}

// nearestCPUNode maps a memory-only node to the closest node with CPUs.
func (pl *planner) nearestCPUNode(id int) (int, bool) {
	i, ok := pl.nodeIdx[id]
	if !ok || pl.t.Nodes[i].Distance == nil {
		return 0, false
	}
	best, bestD := -1, 0
	for _, n := range pl.t.Nodes {
		if _, has := pl.cpuNodes[n.ID]; !has {
			continue
		}
		if d := pl.t.Nodes[i].Distance[pl.nodeIdx[n.ID]]; best < 0 || d < bestD {
			best, bestD = n.ID, d
		}
	}
	return best, best >= 0
}

// distance between nodes a and b; the kernel's defaults when unknown.
func (pl *planner) distance(a, b int) int {
	ia, oka := pl.nodeIdx[a]
	ib, okb := pl.nodeIdx[b]
	switch {
	case a < 0 || b < 0:
		return 255
	case a == b:
		return 10
	case oka && okb && pl.t.Nodes[ia].Distance != nil:
		return pl.t.Nodes[ia].Distance[ib]
	}
	return 20
}

func (pl *planner) warnf(format string, args ...any) {
	pl.warnings = append(pl.warnings, fmt.Sprintf(format, args...))
}

// split divides p among its ranks, after the trainer's cores.
func (pl *planner) split(plan *Plan, p *pool, reserve, total int) error {
	var cores [][]int
	if pl.t.Cores != nil {
		for _, c := range pl.t.Cores {
			if in := intersect(c, p.cpus); len(in) > 0 {
				cores = append(cores, in)
			}
		}
	} else {
		for _, c := range p.cpus {
			cores = append(cores, []int{c})
		}
	}
	n := len(p.ranks)
	where := "node " + strconv.Itoa(p.node)
	if p.node < 0 {
		where = "CPUs " + FormatCPUList(p.cpus)
	}
	keep := min(reserve, max(len(cores)-n, 0))
	if keep < reserve {
		pl.warnf("%s: %d ranks on %d cores leave %d of %d cores for the trainer", where, n, len(cores), keep, reserve)
	}
	for _, c := range cores[:keep] {
		plan.Trainer = append(plan.Trainer, c...)
	}
	cores = cores[keep:]
	if len(cores) < n {
		// More ranks than cores: split hyperthread siblings too.
		var cpus [][]int
		for _, c := range cores {
			for _, x := range c {
				cpus = append(cpus, []int{x})
			}
		}
		if len(cpus) < n {
			return fmt.Errorf("%w: %d of %d ranks on %s, which has %d usable CPUs", ErrTooManyRanks, n, total, where, len(cpus))
		}
		cores = cpus
	}
	for i, r := range p.ranks {
		var cpus []int
		for _, c := range cores[i*len(cores)/n : (i+1)*len(cores)/n] {
			cpus = append(cpus, c...)
		}
		slices.Sort(cpus)
		plan.Groups[r].Rank = r
		plan.Groups[r].CPUs = cpus
		plan.Groups[r].Node = p.node
	}
	return nil
}

// nvmeFor sorts the controllers into local and remote ones for a group on
// node (-1: unknown).
func (pl *planner) nvmeFor(node int) (local, remote []string) {
	// One node with CPUs makes everything local; so does a machine
	// without node tables whose devices name no node above 0.
	single := len(pl.cpuNodes) == 1 || (len(pl.cpuNodes) == 0 && pl.maxDeviceNode() <= 0)
	type far struct {
		name string
		d    int
	}
	var fars []far
	for _, c := range pl.t.NVMe {
		e := c.NUMANode
		if e >= 0 {
			if _, has := pl.cpuNodes[e]; !has {
				if n, ok := pl.nearestCPUNode(e); ok {
					e = n
				}
			}
		}
		if single || (node >= 0 && e == node) {
			local = append(local, c.Name)
			continue
		}
		fars = append(fars, far{c.Name, pl.distance(node, e)})
	}
	slices.SortStableFunc(fars, func(a, b far) int { return a.d - b.d })
	for _, f := range fars {
		remote = append(remote, f.name)
	}
	return local, remote
}

// maxDeviceNode is the highest numa_node any GPU or NVMe names.
func (pl *planner) maxDeviceNode() int {
	m := -1
	for _, g := range pl.t.GPUs {
		m = max(m, g.NUMANode)
	}
	for _, c := range pl.t.NVMe {
		m = max(m, c.NUMANode)
	}
	return m
}

// normalize copies what NewPlan reads, so a plan never aliases its
// Topology, and makes a hand-built one safe: CPU lists sorted and unique,
// distance rows matching the node count or dropped.
func normalize(t Topology) Topology {
	set := func(c []int) []int {
		c = slices.Clone(c)
		slices.Sort(c)
		return slices.Compact(c)
	}
	t.CPUsOnline = set(t.CPUsOnline)
	nodes := make([]Node, len(t.Nodes))
	for i, n := range t.Nodes {
		nodes[i] = Node{ID: n.ID, CPUs: set(n.CPUs)}
		if len(n.Distance) == len(t.Nodes) {
			nodes[i].Distance = n.Distance
		}
	}
	t.Nodes = nodes
	if t.Cores != nil {
		// A CPU counts in its first core only, so groups stay disjoint.
		seen := map[int]bool{}
		cores := make([][]int, 0, len(t.Cores))
		for _, c := range t.Cores {
			var k []int
			for _, x := range set(c) {
				if !seen[x] {
					seen[x] = true
					k = append(k, x)
				}
			}
			if len(k) > 0 {
				cores = append(cores, k)
			}
		}
		slices.SortFunc(cores, func(a, b []int) int { return a[0] - b[0] })
		t.Cores = cores
	}
	t.GPUs = slices.Clone(t.GPUs)
	for i := range t.GPUs {
		t.GPUs[i].LocalCPUs = set(t.GPUs[i].LocalCPUs)
	}
	return t
}

// intersect returns the elements of sorted a that are in sorted b.
func intersect(a, b []int) []int {
	var out []int
	for _, x := range a {
		if _, ok := slices.BinarySearch(b, x); ok {
			out = append(out, x)
		}
	}
	return out
}
