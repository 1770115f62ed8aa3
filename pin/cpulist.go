package pin

import (
	"slices"
	"strconv"
	"strings"
)

// MaxCPU is the largest CPU number ParseCPUList accepts. It matches the
// kernel's largest NR_CPUS (8192) and bounds what a garbled file can make
// us allocate.
const MaxCPU = 8191

// ParseCPUList parses the kernel's cpulist format, as found in sysfs files
// such as devices/system/cpu/online and local_cpulist:
//
//	""            the empty set (a memory-only NUMA node)
//	"0-3,8-11"    ranges and single CPUs, comma separated
//	"0-7:2/4"     the kernel's grouped form: in each group of 4 from 0-7, the first 2
//	"0-7:2"       shorthand for a stride of 2 ({0,2,4,6}), i.e. "0-7:1/2"
//
// Surrounding white space (the trailing newline) is ignored. The result is
// sorted and free of duplicates; it is nil for the empty set. A malformed
// list returns an *Error wrapping ErrBadCPUList whose Off is the byte
// offset of the fault within s.
func ParseCPUList(s string) ([]int, error) {
	var cpus []int
	start := 0
	for start < len(s) && isSpace(s[start]) {
		start++
	}
	end := len(s)
	for end > start && isSpace(s[end-1]) {
		end--
	}
	if start == end {
		return nil, nil
	}
	p := cpuListParser{s: s, i: start, end: end}
	for {
		lo, err := p.num()
		if err != nil {
			return nil, err
		}
		hi, used, group := lo, 1, 1
		if p.peek() == '-' {
			p.i++
			at := p.i
			if hi, err = p.num(); err != nil {
				return nil, err
			}
			if hi < lo {
				return nil, p.fail(at, "range end "+strconv.Itoa(hi)+" before its start "+strconv.Itoa(lo))
			}
			if p.peek() == ':' {
				p.i++
				at = p.i // a bad group is reported where it starts
				if used, err = p.num(); err != nil {
					return nil, err
				}
				if p.peek() == '/' {
					p.i++
					if group, err = p.num(); err != nil {
						return nil, err
					}
				} else {
					// "a-b:s" is a stride: one CPU out of every s.
					used, group = 1, used
				}
				if used == 0 || group == 0 || used > group {
					return nil, p.fail(at, "bad group "+strconv.Itoa(used)+"/"+strconv.Itoa(group))
				}
			}
		}
		cpus = slices.Grow(cpus, (hi-lo)/group*used+used)
		for c := lo; c <= hi; c++ {
			if (c-lo)%group < used {
				cpus = append(cpus, c)
			}
		}
		if p.i == p.end {
			break
		}
		if s[p.i] != ',' {
			return nil, p.fail(p.i, "unexpected "+strconv.QuoteRune(rune(s[p.i])))
		}
		p.i++
	}
	slices.Sort(cpus)
	return slices.Compact(cpus), nil
}

func isSpace(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }

type cpuListParser struct {
	s      string
	i, end int
}

func (p *cpuListParser) peek() byte {
	if p.i < p.end {
		return p.s[p.i]
	}
	return 0
}

// num reads a decimal CPU number in [0, MaxCPU].
func (p *cpuListParser) num() (int, error) {
	at := p.i
	n := 0
	for p.i < p.end && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		n = n*10 + int(p.s[p.i]-'0')
		if n > MaxCPU {
			return 0, p.fail(at, "number above "+strconv.Itoa(MaxCPU))
		}
		p.i++
	}
	if p.i == at {
		if p.i == p.end {
			return 0, p.fail(at, "number expected at end")
		}
		return 0, p.fail(at, "number expected, found "+strconv.QuoteRune(rune(p.s[p.i])))
	}
	return n, nil
}

func (p *cpuListParser) fail(off int, why string) error {
	return &Error{Op: "parse cpulist", Off: int64(off), Err: cpuListError(why)}
}

// cpuListError is the cause of an ErrBadCPUList.
type cpuListError string

func (e cpuListError) Error() string        { return ErrBadCPUList.Error() + ": " + string(e) }
func (e cpuListError) Is(target error) bool { return target == ErrBadCPUList }

// FormatCPUList writes cpus in the kernel's cpulist form ("0-3,8-11"),
// the inverse of ParseCPUList. cpus need not be sorted; duplicates are
// dropped. The empty set formats as "".
func FormatCPUList(cpus []int) string {
	s := slices.Clone(cpus)
	slices.Sort(s)
	s = slices.Compact(s)
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(s[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(s[j]))
		}
		i = j + 1
	}
	return b.String()
}
