// Package zoo gives tests Parquet files written by the writers users have,
// and each file's values as DuckDB reads them, the oracle the tests compare
// with.
//
// The writers are node packages pinned exactly by node/package-lock.json
// (DuckDB through @duckdb/node-api, polars through nodejs-polars, arrow-rs
// through parquet-wasm, hyparquet-writer, @dsnp/parquetjs) and arrow-go,
// called from Go at its defaults. node/fixtures.mjs lists the fixtures:
// which writer writes which set of columns with which settings, and how
// many rows. Two sets:
//
//	tokens  id int64, input_ids list<int32> (1 to 4096 values, heavy-tailed),
//	        text string (nullable), score double (nullable; ±0, ±Inf, NaN,
//	        subnormals among them)
//	images  id int64, image binary (20 to 300 KiB, random bytes), caption
//	        string (nullable)
//
// Every column names its row alone: id, input_ids[0] and the first eight
// bytes of image (little-endian) all hold the row's id, and ids are unique
// over the whole zoo (RowID), so a dataset mixing fixtures, or a loader
// projecting one column, still says which row it delivered.
//
// What the writers write differs in the ways this table shows (measured
// by Describe on the pinned versions; TestWriterTraits checks the rows
// that the zoo exists to cover, and logs the whole table):
//
//	fixture                    pages offset index  column  dict  list leaf (id)         pages a chunk
//	duckdb-* (every variant)   V1    none          none    no    list.element (opt)     one: 10.3 MB at the defaults, 11.5 MB of images
//	polars-defaults            V1    yes           yes     no    list.element (opt)     1-2 (1 MB)
//	polars-images              V1    yes           yes     yes   -            (opt)     one of 93 B: the images in a 9 MB dictionary page
//	arrowrs-defaults           V1    yes           yes     yes   list.item    (req)     one (dictionary indexes)
//	arrowrs-chunkstats-nodict  V1    yes           none    no    list.item    (req)     many
//	arrowrs-v2-zstd-small      V2    yes           yes     yes   list.item    (req)     many
//	hyparquet-*                V2    where >1 page none    no    list.element (req)     one to many
//	parquetjs-v1-list          V1    bad           yes     no    list.element (req)     every 500 rows
//	parquetjs-v2-repeated      V2    bad           yes     no    bare repeated (req)    every 700 rows
//	arrowgo-defaults           V1    none          none    no    list.element (req)     one (under 1 MB)
//	arrowgo-images             V1    none          none    yes   -            (req)     the images in a 9.5 MB dictionary page
//
// "bad": every page's first_row_index is 0. (opt)/(req): the id column is
// optional or required. DuckDB's PARQUET_VERSION V2 changes its encodings,
// not its page headers; arrow-rs writes the offset index whatever its
// statistics level, and parquet-wasm has no switch to turn it off; a bare
// repeated int32 is the one-level list that the spec's backward-
// compatibility rules read as list<int32>.
//
// The files are written once per machine into a cache directory keyed by a
// hash of the node scripts, the lock file, the Go writer and the arrow-go
// version (Dir), written into a temporary directory and renamed into place,
// under a file lock, so test binaries running at once share one build. The
// directory holds plan.json (the fixtures, as Fixture's JSON), the Parquet
// files and, for each, <name>.ref.jsonl: one JSON object per row in id
// order with DuckDB's reading (node/ref.mjs documents the form), about
// 180 MB in all. Nothing of it is committed. A build removes the zoos of
// other sources that no test has loaded for a week.
package zoo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ErrNoNode is Build's error where node is not installed: the one case in
// which tests skip the zoo rather than fail.
var ErrNoNode = errors.New("zoo: node is not installed (the writer zoo needs node and npm: apt-get install nodejs npm)")

// CacheEnv, when set, is the directory that holds the zoo's builds instead
// of os.UserCacheDir()/pagefeed-zoo.
const CacheEnv = "PAGEFEED_ZOO_CACHE"

// formatVersion changes the cache key when the cache's own layout changes.
const formatVersion = "pagefeed-zoo 1"

