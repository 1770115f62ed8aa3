package bench

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseSize parses a fio size: plain bytes ("4096") or a number with a
// binary unit suffix: k, m, g, t, p (any case, optionally followed by "b" or
// "ib"), where k is 1024 as in fio's default kb_base=1024. Unlike fio's
// compatibility mode, "KiB" also means 1024 (fio reads it as 1000 there,
// which surprises everyone). Fractions are allowed with a unit ("1.5g").
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("%w: empty size", ErrBadOption)
	}
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(t[i:])
	if num == "" {
		return 0, fmt.Errorf("%w: size %q has no number", ErrBadOption, s)
	}
	mult := int64(1)
	if unit != "" {
		mult = 0
		if rest := unit[1:]; rest == "" || rest == "b" || rest == "ib" {
			switch unit[0] {
			case 'k':
				mult = 1 << 10
			case 'm':
				mult = 1 << 20
			case 'g':
				mult = 1 << 30
			case 't':
				mult = 1 << 40
			case 'p':
				mult = 1 << 50
			}
		}
		if mult == 0 {
			return 0, fmt.Errorf("%w: size %q has unknown unit %q", ErrBadOption, s, t[i:])
		}
	}
	if !strings.Contains(num, ".") {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n > math.MaxInt64/mult {
			return 0, fmt.Errorf("%w: size %q out of range", ErrBadOption, s)
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: size %q is not a number", ErrBadOption, s)
	}
	v := f * float64(mult)
	if v >= math.MaxInt64 || math.IsNaN(v) {
		return 0, fmt.Errorf("%w: size %q out of range", ErrBadOption, s)
	}
	return int64(v), nil
}

// ParseTime parses a fio time: a plain number is seconds ("5"); suffixes
// us, ms, s, m, h and d are accepted ("500ms", "1m"). Fractions are allowed.
func ParseTime(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(t[i:])
	if num == "" {
		return 0, fmt.Errorf("%w: time %q has no number", ErrBadOption, s)
	}
	var mult time.Duration
	switch unit {
	case "us", "usec":
		mult = time.Microsecond
	case "ms", "msec":
		mult = time.Millisecond
	case "", "s", "sec":
		mult = time.Second
	case "m", "min":
		mult = time.Minute
	case "h":
		mult = time.Hour
	case "d":
		mult = 24 * time.Hour
	default:
		return 0, fmt.Errorf("%w: time %q has unknown unit %q", ErrBadOption, s, t[i:])
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: time %q is not a number", ErrBadOption, s)
	}
	v := f * float64(mult)
	if v >= math.MaxInt64 || math.IsNaN(v) {
		return 0, fmt.Errorf("%w: time %q out of range", ErrBadOption, s)
	}
	return time.Duration(v), nil
}

// parseBool reads a fio boolean: a bare key or 1/0, true/false, on/off, yes/no.
func parseBool(key, v string, bare bool) (bool, error) {
	if bare {
		return true, nil
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "on", "yes":
		return true, nil
	case "0", "false", "off", "no":
		return false, nil
	}
	return false, fmt.Errorf("%w: %s=%q is not a boolean (0 or 1)", ErrBadOption, key, v)
}

// fmtNum formats v like fio's num2str: at most four significant characters
// and a k/M/G suffix ("114k", "15.2k", "1234").
func fmtNum(v float64) string {
	units := []string{"", "k", "M", "G", "T"}
	i := 0
	for v >= 10000 && i < len(units)-1 {
		v /= 1000
		i++
	}
	return trimFloat(v) + units[i]
}

// fmtBytes formats a byte count (or rate) with binary or decimal units:
// "446MiB", "468MB".
func fmtBytes(v float64, binary bool) string {
	base, units := 1000.0, []string{"B", "kB", "MB", "GB", "TB", "PB"}
	if binary {
		base, units = 1024, []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	}
	i := 0
	for v >= 10000 && i < len(units)-1 {
		v /= base
		i++
	}
	return trimFloat(v) + units[i]
}

// trimFloat prints v with three significant digits below 100 and as an
// integer from 100 on or when it is whole.
func trimFloat(v float64) string {
	switch {
	case v >= 100 || v == math.Trunc(v):
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}
