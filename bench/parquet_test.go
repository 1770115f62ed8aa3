package bench

import (
	"errors"
	"github.com/pagefeed/pagefeed/rinas"

	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pagefeed/pagefeed/internal/gen"
)

func genParquet(t *testing.T) (dir string, rows int64) {
	t.Helper()
	dir = t.TempDir()
	res, err := gen.Run(context.Background(), gen.Config{Dir: dir, Files: 2, RowsPerFile: 600, PageSize: 4096,
		RowGroupRows: 200, PageIndex: true, PageVersion: 2, Codec: "zstd", Seed: 3, MeanTokens: 64})
	if err != nil {
		t.Fatal(err)
	}
	return dir, res.Rows
}

func TestRunParquetModes(t *testing.T) {
	dir, rows := genParquet(t)
	quiet := func(string, ...any) {}
	for _, tc := range []ParquetConfig{
		{Shuffle: rinas.ShufflePage, Fetch: rinas.Unordered},
		{Shuffle: rinas.ShufflePage, Fetch: rinas.Ordered},
		{Shuffle: rinas.ShuffleStream, Rows: 100},
		{Shuffle: rinas.ShuffleRow, Rows: 50, Batch: 32},
		{Shuffle: rinas.ShufflePage, IOEngine: ParquetPsync},
		{Shuffle: rinas.ShufflePage, IOEngine: ParquetMmap},
		{Shuffle: rinas.ShufflePage, Engine: ParquetArrowGo},
	} {
		name := tc.Shuffle.String() + "/" + tc.Fetch.String() + "/" + tc.IOEngine.String() + "/" + tc.Engine.String()
		t.Run(name, func(t *testing.T) {
			cfg := tc
			cfg.Paths = []string{filepath.Join(dir, "*.parquet")}
			cfg.Column = "input_ids"
			cfg.Loops = 1
			cfg.Logf = quiet
			cfg.DumpOrder = filepath.Join(t.TempDir(), "order")
			res, err := RunParquet(context.Background(), cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Rows != rows {
				t.Fatalf("%d rows, want %d", res.Rows, rows)
			}
			if res.Pages == 0 || res.DiskBytes == 0 {
				t.Fatalf("pages %d, disk bytes %d", res.Pages, res.DiskBytes)
			}
			lines := readLines(t, cfg.DumpOrder)
			seen := map[string]bool{}
			for _, l := range lines {
				if seen[l] {
					t.Fatalf("order dump lists %q twice", l)
				}
				seen[l] = true
			}
			if cfg.Rows > 0 {
				if int64(len(lines)) != rows {
					t.Fatalf("row dump has %d lines, want %d", len(lines), rows)
				}
			} else if int64(len(lines)) != res.Pages {
				t.Fatalf("order dump has %d lines, %d pages delivered", len(lines), res.Pages)
			}
			var buf bytes.Buffer
			if err := res.WriteJSON(&buf); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Jobs []struct {
					Read struct {
						IOPS    float64 `json:"iops"`
						BWBytes int64   `json:"bw_bytes"`
						IOBytes int64   `json:"io_bytes"`
					} `json:"read"`
					PageBytes  int64    `json:"page_bytes"`
					Pages      *int64   `json:"pages"`
					Rows       *int64   `json:"rows"`
					RowsPerSec *float64 `json:"rows_per_sec"`
					BatchLat   struct {
						Mean       float64          `json:"mean"`
						Percentile map[string]int64 `json:"percentile"`
					} `json:"batch_lat_ns"`
					Growth *int64  `json:"page_cache_growth_bytes"`
					RSS    *int64  `json:"rss_peak_bytes"`
					Index  *int64  `json:"index_build_ns"`
					Shuf   *string `json:"shuffle"`
					Fetch  *string `json:"fetch"`
					Engine *struct {
						Workers int    `json:"workers"`
						Enters  uint64 `json:"enters"`
						Reaped  uint64 `json:"reaped"`
					} `json:"engine_stats"`
				} `json:"jobs"`
			}
			if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			j := doc.Jobs[0]
			if j.Read.IOPS <= 0 || j.Read.BWBytes <= 0 || j.Pages == nil || *j.Rows != rows || j.RowsPerSec == nil ||
				j.Growth == nil || j.RSS == nil || *j.RSS <= 0 || j.Index == nil || j.Shuf == nil || j.Fetch == nil {
				t.Fatalf("JSON misses fields: %s", buf.String())
			}
			// The device moves at least the pages (more where O_DIRECT
			// rounds reads out to the alignment).
			if j.PageBytes <= 0 || j.Read.IOBytes < j.PageBytes {
				t.Fatalf("io_bytes %d, page_bytes %d: %s", j.Read.IOBytes, j.PageBytes, buf.String())
			}
			if _, ok := j.BatchLat.Percentile["99.000000"]; !ok {
				t.Fatalf("batch_lat_ns has no p99: %s", buf.String())
			}
			// Engine counters: only where pagefeed's io_uring engine reads
			// the pages, and then one reap per page read at least.
			uring := strings.HasPrefix(res.EngineInfo, "io_uring") && cfg.Engine != ParquetArrowGo
			switch {
			case !uring && j.Engine != nil:
				t.Fatalf("engine_stats without an io_uring engine (%q): %s", res.EngineInfo, buf.String())
			case uring && j.Engine == nil:
				t.Fatalf("no engine_stats on %q: %s", res.EngineInfo, buf.String())
			case uring && cfg.Fetch != rinas.Ordered && (j.Engine.Reaped < uint64(res.Pages) || j.Engine.Enters == 0 || j.Engine.Workers < 1):
				t.Fatalf("engine_stats %+v for %d pages", *j.Engine, res.Pages)
			}
		})
	}
}