// Fixture is one file of the zoo.
type Fixture struct {
	Name    string `json:"name"`    // Writer-Variant
	Writer  string `json:"writer"`  // duckdb, polars, arrowrs, hyparquet, parquetjs, arrowgo
	Variant string `json:"variant"` // the settings: "defaults" is the writer's own
	Set     string `json:"set"`     // tokens or images
	File    string `json:"file"`    // the Parquet file, relative to the zoo's Dir
	Rows    int64  `json:"rows"`    // rows written; DuckDB reads as many (Build checks)
	Base    int64  `json:"base"`    // the first id: ids are Base..Base+Rows-1
	// Options are the writer settings the variant names (fixtures.mjs).
	Options map[string]any `json:"options"`
	Ref     string         `json:"ref"`      // DuckDB's reading, relative to Dir
	RefRows int64          `json:"ref_rows"` // rows DuckDB read
	Columns []string       `json:"columns"`  // top-level columns, in file order

	// Path and RefPath are File and Ref under the zoo's Dir.
	Path    string `json:"-"`
	RefPath string `json:"-"`
}

// Zoo is a built zoo: its directory and fixtures, in fixtures.mjs order.
type Zoo struct {
	Dir      string
	Fixtures []Fixture
}

// Fixture returns the fixture named name, or false.
func (z *Zoo) Fixture(name string) (Fixture, bool) {
	for _, f := range z.Fixtures {
		if f.Name == name {
			return f, true
		}
	}
	return Fixture{}, false
}

// Set returns the fixtures of one set (tokens or images).
func (z *Zoo) Set(set string) []Fixture {
	var out []Fixture
	for _, f := range z.Fixtures {
		if f.Set == set {
			out = append(out, f)
		}
	}
	return out
}

// MixMaxRows bounds the fixtures Mix picks.
const MixMaxRows = 20000

// Mix returns one fixture of every writer for a dataset that mixes them:
// for each writer, in plan order, its first fixture of the set with at
// most MixMaxRows rows (so the large DuckDB file is left to the tests of
// single files).
func (z *Zoo) Mix(set string) []Fixture {
	var out []Fixture
	seen := map[string]bool{}
	for _, f := range z.Fixtures {
		if f.Set == set && !seen[f.Writer] && f.Rows <= MixMaxRows {
			seen[f.Writer] = true
			out = append(out, f)
		}
	}
	return out
}

// ByID returns the fixture holding the row with this id.
func (z *Zoo) ByID(id int64) (Fixture, bool) {
	for _, f := range z.Fixtures {
		if id >= f.Base && id < f.Base+f.Rows {
			return f, true
		}
	}
	return Fixture{}, false
}

var (
	getOnce sync.Once
	getZoo  *Zoo
	getErr  error
)

// Get returns the zoo, building it on first use in this process (minutes
// the first time on a machine, then a check of the cache). It skips t where
// node is not installed and fails t on any other error: a missing
// node_modules is installed from the lock file, not skipped.
func Get(t testing.TB) *Zoo {
	t.Helper()
	getOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		getZoo, getErr = Build(ctx, func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "zoo: "+format+"\n", args...)
		})
	})
	if errors.Is(getErr, ErrNoNode) {
		t.Skip(getErr)
	}
	if getErr != nil {
		t.Fatal(getErr)
	}
	return getZoo
}

// Build makes sure the node packages are installed (node/install.sh) and
// the zoo is in the cache, writing it if not, and returns it. logf hears
// what takes time. It returns ErrNoNode where node is missing.
func Build(ctx context.Context, logf func(string, ...any)) (*Zoo, error) {
	src, err := prepare(ctx, logf)
	if err != nil {
		return nil, err
	}
	dir, err := Dir(src)
	if err != nil {
		return nil, err
	}
	return build(ctx, dir, logf, func(ctx context.Context, tmp string) error { return write(ctx, src, tmp) })
}

// build returns the zoo in dir, first filling it with fill where it holds
// no plan.json: fill writes into a fresh temporary directory beside dir,
// which is renamed to dir when fill succeeds. An exclusive flock on
// dir+".lock" makes concurrent builders (test binaries of several
// packages) wait for the first instead of writing the zoo again; the
// rename keeps a half-written zoo from ever being seen, even by a builder
// that could not lock.
func build(ctx context.Context, dir string, logf func(string, ...any), fill func(context.Context, string) error) (*Zoo, error) {
	if z, err := load(dir); err == nil {
		used(dir)
		return z, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("zoo: %w", err)
	}
	unlock, err := lockFile(dir + ".lock")
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Another process may have built it while this one waited.
	if z, err := load(dir); err == nil {
		return z, nil
	}
	prune(filepath.Dir(dir), filepath.Base(dir), time.Now().Add(-pruneAge), logf)
	logf("writing the writer zoo into %s (once per machine; minutes)", dir)
	start := time.Now()
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("zoo: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := fill(ctx, tmp); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Built meanwhile by a builder that did not take the lock (a file
		// system without flock): theirs is as good.
		if _, serr := os.Stat(filepath.Join(dir, "plan.json")); serr != nil {
			return nil, fmt.Errorf("zoo: %w", err)
		}
	}
	logf("zoo written in %s", time.Since(start).Round(time.Second))
	return load(dir)
}

