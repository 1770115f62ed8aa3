// Package quality is the shuffle-quality experiment (YOUMU's Table 3 in
// miniature): a topic-sorted Parquet dataset, the worst case for local
// shuffles; a softmax-regression topic classifier trained with SGD; the
// statistics of a delivery order; and Run, which trains the model under
// each shuffle order of the loader and reports loss and order statistics.
// `pagefeed shufflequality` only binds flags to Config.
//
// Everything is deterministic for a seed (with the ordered fetch). The
// loader Run opens is closed before it returns.
package quality

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// ErrConfig reports an invalid configuration.
var ErrConfig = errors.New("quality: invalid config")

// Schema is the dataset's: a topic label and the document's tokens.
var Schema = arrow.NewSchema([]arrow.Field{
	{Name: "label", Type: arrow.PrimitiveTypes.Int32},
	{Name: "tokens", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
}, nil)

// TokensColumn is the leaf the loader reads.
const TokensColumn = "tokens"

// DataConfig configures Write. Zero fields take the defaults of Fill.
type DataConfig struct {
	Dir          string // output folder (required)
	Topics       int    // classes; default 8
	Rows         int    // training rows, sorted by topic; default 16384
	ValRows      int    // validation rows (kept in memory, balanced); default 2048
	Vocab        int    // token ids [0, Vocab); default 512
	DocLen       int    // mean tokens per document (uniform in [DocLen/2, 3·DocLen/2]); default 16
	Topical      float64
	RowGroupRows int   // default 1024
	PageBytes    int64 // target data page size; default 1024 (many pages per row group)
	Seed         uint64
}

// Fill applies defaults and validates.
func (c *DataConfig) Fill() error {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&c.Topics, 8)
	def(&c.Rows, 16384)
	def(&c.ValRows, 2048)
	def(&c.Vocab, 512)
	def(&c.DocLen, 16)
	def(&c.RowGroupRows, 1024)
	if c.PageBytes == 0 {
		c.PageBytes = 1024
	}
	if c.Topical == 0 {
		c.Topical = 0.5
	}
	switch {
	case c.Dir == "":
		return fmt.Errorf("%w: no output folder", ErrConfig)
	case c.Topics < 2 || c.Topics > 1024:
		return fmt.Errorf("%w: %d topics (want 2..1024)", ErrConfig, c.Topics)
	case c.Rows < c.Topics || c.Rows > 1<<24:
		return fmt.Errorf("%w: %d rows (want %d..%d)", ErrConfig, c.Rows, c.Topics, 1<<24)
	case c.ValRows < c.Topics:
		return fmt.Errorf("%w: %d validation rows (want at least one per topic)", ErrConfig, c.ValRows)
	case c.Vocab < 2*c.Topics || c.Vocab > 1<<20:
		return fmt.Errorf("%w: vocabulary of %d (want %d..%d)", ErrConfig, c.Vocab, 2*c.Topics, 1<<20)
	case c.DocLen < 2 || c.DocLen > 4096:
		return fmt.Errorf("%w: document length %d (want 2..4096)", ErrConfig, c.DocLen)
	case c.Topical <= 0 || c.Topical > 1:
		return fmt.Errorf("%w: topical share %g (want (0, 1])", ErrConfig, c.Topical)
	case c.RowGroupRows < 1:
		return fmt.Errorf("%w: %d rows per row group", ErrConfig, c.RowGroupRows)
	case c.PageBytes < 64:
		return fmt.Errorf("%w: page size %d (want at least 64)", ErrConfig, c.PageBytes)
	}
	return nil
}

// Dataset is what Write produced: the file, and the training labels and
// documents by global row (for checking what the loader delivers), and the
// validation set.
type Dataset struct {
	Path      string
	Topics    int
	Vocab     int
	Labels    []int32   // training label of each row, in file order (sorted)
	Docs      [][]int32 // training tokens of each row
	ValLabels []int32
	ValDocs   [][]int32
}

// source draws documents: each topic mixes a shared Zipf background with
// its own Zipf over a topic-specific permutation of the vocabulary, so
// topics overlap and the best achievable loss is above zero.
type source struct {
	rng      *rand.Rand
	zipf     *rand.Zipf
	perms    [][]int32
	cfg      *DataConfig
	lo, span int
}

