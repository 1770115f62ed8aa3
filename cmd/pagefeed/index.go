package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/index"
)

func init() {
	register("index", "build (or load) the page index of Parquet files and summarise it", runIndex)
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error {
	for _, x := range strings.Split(v, ",") {
		if x = strings.TrimSpace(x); x != "" {
			*s = append(*s, x)
		}
	}
	return nil
}

// indexReport is the JSON of `pagefeed index --json`.
type indexReport struct {
	Files         int     `json:"files"`
	RowGroups     int     `json:"row_groups"`
	ColumnChunks  int     `json:"column_chunks"`
	Pages         int64   `json:"pages"`
	Rows          int64   `json:"rows"`
	Source        source  `json:"source"`
	ResidentBytes int64   `json:"resident_bytes"`
	BytesPerPage  float64 `json:"bytes_per_page"`
	BuildMs       float64 `json:"build_ms"`
	Sidecar       string  `json:"sidecar"`
	SidecarPath   string  `json:"sidecar_path,omitempty"`
	ReusedFiles   int     `json:"reused_files,omitempty"` // from a stale sidecar, not re-read
	// CountedPages: pages whose rows were counted from their levels (V1
	// pages of repeated columns without an offset index), once per file
	// version; CountedBytes: what that read again.
	CountedPages int64 `json:"counted_pages"`
	CountedBytes int64 `json:"counted_bytes"`
	Columns      []col `json:"columns"`
	// Spans, with several columns, describes the row spans a loader's
	// page shuffle would use: one per page of the lead column (the one
	// with the most bytes), and how many pages of each other column a
	// span reads on average.
	Spans *spans `json:"spans,omitempty"`
}

type spans struct {
	Lead         string             `json:"lead"`
	Spans        int                `json:"spans"`
	PagesPerSpan map[string]float64 `json:"pages_per_span"`
}

// source counts column chunks by where their page locations came from.
type source struct {
	OffsetIndex int `json:"offset_index"`
	HeaderWalk  int `json:"header_walk"`
	// OffsetIndexIgnored counts the chunks among HeaderWalk whose offset
	// index contradicts itself, so their headers were walked instead.
	OffsetIndexIgnored int `json:"offset_index_ignored"`
}

type col struct {
	Path  string `json:"path"`
	Pages int    `json:"pages"`
	Bytes int64  `json:"bytes"` // data pages, headers included
}

// runIndex: pagefeed index PATH... [--column NAME]... [--sidecar FILE |
// --no-sidecar] [--header-walk] [--json]. Flags and paths may be mixed.
func runIndex(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("index", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cols stringList
	fs.Var(&cols, "column", "project these columns (dotted leaf paths or top-level names, comma-separated); repeatable; default all")
	sidecar := fs.String("sidecar", "", "sidecar `file` (default: next to the dataset)")
	noSidecar := fs.Bool("no-sidecar", false, "neither read nor write a sidecar")
	walk := fs.Bool("header-walk", false, "ignore offset indexes and walk page headers")
	asJSON := fs.Bool("json", false, "print one JSON object")
	par := fs.Int("parallel", 0, "reads in flight (default max(8, 2×GOMAXPROCS))")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: pagefeed index PATH... [--column NAME]... [--sidecar FILE | --no-sidecar] [--json]")
		fs.PrintDefaults()
	}
	var paths []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		paths = append(paths, args[0])
		args = args[1:]
	}
	if len(paths) == 0 {
		return fmt.Errorf("no PATH given (usage: pagefeed index PATH... [--column NAME]... [--sidecar FILE | --no-sidecar] [--json])")
	}
	if *sidecar != "" && *noSidecar {
		return fmt.Errorf("--sidecar and --no-sidecar exclude each other")
	}
	logf := func(f string, a ...any) { fmt.Fprintf(stderr, "pagefeed index: "+f+"\n", a...) }
	rd := engine.OpenBatchReader(*par, logf)
	defer rd.Close()
	ix, err := index.Build(context.Background(), paths, index.Options{
		Reader:      rd,
		Columns:     cols,
		Sidecar:     *sidecar,
		NoSidecar:   *noSidecar,
		HeaderWalk:  *walk,
		Parallelism: *par,
		Logf:        logf,
	})
	if err != nil {
		return err
	}
	st := ix.Stats()
	r := indexReport{
		Files: st.Files, RowGroups: st.RowGroups, ColumnChunks: st.ColumnChunks,
		Pages: st.Pages, Rows: st.Rows,
		Source:        source{OffsetIndex: st.OffsetIndex, HeaderWalk: st.HeaderWalk, OffsetIndexIgnored: st.OffsetIndexIgnored},
		CountedPages:  st.CountedPages,
		CountedBytes:  st.CountedBytes,
		ResidentBytes: st.ResidentBytes,
		BuildMs:       float64(st.BuildTime.Microseconds()) / 1000,
		Sidecar:       st.Sidecar,
		SidecarPath:   st.SidecarPath,
		ReusedFiles:   st.Reused,
	}
	if st.Pages > 0 {
		r.BytesPerPage = float64(st.ResidentBytes) / float64(st.Pages)
	}
	for k := 0; k < ix.NumColumns(); k++ {
		c := col{Path: ix.Column(k).Path, Pages: ix.NumPages(k)}
		for g := 0; g < c.Pages; g++ {
			c.Bytes += int64(ix.Locate(k, g).Size)
		}
		r.Columns = append(r.Columns, c)
	}
	if ix.NumColumns() > 1 {
		r.Spans = spanReport(ix, r.Columns)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(r)
	}
	fmt.Fprintf(stdout, "files          %d\n", r.Files)
	fmt.Fprintf(stdout, "row groups     %d\n", r.RowGroups)
	fmt.Fprintf(stdout, "column chunks  %d (offset index %d, header walk %d)\n", r.ColumnChunks, r.Source.OffsetIndex, r.Source.HeaderWalk)
	if r.Source.OffsetIndexIgnored > 0 {
		fmt.Fprintf(stdout, "               %d offset index(es) contradicting themselves ignored, their headers walked\n", r.Source.OffsetIndexIgnored)
	}
	fmt.Fprintf(stdout, "pages          %d\n", r.Pages)
	if r.CountedPages > 0 {
		fmt.Fprintf(stdout, "               %d counted from their levels (%d bytes read again)\n", r.CountedPages, r.CountedBytes)
	}
	for _, c := range r.Columns {
		fmt.Fprintf(stdout, "  %-28s %d (%d bytes)\n", c.Path, c.Pages, c.Bytes)
	}
	if sp := r.Spans; sp != nil {
		fmt.Fprintf(stdout, "spans          %d, led by %s\n", sp.Spans, sp.Lead)
		for _, c := range r.Columns {
			if c.Path != sp.Lead {
				fmt.Fprintf(stdout, "  %-28s %.2f pages per span\n", c.Path, sp.PagesPerSpan[c.Path])
			}
		}
	}
	fmt.Fprintf(stdout, "rows           %d\n", r.Rows)
	fmt.Fprintf(stdout, "resident       %d bytes (%.2f per page)\n", r.ResidentBytes, r.BytesPerPage)
	fmt.Fprintf(stdout, "build          %.1f ms\n", r.BuildMs)
	if r.SidecarPath != "" {
		fmt.Fprintf(stdout, "sidecar        %s (%s)\n", r.Sidecar, r.SidecarPath)
	} else {
		fmt.Fprintf(stdout, "sidecar        %s\n", r.Sidecar)
	}
	return nil
}

