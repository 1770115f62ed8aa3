package zoo

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// Seeds returns the paths of the tiny per-writer files committed under
// internal/zoo/testdata/seeds (go run ./internal/zoo/cmd/zoo seeds
// rewrites them), found from the working directory upward as SourceDir.
func Seeds() ([]string, error) {
	src, err := SourceDir()
	if err != nil {
		return nil, err
	}
	paths, err := filepath.Glob(filepath.Join(src, "..", "testdata", "seeds", "*.parquet"))
	if err == nil && len(paths) == 0 {
		err = fmt.Errorf("zoo: no seed files under %s", filepath.Join(src, "..", "testdata", "seeds"))
	}
	return paths, err
}

// BadCopies returns damaged copies of the file b by name: "cutN", b cut
// to its first N bytes (at 0, 4, a third, half and 9, 5 and 1 bytes short
// of its end), and "flipI", b with one random bit flipped outside its
// leading and trailing magic (flips copies, from rand.NewPCG(seed, 0)).
func BadCopies(b []byte, flips int, seed uint64) map[string][]byte {
	n := len(b)
	out := map[string][]byte{}
	for _, cut := range []int{0, 4, n / 3, n / 2, n - 9, n - 5, n - 1} {
		if cut >= 0 && cut < n {
			out[fmt.Sprintf("cut%d", cut)] = b[:cut]
		}
	}
	r := rand.New(rand.NewPCG(seed, 0))
	for i := 0; i < flips && n > 12; i++ {
		c := append([]byte(nil), b...)
		c[4+r.IntN(n-12)] ^= 1 << r.IntN(8)
		out[fmt.Sprintf("flip%d", i)] = c
	}
	return out
}

// WriteBadCopies writes BadCopies of the file at path into dir, as
// <base>-<name>.parquet, and returns the written paths by name.
func WriteBadCopies(path, dir string, flips int, seed uint64) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	base := filepath.Base(path)
	base = base[:len(base)-len(filepath.Ext(base))]
	out := map[string]string{}
	for name, c := range BadCopies(b, flips, seed) {
		p := filepath.Join(dir, base+"-"+name+".parquet")
		if err := os.WriteFile(p, c, 0o644); err != nil {
			return nil, err
		}
		out[name] = p
	}
	return out, nil
}

// EachBadSeedCopy writes the BadCopies (flips bit flips placed by seed)
// of every one of Seeds into a temporary folder of t and calls fn with
// each copy's name and path; it returns the number of seeds.
func EachBadSeedCopy(t testing.TB, flips int, seed uint64, fn func(name, path string)) int {
	t.Helper()
	seeds, err := Seeds()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, s := range seeds {
		copies, err := WriteBadCopies(s, dir, flips, seed)
		if err != nil {
			t.Fatal(err)
		}
		for name, p := range copies {
			fn(name, p)
		}
	}
	return len(seeds)
}
