package pin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// DefaultRoot is the sysfs mount point Discover reads when given "".
const DefaultRoot = "/sys"

// PCI vendor IDs of the GPUs Discover reports.
const (
	VendorNVIDIA = 0x10de
	VendorAMD    = 0x1002
)

// Topology is what Discover read: the CPUs, NUMA nodes, GPUs and NVMe
// controllers of one machine. It is plain data; build one by hand to plan
// for a machine described some other way.
type Topology struct {
	Root       string  // the sysfs root it was read from
	CPUsOnline []int   // online CPUs, sorted
	Nodes      []Node  // NUMA nodes by ID, memory-only ones included; nil when unknown
	Cores      [][]int // online CPUs grouped by physical core (hyperthread siblings), by lowest CPU; nil when unknown
	GPUs       []GPU   // sorted by PCI address, the order of CUDA_DEVICE_ORDER=PCI_BUS_ID
	NVMe       []NVMe  // sorted by controller name (nvme2 before nvme10)
	// Warnings lists every file that was missing or garbled and what was
	// done instead, one entry per cause.
	Warnings []string
}

// Node is one NUMA node.
type Node struct {
	ID       int
	CPUs     []int // as listed by the node; empty for a memory-only (CXL-like) node
	Distance []int // to each node of Topology.Nodes, in order; nil when unknown
}

// GPU is one NVIDIA or AMD display/3D controller function.
type GPU struct {
	PCI       string // domain:bus:device.function, e.g. "0000:1b:00.0"
	VendorID  int    // VendorNVIDIA or VendorAMD
	Class     int    // PCI class code, e.g. 0x030200
	NUMANode  int    // -1 when the firmware does not say
	LocalCPUs []int  // local_cpulist; nil when unreadable
	// warned records that Discover already warned about this GPU's
	// locality, so Plan does not warn twice for one cause.
	warned bool
}

// Vendor names the GPU's vendor: "nvidia" or "amd".
func (g GPU) Vendor() string {
	switch g.VendorID {
	case VendorNVIDIA:
		return "nvidia"
	case VendorAMD:
		return "amd"
	}
	return fmt.Sprintf("0x%04x", g.VendorID)
}

// NVMe is one NVMe controller.
type NVMe struct {
	Name     string   // controller, e.g. "nvme0"
	PCI      string   // its PCI function; "" for fabrics controllers or when unknown
	NUMANode int      // -1 when unknown
	Block    []string // namespaces' block devices, e.g. ["nvme0n1"]
}