// spanReport describes the row spans of a page shuffle over several
// columns: each page of the lead column (the most bytes) is a span, and
// every other column reads the pages whose rows overlap it.
func spanReport(ix *index.Index, cols []col) *spans {
	lead := 0
	for k, c := range cols {
		if c.Bytes > cols[lead].Bytes {
			lead = k
		}
	}
	sp := &spans{Lead: cols[lead].Path, Spans: ix.NumPages(lead), PagesPerSpan: map[string]float64{}}
	// chunk-relative first row of page g of column k
	rowOf := func(k, g int) int64 {
		loc := ix.Locate(k, g)
		ci := ix.Chunk(k, loc.Chunk)
		return loc.FirstRow - (ci.FirstRow - ix.File(ci.File).FirstRow)
	}
	for k := range cols {
		if k == lead {
			continue
		}
		total := 0
		for g := 0; g < ix.NumPages(lead); g++ {
			loc := ix.Locate(lead, g)
			r0 := rowOf(lead, g)
			r1 := r0 + int64(loc.NumRows)
			ci := ix.Chunk(k, loc.Chunk)
			n := 0
			for h := ci.FirstPage; h < ci.FirstPage+ci.NumPages; h++ {
				a, b := rowOf(k, h), ci.NumRows
				if h+1 < ci.FirstPage+ci.NumPages {
					b = rowOf(k, h+1)
				}
				if a < r1 && b > r0 {
					n++
				}
			}
			total += n
		}
		if sp.Spans > 0 {
			sp.PagesPerSpan[cols[k].Path] = float64(total) / float64(sp.Spans)
		}
	}
	return sp
}