// pruneAge is how long a zoo of other sources is kept unused: a build
// removes the others that no test has loaded for as long.
const pruneAge = 7 * 24 * time.Hour

// used marks the zoo in dir as loaded now (its plan.json's mtime), for
// prune.
func used(dir string) {
	now := time.Now()
	os.Chtimes(filepath.Join(dir, "plan.json"), now, now) // best effort: an unmarked zoo is only pruned sooner
}

// prune removes, from the cache root, the zoos other than keep (written
// by other sources: a script or the lock file changed) that no test has
// loaded since before, and temporary directories of builds begun before
// then that never finished.
func prune(root, keep string, before time.Time, logf func(string, ...any)) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		key, _, tmp := strings.Cut(name, ".tmp-")
		if !e.IsDir() || key == keep && !tmp || len(key) != 16 || strings.Trim(key, "0123456789abcdef") != "" {
			continue
		}
		stamp := filepath.Join(root, name, "plan.json")
		if tmp {
			stamp = filepath.Join(root, name)
		}
		if fi, err := os.Stat(stamp); err == nil && fi.ModTime().After(before) {
			continue
		}
		logf("removing %s: a zoo of other sources, unused since %s", filepath.Join(root, name), before.Format(time.DateOnly))
		os.RemoveAll(filepath.Join(root, name))
		if !tmp {
			os.Remove(filepath.Join(root, name+".lock"))
		}
	}
}

// prepare returns the node project's directory once node is known to be
// there (else ErrNoNode) and its packages are installed.
func prepare(ctx context.Context, logf func(string, ...any)) (string, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", ErrNoNode
	}
	src, err := SourceDir()
	if err != nil {
		return "", err
	}
	return src, Install(ctx, src, logf)
}

// SourceDir returns the directory of the node project (internal/zoo/node
// of the module that holds this package), found from the working
// directory upward: tests run inside the module.
func SourceDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("zoo: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		p := filepath.Join(d, "internal", "zoo", "node", "fixtures.mjs")
		if _, err := os.Stat(p); err == nil {
			return filepath.Dir(p), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("zoo: no internal/zoo/node/fixtures.mjs above %s: run inside the pagefeed module", wd)
		}
	}
}

// Install installs the node packages from the lock file with npm ci
// (node/install.sh), unless the stamp in node_modules says this lock file
// is installed already. The script locks against a concurrent install.
func Install(ctx context.Context, src string, logf func(string, ...any)) error {
	if installed(src) {
		return nil
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return fmt.Errorf("zoo: node is installed but npm is not, and %s/node_modules needs installing: %w", src, err)
	}
	logf("installing the zoo's node packages (npm ci in %s)", src)
	cmd := exec.CommandContext(ctx, "sh", filepath.Join(src, "install.sh"))
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("zoo: %s/install.sh: %w\n%s", src, err, tail(out))
	}
	if !installed(src) {
		return fmt.Errorf("zoo: %s/install.sh succeeded but left no stamp matching package-lock.json", src)
	}
	return nil
}

// installed reports whether node_modules holds the lock file's packages:
// install.sh's stamp holds the lock file's SHA-256.
func installed(src string) bool {
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		return false
	}
	stamp, err := os.ReadFile(filepath.Join(src, "node_modules", ".pagefeed-stamp"))
	sum := sha256.Sum256(lock)
	return err == nil && strings.TrimSpace(string(stamp)) == hex.EncodeToString(sum[:])
}

// keyFiles are the sources whose content makes the cache key, relative to
// the node directory.
var keyFiles = []string{"package.json", "package-lock.json", "../arrowgo.go"}

// Dir returns the cache directory of the zoo that the sources in src
// write: $PAGEFEED_ZOO_CACHE (else os.UserCacheDir()/pagefeed-zoo) joined
// with the first 16 hex digits of a SHA-256 over the node scripts, the
// package and lock files, the Go writer and the module's arrow-go version.
func Dir(src string) (string, error) {
	root := os.Getenv(CacheEnv)
	if root == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("zoo: no cache directory (set $%s): %w", CacheEnv, err)
		}
		root = filepath.Join(c, "pagefeed-zoo")
	}
	files := slices.Clone(keyFiles)
	mjs, _ := filepath.Glob(filepath.Join(src, "*.mjs"))
	for _, m := range mjs {
		files = append(files, filepath.Base(m))
	}
	slices.Sort(files)
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", formatVersion)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return "", fmt.Errorf("zoo: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	gomod, err := os.ReadFile(filepath.Join(src, "..", "..", "..", "go.mod"))
	if err != nil {
		return "", fmt.Errorf("zoo: %w", err)
	}
	for _, l := range strings.Split(string(gomod), "\n") {
		if strings.Contains(l, "github.com/apache/arrow-go") {
			fmt.Fprintf(h, "go.mod %s\n", strings.TrimSpace(l))
		}
	}
	return filepath.Join(root, hex.EncodeToString(h.Sum(nil))[:16]), nil
}

