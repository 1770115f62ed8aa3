package pin

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// fixture returns the path of a sysfs fixture tree under testdata.
func fixture(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join("testdata", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	return p
}

// copyFixture copies a fixture tree into a temporary directory, keeping
// its symbolic links, so a test may damage it.
func copyFixture(t testing.TB, name string) string {
	t.Helper()
	src := fixture(t, name)
	dst := filepath.Join(t.TempDir(), name)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, out)
		case d.IsDir():
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatalf("copy fixture %s: %v", name, err)
	}
	return dst
}

func discover(t testing.TB, root string) Topology {
	t.Helper()
	topo, err := Discover(root)
	if err != nil {
		t.Fatalf("Discover(%s): %v", root, err)
	}
	return topo
}

// checkPlan asserts what every plan must hold: one group per rank, in
// rank order; non-empty sorted CPU sets of online CPUs; no CPU in two
// groups or in a group and the trainer's set; a group with a known node
// only on that node's CPUs.
func checkPlan(t testing.TB, topo Topology, p Plan, ranks int) {
	t.Helper()
	if len(p.Groups) != ranks {
		t.Fatalf("plan has %d groups, want %d", len(p.Groups), ranks)
	}
	owner := map[int]int{}
	for _, c := range p.Trainer {
		owner[c] = -1
	}
	for i, g := range p.Groups {
		if g.Rank != i {
			t.Errorf("group %d has rank %d", i, g.Rank)
		}
		if len(g.CPUs) == 0 {
			t.Errorf("rank %d has no CPUs", i)
		}
		if !slices.IsSorted(g.CPUs) {
			t.Errorf("rank %d CPUs %v not sorted", i, g.CPUs)
		}
		for _, c := range g.CPUs {
			if !slices.Contains(topo.CPUsOnline, c) {
				t.Errorf("rank %d has offline CPU %d", i, c)
			}
			if o, dup := owner[c]; dup {
				t.Errorf("CPU %d in rank %d and in %d (-1: trainer)", c, i, o)
			}
			owner[c] = i
		}
		if g.Node >= 0 {
			for _, n := range topo.Nodes {
				if n.ID == g.Node && len(intersect(g.CPUs, n.CPUs)) != len(g.CPUs) {
					t.Errorf("rank %d CPUs %s not all on its node %d (%s)", i, FormatCPUList(g.CPUs), g.Node, FormatCPUList(n.CPUs))
				}
			}
		}
	}
}

func groupCPUs(p Plan) []string {
	var s []string
	for _, g := range p.Groups {
		s = append(s, FormatCPUList(g.CPUs))
	}
	return s
}
