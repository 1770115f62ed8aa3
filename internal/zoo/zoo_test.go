package zoo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// TestCanonicalForms: the canonical form of each kind of Arrow value, and
// the same form from DuckDB's JSON for the zoo's columns.
func TestCanonicalForms(t *testing.T) {
	mem := memory.NewGoAllocator()
	i64 := array.NewInt64Builder(mem)
	i64.AppendValues([]int64{-12, math.MaxInt64}, nil)
	i64.AppendNull()
	f64 := array.NewFloat64Builder(mem)
	f64.AppendValues([]float64{0.1, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 5e-324, 1e21}, nil)
	str := array.NewStringBuilder(mem)
	str.AppendValues([]string{"a\"b\n日本\x00", ""}, nil)
	bin := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	bin.AppendValues([][]byte{[]byte("abc"), {}}, nil)
	lst := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int32)
	lv := lst.ValueBuilder().(*array.Int32Builder)
	lst.Append(true)
	lv.AppendValues([]int32{7, -1}, nil)
	lv.AppendNull()
	lst.Append(true)
	lst.AppendNull()
	large := array.NewLargeListBuilder(mem, arrow.PrimitiveTypes.Int32)
	large.Append(true)
	large.ValueBuilder().(*array.Int32Builder).AppendValues([]int32{3}, nil)
	view := array.NewStringViewBuilder(mem)
	view.Append("a string longer than twelve bytes")
	for _, tc := range []struct {
		b    array.Builder
		want []string
	}{
		{i64, []string{"-12", "9223372036854775807", "null"}},
		{f64, []string{"0.1", "-0", "+Inf", "-Inf", "NaN", "5e-324", "1e+21"}},
		{str, []string{`"a\"b\n日本\x00"`, `""`}},
		{bin, []string{"3:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "0:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}},
		{lst, []string{"[7,-1,null]", "[]", "null"}},
		{large, []string{"[3]"}},
		{view, []string{`"a string longer than twelve bytes"`}},
	} {
		a := tc.b.NewArray()
		for i, want := range tc.want {
			got, err := Canonical(a, i)
			if err != nil || got != want {
				t.Errorf("%s row %d: %q, %v; want %q", a.DataType(), i, got, err, want)
			}
		}
		a.Release()
	}
	b := array.NewBooleanBuilder(mem)
	b.Append(true)
	if _, err := Canonical(b.NewArray(), 0); err == nil {
		t.Error("a boolean has a canonical form; the zoo has no boolean column, so it should be an error")
	}

}

