package zoo

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Reason is why cases of a zoo test fail today, and a text their errors
// contain. Name is how the test's table names it (a Go identifier).
type Reason struct {
	Name, Why, ErrContains string
}

// Expected says that the cases whose names Pattern matches (path.Match)
// fail today, for Reason.
type Expected struct {
	Pattern string
	Reason
}

// Outcome is one case's name and error (nil: it passed).
type Outcome struct {
	Name string
	Err  error
}

// Expectations holds a test's cases to its table of expected failures,
// strictly both ways: a case that a pattern matches must fail with its
// reason's text in the error (so that whoever fixes it deletes or narrows
// the entry), every other case must pass, and every pattern must match a
// case. The first pattern that matches a case counts. Its methods may be
// called from several goroutines.
type Expectations struct {
	table   []Expected
	reasons []Reason

	mu       sync.Mutex
	matched  []bool
	outcomes []Outcome
}

// NewExpectations returns the Expectations of table; reasons are those
// the table uses (SuggestTable matches errors to them).
func NewExpectations(table []Expected, reasons ...Reason) *Expectations {
	return &Expectations{table: table, reasons: reasons, matched: make([]bool, len(table))}
}

// Check holds the case name's outcome err to the table, failing t (the
// case's test) where they disagree.
func (e *Expectations) Check(t testing.TB, name string, err error) {
	t.Helper()
	e.mu.Lock()
	e.outcomes = append(e.outcomes, Outcome{name, err})
	i := slices.IndexFunc(e.table, func(x Expected) bool {
		ok, _ := path.Match(x.Pattern, name)
		return ok
	})
	if i >= 0 {
		e.matched[i] = true
	}
	e.mu.Unlock()
	if i < 0 {
		if err != nil {
			t.Error(err)
		}
		return
	}
	x := e.table[i]
	switch {
	case err == nil:
		t.Errorf("passes now, but the expected failure %q (%s) lists it: delete or narrow that entry", x.Pattern, x.Why)
	case !strings.Contains(err.Error(), x.ErrContains):
		t.Errorf("fails otherwise than the expected failure %q (%s, %q) says: %v", x.Pattern, x.Why, x.ErrContains, err)
	default:
		t.Logf("expected failure (%s): %v", x.Why, err)
	}
}

// Finish fails t (the test whose cases Check saw) for every pattern that
// matched no case, and where t failed, logs the table that the outcomes
// make (SuggestTable), for whoever updates it.
func (e *Expectations) Finish(t testing.TB) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, m := range e.matched {
		if !m {
			t.Errorf("the expected failure %q (%s) matches no case: delete it", e.table[i].Pattern, e.table[i].Why)
		}
	}
	if t.Failed() && len(e.outcomes) > 0 {
		t.Logf("the table of expected failures as today's outcomes make it (check each change):\n%s", SuggestTable(e.outcomes, e.reasons))
	}
}

// SuggestTable writes a table of expected failures, as Go source lines
// ({Pattern: "PATTERN", Reason: ReasonName},), that outcomes make: each failing case's
// error matched to the first of reasons whose text it contains ("new
// reason: ERROR" where none does), and the failing cases covered greedily
// by the patterns (a case name, parts separated by /, with some parts
// replaced by *) that match failures of one reason only and no passing
// case.
func SuggestTable(outcomes []Outcome, reasons []Reason) string {
	reason := make([]string, len(outcomes))
	left := 0
	for i, o := range outcomes {
		if o.Err == nil {
			continue
		}
		left++
		reason[i] = "new reason: " + o.Err.Error()
		for _, r := range reasons {
			if strings.Contains(o.Err.Error(), r.ErrContains) {
				reason[i] = r.Name
				break
			}
		}
	}
	// Every pattern that matches failures of one reason only, with the
	// cases it matches.
	type cand struct {
		pat, reason string
		stars       int
		cases       []int
	}
	var cands []cand
	seen := map[string]bool{}
	for i, o := range outcomes {
		if reason[i] == "" {
			continue
		}
		parts := strings.Split(o.Name, "/")
		for mask := 0; mask < 1<<len(parts); mask++ {
			p := slices.Clone(parts)
			stars := 0
			for k := range p {
				if mask&(1<<k) != 0 {
					p[k], stars = "*", stars+1
				}
			}
			pat := strings.Join(p, "/")
			if seen[pat] {
				continue
			}
			seen[pat] = true
			c := cand{pat: pat, reason: reason[i], stars: stars}
			for j, m := range outcomes {
				if ok, _ := path.Match(pat, m.Name); ok {
					if reason[j] != reason[i] {
						c.cases = nil
						break
					}
					c.cases = append(c.cases, j)
				}
			}
			if len(c.cases) > 0 {
				cands = append(cands, c)
			}
		}
	}
	covered := make([]bool, len(outcomes))
	var lines []string
	for left > 0 {
		best, bestN := -1, 0
		for k, c := range cands {
			n := 0
			for _, j := range c.cases {
				if !covered[j] {
					n++
				}
			}
			if n > bestN || n == bestN && n > 0 && c.stars > cands[best].stars {
				best, bestN = k, n
			}
		}
		for _, j := range cands[best].cases {
			covered[j] = true
		}
		left -= bestN
		lines = append(lines, fmt.Sprintf("\t{Pattern: %q, Reason: %s},", cands[best].pat, cands[best].reason))
	}
	slices.SortFunc(lines, func(a, b string) int {
		_, ra, _ := strings.Cut(a, "Reason: ")
		_, rb, _ := strings.Cut(b, "Reason: ")
		if c := strings.Compare(ra, rb); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return strings.Join(lines, "\n")
}
