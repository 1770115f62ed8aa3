package plan

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/*")

// TestData runs the cases of testdata/*: each is a command, its input
// lines, "----" and the output it must print. Commands:
//
//	space counts=C,C,... | counts=NxC,... [weights=W,...] [tokens=T] [file] [seed=S] [epoch=E]
//	    the space and epoch the next commands use; prints the totals
//	plan world=W kind=rows|units|tokens batch=B policy=drop|pad|keep
//	    every rank's share: spans, steps, and the pieces at its ends
//	blend weights=W,... take=N,...
//	    the rows each source of a mixture gives to batches of N rows
//	rest world=W kind=… batch=B policy=…
//	    input: one line a rank, "spans=LO-HI,… done=X [taken=LO-HI,…] pending=N";
//	    prints what Reshard leaves and every new rank's share of it
//
// Run with -rewrite to regenerate the outputs after a deliberate change.
func TestData(t *testing.T) {
	files, _ := filepath.Glob("testdata/*")
	if len(files) == 0 {
		t.Fatal("no testdata")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { runData(t, f) })
	}
}

func runData(t *testing.T, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	var e *Epoch
	blocks := strings.Split(strings.TrimRight(string(b), "\n")+"\n", "\n\n")
	for _, block := range blocks {
		lines := strings.Split(strings.TrimRight(block, "\n"), "\n")
		var head []string // comments
		for len(lines) > 0 && strings.HasPrefix(lines[0], "#") {
			head, lines = append(head, lines[0]), lines[1:]
		}
		if len(lines) == 0 {
			out.WriteString(strings.Join(head, "\n") + "\n\n")
			continue
		}
		cmd := lines[0]
		sep := len(lines)
		for i, l := range lines {
			if l == "----" {
				sep = i
				break
			}
		}
		input := lines[1:sep]
		var want string
		if sep < len(lines) {
			want = strings.Join(lines[sep+1:], "\n")
		}
		got := strings.TrimRight(dataCommand(t, cmd, input, &e), "\n")
		if !*rewrite && got != want {
			t.Errorf("%s: %s\ngot:\n%s\nwant:\n%s", path, cmd, got, want)
		}
		for _, h := range head {
			out.WriteString(h + "\n")
		}
		out.WriteString(strings.Join(lines[:sep], "\n") + "\n----\n" + got + "\n\n")
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// args splits "cmd k=v k2=v2 flag" into its keys' values.
func args(t *testing.T, line string) (string, map[string]string) {
	f := strings.Fields(line)
	m := map[string]string{}
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return f[0], m
}

func num(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("number %q: %v", s, err)
	}
	return n
}

// list parses "3,5,2x7" (2x7: two sevens).
func list(t *testing.T, s string) []int64 {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		n, v := "1", f
		if a, b, ok := strings.Cut(f, "x"); ok {
			n, v = a, b
		}
		x, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("list %q: %v", s, err)
		}
		for range num(t, n) {
			out = append(out, x)
		}
	}
	return out
}

func spans(t *testing.T, s string) []Span {
	var out []Span
	if s == "" {
		return nil
	}
	for _, f := range strings.Split(s, ",") {
		a, b, _ := strings.Cut(f, "-")
		out = append(out, Span{num(t, a), num(t, b)})
	}
	return out
}

func params(t *testing.T, m map[string]string) Params {
	p := Params{World: int(num(t, m["world"])), Batch: num(t, m["batch"])}
	switch m["kind"] {
	case "rows":
		p.Kind = Rows
	case "units":
		p.Kind = Units
	case "tokens":
		p.Kind = Tokens
	default:
		t.Fatalf("kind %q", m["kind"])
	}
	pol, err := ParsePolicy(m["policy"])
	if err != nil {
		t.Fatal(err)
	}
	p.Policy = pol
	return p
}

func dataCommand(t *testing.T, line string, input []string, ep **Epoch) string {
	cmd, m := args(t, line)
	var out strings.Builder
	switch cmd {
	case "space":
		var counts []int32
		var n uint64
		if c, ok := m["counts"]; ok {
			for _, v := range list(t, c) {
				counts = append(counts, int32(v))
			}
			n = uint64(len(counts))
		} else {
			n = num(t, m["units"])
		}
		var weights []int64
		if w, ok := m["weights"]; ok {
			weights = list(t, w)
		}
		var tokens uint64
		if v, ok := m["tokens"]; ok {
			tokens = num(t, v)
		}
		_, file := m["file"]
		s, err := NewSpace(n, counts, weights, tokens, file)
		if err != nil {
			return err.Error()
		}
		var seed, epoch uint64
		if v, ok := m["seed"]; ok {
			seed = num(t, v)
		}
		if v, ok := m["epoch"]; ok {
			epoch = num(t, v)
		}
		*ep = s.Epoch(seed, epoch)
		fmt.Fprintf(&out, "units %d, total %d, tokens %d, known %v", s.Len(), s.Total(), s.Tokens(), s.Known())
	case "plan":
		e := *ep
		p := params(t, m)
		for r := 0; r < p.World; r++ {
			p.Rank = r
			sh, err := e.Plan(p)
			if err != nil {
				return err.Error()
			}
			fmt.Fprintf(&out, "rank %d: %v steps %d%s%s%s\n", r, sh.Spans, sh.Steps, map[bool]string{true: " forced"}[sh.Force], ends(e, sh), batchEndsOf(sh))
			if r == p.World-1 {
				fmt.Fprintf(&out, "dropped %v padded %v", sh.Dropped, sh.Padded)
			}
		}
	case "rest":
		e := *ep
		p := params(t, m)
		var old []Progress
		for _, l := range input {
			_, a := args(t, "rank "+l)
			old = append(old, Progress{Spans: spans(t, a["spans"]), Cursor: Cursor{Done: num(t, a["done"]), Taken: spans(t, a["taken"])},
				Pending: num(t, a["pending"])})
		}
		rest, err := Reshard(old)
		if err != nil {
			return err.Error()
		}
		fmt.Fprintf(&out, "rest %v pending %d\n", rest.Spans, rest.Pending)
		for r := 0; r < p.World; r++ {
			p.Rank = r
			sh, err := e.RestShare(rest, p, 1)
			if err != nil {
				return err.Error()
			}
			fmt.Fprintf(&out, "rank %d: %v pending %d steps %d%s\n", r, sh.Spans, sh.Pending, sh.Steps, batchEndsOf(sh))
		}
		sh, _ := rest.Share(p, e.Space().Total(), 1)
		fmt.Fprintf(&out, "dropped %v pending %d", sh.Dropped, sh.DroppedPending)
	case "blend":
		// blend weights=W,... take=N,N,...: the rows each source gives
		// to batches of N rows, and the counters after each.
		var ws []float64
		for _, f := range strings.Split(m["weights"], ",") {
			w, err := strconv.ParseFloat(f, 64)
			if err != nil {
				t.Fatalf("weight %q: %v", f, err)
			}
			ws = append(ws, w)
		}
		b, err := NewBlend(ws)
		if err != nil {
			return err.Error()
		}
		for _, n := range list(t, m["take"]) {
			counts := make([]uint64, len(ws))
			b.Take(uint64(n), counts)
			fmt.Fprintf(&out, "take %d: %v given %v\n", n, counts, b.Given())
		}
	default:
		t.Fatalf("unknown command %q", cmd)
	}
	return out.String()
}

// batchEndsOf lists where a share's batches end (batches of units that
// count rows), up to 8 of them.
func batchEndsOf(sh Share) string {
	switch {
	case sh.Ends == nil:
		return ""
	case len(sh.Ends) > 8:
		return fmt.Sprintf(", batches end %v … %d", sh.Ends[:8], sh.Ends[len(sh.Ends)-1])
	}
	return fmt.Sprintf(", batches end %v", sh.Ends)
}

// ends describes the pieces at a share's ends (cut at its batches'
// ends): their position, unit and rows kept, where they are cut.
func ends(e *Epoch, sh Share) string {
	var ps []Piece
	w := e.Walk(sh.Spans, Start(sh.Spans))
	w.Cut(sh.Ends)
	for p, ok := w.Next(); ok; p, ok = w.Next() {
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return ""
	}
	desc := func(p Piece) string {
		cut := ""
		if p.Cut {
			cut = fmt.Sprintf(" rows %d-%d", p.Lo, p.Hi)
		}
		return fmt.Sprintf("pos %d unit %d%s", p.Pos, p.Item, cut)
	}
	return fmt.Sprintf(", %d pieces, first %s, last %s", len(ps), desc(ps[0]), desc(ps[len(ps)-1]))
}
