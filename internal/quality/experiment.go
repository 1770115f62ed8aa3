package quality

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/plot"
	"github.com/pagefeed/pagefeed/rinas"
)

// Orders are the orders of the shuffle-quality experiment, best
// expected first: a full row shuffle (ideal), the loader's defaults
// (nothing set but the batch, the data and the seed), page shuffle with
// and without the shuffle buffer, row-group shuffle, a sequential stream
// through the buffer, and file order.
var Orders = []string{"row", "default", "page+buffer", "page", "rowgroup", "stream", "none"}

// Config configures Run. Zero fields take the defaults of
// fill; Data's zero fields take DataConfig's.
type Config struct {
	// Data is the generated dataset; Data.Dir defaults to a temporary
	// folder removed at the end.
	Data DataConfig
	// Orders to train under; default Orders.
	Orders []string
	// BatchRows is the SGD batch, cut by the loader; default 32.
	BatchRows int
	// BufferRows is the shuffle buffer of page+buffer and stream; default
	// 1024. The default order uses the loader's own.
	BufferRows int
	// LR is the SGD learning rate; default 8.
	LR float64
	// EvalEvery evaluates the validation loss every this many steps for
	// the loss curves; default 16.
	EvalEvery int
	// Fetch is the loader's fetch mode; default ordered, which makes the
	// delivered order, and so the whole experiment, deterministic for a
	// seed (unordered assembles batches in completion order). The
	// default order uses the loader's own (unordered).
	Fetch string
	// Seed seeds the dataset and the loader's shuffles.
	Seed uint64
	// Logf receives per-order lines and the loader's notices (possibly
	// from engine goroutines, concurrently); default discard.
	Logf func(format string, args ...any)
}

