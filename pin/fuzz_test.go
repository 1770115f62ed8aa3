package pin

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDiscover writes fuzzed contents into the files of a small two-node,
// two-GPU sysfs tree: Discover must never fail or panic while CPUs are
// known, and NewPlan must give a valid plan or ErrTooManyRanks.
func FuzzDiscover(f *testing.F) {
	f.Add("0-7\n", "0-3\n", "4-7\n", "10 20\n", "0\n", "0-3\n", "1\n", "0,4\n", "0\n")
	f.Add("0-7\n", "0-3\n", "\n", "10 x\n", "-1\n", "0-7\n", "-7\n", "0-\n", "1\n")
	f.Add("0-3,5\n", "0-7:2\n", "1-7:2\n", "10\n", "9\n", "\n", "0x\n", "4\n", "zz\n")
	f.Add("", "0-1\n", "0-1\n", "10 10\n", "1\n", "0-1\n", "1\n", "0-1\n", "-1\n")
	f.Fuzz(func(t *testing.T, online, node0, node1, dist, gpuNode, gpuLocal, gpu2Node, sib0, nvmeNode string) {
		root := t.TempDir()
		for rel, s := range map[string]string{
			"devices/system/cpu/online":                             online,
			"devices/system/cpu/cpu0/topology/thread_siblings_list": sib0,
			"devices/system/node/node0/cpulist":                     node0,
			"devices/system/node/node0/distance":                    dist,
			"devices/system/node/node1/cpulist":                     node1,
			"devices/system/node/node1/distance":                    dist,
			"bus/pci/devices/0000:01:00.0/vendor":                   "0x10de\n",
			"bus/pci/devices/0000:01:00.0/class":                    "0x030200\n",
			"bus/pci/devices/0000:01:00.0/numa_node":                gpuNode,
			"bus/pci/devices/0000:01:00.0/local_cpulist":            gpuLocal,
			"bus/pci/devices/0000:02:00.0/vendor":                   "0x1002\n",
			"bus/pci/devices/0000:02:00.0/class":                    "0x038000\n",
			"bus/pci/devices/0000:02:00.0/numa_node":                gpu2Node,
			"bus/pci/devices/0000:02:00.0/local_cpulist":            gpuLocal,
			"class/nvme/nvme0/address":                              "0000:03:00.0\n",
			"class/nvme/nvme0/device/numa_node":                     nvmeNode,
			"class/nvme/nvme0/nvme0n1/size":                         "1\n",
		} {
			p := filepath.Join(root, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		topo, err := Discover(root)
		if err != nil {
			if !errors.Is(err, ErrNoCPUs) {
				t.Fatalf("Discover: %v", err)
			}
			return
		}
		p, err := NewPlan(topo, Options{})
		if err != nil {
			if !errors.Is(err, ErrTooManyRanks) {
				t.Fatalf("NewPlan: %v", err)
			}
			return
		}
		checkPlan(t, topo, p, len(topo.GPUs))
		_ = NewReport(topo, p)
	})
}
