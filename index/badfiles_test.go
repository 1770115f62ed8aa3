package index

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pagefeed/pagefeed/internal/gen"
)

// buildWithin runs Build on paths and fails the test if it does not
// return within 10 s: bad input must give an error, never a hang. A panic
// crashes the test binary, which fails too.
func buildWithin(t *testing.T, paths []string, opts Options) (*Index, error) {
	t.Helper()
	opts.NoSidecar = true
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	type result struct {
		ix  *Index
		err error
	}
	ch := make(chan result, 1)
	go func() {
		ix, err := Build(context.Background(), paths, opts)
		ch <- result{ix, err}
	}()
	select {
	case r := <-ch:
		return r.ix, r.err
	case <-time.After(10 * time.Second):
		t.Fatalf("Build(%v) did not return within 10 s", paths)
		return nil, nil
	}
}

// badFileBase generates one small valid file with an offset index and one
// without (header walk), and returns their bytes.
func badFileBase(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for name, pi := range map[string]bool{"pageindex": true, "walk": false} {
		p := genDataset(t, gen.Config{Files: 1, RowsPerFile: 300, RowGroupRows: 100, PageSize: 512, MeanTokens: 16,
			PageIndex: pi, PageVersion: 1, Seed: 4})[0]
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	return out
}

// TestBadFilesTruncated cuts files at many points, from the magic to the
// last footer byte: Build must fail with ErrNotParquet or ErrCorrupt and
// name the file.
func TestBadFilesTruncated(t *testing.T) {
	base := badFileBase(t)
	dir := t.TempDir()
	for name, b := range base {
		n := len(b)
		var cuts []int
		for i := 0; i < 48; i++ {
			cuts = append(cuts, i*n/48)
		}
		for i := 1; i <= 16; i++ { // every cut through the footer length and magic
			cuts = append(cuts, n-i)
		}
		for _, cut := range cuts {
			for _, walk := range []bool{false, true} {
				p := filepath.Join(dir, fmt.Sprintf("%s-cut%d.parquet", name, cut))
				if err := os.WriteFile(p, b[:cut], 0o644); err != nil {
					t.Fatal(err)
				}
				_, err := buildWithin(t, []string{p}, Options{HeaderWalk: walk})
				if err == nil {
					t.Fatalf("%s cut at %d of %d (walk %v): Build succeeded", name, cut, n, walk)
				}
				if !errors.Is(err, ErrNotParquet) && !errors.Is(err, ErrCorrupt) {
					t.Errorf("%s cut at %d: %v is neither ErrNotParquet nor ErrCorrupt", name, cut, err)
				}
				if !strings.Contains(err.Error(), p) {
					t.Errorf("%s cut at %d: %q does not name the file", name, cut, err)
				}
			}
		}
	}
}

// TestBadFilesBitFlips flips single bits in the footer, the offset indexes
// and the pages (walked by their headers): Build must either succeed or
// fail with an error naming the file, in time, without a panic. Some
// flips are harmless (a statistic, a value), so success is allowed; a
// successful index must still lie within the file.
func TestBadFilesBitFlips(t *testing.T) {
	base := badFileBase(t)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(8, 8))
	for name, b := range base {
		n := len(b)
		flen := int(uint32(b[n-8]) | uint32(b[n-7])<<8 | uint32(b[n-6])<<16 | uint32(b[n-5])<<24)
		footer := n - 8 - flen
		outcomes := map[string]int{}
		for i := 0; i < 200; i++ {
			var pos int
			region := "footer"
			switch {
			case i < 100:
				pos = footer + r.IntN(flen+8)
			default:
				region = "pages"
				pos = 4 + r.IntN(footer-4)
			}
			c := append([]byte(nil), b...)
			c[pos] ^= 1 << r.IntN(8)
			p := filepath.Join(dir, fmt.Sprintf("%s-flip%d.parquet", name, i))
			if err := os.WriteFile(p, c, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, walk := range []bool{false, true} {
				ix, err := buildWithin(t, []string{p}, Options{HeaderWalk: walk})
				if err != nil {
					outcomes[region+"/error"]++
					if !strings.Contains(err.Error(), p) {
						t.Errorf("%s flip at %d: %q does not name the file", name, pos, err)
					}
					continue
				}
				outcomes[region+"/ok"]++
				for k := 0; k < ix.NumColumns(); k++ {
					for g := 0; g < ix.NumPages(k); g++ {
						loc := ix.Locate(k, g)
						if loc.Offset < 0 || loc.Size < 0 || loc.Offset+int64(loc.Size) > int64(n) {
							t.Fatalf("%s flip at %d: page %d at %d+%d outside the %d-byte file", name, pos, g, loc.Offset, loc.Size, n)
						}
					}
				}
			}
			os.Remove(p)
		}
		t.Logf("%s: %v", name, outcomes)
	}
}

// TestBadFilesPermissionAndKind: a path that cannot be read (a directory
// named like a Parquet file; mode 000 when not root) fails with an error
// naming it.
func TestBadFilesPermissionAndKind(t *testing.T) {
	base := badFileBase(t)
	dir := t.TempDir()
	asDir := filepath.Join(dir, "dir.parquet")
	if err := os.Mkdir(asDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(asDir, "inner.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A directory given as a path is walked; one in a glob match is not a
	// Parquet file either way. Both must end in an error, not a hang.
	if _, err := buildWithin(t, []string{filepath.Join(dir, "*.parquet")}, Options{}); err == nil {
		t.Errorf("glob matching only a directory: Build succeeded")
	}
	locked := filepath.Join(dir, "locked.parquet")
	if err := os.WriteFile(locked, base["pageindex"], 0o000); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		t.Skip("running as root: mode 000 does not deny reads")
	}
	_, err := buildWithin(t, []string{locked}, Options{})
	if err == nil || !errors.Is(err, os.ErrPermission) || !strings.Contains(err.Error(), locked) {
		t.Fatalf("unreadable file: %v, want a permission error naming %s", err, locked)
	}
}