func newSource(c *DataConfig, stream uint64) *source {
	rng := rand.New(rand.NewPCG(c.Seed, stream))
	s := &source{rng: rng, zipf: rand.NewZipf(rng, 1.2, 4, uint64(c.Vocab-1)), cfg: c}
	// The topic permutations come from the seed alone, so training and
	// validation share them.
	prng := rand.New(rand.NewPCG(c.Seed, 0x7091c))
	for k := 0; k < c.Topics; k++ {
		p := make([]int32, c.Vocab)
		for i, v := range prng.Perm(c.Vocab) {
			p[i] = int32(v)
		}
		s.perms = append(s.perms, p)
	}
	s.lo, s.span = max(1, c.DocLen/2), c.DocLen+1
	return s
}

func (s *source) doc(topic int) []int32 {
	n := s.lo + s.rng.IntN(s.span)
	d := make([]int32, n)
	for i := range d {
		r := int32(s.zipf.Uint64())
		if s.rng.Float64() < s.cfg.Topical {
			r = s.perms[topic][r]
		}
		d[i] = r
	}
	return d
}

// Write generates the dataset into cfg.Dir/sorted.parquet: cfg.Rows rows
// sorted by topic (Rows/Topics each, the remainder to the last topics), V2
// data pages of about PageBytes with the page index on, snappy, row groups
// of RowGroupRows. The validation set stays in memory.
func Write(cfg DataConfig) (*Dataset, error) {
	if err := cfg.Fill(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("quality: %w", err)
	}
	ds := &Dataset{Path: filepath.Join(cfg.Dir, "sorted.parquet"), Topics: cfg.Topics, Vocab: cfg.Vocab}
	train := newSource(&cfg, 1)
	for k := 0; k < cfg.Topics; k++ {
		n := cfg.Rows / cfg.Topics
		if k >= cfg.Topics-cfg.Rows%cfg.Topics {
			n++
		}
		for i := 0; i < n; i++ {
			ds.Labels = append(ds.Labels, int32(k))
			ds.Docs = append(ds.Docs, train.doc(k))
		}
	}
	val := newSource(&cfg, 2)
	for i := 0; i < cfg.ValRows; i++ {
		k := i % cfg.Topics
		ds.ValLabels = append(ds.ValLabels, int32(k))
		ds.ValDocs = append(ds.ValDocs, val.doc(k))
	}
	if err := writeParquet(ds, &cfg); err != nil {
		return nil, err
	}
	return ds, nil
}

func writeParquet(ds *Dataset, c *DataConfig) (err error) {
	// arrow-go checks the page size once per write batch of levels, so
	// small pages need small batches.
	batch := max(8, c.PageBytes/int64(4*c.DocLen))
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithDataPageSize(c.PageBytes),
		parquet.WithBatchSize(batch),
		parquet.WithMaxRowGroupLength(int64(c.RowGroupRows)),
		parquet.WithDataPageVersion(parquet.DataPageV2),
		parquet.WithPageIndexEnabled(true),
		parquet.WithDictionaryDefault(false),
	)
	f, err := os.Create(ds.Path)
	if err != nil {
		return fmt.Errorf("quality: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil && !errors.Is(cerr, os.ErrClosed) {
			err = fmt.Errorf("quality: %w", cerr)
		}
	}()
	mem := memory.NewGoAllocator()
	fw, err := pqarrow.NewFileWriter(Schema, f, props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem)))
	if err != nil {
		return fmt.Errorf("quality: %s: %w", ds.Path, err)
	}
	b := array.NewRecordBuilder(mem, Schema)
	defer b.Release()
	labels := b.Field(0).(*array.Int32Builder)
	lists := b.Field(1).(*array.ListBuilder)
	toks := lists.ValueBuilder().(*array.Int32Builder)
	// One Write per row group: Write starts a new row group each call.
	for row := 0; row < len(ds.Docs); row += c.RowGroupRows {
		end := min(row+c.RowGroupRows, len(ds.Docs))
		for i := row; i < end; i++ {
			labels.Append(ds.Labels[i])
			lists.Append(true)
			toks.AppendValues(ds.Docs[i], nil)
		}
		rec := b.NewRecordBatch()
		err = fw.Write(rec)
		rec.Release()
		if err != nil {
			return fmt.Errorf("quality: %s: %w", ds.Path, err)
		}
	}
	if err := fw.Close(); err != nil {
		return fmt.Errorf("quality: %s: %w", ds.Path, err)
	}
	return nil
}

// UniformLoss is a reference: the cross-entropy of always predicting the
// uniform distribution, ln(Topics), the loss of an untrained model.
func (ds *Dataset) UniformLoss() float64 { return math.Log(float64(ds.Topics)) }
