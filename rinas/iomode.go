package rinas

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/internal/cgroup"
)

// IOMode is how the loader reads pages: through the page cache or past
// it with O_DIRECT.
type IOMode int

const (
	// IOAuto chooses per file, at Open and again at every epoch's start:
	// buffered reads when the projected bytes stay in the page cache this
	// job can hold, else O_DIRECT but for the files already cached. See
	// Config.IOMode.
	IOAuto IOMode = iota
	// IODirect reads every file with O_DIRECT (buffered where the file
	// system refuses it, as Engine.Direct TryOn does).
	IODirect
	// IOBuffered reads every file through the page cache.
	IOBuffered
)

var ioModeNames = [...]string{"auto", "direct", "buffered"}

func (m IOMode) String() string {
	if m >= 0 && int(m) < len(ioModeNames) {
		return ioModeNames[m]
	}
	return fmt.Sprintf("IOMode(%d)", int(m))
}

// ParseIOMode parses an IOMode name: auto, direct or buffered.
func ParseIOMode(s string) (IOMode, error) {
	for i, n := range ioModeNames {
		if strings.EqualFold(s, n) {
			return IOMode(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown io mode %q (want auto, direct or buffered)", ErrConfig, s)
}

// MarshalText writes the mode's name.
func (m IOMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText parses a mode's name (ParseIOMode), so that JSON configs
// take "io_mode": "auto" | "direct" | "buffered".
func (m *IOMode) UnmarshalText(b []byte) error {
	v, err := ParseIOMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// Auto's rules (Config.IOMode). A file already this resident counts as
// cached: reading it buffered takes no new memory.
const (
	cachedShare = 0.9
	// roomShare is the part of the page cache this job can hold that auto
	// plans to fill: the rest is left for the trainer's own growth and
	// for the node's other files.
	roomShare = 0.75
)

// ioFile is what auto weighs of one file: its projected bytes (the
// projected columns' chunks, dictionaries included) and how many of them
// are in the page cache.
type ioFile struct {
	bytes, resident int64
}

// ioFacts is the memory auto chooses by.
type ioFacts struct {
	// avail is the node's MemAvailable (-1 unknown); localWorld the ranks
	// of this job on the node ($LOCAL_WORLD_SIZE), who share it.
	avail      int64
	localWorld int
	// cgroup is the memory cgroup's Room (cgroup.Unlimited when it has no
	// limit or there is none) and limit its limit, for the reason.
	cgroup, cgLimit int64
}

// ioChoice is the read mode of every file for an epoch and why.
type ioChoice struct {
	direct    []bool // per file of the index
	mode      string // direct, buffered or mixed
	reason    string
	nDirect   int
	nBuffered int
}

// chooseIO is auto's rule, a pure function of the files and the memory.
//
// The page cache this job can hold is the dataset's pages cached now (R)
// plus its share of the memory still free for new cache: the node's
// MemAvailable less R, split among the node's ranks, and no more than the
// memory cgroup leaves (its limit less what it holds that is not page
// cache, less R, counted as charged there). When the projected bytes fit
// in roomShare of that, every file reads buffered: after the first epoch
// its pages come from the cache. When they do not, the files already
// cached (at least cachedShare resident) read buffered, the most cached
// first, while their bytes fit in roomShare: their reads hit the cache
// and take no new memory. Every other file reads with O_DIRECT: filling
// the cache with part of a dataset that does not fit costs a first epoch
// of page-cache churn (measured: slower than O_DIRECT) to save reads only
// where the device, not the CPU, is the limit, and competes with the
// trainer and the node for the memory. Where the memory is unknown every
// file reads O_DIRECT, the mode that never depends on it.
func chooseIO(files []ioFile, f ioFacts) ioChoice {
	c := ioChoice{direct: make([]bool, len(files))}
	var total, res int64
	for _, x := range files {
		total += x.bytes
		res += min(x.resident, x.bytes)
	}
	if f.avail < 0 {
		for i := range c.direct {
			c.direct[i] = true
		}
		c.nDirect = len(files)
		c.mode = "direct"
		c.reason = fmt.Sprintf("direct: the node's available memory is unknown (%s projected)", sizeStr(total))
		return c
	}
	free := max(f.avail-res, 0) / int64(max(f.localWorld, 1))
	if f.cgroup != cgroup.Unlimited {
		free = min(free, max(f.cgroup-res, 0))
	}
	hold := res + free
	budget := int64(float64(hold) * roomShare)
	fits := total <= budget
	order := make([]int, len(files))
	for i := range order {
		order[i] = i
	}
	// The most cached first (the least left to read), then in file order.
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(files[a].bytes-files[a].resident, files[b].bytes-files[b].resident)
	})
	var buffered int64
	for _, i := range order {
		x := files[i]
		cached := float64(x.resident) >= cachedShare*float64(x.bytes)
		if fits || (cached && buffered+x.bytes <= budget) {
			buffered += x.bytes
			c.nBuffered++
			continue
		}
		c.direct[i] = true
		c.nDirect++
	}
	where := fmt.Sprintf("the %s of page cache this job can hold (%s cached now; MemAvailable %s", sizeStr(hold), sizeStr(res), sizeStr(f.avail))
	if f.localWorld > 1 {
		where += fmt.Sprintf(" shared by %d local ranks", f.localWorld)
	}
	if f.cgroup != cgroup.Unlimited {
		where += fmt.Sprintf("; memory cgroup limit %s, %s of it free for page cache", sizeStr(f.cgLimit), sizeStr(f.cgroup))
	}
	where += ")"
	switch {
	case c.nDirect == 0:
		c.mode = "buffered"
		c.reason = fmt.Sprintf("buffered: the projected %s stay in %s", sizeStr(total), where)
	case c.nBuffered == 0:
		c.mode = "direct"
		c.reason = fmt.Sprintf("direct: the projected %s would not stay in %s", sizeStr(total), where)
	default:
		c.mode = "mixed"
		c.reason = fmt.Sprintf("mixed: the projected %s would not stay in %s: %d files already cached (%s) buffered, %d files (%s) direct",
			sizeStr(total), where, c.nBuffered, sizeStr(buffered), c.nDirect, sizeStr(total-buffered))
	}
	return c
}

// fixedIO is the choice of an explicit mode.
func fixedIO(n int, m IOMode) ioChoice {
	c := ioChoice{direct: make([]bool, n), mode: m.String(), reason: m.String() + ": set by Config.IOMode"}
	for i := range c.direct {
		c.direct[i] = m == IODirect
	}
	if m == IODirect {
		c.nDirect = n
	} else {
		c.nBuffered = n
	}
	return c
}

// sizeStr writes bytes in binary units: 236 MiB, 1.5 GiB.
func sizeStr(n int64) string {
	f := float64(n)
	for _, u := range []string{"B", "KiB", "MiB", "GiB", "TiB"} {
		if f < 1024 || u == "TiB" {
			if f >= 10 || u == "B" {
				return fmt.Sprintf("%.0f %s", f, u)
			}
			return fmt.Sprintf("%.1f %s", f, u)
		}
		f /= 1024
	}
	return ""
}

// memoryFacts reads the memory auto chooses by; tests replace it.
var memoryFacts = func() ioFacts {
	f := ioFacts{avail: -1, cgroup: cgroup.Unlimited, cgLimit: cgroup.Unlimited, localWorld: 1}
	if n, err := cgroup.MemAvailable(); err == nil {
		f.avail = n
	}
	if m, err := cgroup.Self(); err == nil && m.Limit != cgroup.Unlimited {
		f.cgroup, f.cgLimit = m.Room(), m.Limit
	}
	if n, err := strconv.Atoi(os.Getenv("LOCAL_WORLD_SIZE")); err == nil && n > 0 {
		f.localWorld = n
	}
	return f
}

// ioState is the loader's current read mode per file. Whoever chooses
// (Open, then the producer between epochs: never two at once) owns
// extent and bytes; cur is set by the chooser and read by Stats under mu.
type ioState struct {
	mu     sync.Mutex
	extent [][]engine.Extent // per file: the projected chunks' byte ranges
	bytes  []int64           // per file: their sum
	cur    ioChoice
}

// fileExtents lists each file's projected byte ranges: every projected
// column chunk from its dictionary (or first page) to its last page's
// end.
func (l *Loader) fileExtents() {
	s := &l.io
	s.extent = make([][]engine.Extent, l.ix.NumFiles())
	s.bytes = make([]int64, l.ix.NumFiles())
	for _, k := range l.proj {
		for c := 0; c < l.ix.NumChunks(); c++ {
			ci := l.ix.Chunk(k, c)
			if ci.NumPages == 0 && ci.DictSize == 0 {
				continue
			}
			var lo, hi int64 = -1, 0
			if ci.DictSize > 0 {
				lo, hi = ci.DictOffset, ci.DictOffset+int64(ci.DictSize)
			}
			if ci.NumPages > 0 {
				first := l.ix.Locate(k, ci.FirstPage)
				last := l.ix.Locate(k, ci.FirstPage+ci.NumPages-1)
				if lo < 0 || first.Offset < lo {
					lo = first.Offset
				}
				hi = max(hi, last.Offset+int64(last.Size))
			}
			s.extent[ci.File] = append(s.extent[ci.File], engine.Extent{Off: lo, Len: hi - lo})
			s.bytes[ci.File] += hi - lo
		}
	}
}

// residency measures how many of a file's bytes in ranges are in the
// page cache (engine.Resident); tests replace it, as they do memoryFacts.
var residency = engine.Resident

// ioFiles returns what auto weighs of each of l's files: its projected
// bytes and how many of them are cached now.
func (l *Loader) ioFiles() []ioFile {
	if l.io.extent == nil {
		l.fileExtents()
	}
	files := make([]ioFile, l.ix.NumFiles())
	for i := range files {
		files[i].bytes = l.io.bytes[i]
		// A file that cannot be measured counts as not cached: an error
		// reading it surfaces when its pages are read.
		files[i].resident, _, _ = residency(l.ix.File(i).Path, l.io.extent[i])
	}
	return files
}

// chooseMode is the choice of mode over n files: fixed, or auto's rule
// over what files measures (called only under auto).
func chooseMode(mode IOMode, n int, files func() []ioFile) ioChoice {
	if mode != IOAuto {
		return fixedIO(n, mode)
	}
	return chooseIO(files(), memoryFacts())
}

// set makes c the current choice and, where it changes one made before,
// says so through logf: the first choice is in Stats, a change between
// epochs is news.
func (s *ioState) set(c ioChoice, logf func(string, ...any)) {
	s.mu.Lock()
	prev := s.cur
	s.cur = c
	s.mu.Unlock()
	if logf != nil && prev.reason != "" && (prev.mode != c.mode || prev.nDirect != c.nDirect) {
		logf("reads change: %s", c.reason)
	}
}

// chooseModes decides every file's read mode for the next epoch
// (Config.IOMode). A mixture's sources do not choose their own: the
// mixture chooses over all of them (mixture.chooseModes).
func (l *Loader) chooseModes() {
	l.io.set(chooseMode(l.cfg.IOMode, l.ix.NumFiles(), l.ioFiles), l.cfg.Logf)
}

// part is files [lo, hi) of c: one source's files in a mixture's choice
// over the union of its sources' files, counted and named as the
// source's own, the reason the mixture's.
func (c ioChoice) part(lo, hi int) ioChoice {
	p := ioChoice{direct: c.direct[lo:hi]}
	for _, d := range p.direct {
		if d {
			p.nDirect++
		} else {
			p.nBuffered++
		}
	}
	switch {
	case p.nDirect == 0:
		p.mode = "buffered"
	case p.nBuffered == 0:
		p.mode = "direct"
	default:
		p.mode = "mixed"
	}
	p.reason = p.mode + ": the mixture's choice over all its sources' files, " + c.reason
	return p
}

// fileMode returns the engine's open mode of a file read direct or not.
func (l *Loader) fileMode(direct bool) engine.Tristate {
	switch {
	case !direct:
		return engine.Off
	case l.cfg.Engine.Direct == engine.On:
		return engine.On
	}
	return engine.TryOn
}

// applyModes opens files from now on in the current choice's modes. A
// mixture calls it on its sources from its own goroutine while their
// producers run: the file cache and the synchronous reader take the
// modes atomically, and a file open in another mode is reopened once
// idle.
func (l *Loader) applyModes() {
	l.io.mu.Lock()
	c := l.io.cur
	l.io.mu.Unlock()
	modes := make([]engine.Tristate, len(c.direct))
	for i, d := range c.direct {
		modes[i] = l.fileMode(d)
	}
	l.fc.setModes(modes)
	if l.direct != nil {
		m := make(map[string]engine.Tristate, len(modes))
		for i, mode := range modes {
			m[l.ix.File(i).Path] = mode
		}
		l.direct.modes.Store(&m)
	}
}

// stats copies the current choice into s.
func (s *ioState) stats(st *Stats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st.IOMode, st.IOReason, st.DirectFiles, st.BufferedFiles = s.cur.mode, s.cur.reason, s.cur.nDirect, s.cur.nBuffered
}
