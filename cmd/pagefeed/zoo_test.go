package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pagefeed/pagefeed/internal/zoo"
)

// zooCmdExpectedFailures are the zoo cases of TestZooCatAndVerify that
// fail today, held to account as in the loader's zoo test: a listed case
// must fail with the text given, an unlisted one must pass, every pattern
// must match a case. Patterns are path.Match globs over the case names,
// COMMAND/DATASET/COLUMNS (e.g. cat/mix-tokens/several, verify/duckdb-gzip).
var zooCmdExpectedFailures = []zoo.Expected{}

// TestZooCatAndVerify runs `pagefeed cat` over every zoo file and over a
// file of every writer together (one column, and several), and `pagefeed
// verify` over every zoo file, at their defaults. cat must print every
// row once, in file order, with exactly the values DuckDB reads; verify
// must find every column OK (it compares each page alone with arrow-go's
// whole-file reader, which agrees with DuckDB on every zoo file:
// internal/zoo's TestArrowGoReadsWhatDuckDBReads).
func TestZooCatAndVerify(t *testing.T) {
	if testing.Short() {
		t.Skip("short: the zoo")
	}
	z := zoo.Get(t)
	type dataset struct {
		name     string
		fixtures []zoo.Fixture
	}
	var sets []dataset
	for _, f := range z.Fixtures {
		sets = append(sets, dataset{f.Name, []zoo.Fixture{f}})
	}
	for _, set := range []string{"tokens", "images"} {
		sets = append(sets, dataset{"mix-" + set, z.Mix(set)})
	}
	projections := map[string]map[string][]string{
		"tokens": {"one": {"input_ids"}, "several": {"id", "input_ids", "text", "score"}},
		"images": {"one": {"image"}, "several": {"id", "image", "caption"}},
	}
	expect := zoo.NewExpectations(zooCmdExpectedFailures)
	for _, ds := range sets {
		for _, proj := range []string{"one", "several"} {
			name := fmt.Sprintf("cat/%s/%s", ds.name, proj)
			t.Run(name, func(t *testing.T) {
				expect.Check(t, name, zooCat(t, ds.fixtures, projections[ds.fixtures[0].Set][proj]))
			})
		}
		if len(ds.fixtures) == 1 {
			name := "verify/" + ds.name
			t.Run(name, func(t *testing.T) {
				expect.Check(t, name, zooVerify(t, ds.fixtures[0]))
			})
		}
	}
	expect.Finish(t)
}

// zooCat runs pagefeed cat over the fixtures' files and checks its output
// against DuckDB's reading: every row in file order, every value exact.
func zooCat(t *testing.T, fixtures []zoo.Fixture, cols []string) error {
	args := []string{"cat", "--column", strings.Join(cols, ",")}
	var refs []*zoo.Reference
	for _, f := range fixtures {
		args = append(args, f.Path)
		r, err := f.Reference()
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, r)
	}
	code, out, errOut := runCmd(t, args...)
	if code != 0 {
		return fmt.Errorf("exit %d: %.2000s", code, errOut)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for i, f := range fixtures {
		for id := f.Base; id < f.Base+f.Rows; id++ {
			if !sc.Scan() {
				return fmt.Errorf("output ends before id %d of %s (%d rows)", id, f.Path, f.Rows)
			}
			vals := map[string]json.RawMessage{}
			if len(cols) == 1 {
				vals[cols[0]] = append(json.RawMessage(nil), sc.Bytes()...)
			} else if err := json.Unmarshal(sc.Bytes(), &vals); err != nil {
				return fmt.Errorf("line for id %d: %v: %.200s", id, err, sc.Text())
			}
			for _, c := range cols {
				raw, ok := vals[c]
				if !ok {
					return fmt.Errorf("line for id %d has no %s: %.200s", id, c, sc.Text())
				}
				got, err := zoo.CanonicalJSON(c, raw, zoo.CatForms)
				if err != nil {
					return fmt.Errorf("id %d column %s: %v: %.200s", id, c, err, raw)
				}
				if err := refs[i].Check(id, c, []byte(got)); err != nil {
					return err
				}
			}
		}
	}
	if sc.Scan() {
		return fmt.Errorf("lines after the last row: %.200s", sc.Text())
	}
	return sc.Err()
}

// zooVerify runs pagefeed verify --json over one fixture: every column of
// it must be OK.
func zooVerify(t *testing.T, f zoo.Fixture) error {
	code, out, errOut := runCmd(t, "verify", "--json", f.Path)
	var bad []string
	cols := 0
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var r verifyResult
		if err := dec.Decode(&r); err != nil {
			return fmt.Errorf("verify output: %v: %.500s", err, out)
		}
		cols++
		if r.Status != "OK" {
			bad = append(bad, fmt.Sprintf("%s %s (%s)", r.Column, r.Status, r.Reason))
		}
	}
	switch {
	case len(bad) > 0:
		return fmt.Errorf("verify: %s", strings.Join(bad, "; "))
	case code != 0:
		return fmt.Errorf("verify exit %d: %.500s", code, errOut)
	case cols != len(f.Columns):
		return fmt.Errorf("verify reported %d columns, the file has %d", cols, len(f.Columns))
	}
	return nil
}

// TestZooSeedsCatVerifyBadBytes runs cat and verify over truncated and
// bit-flipped copies of the writer zoo's tiny files (one per writer,
// internal/zoo/testdata/seeds): each must exit 0 (a harmless flip; never
// for a truncated file) or exit non-zero naming the file, in time and
// without a panic.
func TestZooSeedsCatVerifyBadBytes(t *testing.T) {
	outcomes := map[string]int{}
	n := zoo.EachBadSeedCopy(t, 12, 8, func(name, p string) {
		for _, args := range [][]string{{"verify", p}, {"cat", p, "--column", "id,input_ids,text,score"}} {
			code, out, errOut := runCmdWithin(t, args...)
			switch {
			case code == 0 && strings.HasPrefix(name, "cut"):
				t.Errorf("%s %s: exit 0 on a truncated file", args[0], p)
			case code == 0:
				outcomes[args[0]+"/ok"]++
			case strings.Contains(out+errOut, p):
				outcomes[args[0]+"/error"]++
			default:
				t.Errorf("%s %s: exit %d, output %.200q %.200q does not name the file", args[0], p, code, out, errOut)
			}
		}
	})
	t.Logf("%d seeds: %v", n, outcomes)
}