func (c *Config) fill() error {
	if len(c.Orders) == 0 {
		c.Orders = Orders
	}
	for _, o := range c.Orders {
		if !slices.Contains(Orders, o) {
			return fmt.Errorf("%w: order %q (want %s)", ErrConfig, o, strings.Join(Orders, ", "))
		}
	}
	if c.BatchRows == 0 {
		c.BatchRows = 32
	}
	if c.BufferRows == 0 {
		c.BufferRows = 1024
	}
	if c.LR == 0 {
		c.LR = 8
	}
	if c.EvalEvery == 0 {
		c.EvalEvery = 16
	}
	if c.Fetch == "" {
		c.Fetch = "ordered"
	}
	if _, err := rinas.ParseFetch(c.Fetch); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	switch {
	case c.BatchRows < 1 || c.BatchRows > 1<<16:
		return fmt.Errorf("%w: batch of %d rows (want 1..65536)", ErrConfig, c.BatchRows)
	case c.BufferRows < 1 || c.BufferRows > 1<<24:
		return fmt.Errorf("%w: buffer of %d rows", ErrConfig, c.BufferRows)
	case !(c.LR > 0) || math.IsInf(c.LR, 0):
		return fmt.Errorf("%w: learning rate %g", ErrConfig, c.LR)
	case c.EvalEvery < 1:
		return fmt.Errorf("%w: eval every %d steps", ErrConfig, c.EvalEvery)
	}
	if c.Data.Seed == 0 {
		c.Data.Seed = c.Seed
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return nil
}

// Row is one order's outcome.
type Row struct {
	Order   string `json:"order"`
	Shuffle string `json:"shuffle"`
	// BufferRows is the shuffle buffer the loader used (its choice in
	// the default order), Fetch its fetch mode.
	BufferRows int     `json:"buffer_rows"`
	Fetch      string  `json:"fetch"`
	Steps      int     `json:"steps"`
	Rows       int     `json:"rows"`
	ValLoss    float64 `json:"val_loss"`     // nats, mean cross-entropy after the last step
	ValAcc     float64 `json:"val_accuracy"` // share of validation rows classified right
	// TailLoss is the mean validation loss over the curve points of the
	// last quarter of the steps: less sensitive than ValLoss to the last
	// few batches under a constant learning rate.
	TailLoss       float64 `json:"tail_loss"`
	RankCorr       float64 `json:"rank_correlation"`
	PagesPerBatch  float64 `json:"pages_per_batch"`
	TopicsPerBatch float64 `json:"topics_per_batch"`
	// Curve is the validation loss every EvalEvery steps (step 0 first).
	CurveSteps []int     `json:"curve_steps"`
	CurveLoss  []float64 `json:"curve_loss"`
	Seconds    float64   `json:"seconds"`
}

// Result is Run's outcome.
type Result struct {
	Topics       int     `json:"topics"`
	Rows         int     `json:"rows"`
	ValRows      int     `json:"val_rows"`
	Vocab        int     `json:"vocab"`
	Pages        int     `json:"pages"`
	RowGroups    int     `json:"row_groups"`
	BatchRows    int     `json:"batch_rows"`
	BufferRows   int     `json:"buffer_rows"`
	LR           float64 `json:"lr"`
	Seed         uint64  `json:"seed"`
	Fetch        string  `json:"fetch"`
	UniformLoss  float64 `json:"uniform_loss"` // ln(topics): the untrained model
	Orders       []Row   `json:"orders"`
	TotalSeconds float64 `json:"total_seconds"`
}

// loaderConfig is the loader's configuration for an order. Every order
// reads ix (the generated file's tokens column) in cfg.BatchRows
// batches with cfg.Seed, as rank 0 of 1 (the experiment is one process
// and checks every row). The default order sets nothing else: the
// loader's own shuffle, buffer, fetch, read-ahead and memory limit. The
// others set their shuffle and buffer (BufferRows -1: none) and
// cfg.Fetch.
func loaderConfig(order string, cfg *Config, ix *index.Index) rinas.Config {
	c := rinas.Config{
		SharedIndex: ix, BatchRows: cfg.BatchRows, Seed: cfg.Seed, World: 1,
		Engine: engine.Options{Logf: cfg.Logf}, Logf: cfg.Logf,
	}
	if order == "default" {
		return c
	}
	c.Fetch, _ = rinas.ParseFetch(cfg.Fetch)
	c.Epochs = 1
	switch order {
	case "row":
		c.Shuffle, c.BufferRows = rinas.ShuffleRow, -1
	case "page+buffer":
		c.Shuffle, c.BufferRows = rinas.ShufflePage, cfg.BufferRows
	case "page":
		c.Shuffle, c.BufferRows = rinas.ShufflePage, -1
	case "rowgroup":
		c.Shuffle, c.BufferRows = rinas.ShuffleRowGroup, -1
	case "stream":
		c.Shuffle, c.BufferRows = rinas.ShuffleStream, cfg.BufferRows
	default:
		c.Shuffle, c.BufferRows = rinas.ShuffleNone, -1
	}
	return c
}

// Run writes the topic-sorted dataset, then for each order reads
// one epoch through the loader (rinas) in BatchRows batches and trains a
// fresh model on them, one SGD step per batch, so every order gets the
// same steps over the same rows. It checks that every row is delivered
// exactly once with the tokens written, and reports the final validation
// loss and the order statistics.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	start := time.Now()
	if cfg.Data.Dir == "" {
		dir, err := os.MkdirTemp("", "pagefeed-quality-")
		if err != nil {
			return nil, fmt.Errorf("quality: %w", err) // a *fs.PathError
		}
		defer os.RemoveAll(dir)
		cfg.Data.Dir = dir
	}
	ds, err := Write(cfg.Data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	ix, err := index.Build(ctx, []string{ds.Path}, index.Options{Columns: []string{TokensColumn}, NoSidecar: true, Logf: cfg.Logf})
	if err != nil {
		return nil, err
	}
	res := &Result{
		Topics: ds.Topics, Rows: len(ds.Docs), ValRows: len(ds.ValDocs), Vocab: ds.Vocab,
		Pages: ix.NumPages(0), RowGroups: ix.NumChunks(), BatchRows: cfg.BatchRows, BufferRows: cfg.BufferRows,
		LR: cfg.LR, Seed: cfg.Seed, Fetch: cfg.Fetch, UniformLoss: ds.UniformLoss(),
	}
	for _, order := range cfg.Orders {
		row, err := trainOrder(ctx, &cfg, ds, ix, order)
		if err != nil {
			return res, fmt.Errorf("order %s: %w", order, err)
		}
		cfg.Logf("%-11s val loss %.4f  (last quarter %.4f)  accuracy %.3f  rank corr %+.3f  pages/batch %.1f  topics/batch %.2f  (%.1fs)",
			order, row.ValLoss, row.TailLoss, row.ValAcc, row.RankCorr, row.PagesPerBatch, row.TopicsPerBatch, row.Seconds)
		res.Orders = append(res.Orders, *row)
	}
	res.TotalSeconds = time.Since(start).Seconds()
	return res, nil
}

func trainOrder(ctx context.Context, cfg *Config, ds *Dataset, ix *index.Index, order string) (*Row, error) {
	t0 := time.Now()
	lc := loaderConfig(order, cfg, ix)
	l, err := rinas.Open(ctx, lc)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	m := NewModel(ds.Topics, ds.Vocab, cfg.LR)
	row := &Row{Order: order, Shuffle: lc.Shuffle.String(), BufferRows: l.BufferRows(), Fetch: lc.Fetch.String()}
	eval := func() error {
		loss, _, err := m.Eval(ds.ValDocs, ds.ValLabels)
		row.CurveSteps = append(row.CurveSteps, row.Steps)
		row.CurveLoss = append(row.CurveLoss, loss)
		return err
	}
	if err := eval(); err != nil {
		return nil, err
	}
	var st OrderStats
	delivered := make([]bool, len(ds.Docs))
	var docs [][]int32
	var labels []int32
	var origs []int64
	var pages []uint64
	for {
		b, err := l.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		docs, labels, origs, pages = docs[:0], labels[:0], origs[:0], pages[:0]
		err = batchRows(b, ix, ds, delivered, &docs, &labels, &origs, &pages)
		stepped := err == nil && len(docs) > 0
		if stepped {
			st.AddBatch(origs, pages, labels)
			_, err = m.Step(docs, labels) // docs alias the batch: step before Release
			row.Steps++
		}
		b.Release()
		if err != nil {
			return nil, err
		}
		if stepped && row.Steps%cfg.EvalEvery == 0 {
			if err := eval(); err != nil {
				return nil, err
			}
		}
	}
	if st.Rows() != len(ds.Docs) {
		return nil, fmt.Errorf("the loader delivered %d rows of %d", st.Rows(), len(ds.Docs))
	}
	if row.CurveSteps[len(row.CurveSteps)-1] != row.Steps {
		if err := eval(); err != nil {
			return nil, err
		}
	}
	row.ValLoss = row.CurveLoss[len(row.CurveLoss)-1]
	if _, row.ValAcc, err = m.Eval(ds.ValDocs, ds.ValLabels); err != nil {
		return nil, err
	}
	row.TailLoss = tailMean(row.CurveSteps, row.CurveLoss, row.Steps-row.Steps/4)
	row.Rows = st.Rows()
	row.RankCorr = st.RankCorrelation()
	row.PagesPerBatch = st.PagesPerBatch()
	row.TopicsPerBatch = st.TopicsPerBatch()
	row.Seconds = time.Since(t0).Seconds()
	return row, nil
}

// tailMean is the mean of ys whose x is at least from.
func tailMean(xs []int, ys []float64, from int) float64 {
	var sum float64
	n := 0
	for i, x := range xs {
		if x >= from {
			sum += ys[i]
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// batchRows maps each row of b back to its original row through the index,
// checks it is new and holds the tokens written, and appends its tokens
// (aliasing b), label, original row and page.
func batchRows(b *rinas.Batch, ix *index.Index, ds *Dataset, delivered []bool,
	docs *[][]int32, labels *[]int32, origs *[]int64, pages *[]uint64) error {
	if b.Rows == 0 {
		return nil
	}
	if len(b.Arrays) != 1 || len(b.Refs) != b.Rows {
		return fmt.Errorf("batch of %d rows with %d arrays and %d refs", b.Rows, len(b.Arrays), len(b.Refs))
	}
	list, ok := b.Arrays[0].(*array.List)
	if !ok || list.Len() != b.Rows {
		return fmt.Errorf("batch array is %s of %d rows, want list<int32> of %d", b.Arrays[0].DataType(), b.Arrays[0].Len(), b.Rows)
	}
	vals, ok := list.ListValues().(*array.Int32)
	if !ok {
		return fmt.Errorf("batch list values are %s, want int32", list.ListValues().DataType())
	}
	all := vals.Int32Values()
	for i, ref := range b.Refs {
		loc := ix.Locate(0, int(ref.Page))
		if loc.FirstRow < 0 {
			return fmt.Errorf("page %d: first row unknown (no offset index?)", ref.Page)
		}
		orig := ix.File(loc.File).FirstRow + loc.FirstRow + int64(ref.Row)
		if orig < 0 || orig >= int64(len(ds.Docs)) || delivered[orig] {
			return fmt.Errorf("page %d row %d: original row %d out of range or delivered twice", ref.Page, ref.Row, orig)
		}
		delivered[orig] = true
		lo, hi := list.ValueOffsets(i)
		doc := all[lo:hi]
		if !slices.Equal(doc, ds.Docs[orig]) {
			return fmt.Errorf("page %d row %d: tokens differ from original row %d", ref.Page, ref.Row, orig)
		}
		*docs = append(*docs, doc)
		*labels = append(*labels, ds.Labels[orig])
		*origs = append(*origs, orig)
		*pages = append(*pages, ref.Page)
	}
	return nil
}

// WriteTable writes the result as a Markdown table.
func (r *Result) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "%d topics, %d training rows sorted by topic in %d pages and %d row groups, %d validation rows; batch %d rows, buffer %d rows (page+buffer, stream), SGD lr %g, seed %d, %s fetch (default: the loader's own); untrained loss ln(%d) = %.4f\n\n",
		r.Topics, r.Rows, r.Pages, r.RowGroups, r.ValRows, r.BatchRows, r.BufferRows, r.LR, r.Seed, r.Fetch, r.Topics, r.UniformLoss)
	rows := [][]string{{"order", "buffer", "fetch", "steps", "val loss (nats)", "last-quarter mean loss", "val accuracy", "rank corr", "pages/batch", "topics/batch"}}
	for _, o := range r.Orders {
		rows = append(rows, []string{o.Order, fmt.Sprint(o.BufferRows), o.Fetch, fmt.Sprint(o.Steps), fmt.Sprintf("%.4f", o.ValLoss), fmt.Sprintf("%.4f", o.TailLoss), fmt.Sprintf("%.3f", o.ValAcc),
			fmt.Sprintf("%+.3f", o.RankCorr), fmt.Sprintf("%.1f", o.PagesPerBatch), fmt.Sprintf("%.2f", o.TopicsPerBatch)})
	}
	return writeMarkdown(w, rows)
}

// writeMarkdown writes rows (the first is the header) as a Markdown table.
func writeMarkdown(w io.Writer, rows [][]string) error {
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		for i, c := range cells {
			fmt.Fprintf(&b, "| %-*s ", width[i], c)
		}
		b.WriteString("|\n")
	}
	line(rows[0])
	sep := make([]string, len(width))
	for i, n := range width {
		sep[i] = strings.Repeat("-", n)
	}
	line(sep)
	for _, r := range rows[1:] {
		line(r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the result, indented.
func (r *Result) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(r)
}

// Charts writes shuffle_quality_loss (final validation loss per order, a
// bar chart) and shuffle_quality_curves (validation loss against step)
// into dir as SVG and PNG, and returns their base names.
func (r *Result) Charts(dir string) ([]string, error) {
	if len(r.Orders) == 0 {
		return nil, errors.New("quality: no order to chart")
	}
	bars := plot.Bars{
		Title:  fmt.Sprintf("final validation loss by order (%d topics, rows sorted by topic)", r.Topics),
		YLabel: "validation cross-entropy (nats)",
	}
	curves := plot.Chart{Title: "validation loss during training", XLabel: "SGD step (batches of " + fmt.Sprint(r.BatchRows) + " rows)",
		YLabel: "validation cross-entropy (nats)"}
	for _, o := range r.Orders {
		bars.Labels = append(bars.Labels, o.Order)
		bars.Values = append(bars.Values, o.ValLoss)
		s := plot.Series{Label: o.Order}
		for i, st := range o.CurveSteps {
			s.X = append(s.X, float64(st))
			s.Y = append(s.Y, o.CurveLoss[i])
		}
		curves.Series = append(curves.Series, s)
	}
	names := []string{"shuffle_quality_loss", "shuffle_quality_curves"}
	if err := bars.Save(filepath.Join(dir, names[0])); err != nil {
		return nil, err
	}
	if err := curves.Save(filepath.Join(dir, names[1])); err != nil {
		return names[:1], err
	}
	return names, nil
}

// Summary is one order over several runs (seeds).
type Summary struct {
	Order          string  `json:"order"`
	Runs           int     `json:"runs"`
	ValLossMean    float64 `json:"val_loss_mean"`
	ValLossSD      float64 `json:"val_loss_sd"`
	TailLossMean   float64 `json:"tail_loss_mean"`
	TailLossSD     float64 `json:"tail_loss_sd"`
	ValAccMean     float64 `json:"val_accuracy_mean"`
	RankCorrMean   float64 `json:"rank_correlation_mean"`
	PagesPerBatch  float64 `json:"pages_per_batch"`
	TopicsPerBatch float64 `json:"topics_per_batch"`
}

// Summarize averages each order over runs (same orders in each).
func Summarize(runs []*Result) []Summary {
	if len(runs) == 0 {
		return nil
	}
	var out []Summary
	for i, o := range runs[0].Orders {
		var vl, tl, acc, rc, ppb, tpb []float64
		for _, r := range runs {
			if i >= len(r.Orders) || r.Orders[i].Order != o.Order {
				continue
			}
			q := r.Orders[i]
			vl, tl, acc, rc = append(vl, q.ValLoss), append(tl, q.TailLoss), append(acc, q.ValAcc), append(rc, q.RankCorr)
			ppb, tpb = append(ppb, q.PagesPerBatch), append(tpb, q.TopicsPerBatch)
		}
		s := Summary{Order: o.Order, Runs: len(vl)}
		s.ValLossMean, s.ValLossSD = meanSD(vl)
		s.TailLossMean, s.TailLossSD = meanSD(tl)
		s.ValAccMean, _ = meanSD(acc)
		s.RankCorrMean, _ = meanSD(rc)
		s.PagesPerBatch, _ = meanSD(ppb)
		s.TopicsPerBatch, _ = meanSD(tpb)
		out = append(out, s)
	}
	return out
}

// meanSD returns the mean and the sample standard deviation (0 for one value).
func meanSD(xs []float64) (mean, sd float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)-1))
}

