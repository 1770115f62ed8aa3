package zoo

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"testing"
)

// TestSuggestTable: the table a run suggests covers exactly its failing
// cases, each with its reason, in as few patterns as this example needs.
func TestSuggestTable(t *testing.T) {
	mem := errors.New("x: configuration exceeds the memory limit: y")
	drop := errors.New("2 of 9 rows left out over 3 ranks (22%)")
	reasons := []Reason{{"zooMemory", "", "exceeds the memory limit"}, {"zooDropped", "", "rows left out over"}}
	outcomes := []Outcome{
		{"a/page/one/world1", mem},
		{"a/page/one/world3", mem},
		{"a/row/one/world1", mem},
		{"a/row/one/world3", nil},
		{"b/page/one/world1", nil},
		{"b/page/one/world3", drop},
		{"b/row/one/world3", errors.New("something else")},
	}
	want := map[string]string{"a/page/one/world1": "zooMemory", "a/page/one/world3": "zooMemory", "a/row/one/world1": "zooMemory",
		"b/page/one/world3": "zooDropped", "b/row/one/world3": "new reason: something else"}
	table := SuggestTable(outcomes, reasons)
	lines := strings.Split(table, "\n")
	if len(lines) != 4 {
		t.Fatalf("%d patterns, want 4:\n%s", len(lines), table)
	}
	for _, o := range outcomes {
		got := ""
		for _, l := range lines {
			pat, reason, _ := strings.Cut(strings.TrimPrefix(strings.TrimSuffix(strings.TrimSpace(l), "},"), "{Pattern: "), ", Reason: ")
			p, err := strconv.Unquote(pat)
			if err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			if ok, _ := path.Match(p, o.Name); ok {
				got = reason
				break
			}
		}
		if got != want[o.Name] {
			t.Errorf("%s: the table says %q, want %q:\n%s", o.Name, got, want[o.Name], table)
		}
	}
}

// recordTB records what a test would report.
type recordTB struct {
	testing.TB
	errs []string
}

func (r *recordTB) Helper()                      {}
func (r *recordTB) Error(args ...any)            { r.errs = append(r.errs, fmt.Sprint(args...)) }
func (r *recordTB) Errorf(f string, args ...any) { r.errs = append(r.errs, fmt.Sprintf(f, args...)) }
func (r *recordTB) Logf(string, ...any)          {}
func (r *recordTB) Failed() bool                 { return len(r.errs) > 0 }

// TestExpectationsAreStrict: a listed case must fail with its reason's
// text, an unlisted one must pass, every pattern must match a case.
func TestExpectationsAreStrict(t *testing.T) {
	mem := Reason{"mem", "sizing", "memory limit"}
	e := NewExpectations([]Expected{{"a/*", mem}, {"c/*", mem}}, mem)
	for _, tc := range []struct {
		name string
		err  error
		want string // in the error reported; "" for none
	}{
		{"a/1", errors.New("exceeds the memory limit"), ""},
		{"a/2", nil, "passes now"},
		{"a/3", errors.New("wrong value"), "fails otherwise"},
		{"b/1", errors.New("wrong value"), "wrong value"},
		{"b/2", nil, ""},
	} {
		r := &recordTB{TB: t}
		e.Check(r, tc.name, tc.err)
		got := strings.Join(r.errs, "; ")
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s (%v): reported %q, want %q", tc.name, tc.err, got, tc.want)
		}
	}
	r := &recordTB{TB: t}
	e.Finish(r)
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], `"c/*"`) {
		t.Errorf("Finish reported %q, want the unmatched pattern c/*", r.errs)
	}
}
