// Package gen writes synthetic tokenized-LLM Parquet datasets for tests,
// benchmarks and the `pagefeed gen` command.
//
// Every file has the schema
//
//	id        int64         (required, row number across the dataset)
//	input_ids list<int32>   (document tokens)
//	text      string        (nullable, a short caption; null for ~10% of rows)
//
// Document lengths are lognormal, clipped to [1, MaxTokens]; tokens are
// Zipf-distributed over a GPT-2-sized vocabulary (50,257) so that compression
// ratios resemble real corpora. Output is deterministic: the same Config
// (Dir aside) gives byte-identical files, whatever Parallelism is, because
// each file draws from its own generator seeded from (Seed, file number).
package gen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Vocab is the token vocabulary size (GPT-2's).
const Vocab = 50257

// ErrConfig reports an invalid Config.
var ErrConfig = errors.New("gen: invalid config")

// Config describes a dataset. Zero fields take the defaults of Fill.
type Config struct {
	Dir          string // output directory, created if missing (required)
	Files        int    // number of files; default 1
	RowsPerFile  int    // rows (documents) per file; default 1000
	Codec        string // zstd|snappy|gzip|lz4_raw|brotli|none; default zstd
	PageSize     int64  // target data page size in bytes; default 1 MiB
	RowGroupRows int64  // rows per row group; default RowsPerFile
	PageVersion  int    // 1 or 2; default 1
	PageIndex    bool   // write column/offset indexes
	Dictionary   bool   // dictionary-encode columns
	Seed         uint64 // generator seed

	MeanTokens int // median document length in tokens; default 256
	MaxTokens  int // clip for document length; default 8*MeanTokens
	// Prefix names the files Prefix-NNNNN.parquet; default "part".
	Prefix string
	// Parallelism is the number of files written at once; default 1.
	Parallelism int
	// Progress, when set, gets one line per finished file.
	Progress io.Writer
	// ScalarPageSize, when > 0, is the target page size of the id and
	// text columns (input_ids keeps PageSize), so that the columns' pages
	// cover different row ranges, as an 8 KiB id column beside 64 KiB
	// token pages. arrow-go has one page size per file, so these files
	// are written column by column with arrow-go's lower-level writer
	// (no stored Arrow schema: readers name the list element "element").
	ScalarPageSize int64
}

// Fill returns c with defaults applied and checks it.
func (c Config) Fill() (Config, error) {
	if c.Dir == "" {
		return c, fmt.Errorf("%w: Dir is empty", ErrConfig)
	}
	if c.Files == 0 {
		c.Files = 1
	}
	if c.RowsPerFile == 0 {
		c.RowsPerFile = 1000
	}
	if c.Codec == "" {
		c.Codec = "zstd"
	}
	if c.PageSize == 0 {
		c.PageSize = 1 << 20
	}
	if c.RowGroupRows == 0 {
		c.RowGroupRows = int64(c.RowsPerFile)
	}
	if c.PageVersion == 0 {
		c.PageVersion = 1
	}
	if c.MeanTokens == 0 {
		c.MeanTokens = 256
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = 8 * c.MeanTokens
	}
	if c.Prefix == "" {
		c.Prefix = "part"
	}
	if c.Parallelism <= 0 {
		c.Parallelism = 1
	}
	switch {
	case c.Files < 0 || c.RowsPerFile < 0:
		return c, fmt.Errorf("%w: Files %d and RowsPerFile %d must be positive", ErrConfig, c.Files, c.RowsPerFile)
	case c.PageSize < 1:
		return c, fmt.Errorf("%w: PageSize %d", ErrConfig, c.PageSize)
	case c.ScalarPageSize < 0:
		return c, fmt.Errorf("%w: ScalarPageSize %d", ErrConfig, c.ScalarPageSize)
	case c.RowGroupRows < 1:
		return c, fmt.Errorf("%w: RowGroupRows %d", ErrConfig, c.RowGroupRows)
	case c.PageVersion != 1 && c.PageVersion != 2:
		return c, fmt.Errorf("%w: PageVersion %d (want 1 or 2)", ErrConfig, c.PageVersion)
	case c.MeanTokens < 1 || c.MaxTokens < 1:
		return c, fmt.Errorf("%w: MeanTokens %d, MaxTokens %d", ErrConfig, c.MeanTokens, c.MaxTokens)
	case strings.ContainsAny(c.Prefix, `/\`):
		return c, fmt.Errorf("%w: Prefix %q has a path separator", ErrConfig, c.Prefix)
	}
	if _, err := ParseCodec(c.Codec); err != nil {
		return c, err
	}
	return c, nil
}

// ParseCodec maps a codec name to arrow-go's compression.
func ParseCodec(name string) (compress.Compression, error) {
	switch strings.ToLower(name) {
	case "zstd":
		return compress.Codecs.Zstd, nil
	case "snappy":
		return compress.Codecs.Snappy, nil
	case "gzip":
		return compress.Codecs.Gzip, nil
	case "lz4_raw", "lz4raw":
		return compress.Codecs.Lz4Raw, nil
	case "brotli":
		return compress.Codecs.Brotli, nil
	case "none", "uncompressed":
		return compress.Codecs.Uncompressed, nil
	}
	return 0, fmt.Errorf("%w: unknown codec %q (want zstd|snappy|gzip|lz4_raw|brotli|none)", ErrConfig, name)
}

// Result reports what Run wrote.
type Result struct {
	Files []string // paths, in file order
	Rows  int64
	Bytes int64
}

// Schema is the Arrow schema of every generated file.
var Schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "input_ids", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
	{Name: "text", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// Run writes the dataset described by c. Files already present are
// overwritten. On error, files written so far are left in place.
func Run(ctx context.Context, c Config) (Result, error) {
	c, err := c.Fill()
	if err != nil {
		return Result{}, err
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return Result{}, fmt.Errorf("gen: %w", err)
	}
	res := Result{Files: make([]string, c.Files)}
	sizes := make([]int64, c.Files)
	errs := make([]error, c.Files)
	next := make(chan int)
	var wg sync.WaitGroup
	var progMu sync.Mutex
	for w := 0; w < min(c.Parallelism, c.Files); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				path := filepath.Join(c.Dir, fmt.Sprintf("%s-%05d.parquet", c.Prefix, i))
				res.Files[i] = path
				sizes[i], errs[i] = writeFile(path, c, i)
				if c.Progress != nil && errs[i] == nil {
					progMu.Lock()
					fmt.Fprintf(c.Progress, "gen: %s: %d rows, %d bytes\n", path, c.RowsPerFile, sizes[i])
					progMu.Unlock()
				}
			}
		}()
	}
feed:
	for i := 0; i < c.Files; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return res, err
	}
	for i, err := range errs {
		if err != nil {
			return res, err
		}
		res.Bytes += sizes[i]
		res.Rows += int64(c.RowsPerFile)
	}
	return res, nil
}

// splitmix64 derives independent seeds.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// writeFile writes file fileNo of c's data set to path and returns its
// size.
func writeFile(path string, c Config, fileNo int) (size int64, err error) {
	props := writerProps(c)
	f, err := os.Create(path)
	if err != nil {
		return 0, fmt.Errorf("gen: %w", err)
	}
	// pqarrow's Close closes f too; this close is for the error paths.
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil && !errors.Is(cerr, os.ErrClosed) {
			err = fmt.Errorf("gen: %w", cerr)
		}
	}()
	mem := memory.NewGoAllocator()
	var fw *pqarrow.FileWriter
	var cw *columnWriter
	recRows := 1024
	if c.ScalarPageSize > 0 {
		if cw, err = newColumnWriter(f, props, c.ScalarPageSize); err != nil {
			return 0, fmt.Errorf("gen: %s: %w", path, err)
		}
		recRows = int(c.RowGroupRows) // one record per row group
	} else if fw, err = pqarrow.NewFileWriter(Schema, f, props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem))); err != nil {
		return 0, fmt.Errorf("gen: %s: %w", path, err)
	}
	g := newRowGen(c, fileNo)
	b := array.NewRecordBuilder(mem, Schema)
	defer b.Release()
	for row := 0; row < c.RowsPerFile; {
		n := min(recRows, c.RowsPerFile-row)
		g.appendRows(b, row, n)
		rec := b.NewRecordBatch()
		if cw != nil {
			err = cw.writeRowGroup(rec)
		} else {
			err = fw.WriteBuffered(rec)
		}
		rec.Release()
		if err != nil {
			return 0, fmt.Errorf("gen: %s: %w", path, err)
		}
		row += n
	}
	if cw != nil {
		err = cw.close()
	} else {
		err = fw.Close()
	}
	if err != nil {
		return 0, fmt.Errorf("gen: %s: %w", path, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("gen: %w", err)
	}
	return st.Size(), nil
}

// writerProps returns the Parquet writer properties c asks for.
func writerProps(c Config) *parquet.WriterProperties {
	codec, _ := ParseCodec(c.Codec)
	pv := parquet.DataPageV1
	if c.PageVersion == 2 {
		pv = parquet.DataPageV2
	}
	// arrow-go checks the page size limit once per write batch of levels,
	// so small target pages need small batches.
	batch := int64(1024)
	if c.PageSize < 4096 {
		batch = max(8, c.PageSize/8)
	}
	return parquet.NewWriterProperties(
		parquet.WithCompression(codec),
		parquet.WithDataPageSize(c.PageSize),
		parquet.WithBatchSize(batch),
		parquet.WithMaxRowGroupLength(c.RowGroupRows),
		parquet.WithDataPageVersion(pv),
		parquet.WithPageIndexEnabled(c.PageIndex),
		parquet.WithDictionaryDefault(c.Dictionary),
		parquet.WithStats(true),
		// --dictionary on means dictionary pages, also for uncompressed
		// columns where arrow-go would otherwise judge them not worth it.
		parquet.WithDictionaryCostFallbackFor("id", !c.Dictionary),
		parquet.WithDictionaryCostFallbackFor("input_ids.list.element", !c.Dictionary),
		parquet.WithDictionaryCostFallbackFor("text", !c.Dictionary),
	)
}

// rowGen draws one file's rows: ids from the file's first, token lists of
// log-normal length (at most MaxTokens) drawn Zipf-distributed from the
// vocabulary, and a text naming the id and the first tokens, null one row
// in ten. Its draws depend on nothing but the seed and the file number.
type rowGen struct {
	rng       *rand.Rand
	zipf      *rand.Zipf
	mu        float64
	maxTokens int
	baseID    int64
	txt       []byte
}

func newRowGen(c Config, fileNo int) *rowGen {
	rng := rand.New(rand.NewSource(int64(splitmix64(c.Seed ^ splitmix64(uint64(fileNo)+1)))))
	return &rowGen{
		rng:       rng,
		zipf:      rand.NewZipf(rng, 1.1, 2, Vocab-1),
		mu:        math.Log(float64(c.MeanTokens)),
		maxTokens: c.MaxTokens,
		baseID:    int64(fileNo) * int64(c.RowsPerFile),
	}
}

// appendRows appends the file's rows row to row+n-1 to b (a builder of
// Schema).
func (g *rowGen) appendRows(b *array.RecordBuilder, row, n int) {
	const sigma = 0.9
	ids := b.Field(0).(*array.Int64Builder)
	lists := b.Field(1).(*array.ListBuilder)
	toks := lists.ValueBuilder().(*array.Int32Builder)
	texts := b.Field(2).(*array.StringBuilder)
	for j := 0; j < n; j++ {
		ids.Append(g.baseID + int64(row+j))
		ln := int(math.Exp(g.mu + sigma*g.rng.NormFloat64()))
		ln = min(max(ln, 1), g.maxTokens)
		lists.Append(true)
		g.txt = append(g.txt[:0], "doc "...)
		g.txt = strconv.AppendInt(g.txt, g.baseID+int64(row+j), 10)
		for t := 0; t < ln; t++ {
			tok := int32(g.zipf.Uint64())
			toks.Append(tok)
			if t < 4 {
				g.txt = append(g.txt, ' ', 'w')
				g.txt = strconv.AppendInt(g.txt, int64(tok), 36)
			}
		}
		if g.rng.Intn(10) == 0 {
			texts.AppendNull()
		} else {
			texts.BinaryBuilder.Append(g.txt)
		}
	}
}