// WriteSummary writes summaries as a Markdown table (mean ± sd).
func WriteSummary(w io.Writer, sums []Summary) error {
	rows := [][]string{{"order", "runs", "val loss (nats)", "last-quarter mean loss", "val accuracy", "rank corr", "pages/batch", "topics/batch"}}
	for _, s := range sums {
		rows = append(rows, []string{s.Order, fmt.Sprint(s.Runs), fmt.Sprintf("%.3f ± %.3f", s.ValLossMean, s.ValLossSD),
			fmt.Sprintf("%.3f ± %.3f", s.TailLossMean, s.TailLossSD), fmt.Sprintf("%.3f", s.ValAccMean),
			fmt.Sprintf("%+.3f", s.RankCorrMean), fmt.Sprintf("%.1f", s.PagesPerBatch), fmt.Sprintf("%.2f", s.TopicsPerBatch)})
	}
	return writeMarkdown(w, rows)
}

// RunSeeds runs the experiment seeds times, with cfg.Seed, cfg.Seed+1, ...
// (the dataset's seed follows), and writes each run's table to w as it
// ends.
func RunSeeds(ctx context.Context, cfg Config, seeds int, w io.Writer) ([]*Result, error) {
	if seeds < 1 || seeds > 100 {
		return nil, fmt.Errorf("%w: %d seeds (want 1..100)", ErrConfig, seeds)
	}
	var runs []*Result
	for i := 0; i < seeds; i++ {
		ci := cfg
		ci.Seed = cfg.Seed + uint64(i)
		ci.Data.Seed = 0 // follows Seed
		res, err := Run(ctx, ci)
		if err != nil {
			return runs, err
		}
		if err := res.WriteTable(w); err != nil {
			return runs, err
		}
		fmt.Fprintln(w)
		runs = append(runs, res)
	}
	return runs, nil
}

// WriteResults writes results.json (every run and the summary),
// results.md (the tables) and the first run's charts into dir, which
// must exist, and returns the charts' base names.
func WriteResults(dir string, runs []*Result) ([]string, error) {
	if len(runs) == 0 {
		return nil, errors.New("quality: no run to write")
	}
	doc := struct {
		Runs    []*Result `json:"runs"`
		Summary []Summary `json:"summary"`
	}{runs, Summarize(runs)}
	writeJSON := func(w io.Writer) error {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(doc)
	}
	writeMD := func(w io.Writer) error {
		for _, r := range runs {
			if err := r.WriteTable(w); err != nil {
				return err
			}
			fmt.Fprintln(w)
		}
		if len(runs) > 1 {
			return WriteSummary(w, doc.Summary)
		}
		return nil
	}
	for name, write := range map[string]func(io.Writer) error{"results.json": writeJSON, "results.md": writeMD} {
		if err := writeFile(filepath.Join(dir, name), write); err != nil {
			return nil, err
		}
	}
	return runs[0].Charts(dir)
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