// load reads a built zoo's plan.
func load(dir string) (*Zoo, error) {
	b, err := os.ReadFile(filepath.Join(dir, "plan.json"))
	if err != nil {
		return nil, err
	}
	z := &Zoo{Dir: dir}
	if err := json.Unmarshal(b, &z.Fixtures); err != nil {
		return nil, fmt.Errorf("zoo: %s: %w", filepath.Join(dir, "plan.json"), err)
	}
	for i := range z.Fixtures {
		f := &z.Fixtures[i]
		f.Path, f.RefPath = filepath.Join(dir, f.File), filepath.Join(dir, f.Ref)
	}
	return z, nil
}

// write writes the zoo into the empty directory tmp: node gen.mjs writes
// the node writers' files, the Go side writes arrow-go's, node ref.mjs adds
// DuckDB's reading of each; then every fixture is checked to read back as
// many rows as were written, and made read-only.
func write(ctx context.Context, src, tmp string) error {
	if err := node(ctx, src, "gen.mjs", tmp); err != nil {
		return err
	}
	z, err := load(tmp)
	if err != nil {
		return err
	}
	for _, f := range z.Fixtures {
		if f.Writer == "arrowgo" {
			if err := writeArrowGo(f.Path); err != nil {
				return err
			}
		}
	}
	if err := node(ctx, src, "ref.mjs", tmp); err != nil {
		return err
	}
	if z, err = load(tmp); err != nil {
		return err
	}
	for _, f := range z.Fixtures {
		if f.RefRows != f.Rows {
			return fmt.Errorf("zoo: %s: %d rows written, DuckDB reads %d", f.Path, f.Rows, f.RefRows)
		}
		// Tests only read the fixtures.
		if err := os.Chmod(f.Path, 0o444); err != nil {
			return fmt.Errorf("zoo: %w", err)
		}
	}
	return nil
}

// WriteSeeds writes one tiny tokens file per writer into dir (node/seeds.mjs:
// 16 rows, a few KB each) and returns their paths, for fuzz targets' seed
// corpora (go run ./internal/zoo/cmd/zoo seeds).
func WriteSeeds(ctx context.Context, dir string, logf func(string, ...any)) ([]string, error) {
	src, err := prepare(ctx, logf)
	if err != nil {
		return nil, err
	}
	if err := node(ctx, src, "seeds.mjs", dir); err != nil {
		return nil, err
	}
	if err := writeArrowGo(filepath.Join(dir, "arrowgo.parquet")); err != nil {
		return nil, err
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if err != nil {
		return nil, fmt.Errorf("zoo: %w", err)
	}
	return paths, nil
}

// node runs one of the node scripts with args, failing with its output.
func node(ctx context.Context, src, script string, args ...string) error {
	cmd := exec.CommandContext(ctx, "node", append([]string{filepath.Join(src, script)}, args...)...)
	cmd.Dir = src
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("zoo: node %s: %w\n%s", script, err, tail(out.Bytes()))
	}
	return nil
}

// tail returns the last 4 KiB of a command's output.
func tail(b []byte) string {
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	return string(b)
}

// lockFile takes an exclusive flock on path (created if needed) and
// returns its release.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("zoo: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("zoo: lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// RunDuckDB runs SQL statements in a fresh in-memory DuckDB of the zoo's
// pinned version (node/duckdb.mjs), e.g. a COPY ... TO that writes a file
// for a test, and returns what the statements printed as JSON lines (the
// rows of the last statement that returns rows). It installs the node
// packages first if needed, and skips t only where node is missing.
func RunDuckDB(t testing.TB, statements ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	src, err := prepare(ctx, t.Logf)
	if errors.Is(err, ErrNoNode) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "node", append([]string{filepath.Join(src, "duckdb.mjs")}, statements...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("duckdb %q: %v\n%s", statements, err, tail(errOut.Bytes()))
	}
	return out.String()
}
