package codec_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/pagefeed/pagefeed/codec"
	"github.com/pagefeed/pagefeed/codec/codectest"
)

// expectedUnsupported lists the columns of parquet-testing that codec
// refuses, with the reason (a substring of the error). Everything else must
// decode page by page exactly as pqarrow reads the whole column.
var expectedUnsupported = map[string]string{
	// pqarrow refuses these values too ("outside the Arrow nanosecond range").
	"int96_from_spark.parquet/a": "INT96 timestamp is outside the Arrow nanosecond range",
	// A map whose key is optional: pqarrow cannot build its Arrow schema.
	"incorrect_map_schema.parquet/my_map.key_value.key":   "MAP keys must be required",
	"incorrect_map_schema.parquet/my_map.key_value.value": "MAP keys must be required",
}

// TestParquetTestingConformance decodes every page of every column of
// parquet-testing on its own and compares it with pqarrow's whole-column
// read (codectest.Check, the checker `pagefeed verify` runs).
func TestParquetTestingConformance(t *testing.T) {
	dir := "../../shared/parquet-testing/data"
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("parquet-testing data not present: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	sort.Strings(files)
	d := codec.NewDecoder(codec.Options{})
	defer d.Close()
	var report []string
	ok, unsup, norefs := 0, 0, 0
	for _, path := range files {
		base := filepath.Base(path)
		rdr, err := codectest.Open(path)
		if err != nil {
			report = append(report, fmt.Sprintf("%s: open: %v", base, err))
			continue
		}
		fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
		if err != nil {
			report = append(report, fmt.Sprintf("%s: pqarrow: %v", base, err))
			fr = nil
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		md := rdr.MetaData()
		for col := 0; col < md.Schema.NumColumns(); col++ {
			key := base + "/" + md.Schema.Column(col).Path()
			var res error
			noref := false
			for rg := 0; rg < md.NumRowGroups() && res == nil; rg++ {
				cp, err := codectest.ReadChunk(f, path, md, rg, col)
				if err != nil {
					res = err
					break
				}
				var ref arrow.Array
				if fr == nil {
					err = errors.New("pqarrow cannot open the file")
				} else {
					ref, err = codectest.Reference(fr, rg, col)
				}
				if err != nil {
					// pqarrow cannot read it: decode anyway and count rows;
					// values are checked by dedicated tests.
					noref = true
					report = append(report, fmt.Sprintf("%s: no pqarrow reference (%v)", key, err))
				}
				_, res = codectest.Check(d, cp, ref, nil)
				if ref != nil {
					ref.Release()
				}
			}
			if noref && res == nil {
				norefs++
				continue
			}
			want, expUnsup := expectedUnsupported[key]
			if res != nil && !expUnsup && errors.Is(res, codec.ErrUnsupported) {
				t.Logf("UNSUPPORTED %s: %v", key, res)
			}
			switch {
			case res == nil && !expUnsup:
				ok++
			case res != nil && expUnsup && errors.Is(res, codec.ErrUnsupported) && strings.Contains(res.Error(), want):
				unsup++
			case res == nil:
				t.Errorf("%s: decodes but is listed as unsupported (%s)", key, want)
			default:
				t.Errorf("%s: %v", key, res)
			}
		}
		f.Close()
		rdr.Close()
	}
	for _, r := range report {
		t.Log(r)
	}
	t.Logf("%d columns OK, %d unsupported as expected, %d decoded without a pqarrow reference", ok, unsup, norefs)
}