// TestCanonicalFromJSON: DuckDB's reference forms and pagefeed cat's give
// the canonical forms of the values they write.
func TestCanonicalFromJSON(t *testing.T) {
	for _, tc := range []struct {
		forms          Forms
		col, raw, want string // want "": an error
	}{
		{RefForms, "id", `6000001`, "6000001"},
		{RefForms, "id", `"-5"`, "-5"}, // a quoted integer, as JSON writers of BIGINT may
		{RefForms, "input_ids", `[6000001,0,-3,null]`, "[6000001,0,-3,null]"},
		{RefForms, "input_ids", `[6000001,0,-3]`, "[6000001,0,-3]"},
		{RefForms, "input_ids", `[ 1, 2 ,-0]`, "[1,2,0]"},
		{RefForms, "id", `-0`, "0"},
		{RefForms, "input_ids", `[-0]`, "[0]"},
		{RefForms, "input_ids", `[]`, "[]"},
		{RefForms, "text", `"a\"b\n日本\u0000"`, `"a\"b\n日本\x00"`},
		{RefForms, "text", `null`, "null"},
		{RefForms, "score", `"0x1.999999999999ap-4"`, "0.1"},
		{RefForms, "score", `"-0x0p+0"`, "-0"},
		{RefForms, "score", `"nan"`, "NaN"},
		{RefForms, "score", `"-inf"`, "-Inf"},
		{RefForms, "score", `"0x0.0000000000001p-1022"`, "5e-324"},
		{RefForms, "image", `"3:ba78"`, "3:ba78"},
		{RefForms, "score", `0.1`, ""}, // a number is cat's form, not the reference's
		{RefForms, "nope", `1`, ""},
		{CatForms, "score", `0.1`, "0.1"},
		{CatForms, "score", `-0`, "-0"},
		{CatForms, "score", `5e-324`, "5e-324"},
		{CatForms, "score", `"NaN"`, "NaN"},
		{CatForms, "score", `"-Infinity"`, "-Inf"},
		{CatForms, "score", `"0x1p+0"`, ""},
		{CatForms, "image", `"YWJj"`, "3:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{CatForms, "image", `"not base64!"`, ""},
		{CatForms, "input_ids", `[1,2]`, "[1,2]"},
		{CatForms, "text", `"\ud83c\udf89"`, `"🎉"`},
	} {
		got, err := CanonicalJSON(tc.col, json.RawMessage(tc.raw), tc.forms)
		if tc.want == "" {
			if err == nil {
				t.Errorf("forms %d, %s %s: %q, want an error", tc.forms, tc.col, tc.raw, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("forms %d, %s %s: %q, %v; want %q", tc.forms, tc.col, tc.raw, got, err, tc.want)
		}
	}
}

func TestDiffNamesTheListElement(t *testing.T) {
	d := Diff("[1,2,30,4]", "[1,2,3,4]")
	for _, want := range []string{"byte 6", "list element 2", "[1,2,30,4]", "[1,2,3,4]"} {
		if !strings.Contains(d, want) {
			t.Errorf("%q lacks %q", d, want)
		}
	}
	long := strings.Repeat("x", 200)
	if d := Diff(long+"a", long+"b"); !strings.Contains(d, "…") || len(d) > 300 {
		t.Errorf("long values are not cut around the difference: %q", d)
	}
}

func TestRowIDFromEveryColumnKind(t *testing.T) {
	mem := memory.NewGoAllocator()
	ids := array.NewInt64Builder(mem)
	ids.AppendValues([]int64{42}, nil)
	lst := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int32)
	lst.Append(true)
	lst.ValueBuilder().(*array.Int32Builder).AppendValues([]int32{42, 9}, nil)
	lst.Append(true) // empty: names no row
	bin := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	bin.Append([]byte{42, 0, 0, 0, 0, 0, 0, 0, 0xff})
	bin.Append([]byte{1, 2})
	ia, la, ba := ids.NewArray(), lst.NewArray(), bin.NewArray()
	for _, tc := range []struct {
		a    arrow.Array
		i    int
		want int64
		ok   bool
	}{
		{ia, 0, 42, true},
		{la, 0, 42, true},
		{la, 1, 0, false},
		{ba, 0, 42, true},
		{ba, 1, 0, false},
	} {
		if got, ok := RowID(tc.a, tc.i); got != tc.want || ok != tc.ok {
			t.Errorf("%s row %d: %d, %v; want %d, %v", tc.a.DataType(), tc.i, got, ok, tc.want, tc.ok)
		}
	}
}

// TestCacheKeyFollowsTheSources: the zoo's directory changes when a node
// script, the lock file, the Go writer or the arrow-go version changes,
// and only then.
func TestCacheKeyFollowsTheSources(t *testing.T) {
	root := t.TempDir()
	t.Setenv(CacheEnv, filepath.Join(root, "cache"))
	src := filepath.Join(root, "internal", "zoo", "node")
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(src, "package.json"), "{}")
	write(filepath.Join(src, "package-lock.json"), "{}")
	write(filepath.Join(src, "gen.mjs"), "// gen")
	write(filepath.Join(src, "..", "arrowgo.go"), "package zoo")
	write(filepath.Join(root, "go.mod"), "module m\nrequire github.com/apache/arrow-go/v18 v18.8.0\n")
	key := func() string {
		t.Helper()
		d, err := Dir(src)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Dir(d) != filepath.Join(root, "cache") {
			t.Fatalf("%s is not under $%s", d, CacheEnv)
		}
		return d
	}
	k0 := key()
	if key() != k0 {
		t.Fatal("the key is not stable")
	}
	write(filepath.Join(root, "go.mod"), "module m\nrequire github.com/apache/arrow-go/v18 v18.8.0\nrequire golang.org/x/sys v0.1.0\n")
	if key() != k0 {
		t.Error("a go.mod change other than arrow-go's version changed the key")
	}
	for _, change := range []struct{ path, content string }{
		{filepath.Join(src, "gen.mjs"), "// gen, changed"},
		{filepath.Join(src, "data.mjs"), "// a new script"},
		{filepath.Join(src, "package-lock.json"), `{"x":1}`},
		{filepath.Join(src, "..", "arrowgo.go"), "package zoo // changed"},
		{filepath.Join(root, "go.mod"), "module m\nrequire github.com/apache/arrow-go/v18 v18.9.0\n"},
	} {
		before := key()
		write(change.path, change.content)
		if key() == before {
			t.Errorf("changing %s kept the key", change.path)
		}
	}
}

// TestBuildOnceAtomically: builders racing for one directory (goroutines
// here; flock excludes separate opens of the lock file within a process as
// between processes) fill it once, none sees it half-written, and a failed
// fill leaves nothing behind.
func TestBuildOnceAtomically(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "k")
	var fills atomic.Int32
	fill := func(_ context.Context, tmp string) error {
		fills.Add(1)
		if _, err := os.Stat(filepath.Join(dir, "plan.json")); err == nil {
			return errors.New("filling a zoo that exists")
		}
		plan := `[{"name":"w-v","writer":"w","variant":"v","set":"tokens","file":"w-v.parquet","rows":3,"ref":"w-v.ref.jsonl","ref_rows":3}]`
		return os.WriteFile(filepath.Join(tmp, "plan.json"), []byte(plan), 0o644)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			z, err := build(context.Background(), dir, t.Logf, fill)
			if err == nil && (len(z.Fixtures) != 1 || z.Fixtures[0].Path != filepath.Join(dir, "w-v.parquet")) {
				err = fmt.Errorf("zoo %+v", z)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := fills.Load(); n != 1 {
		t.Fatalf("filled %d times", n)
	}
	left, _ := filepath.Glob(dir + ".tmp-*")
	if len(left) != 0 {
		t.Fatalf("temporary directories left: %v", left)
	}

	bad := filepath.Join(t.TempDir(), "k")
	_, err := build(context.Background(), bad, t.Logf, func(_ context.Context, tmp string) error {
		os.WriteFile(filepath.Join(tmp, "plan.json"), []byte("[]"), 0o644)
		return errors.New("writer failed")
	})
	if err == nil {
		t.Fatal("a failed fill built a zoo")
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Fatalf("a failed fill left %s: %v", bad, err)
	}
	left, _ = filepath.Glob(bad + ".tmp-*")
	if len(left) != 0 {
		t.Fatalf("temporary directories left: %v", left)
	}
}

// TestInstallIsQuickWhenInstalled: with the packages installed, install.sh
// returns at once from its stamp, without npm (not on its PATH here).
func TestInstallIsQuickWhenInstalled(t *testing.T) {
	Get(t)
	src, err := SourceDir()
	if err != nil {
		t.Fatal(err)
	}
	if !installed(src) {
		t.Fatal("the zoo is built but node_modules holds no stamp of the lock file")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	cmd := exec.Command(sh, filepath.Join(src, "install.sh"))
	cmd.Env = []string{"PATH=" + filepath.Dir(sh) + ":/bin:/usr/bin:/nonexistent-npm-free"}
	npm, _ := exec.LookPath("npm")
	if npm != "" && (filepath.Dir(npm) == "/bin" || filepath.Dir(npm) == "/usr/bin") {
		// npm is where sh needs to look for cut and sha256sum: hide it
		// behind a stand-in that fails.
		fake := t.TempDir()
		if err := os.WriteFile(filepath.Join(fake, "npm"), []byte("#!/bin/sh\necho npm ran >&2\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		cmd.Env = []string{"PATH=" + fake + ":/bin:/usr/bin"}
	}
	if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
		t.Fatalf("install.sh with the lock file installed: %v: %s", err, out)
	}
}

// TestFixturesMatchTheirPlan: every fixture holds the rows its plan says,
// ids Base..Base+Rows-1 in DuckDB's reading, with its set's columns.
func TestFixturesMatchTheirPlan(t *testing.T) {
	z := Get(t)
	sets := map[string]string{"tokens": "id,input_ids,text,score", "images": "id,image,caption"}
	writers := map[string]bool{}
	for _, f := range z.Fixtures {
		writers[f.Writer] = true
		if got := strings.Join(f.Columns, ","); got != sets[f.Set] {
			t.Errorf("%s: columns %s, want %s", f.Name, got, sets[f.Set])
		}
		ref, err := f.Reference()
		if err != nil {
			t.Fatal(err)
		}
		if int64(ref.Len()) != f.Rows {
			t.Errorf("%s: %d rows in DuckDB's reading, %d written", f.Name, ref.Len(), f.Rows)
		}
		for _, id := range ref.IDs() {
			if id < f.Base || id >= f.Base+f.Rows {
				t.Fatalf("%s: id %d outside [%d, %d)", f.Name, id, f.Base, f.Base+f.Rows)
			}
		}
		if g, ok := z.ByID(f.Base + f.Rows - 1); !ok || g.Name != f.Name {
			t.Errorf("ByID(%d) = %s, want %s", f.Base+f.Rows-1, g.Name, f.Name)
		}
	}
	for _, w := range []string{"duckdb", "polars", "arrowrs", "hyparquet", "parquetjs", "arrowgo"} {
		if !writers[w] {
			t.Errorf("no fixture of %s", w)
		}
	}
	if len(z.Set("images")) < 6 {
		t.Errorf("%d image fixtures, want one per writer", len(z.Set("images")))
	}
}

// TestArrowGoReadsWhatDuckDBReads: arrow-go's own whole-file reader
// (pqarrow) agrees with DuckDB on every value of every fixture. Both the
// oracle and the canonical forms are checked this way; the loader's tests
// compare with DuckDB.
func TestArrowGoReadsWhatDuckDBReads(t *testing.T) {
	z := Get(t)
	for _, f := range z.Fixtures {
		t.Run(f.Name, func(t *testing.T) {
			ref, err := f.Reference()
			if err != nil {
				t.Fatal(err)
			}
			tbl := readTable(t, f.Path)
			defer tbl.Release()
			ids := tbl.Column(0).Data().Chunks()
			var buf []byte
			for c := 0; c < int(tbl.NumCols()); c++ {
				name := tbl.Schema().Field(c).Name
				n := 0
				for k, a := range tbl.Column(c).Data().Chunks() {
					for i := 0; i < a.Len(); i++ {
						id, ok := RowID(ids[k], i)
						if !ok {
							t.Fatalf("row %d has no id", n)
						}
						if buf, err = AppendCanonical(buf[:0], a, i); err != nil {
							t.Fatal(err)
						}
						if err := ref.Check(id, name, buf); err != nil {
							t.Fatal(err)
						}
						n++
					}
				}
				if int64(n) != f.Rows {
					t.Fatalf("column %s: %d rows, want %d", name, n, f.Rows)
				}
			}
		})
	}
}

// TestWriterTraits reads every fixture's traits (the table in the package
// documentation) and checks the differences the zoo exists to cover.
func TestWriterTraits(t *testing.T) {
	z := Get(t)
	traits := map[string]Traits{}
	for _, f := range z.Fixtures {
		tr, err := Describe(f.Path)
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		traits[f.Name] = tr
		for _, l := range tr.Leaves {
			t.Logf("%-27s %-23s %-9s %-13s %-3s pages %4d (%d-%d a chunk, max %8d B) dict %-5v (max %8d B) offset index %s, column index %v",
				f.Name, l.Path, l.Repetition, l.Codecs, l.PageKinds, l.Pages, l.MinPages, l.MaxPages, l.MaxPageBytes, l.Dictionary, l.MaxDictBytes, l.OffsetIndex, l.ColumnIndex)
		}
	}
	leaf := func(name, prefix string) LeafTraits {
		t.Helper()
		for _, l := range traits[name].Leaves {
			if strings.HasPrefix(l.Path, prefix) {
				return l
			}
		}
		t.Fatalf("%s has no leaf %s", name, prefix)
		return LeafTraits{}
	}
	for _, tc := range []struct {
		fixture, path, kinds, offsetIndex string
		onePage                           bool // one data page per chunk
	}{
		{"duckdb-defaults", "input_ids.list.element", "V1", "none", true},
		// PARQUET_VERSION V2 changes DuckDB's encodings, not its page headers
		{"duckdb-v2-zstd", "input_ids.list.element", "V1", "none", true},
		{"duckdb-images", "image", "V1", "none", true},
		{"polars-zstd-small", "input_ids.list.element", "V1", "ok", false},
		{"arrowrs-defaults", "input_ids.list.item", "V1", "ok", true},
		{"arrowrs-chunkstats-nodict", "input_ids.list.item", "V1", "ok", false},
		{"arrowrs-v2-zstd-small", "input_ids.list.item", "V2", "ok", false},
		{"hyparquet-defaults", "input_ids.list.element", "V2", "none", true},
		{"hyparquet-small-pages", "input_ids.list.element", "V2", "ok", false},
		{"parquetjs-v1-list", "input_ids.list.element", "V1", "bad", false},
		{"parquetjs-v2-repeated", "input_ids", "V2", "bad", false},
		{"arrowgo-defaults", "input_ids.list.element", "V1", "none", true},
	} {
		l := leaf(tc.fixture, strings.SplitN(tc.path, ".", 2)[0])
		if l.Path != tc.path || l.PageKinds != tc.kinds || !strings.HasPrefix(l.OffsetIndex, tc.offsetIndex) || (l.MaxPages == 1) != tc.onePage {
			t.Errorf("%s: %s, %s pages, offset index %s, %d-%d pages a chunk; want %s, %s, %s, one page a chunk %v",
				tc.fixture, l.Path, l.PageKinds, l.OffsetIndex, l.MinPages, l.MaxPages, tc.path, tc.kinds, tc.offsetIndex, tc.onePage)
		}
	}
	if l := leaf("duckdb-defaults", "input_ids"); l.MaxPageBytes < 10_000_000 {
		t.Errorf("duckdb-defaults' largest token page holds %d bytes, want the 10 MB pages of DuckDB's defaults", l.MaxPageBytes)
	}
	if l := leaf("arrowrs-chunkstats-nodict", "input_ids"); l.Dictionary || l.ColumnIndex {
		t.Errorf("arrowrs-chunkstats-nodict: dictionary %v, column index %v", l.Dictionary, l.ColumnIndex)
	}
	for _, name := range []string{"polars-images", "arrowgo-images"} {
		// the images go into one dictionary page per chunk, and the data
		// pages hold only their indexes
		if l := leaf(name, "image"); l.MaxDictBytes < 5<<20 || l.MaxPageBytes > 4096 {
			t.Errorf("%s: image dictionary page of %d bytes, data pages up to %d: want the images in the dictionary", name, l.MaxDictBytes, l.MaxPageBytes)
		}
	}
	if l := leaf("parquetjs-v2-repeated", "input_ids"); l.Repetition != "repeated" {
		t.Errorf("parquetjs-v2-repeated declares input_ids %s, want a bare repeated int32", l.Repetition)
	}
}

// TestSeedsAreTinyZooFiles: the committed seed files (zoo seeds) are one
// small tokens file per writer, each read whole by arrow-go, and the fuzz
// corpus of the loader holds each of them.
func TestSeedsAreTinyZooFiles(t *testing.T) {
	paths, err := Seeds()
	if err != nil {
		t.Fatal(err)
	}
	var writers []string
	for _, p := range paths {
		w := strings.TrimSuffix(filepath.Base(p), ".parquet")
		writers = append(writers, w)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 8<<10 {
			t.Errorf("%s: %d bytes, want a few KB", p, len(b))
		}
		tbl := readTable(t, p)
		if tbl.NumRows() != 16 || tbl.NumCols() != 4 {
			t.Errorf("%s: %d rows, %d columns; want 16 and 4", p, tbl.NumRows(), tbl.NumCols())
		}
		tbl.Release()
		corpus, err := os.ReadFile(filepath.Join("..", "..", "rinas", "testdata", "fuzz", "FuzzParquetFile", "zoo-"+w+"-pages"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(corpus), fmt.Sprintf("[]byte(%q)", b)) {
			t.Errorf("rinas' FuzzParquetFile seed zoo-%s-pages does not hold %s: rerun go run ./internal/zoo/cmd/zoo seeds", w, p)
		}
	}
	if got := strings.Join(writers, ","); got != "arrowgo,arrowrs,duckdb,hyparquet,parquetjs,polars" {
		t.Errorf("seeds of %s, want one per writer", got)
	}
}

// readTable reads the Parquet file at path whole with arrow-go's pqarrow.
func readTable(t *testing.T, path string) arrow.Table {
	t.Helper()
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{BatchSize: 4096}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return tbl
}

// TestBadCopies: the cut copies are prefixes of the sizes named, each
// flipped copy differs from the file in one bit outside its magic bytes.
func TestBadCopies(t *testing.T) {
	b := make([]byte, 100)
	copies := BadCopies(b, 5, 1)
	if len(copies) != 12 {
		t.Fatalf("%d copies, want 7 cuts and 5 flips", len(copies))
	}
	for name, c := range copies {
		var n int
		if _, err := fmt.Sscanf(name, "cut%d", &n); err == nil {
			if len(c) != n {
				t.Errorf("%s: %d bytes", name, len(c))
			}
			continue
		}
		diff := 0
		for i := range c {
			if c[i] != b[i] {
				diff++
				if i < 4 || i >= len(b)-8 || c[i]&(c[i]-1) != 0 {
					t.Errorf("%s: byte %d is %#x", name, i, c[i])
				}
			}
		}
		if diff != 1 || len(c) != len(b) {
			t.Errorf("%s: %d bytes differ, %d long", name, diff, len(c))
		}
	}
}

// TestPruneOldZoos: a build removes zoos of other sources unused for
// pruneAge and stale temporary directories, and nothing else.
func TestPruneOldZoos(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-pruneAge - time.Hour)
	mk := func(name string, plan bool, mtime time.Time) {
		t.Helper()
		d := filepath.Join(root, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		stamp := d
		if plan {
			stamp = filepath.Join(d, "plan.json")
			if err := os.WriteFile(stamp, []byte("[]"), 0o644); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(d+".lock", nil, 0o644)
		}
		if err := os.Chtimes(stamp, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	keep, stale, fresh := "0123456789abcdef", "fedcba9876543210", "00000000000000aa"
	mk(keep, true, old)
	mk(stale, true, old)
	mk(fresh, true, time.Now())
	mk(stale+".tmp-123", false, old)
	mk(fresh+".tmp-456", false, time.Now())
	mk("not-a-zoo", false, old)
	prune(root, keep, time.Now().Add(-pruneAge), t.Logf)
	var left []string
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := []string{fresh, fresh + ".lock", fresh + ".tmp-456", keep, keep + ".lock", "not-a-zoo"}
	if strings.Join(left, " ") != strings.Join(want, " ") {
		t.Fatalf("left %v, want %v", left, want)
	}
}
