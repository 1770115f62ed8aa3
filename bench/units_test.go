package bench

import (
	"errors"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  bool
	}{
		{"4096", 4096, false},
		{"4k", 4096, false},
		{"4K", 4096, false},
		{"4kb", 4096, false},
		{"4KiB", 4096, false},
		{"1m", 1 << 20, false},
		{"1M", 1 << 20, false},
		{"2g", 2 << 30, false},
		{"2G", 2 << 30, false},
		{"2GiB", 2 << 30, false},
		{"2GB", 2 << 30, false},
		{"1t", 1 << 40, false},
		{"1.5g", 3 << 29, false},
		{" 8k ", 8192, false},
		{"", 0, true},
		{"k", 0, true},
		{"4x", 0, true},
		{"4ki", 0, true},
		{"4ib", 0, true},
		{"-4k", 0, true},
		{"99999999999999999999", 0, true},
		{"9000000p", 0, true},
		{"1.2.3k", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, err=%v", tt.in, got, err, tt.want, tt.err)
		}
		if err != nil && !errors.Is(err, ErrBadOption) {
			t.Errorf("ParseSize(%q) error %v is not ErrBadOption", tt.in, err)
		}
	}
}

func TestParseTime(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"5", 5 * time.Second, false},
		{"5s", 5 * time.Second, false},
		{"500ms", 500 * time.Millisecond, false},
		{"250us", 250 * time.Microsecond, false},
		{"1m", time.Minute, false},
		{"1.5s", 1500 * time.Millisecond, false},
		{"2h", 2 * time.Hour, false},
		{"1d", 24 * time.Hour, false},
		{"", 0, true},
		{"s", 0, true},
		{"5x", 0, true},
		{"1e9d", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseTime(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseTime(%q) = %v, %v; want %v, err=%v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestFormatting(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{fmtNum(114303), "114k"},
		{fmtNum(15234), "15.2k"},
		{fmtNum(1234), "1234"},
		{fmtNum(2.5e6), "2500k"},
		{fmtBytes(468188479, true), "446MiB"},
		{fmtBytes(468188479, false), "468MB"},
		{fmtBytes(4096, true), "4096B"},
		{fmtDur(1.27e6), "1.27ms"},
		{fmtDur(812), "812ns"},
		{PercentileKey(99.95), "99.950000"},
		{PercentileKey(1), "1.000000"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

// FuzzParseSize checks that sizes and times never panic and that accepted
// sizes are non-negative.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"4k", "2GiB", "1.5g", "4096", "9000000p", "", "1e9", "500ms", "1m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := ParseSize(s); err == nil && n < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
		if d, err := ParseTime(s); err == nil && d < 0 {
			t.Fatalf("ParseTime(%q) = %v", s, d)
		}
	})
}
