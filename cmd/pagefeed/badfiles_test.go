package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pagefeed/pagefeed/internal/gen"
)

// runCmdWithin runs a subcommand in-process and fails the test if it does
// not return within 10 s. A panic crashes the test binary, which fails too.
func runCmdWithin(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	type result struct {
		code     int
		out, err string
	}
	ch := make(chan result, 1)
	go func() {
		var out, errb bytes.Buffer
		code := runMain(args, &out, &errb)
		ch <- result{code, out.String(), errb.String()}
	}()
	select {
	case r := <-ch:
		return r.code, r.out, r.err
	case <-time.After(10 * time.Second):
		t.Fatalf("%v did not return within 10 s", args)
		return 0, "", ""
	}
}

// TestBadFilesCatVerify runs cat and verify over truncated and bit-flipped
// copies of a valid file: each must exit 0 (a harmless flip) or exit
// non-zero with a message naming the file (verify: its report line), in time and without a panic.
func TestBadFilesCatVerify(t *testing.T) {
	res, err := gen.Run(context.Background(), gen.Config{Dir: t.TempDir(), Files: 1, RowsPerFile: 200, RowGroupRows: 100,
		PageSize: 1024, MeanTokens: 16, PageIndex: true, PageVersion: 2, Codec: "snappy", Seed: 6})
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(res.Files[0])
	if err != nil {
		t.Fatal(err)
	}
	n := len(good)
	dir := t.TempDir()
	type variant struct {
		name string
		b    []byte
	}
	var vs []variant
	for _, cut := range []int{0, 4, 100, n / 3, n / 2, n - 100, n - 9, n - 5, n - 1} {
		vs = append(vs, variant{fmt.Sprintf("cut%d", cut), good[:cut]})
	}
	r := rand.New(rand.NewPCG(6, 6))
	for i := 0; i < 24; i++ {
		b := append([]byte(nil), good...)
		b[4+r.IntN(n-12)] ^= 1 << r.IntN(8)
		vs = append(vs, variant{fmt.Sprintf("flip%d", i), b})
	}
	outcomes := map[string]int{}
	for _, v := range vs {
		p := filepath.Join(dir, v.name+".parquet")
		if err := os.WriteFile(p, v.b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"verify", p},
			{"cat", p, "--column", "input_ids", "--limit", "1000"},
		} {
			code, out, errOut := runCmdWithin(t, args...)
			if code == 0 {
				if strings.HasPrefix(v.name, "cut") {
					t.Errorf("%s %s: exit 0 on a truncated file", args[0], v.name)
				}
				outcomes[args[0]+"/ok"]++
				continue
			}
			outcomes[args[0]+"/error"]++
			// verify reports each file on stdout, then sums up on stderr.
			if !strings.Contains(out+errOut, p) {
				t.Errorf("%s %s: exit %d, output %q %q does not name the file", args[0], v.name, code, out, errOut)
			}
		}
	}
	t.Logf("%d variants: %v", len(vs), outcomes)
}