var (
	nodeDirRE  = regexp.MustCompile(`^node([0-9]+)$`)
	nvmeCtrlRE = regexp.MustCompile(`^nvme[0-9]+$`)
	// nvme0n1, or nvme0c1n1: the hidden per-path device of native NVMe
	// multipath, whose block device is nvme0n1.
	nvmeNSRE = regexp.MustCompile(`^(nvme[0-9]+)(?:c[0-9]+)?(n[0-9]+)$`)
	pciRE    = regexp.MustCompile(`^[0-9a-f]{4,}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)
)

// Discover reads the machine's topology from the sysfs tree at root
// (DefaultRoot when ""). It reads:
//
//	devices/system/cpu/online
//	devices/system/cpu/cpu*/topology/thread_siblings_list   (optional)
//	devices/system/node/node*/{cpulist,distance}
//	bus/pci/devices/*/{vendor,class,numa_node,local_cpulist}
//	class/nvme/nvme*/{device,address,device/numa_node,nvme*n*,block/*}
//
// bus/pci/devices/* and class/nvme/* may be the kernel's symbolic links or
// plain directories; a controller's PCI address comes from the name its
// device link points to, else from its address file, else from the path
// it resolves to.
//
// A missing or garbled file never fails Discover: it adds one entry to
// Warnings and leaves the affected fact unknown, so Plan picks a simpler
// placement. Discover fails, with ErrNoCPUs, only when it finds no online
// CPU at all.
func Discover(root string) (Topology, error) {
	if root == "" {
		root = DefaultRoot
	}
	d := discoverer{t: Topology{Root: root}}
	d.nodes()
	d.cpus()
	if len(d.t.CPUsOnline) == 0 {
		return Topology{}, &Error{Op: "discover", Path: root, Off: -1, Err: ErrNoCPUs}
	}
	d.siblings()
	d.gpus()
	d.nvme()
	return d.t, nil
}

type discoverer struct {
	t Topology
}

func (d *discoverer) path(rel ...string) string {
	return filepath.Join(append([]string{d.t.Root}, rel...)...)
}

func (d *discoverer) warn(format string, args ...any) {
	d.t.Warnings = append(d.t.Warnings, fmt.Sprintf(format, args...))
}

// readFile reads a small sysfs file, trimmed.
func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", &Error{Op: "read", Path: path, Off: -1, Err: unwrapPathErr(err)}
	}
	return strings.TrimSpace(string(b)), nil
}

// unwrapPathErr drops the *fs.PathError layer: our Error names the path.
func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func readCPUList(path string) ([]int, error) {
	s, err := readFile(path)
	if err != nil {
		return nil, err
	}
	cpus, err := ParseCPUList(s)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Path = path
		}
		return nil, err
	}
	return cpus, nil
}

func readInt(path string, base int) (int, error) {
	s, err := readFile(path)
	if err != nil {
		return 0, err
	}
	if base == 16 {
		s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	}
	n, err := strconv.ParseInt(s, base, 32)
	if err != nil {
		return 0, &Error{Op: "parse", Path: path, Off: -1, Err: fmt.Errorf("not a number: %q", s)}
	}
	return int(n), nil
}

func (d *discoverer) cpus() {
	p := d.path("devices/system/cpu/online")
	cpus, err := readCPUList(p)
	if err == nil && len(cpus) > 0 {
		d.t.CPUsOnline = cpus
		return
	}
	if err == nil {
		err = errors.New("empty")
	}
	var all []int
	for _, n := range d.t.Nodes {
		all = append(all, n.CPUs...)
	}
	slices.Sort(all)
	all = slices.Compact(all)
	if len(all) > 0 {
		d.warn("%v; taking the NUMA nodes' CPUs as online", err)
	} else {
		d.warn("%v", err)
	}
	d.t.CPUsOnline = all
}

// nodes reads the NUMA nodes. One unreadable cpulist discards the whole
// layout (a partial one would leave CPUs in no node); a bad distance file
// discards only the distances.
func (d *discoverer) nodes() {
	dir := d.path("devices/system/node")
	ents, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			d.warn("pin: read %s: %v; NUMA layout unknown", dir, unwrapPathErr(err))
		}
		return // a kernel without CONFIG_NUMA has no node directory
	}
	var nodes []Node
	for _, e := range ents {
		m := nodeDirRE.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		id, _ := strconv.Atoi(m[1])
		cpus, err := readCPUList(filepath.Join(dir, e.Name(), "cpulist"))
		if err != nil {
			d.warn("%v; NUMA layout ignored", err)
			return
		}
		nodes = append(nodes, Node{ID: id, CPUs: cpus})
	}
	slices.SortFunc(nodes, func(a, b Node) int { return a.ID - b.ID })
	var badDist error
	for i := range nodes {
		p := filepath.Join(dir, "node"+strconv.Itoa(nodes[i].ID), "distance")
		s, err := readFile(p)
		if err != nil {
			badDist = err
			break
		}
		f := strings.Fields(s)
		if len(f) != len(nodes) {
			badDist = &Error{Op: "parse", Path: p, Off: -1, Err: fmt.Errorf("%d distances for %d nodes", len(f), len(nodes))}
			break
		}
		dist := make([]int, len(f))
		for j, v := range f {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 || n > 255 {
				badDist = &Error{Op: "parse", Path: p, Off: -1, Err: fmt.Errorf("bad distance %q", v)}
				break
			}
			dist[j] = n
		}
		if badDist != nil {
			break
		}
		nodes[i].Distance = dist
	}
	if badDist != nil {
		d.warn("%v; NUMA distances ignored", badDist)
		for i := range nodes {
			nodes[i].Distance = nil
		}
	}
	d.t.Nodes = nodes
}

// siblings groups online CPUs into physical cores. Without any sibling
// file each CPU counts as a core, silently (the files are optional);
// with some missing or garbled the grouping is dropped with a warning.
func (d *discoverer) siblings() {
	online := d.t.CPUsOnline
	coreOf := make(map[int]int, len(online)) // cpu -> index in cores
	var cores [][]int
	found, missing := 0, 0
	var bad error
	for _, c := range online {
		p := d.path("devices/system/cpu", "cpu"+strconv.Itoa(c), "topology/thread_siblings_list")
		sib, err := readCPUList(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				missing++
				if bad == nil {
					bad = err
				}
				continue
			}
			bad = err
			break
		}
		if !slices.Contains(sib, c) {
			bad = &Error{Op: "parse", Path: p, Off: -1, Err: fmt.Errorf("siblings %q omit cpu %d", FormatCPUList(sib), c)}
			break
		}
		found++
		if _, ok := coreOf[c]; ok {
			continue
		}
		var core []int
		for _, s := range sib {
			if _, on := slices.BinarySearch(online, s); on {
				if _, taken := coreOf[s]; taken {
					bad = &Error{Op: "parse", Path: p, Off: -1, Err: fmt.Errorf("cpu %d listed in two cores", s)}
					break
				}
				coreOf[s] = len(cores)
				core = append(core, s)
			}
		}
		if bad != nil && !errors.Is(bad, fs.ErrNotExist) {
			break
		}
		cores = append(cores, core)
	}
	switch {
	case found == 0 && missing == len(online):
		return
	case bad != nil:
		d.warn("%v; hyperthread siblings ignored", bad)
		return
	}
	slices.SortFunc(cores, func(a, b []int) int { return a[0] - b[0] })
	d.t.Cores = cores
}

func (d *discoverer) gpus() {
	dir := d.path("bus/pci/devices")
	ents, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			d.warn("pin: read %s: %v; no GPUs found", dir, unwrapPathErr(err))
		}
		return
	}
	for _, e := range ents {
		addr := e.Name()
		dev := filepath.Join(dir, addr)
		vendor, err := readInt(filepath.Join(dev, "vendor"), 16)
		if err != nil {
			d.warn("%v; PCI device %s skipped", err, addr)
			continue
		}
		if vendor != VendorNVIDIA && vendor != VendorAMD {
			continue
		}
		class, err := readInt(filepath.Join(dev, "class"), 16)
		if err != nil {
			d.warn("%v; PCI device %s skipped", err, addr)
			continue
		}
		switch class >> 8 {
		case 0x0300, 0x0302, 0x0380: // VGA, 3D, other display controller
		default:
			continue // audio functions, NVSwitch bridges
		}
		g := GPU{PCI: addr, VendorID: vendor, Class: class, NUMANode: -1}
		var why []string
		if n, err := readInt(filepath.Join(dev, "numa_node"), 10); err != nil {
			why = append(why, err.Error())
		} else if n >= -1 {
			g.NUMANode = n
		} else {
			why = append(why, fmt.Sprintf("pin: %s: numa_node %d", dev, n))
		}
		if cpus, err := readCPUList(filepath.Join(dev, "local_cpulist")); err != nil {
			why = append(why, err.Error())
		} else {
			g.LocalCPUs = cpus
		}
		if len(why) > 0 {
			g.warned = true
			then := "placed by what remains"
			if g.NUMANode < 0 && len(g.LocalCPUs) == 0 {
				then = "locality unknown, cores come from an even split of the online CPUs"
			}
			d.warn("GPU %s: %s; %s", addr, strings.Join(why, "; "), then)
		}
		d.t.GPUs = append(d.t.GPUs, g)
	}
	slices.SortFunc(d.t.GPUs, func(a, b GPU) int { return strings.Compare(a.PCI, b.PCI) })
}

func (d *discoverer) nvme() {
	dir := d.path("class/nvme")
	ents, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			d.warn("pin: read %s: %v; no NVMe found", dir, unwrapPathErr(err))
		}
		return
	}
	for _, e := range ents {
		name := e.Name()
		if !nvmeCtrlRE.MatchString(name) {
			continue
		}
		ctrl := filepath.Join(dir, name)
		c := NVMe{Name: name, NUMANode: -1}
		c.PCI = nvmePCI(ctrl)
		var why []string
		n, err := readInt(filepath.Join(ctrl, "device", "numa_node"), 10)
		if errors.Is(err, fs.ErrNotExist) {
			n, err = readInt(filepath.Join(ctrl, "numa_node"), 10)
		}
		switch {
		case err == nil && n >= -1:
			c.NUMANode = n
		case err == nil:
			why = append(why, fmt.Sprintf("pin: %s: numa_node %d", ctrl, n))
		case c.PCI != "" || !errors.Is(err, fs.ErrNotExist):
			// Fabrics controllers have no PCI device and no locality.
			why = append(why, err.Error())
		}
		if c.PCI == "" && !isFabrics(ctrl) {
			why = append(why, "PCI address unknown")
		}
		if len(why) > 0 {
			d.warn("NVMe %s: %s", name, strings.Join(why, "; "))
		}
		c.Block = nvmeBlock(ctrl)
		d.t.NVMe = append(d.t.NVMe, c)
	}
	slices.SortFunc(d.t.NVMe, func(a, b NVMe) int { return natCompare(a.Name, b.Name) })
}

// nvmePCI finds a controller's PCI address without requiring symlinks.
func nvmePCI(ctrl string) string {
	if l, err := os.Readlink(filepath.Join(ctrl, "device")); err == nil {
		if b := filepath.Base(l); pciRE.MatchString(b) {
			return b
		}
	}
	if s, err := readFile(filepath.Join(ctrl, "address")); err == nil && pciRE.MatchString(s) {
		return s
	}
	// .../0000:01:00.0/nvme/nvme0
	if real, err := filepath.EvalSymlinks(ctrl); err == nil {
		if b := filepath.Base(filepath.Dir(filepath.Dir(real))); pciRE.MatchString(b) {
			return b
		}
	}
	return ""
}

func isFabrics(ctrl string) bool {
	s, err := readFile(filepath.Join(ctrl, "transport"))
	return err == nil && s != "pcie"
}

func nvmeBlock(ctrl string) []string {
	var out []string
	for _, dir := range []string{ctrl, filepath.Join(ctrl, "block")} {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if m := nvmeNSRE.FindStringSubmatch(e.Name()); m != nil {
				out = append(out, m[1]+m[2])
			}
		}
	}
	slices.SortFunc(out, natCompare)
	return slices.Compact(out)
}

// natCompare orders names with embedded numbers numerically: nvme2 < nvme10.
func natCompare(a, b string) int {
	for a != "" && b != "" {
		ia, ib := digitsEnd(a), digitsEnd(b)
		if ia > 0 && ib > 0 {
			na, _ := strconv.Atoi(a[:ia])
			nb, _ := strconv.Atoi(b[:ib])
			if na != nb {
				return na - nb
			}
			a, b = a[ia:], b[ib:]
			continue
		}
		if a[0] != b[0] {
			return int(a[0]) - int(b[0])
		}
		a, b = a[1:], b[1:]
	}
	return len(a) - len(b)
}

func digitsEnd(s string) int {
	i := 0
	for i < len(s) && i < 9 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}
