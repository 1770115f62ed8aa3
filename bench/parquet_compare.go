package bench

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pagefeed/pagefeed/rinas"
)

// ParquetCase is one configuration of a Parquet comparison.
type ParquetCase struct {
	Label string
	Short string // for chart axes
	Mod   func(*ParquetConfig)
}

// DefaultParquetCases are the loader against its baselines: RINAS's
// unordered fetch, one-at-a-time ordered fetch, a sequential stream with a
// shuffle buffer, arrow-go reading whole row groups, and page-cache reads
// through mmap.
var DefaultParquetCases = []ParquetCase{
	{"page shuffle, unordered (pagefeed)", "unordered", func(c *ParquetConfig) { c.Shuffle, c.Fetch = rinas.ShufflePage, rinas.Unordered }},
	{"page shuffle, ordered (map-style)", "ordered", func(c *ParquetConfig) { c.Shuffle, c.Fetch = rinas.ShufflePage, rinas.Ordered }},
	{"stream + 8192-row buffer", "stream+buf", func(c *ParquetConfig) {
		c.Shuffle, c.Fetch, c.Rows, c.Buffer = rinas.ShuffleStream, rinas.Unordered, 1024, 8192
	}},
	{"row-group shuffle (Reimu, pagefeed)", "rowgroup", func(c *ParquetConfig) { c.Shuffle, c.Fetch, c.Rows = rinas.ShuffleRowGroup, rinas.Unordered, 1024 }},
	{"page shuffle via arrow-go (row-group reads)", "arrow-go", func(c *ParquetConfig) { c.Shuffle, c.Engine = rinas.ShufflePage, ParquetArrowGo }},
	{"page shuffle, mmap (page cache)", "mmap", func(c *ParquetConfig) { c.Shuffle, c.IOEngine = rinas.ShufflePage, ParquetMmap }},
	{"decode only (pages in memory, all cores)", "decode only", func(c *ParquetConfig) { c.Engine = ParquetDecode }},
}

// ParquetCompareConfig runs each case for Runtime, Rounds times, alternating.
type ParquetCompareConfig struct {
	Base    ParquetConfig
	Cases   []ParquetCase
	Runtime time.Duration
	Rounds  int
	// Progress, when set, gets a line per finished run.
	Progress io.Writer
}

// ParquetCompareRow is one case's median over rounds.
type ParquetCompareRow struct {
	Label, Short            string
	PagesPerSec, RowsPerSec float64
	DiskBps                 float64
	BatchP50Ns, BatchP99Ns  float64
	RSSPeak, CacheGrowth    int64
	DiskBytes               int64
	Runs                    []*ParquetResult
}

// CompareParquet runs the cases alternately and returns their medians.
func CompareParquet(ctx context.Context, cfg ParquetCompareConfig) ([]ParquetCompareRow, error) {
	if len(cfg.Cases) == 0 {
		cfg.Cases = DefaultParquetCases
	}
	if cfg.Rounds <= 0 {
		cfg.Rounds = 1
	}
	if strings.Contains(cfg.Base.Column, ",") {
		// Baselines that read one column (arrow-go, mmap, decode only)
		// cannot take several: they are left out, and said so.
		var keep []ParquetCase
		for _, c := range cfg.Cases {
			pc := cfg.Base
			c.Mod(&pc)
			if pc.Engine != ParquetPagefeed || pc.IOEngine == ParquetMmap {
				if cfg.Progress != nil {
					fmt.Fprintf(cfg.Progress, "%s: left out (one column only; --column names %s)\n", c.Label, cfg.Base.Column)
				}
				continue
			}
			keep = append(keep, c)
		}
		cfg.Cases = keep
	}
	if cfg.Runtime <= 0 {
		cfg.Runtime = 5 * time.Second
	}
	rows := make([]ParquetCompareRow, len(cfg.Cases))
	for r := 0; r < cfg.Rounds; r++ {
		for i, c := range cfg.Cases {
			pc := cfg.Base
			pc.Name = c.Label
			pc.Runtime, pc.Loops = cfg.Runtime, 0
			c.Mod(&pc)
			res, err := RunParquet(ctx, pc, nil)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.Label, err)
			}
			rows[i].Label, rows[i].Short = c.Label, c.Short
			rows[i].Runs = append(rows[i].Runs, res)
			if cfg.Progress != nil {
				j := res.JSON().Jobs[0]
				fmt.Fprintf(cfg.Progress, "round %d/%d %-38s %10.0f pages/s %12.0f rows/s\n", r+1, cfg.Rounds, c.Label, j.Read.IOPS, j.RowsPerSec)
			}
		}
	}
	for i := range rows {
		var pages, rps, bps, p50, p99 []float64
		for _, res := range rows[i].Runs {
			j := res.JSON().Jobs[0]
			pages = append(pages, j.Read.IOPS)
			rps = append(rps, j.RowsPerSec)
			bps = append(bps, float64(j.Read.BWBytes))
			p50 = append(p50, float64(j.BatchLatNs.Percentile["50.000000"]))
			p99 = append(p99, float64(j.BatchLatNs.Percentile["99.000000"]))
			rows[i].RSSPeak = max(rows[i].RSSPeak, res.RSSPeak)
			rows[i].CacheGrowth = max(rows[i].CacheGrowth, res.CacheGrowth)
			rows[i].DiskBytes += res.DiskBytes
		}
		rows[i].PagesPerSec, rows[i].RowsPerSec, rows[i].DiskBps = median(pages), median(rps), median(bps)
		rows[i].BatchP50Ns, rows[i].BatchP99Ns = median(p50), median(p99)
	}
	return rows, nil
}

// WriteParquetTable prints the comparison with ratios against the first row.
func WriteParquetTable(w io.Writer, rows []ParquetCompareRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tpages/s\trows/s\tread MB/s\tbatch p50\tbatch p99\tpage cache growth\tfirst row ÷ this (rows/s)\t")
	for _, r := range rows {
		ratio := "-"
		if r.RowsPerSec > 0 && rows[0].RowsPerSec > 0 {
			ratio = fmt.Sprintf("%.2fx", rows[0].RowsPerSec/r.RowsPerSec)
		}
		growth := fmtBytes(float64(r.CacheGrowth), true)
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.1f\t%s\t%s\t%s\t%s\t\n", r.Label, r.PagesPerSec, r.RowsPerSec, r.DiskBps/1e6,
			fmtDur(r.BatchP50Ns), fmtDur(r.BatchP99Ns), growth, ratio)
	}
	return tw.Flush()
}
