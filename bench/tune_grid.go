package bench

import (
	"fmt"
	"strings"
)

// maxGridValues bounds one grid list, so a typo such as "1,2,...,1g" fails
// instead of planning a billion points.
const maxGridValues = 64

// ParseGridList parses a tune grid list: comma-separated values, each read
// by parse (ParseSize for "4k", "1m" or plain integers), in the order
// written. An element "..." continues the two values before it up to the
// value after it: geometrically when their ratio is a whole number above 1
// ("1,2,4,...,256" doubles), else arithmetically ("8,16,24,...,48" adds 8);
// the value after "..." ends the list there and must lie on the sequence.
// Values must be in [lo, hi], distinct, and at most 64. Errors name the
// element and why.
func ParseGridList(s string, lo, hi int64, parse func(string) (int64, error)) ([]int64, error) {
	parts := strings.Split(s, ",")
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("%w: empty list", ErrBadOption)
	}
	var out []int64
	seen := map[int64]bool{}
	add := func(v int64, elem string) error {
		if v < lo || v > hi {
			return fmt.Errorf("%w: %s out of range [%d, %d]", ErrBadOption, elem, lo, hi)
		}
		if seen[v] {
			return fmt.Errorf("%w: %s is listed twice", ErrBadOption, elem)
		}
		if len(out) == maxGridValues {
			return fmt.Errorf("%w: more than %d values", ErrBadOption, maxGridValues)
		}
		seen[v] = true
		out = append(out, v)
		return nil
	}
	for i := 0; i < len(parts); i++ {
		p := strings.TrimSpace(parts[i])
		if p == "" {
			return nil, fmt.Errorf("%w: empty element %d in %q", ErrBadOption, i+1, s)
		}
		if p != "..." {
			v, err := parse(p)
			if err != nil {
				return nil, fmt.Errorf("%w: element %q: %v", ErrBadOption, p, err)
			}
			if err := add(v, fmt.Sprintf("%q", p)); err != nil {
				return nil, err
			}
			continue
		}
		if len(out) < 2 || i+1 >= len(parts) {
			return nil, fmt.Errorf("%w: \"...\" needs two values before it and one after, in %q", ErrBadOption, s)
		}
		endS := strings.TrimSpace(parts[i+1])
		end, err := parse(endS)
		if err != nil {
			return nil, fmt.Errorf("%w: element %q: %v", ErrBadOption, endS, err)
		}
		a, b := out[len(out)-2], out[len(out)-1]
		next, ok := stepper(a, b)
		if !ok {
			return nil, fmt.Errorf("%w: \"...\" after %d,%d: the values must grow", ErrBadOption, a, b)
		}
		v := b
		for {
			n, ok := next(v)
			if !ok || n > end {
				break
			}
			v = n
			if err := add(v, fmt.Sprintf("%d (from \"...\")", v)); err != nil {
				return nil, err
			}
		}
		if v != end {
			return nil, fmt.Errorf("%w: %q is not on the sequence %d,%d,... (it reaches %d)", ErrBadOption, endS, a, b, v)
		}
		i++ // the end value was added by the loop
	}
	return out, nil
}

// stepper returns the successor function of the sequence a, b.
func stepper(a, b int64) (func(int64) (int64, bool), bool) {
	if b <= a {
		return nil, false
	}
	if a > 0 && b%a == 0 && b/a > 1 {
		r := b / a
		return func(v int64) (int64, bool) {
			if v > (1<<62)/r {
				return 0, false
			}
			return v * r, true
		}, true
	}
	d := b - a
	return func(v int64) (int64, bool) {
		if v > (1<<62)-d {
			return 0, false
		}
		return v + d, true
	}, true
}

// ParseGridInts is ParseGridList for plain integers with ParseSize's
// suffixes, returned as ints.
func ParseGridInts(s string, lo, hi int64) ([]int, error) {
	vs, err := ParseGridList(s, lo, hi, ParseSize)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(vs))
	for i, v := range vs {
		out[i] = int(v)
	}
	return out, nil
}

// ParseGridWords parses a comma-separated list of names, each one of
// allowed, distinct.
func ParseGridWords(s string, allowed ...string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		ok := false
		for _, a := range allowed {
			ok = ok || p == a
		}
		if !ok {
			return nil, fmt.Errorf("%w: %q (want %s)", ErrBadOption, p, strings.Join(allowed, ", "))
		}
		if seen[p] {
			return nil, fmt.Errorf("%w: %q is listed twice", ErrBadOption, p)
		}
		seen[p] = true
		out = append(out, p)
	}
	return out, nil
}