func TestRunParquetBadInput(t *testing.T) {
	dir, _ := genParquet(t)
	for _, cfg := range []ParquetConfig{
		{},
		{Paths: []string{filepath.Join(dir, "missing*.parquet")}},
		{Paths: []string{dir}, Column: "nope"},
		{Paths: []string{dir}, Shuffle: rinas.Shuffle(9)},
		{Paths: []string{dir}, Fetch: rinas.Fetch(-1)},
		{Paths: []string{dir}, IOEngine: ParquetIO(7)},
		{Paths: []string{dir}, Engine: ParquetEngine(3)},
		{Paths: []string{dir}, IODepth: 5000},
	} {
		cfg.Logf = func(string, ...any) {}
		if _, err := RunParquet(context.Background(), cfg, nil); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

func TestCompareParquetTable(t *testing.T) {
	dir, _ := genParquet(t)
	cfg := ParquetCompareConfig{
		Base:    ParquetConfig{Paths: []string{dir}, Column: "input_ids", Logf: func(string, ...any) {}},
		Runtime: 100 * time.Millisecond,
		Rounds:  2,
	}
	rows, err := CompareParquet(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(DefaultParquetCases) {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		if len(r.Runs) != 2 || r.RowsPerSec <= 0 {
			t.Fatalf("%s: %d runs, %v rows/s", r.Label, len(r.Runs), r.RowsPerSec)
		}
	}
	var buf bytes.Buffer
	if err := WriteParquetTable(&buf, rows); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(buf.String(), "\n"); got != len(rows)+1 {
		t.Fatalf("table has %d lines:\n%s", got, buf.String())
	}
}

// TestParseParquetNames checks the names Parquet mode parses once into
// ParquetConfig's typed fields, and back.
func TestParseParquetNames(t *testing.T) {
	for _, n := range []string{"auto", "io_uring", "psync", "mmap"} {
		k, err := ParseParquetIO(n)
		if err != nil || k.String() != n {
			t.Errorf("ParseParquetIO(%q) = %v, %v", n, k, err)
		}
	}
	for _, n := range []string{"pagefeed", "arrowgo", "decode"} {
		e, err := ParseParquetEngine(n)
		if err != nil || e.String() != n {
			t.Errorf("ParseParquetEngine(%q) = %v, %v", n, e, err)
		}
	}
	if k, err := ParseParquetIO(""); err != nil || k != ParquetIOAuto {
		t.Errorf(`ParseParquetIO("") = %v, %v`, k, err)
	}
	if _, err := ParseParquetIO("libaio"); !errors.Is(err, ErrBadOption) {
		t.Errorf("libaio: %v", err)
	}
	if _, err := ParseParquetEngine("duckdb"); !errors.Is(err, ErrBadOption) {
		t.Errorf("duckdb: %v", err)
	}
	var zero ParquetConfig
	if zero.Shuffle != rinas.ShufflePage || zero.Fetch != rinas.Unordered || zero.IOEngine != ParquetIOAuto || zero.Engine != ParquetPagefeed {
		t.Error("the zero ParquetConfig is not page/unordered/auto/pagefeed")
	}
}
