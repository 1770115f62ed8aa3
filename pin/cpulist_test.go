package pin

import (
	"errors"
	"slices"
	"strconv"
	"testing"
)

func seq(lo, hi int) []int {
	var s []int
	for i := lo; i <= hi; i++ {
		s = append(s, i)
	}
	return s
}

func TestParseCPUList(t *testing.T) {
	tests := []struct {
		in   string
		want []int
	}{
		{"", nil},
		{"\n", nil},
		{"0", []int{0}},
		{"0\n", []int{0}},
		{"0-3", []int{0, 1, 2, 3}},
		{"0-3,8-11\n", []int{0, 1, 2, 3, 8, 9, 10, 11}},
		{"1,3,5", []int{1, 3, 5}},
		{"5,1,3,3", []int{1, 3, 5}},
		{"0-2,1-4", []int{0, 1, 2, 3, 4}},
		{"7-7", []int{7}},
		{"0-7:2", []int{0, 2, 4, 6}},
		{"0-7:2/4", []int{0, 1, 4, 5}},
		{"0-9:1/5", []int{0, 5}},
		{"0-3:4/4", []int{0, 1, 2, 3}},
		{"0-55,112-167", append(seq(0, 55), seq(112, 167)...)},
		{"8191", []int{8191}},
		{"  2-3 \t\n", []int{2, 3}},
	}
	for _, tc := range tests {
		t.Run(strconv.Quote(tc.in), func(t *testing.T) {
			got, err := ParseCPUList(tc.in)
			if err != nil {
				t.Fatalf("ParseCPUList(%q): %v", tc.in, err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("ParseCPUList(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseCPUListErrors(t *testing.T) {
	tests := []struct {
		in  string
		off int64 // byte offset the error must name
	}{
		{"x", 0},
		{"0-", 2},
		{"-1", 0},
		{"1,", 2},
		{",1", 0},
		{"1,,2", 2},
		{"3-1", 2},
		{"0-3x", 3},
		{"0 1", 1},
		{"8192", 0},
		{"0-99999999999999999999", 2},
		{"0-7:0/4", 4},
		{"0-7:5/4", 4},
		{"0-7:2/", 6},
		{"0-7:", 4},
		{"0:2", 1},
		{"0-3\n4", 3},
		{"0x10", 1},
	}
	for _, tc := range tests {
		t.Run(strconv.Quote(tc.in), func(t *testing.T) {
			got, err := ParseCPUList(tc.in)
			if err == nil {
				t.Fatalf("ParseCPUList(%q) = %v, want an error", tc.in, got)
			}
			if !errors.Is(err, ErrBadCPUList) {
				t.Fatalf("error %v is not ErrBadCPUList", err)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not *Error", err)
			}
			if e.Off != tc.off {
				t.Fatalf("error %q names offset %d, want %d", err, e.Off, tc.off)
			}
		})
	}
}

func TestFormatCPUList(t *testing.T) {
	tests := []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{0}, "0"},
		{[]int{0, 1}, "0-1"},
		{[]int{3, 0, 1, 2, 8, 9, 10, 11}, "0-3,8-11"},
		{[]int{1, 3, 5, 5}, "1,3,5"},
		{append(seq(0, 55), seq(112, 167)...), "0-55,112-167"},
	}
	for _, tc := range tests {
		if got := FormatCPUList(tc.in); got != tc.want {
			t.Errorf("FormatCPUList(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzCPUList checks that ParseCPUList never panics, returns sorted
// unique CPUs within bounds, and that its result survives a round trip
// through FormatCPUList. Seeds: testdata/fuzz/FuzzCPUList.
func FuzzCPUList(f *testing.F) {
	for _, s := range []string{"", "0-3,8-11\n", "0-7:2", "0-7:2/4", "1,3,5", "0-", "8191"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseCPUList(s)
		if err != nil {
			var e *Error
			if !errors.Is(err, ErrBadCPUList) || !errors.As(err, &e) || e.Off < 0 || e.Off > int64(len(s)) {
				t.Fatalf("ParseCPUList(%q): malformed error %v", s, err)
			}
			return
		}
		for i, c := range cpus {
			if c < 0 || c > MaxCPU || (i > 0 && c <= cpus[i-1]) {
				t.Fatalf("ParseCPUList(%q) = %v: not sorted, unique and in range", s, cpus)
			}
		}
		again, err := ParseCPUList(FormatCPUList(cpus))
		if err != nil || !slices.Equal(again, cpus) {
			t.Fatalf("round trip of %q: %v, %v; want %v", s, again, err, cpus)
		}
	})
}

func BenchmarkParseCPUList(b *testing.B) {
	const s = "0-55,112-167\n"
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		cpus, err := ParseCPUList(s)
		if err != nil {
			b.Fatal(err)
		}
		n += len(cpus)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "cpus/s")
}
