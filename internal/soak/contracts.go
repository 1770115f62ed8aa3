package soak

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"golang.org/x/sys/unix"

	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/gen"
	"github.com/pagefeed/pagefeed/rinas"
)

// The rewrite dataset: rwFiles files of rwRows rows, columns id and d
// (d = rwD(id)), both delta-encoded from one permutation of the rows, so
// that every file has the same layout byte for byte and differs from the
// others only in each page's first value. A file whose ids and d values
// are all shifted by constants keeps that layout: written over an
// original in place, it is a valid file whose page map is the old one's,
// as `rsync --inplace` or a job rewriting a shard leaves it.
const (
	rwFiles = 4
	rwRows  = 3000
	rwBase  = 1 << 24 // ids from here: every first value's varint has the same length
	rwDBase = 1 << 24
)

func rwID(perm []int, f, j int) int64 { return rwBase + int64(f*rwRows+perm[j]) }
func rwD(id int64) int64              { return rwDBase + (id-rwBase)*7919%(1<<20) }

// rwSet is one codec's rewrite dataset: the files, each one's original
// bytes, and for each a file of the same layout with other values (ids
// shifted out of the dataset's range in odd files, kept in even ones, so
// that only the values tell; every d shifted).
type rwSet struct {
	paths     []string
	orig, alt [][]byte
	seen      []uint32 // per id - rwBase: the run that delivered it
}

// tokenSum is an order-free digest of a multiset of tokens.
type tokenSum struct{ n, sum uint64 }

func (s *tokenSum) add(tok int32) {
	s.n++
	s.sum += mix64(uint64(uint32(tok)) + 1)
}

func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// eos is the tokens output's default end-of-document token.
const eos = 50256

// setupContracts writes the rewrite datasets under dir and digests the
// tokens an epoch must deliver.
func (w *workload) setupContracts(ctx context.Context, dir string) error {
	w.rw = map[string]*rwSet{}
	for _, c := range []string{"none", "zstd"} {
		set, err := makeRWSet(ctx, filepath.Join(dir, "rewrite-"+c), c)
		if err != nil {
			return err
		}
		w.rw[c] = set
	}
	for _, p := range w.paths {
		if err := addTokens(ctx, &w.tokens, p); err != nil {
			return err
		}
	}
	return nil
}

// addTokens adds the tokens output of the documents of the file at path
// to s: every token, and an EOS after each document.
func addTokens(ctx context.Context, s *tokenSum, path string) error {
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 14}, memory.DefaultAllocator)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	col := -1
	for i, f := range fr.Manifest.Fields {
		if f.Field.Name == "input_ids" {
			col = i
		}
	}
	tbl, err := fr.ReadTable(ctx)
	if err != nil || col < 0 {
		return fmt.Errorf("%s: input_ids: %w (column %d)", path, err, col)
	}
	defer tbl.Release()
	for _, a := range tbl.Column(col).Data().Chunks() {
		l := a.(*array.List)
		vals := l.ListValues().(*array.Int32)
		for r := 0; r < l.Len(); r++ {
			lo, hi := l.ValueOffsets(r)
			for k := lo; k < hi; k++ {
				s.add(vals.Value(int(k)))
			}
			s.add(eos)
		}
	}
	return nil
}

// makeRWSet writes the rewrite dataset under dir with codec, and the
// replacement files, and checks that each replacement has its
// original's layout (the size and every page's offset and size): the
// premise of a rewrite that no page map can tell. A zstd page whose
// first value changed may compress to another size: other shifts are
// tried until one keeps every size.
func makeRWSet(ctx context.Context, dir, codec string) (*rwSet, error) {
	comp, err := gen.ParseCodec(codec)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	set := &rwSet{seen: make([]uint32, rwFiles*rwRows)}
	perm := rand.New(rand.NewPCG(3, 4)).Perm(rwRows)
	for f := 0; f < rwFiles; f++ {
		b, err := rwFile(comp, perm, f, 0, 0)
		if err != nil {
			return nil, err
		}
		p := filepath.Join(dir, fmt.Sprintf("part-%d.parquet", f))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, err
		}
		set.paths, set.orig = append(set.paths, p), append(set.orig, b)
	}
	set.alt = make([][]byte, rwFiles)
	for f := 0; f < rwFiles; f++ {
		idShift := int64(0)
		if f%2 == 1 {
			idShift = rwFiles * rwRows
		}
		for try := int64(0); set.alt[f] == nil; try++ {
			if try == 64 {
				return nil, fmt.Errorf("rewrite dataset (%s): no replacement of file %d keeps its layout", codec, f)
			}
			b, err := rwFile(comp, perm, f, idShift, 1<<22+try*977)
			if err != nil {
				return nil, err
			}
			if ok, err := sameLayout(ctx, set.paths[f], b); err != nil {
				return nil, err
			} else if ok {
				set.alt[f] = b
			}
		}
	}
	return set, nil
}

// rwFile returns file f of the rewrite dataset with every id shifted by
// idShift and every d by dShift.
func rwFile(comp compress.Compression, perm []int, f int, idShift, dShift int64) ([]byte, error) {
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "d", Type: arrow.PrimitiveTypes.Int64}}, nil)
	props := parquet.NewWriterProperties(parquet.WithCompression(comp), parquet.WithDataPageSize(1024), parquet.WithBatchSize(64),
		parquet.WithDictionaryDefault(false), parquet.WithEncoding(parquet.Encodings.DeltaBinaryPacked),
		parquet.WithStats(false), parquet.WithMaxRowGroupLength(rwRows/2), parquet.WithDataPageVersion(parquet.DataPageV2))
	ib, db := array.NewInt64Builder(memory.DefaultAllocator), array.NewInt64Builder(memory.DefaultAllocator)
	defer ib.Release()
	defer db.Release()
	for j := 0; j < rwRows; j++ {
		id := rwID(perm, f, j)
		ib.Append(id + idShift)
		db.Append(rwD(id) + dShift)
	}
	ia, da := ib.NewArray(), db.NewArray()
	defer ia.Release()
	defer da.Release()
	rec := array.NewRecordBatch(sc, []arrow.Array{ia, da}, rwRows)
	defer rec.Release()
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(sc, &buf, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, err
	}
	if err := fw.Write(rec); err != nil {
		fw.Close()
		return nil, err
	}
	if err := fw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// sameLayout reports whether the Parquet file b has the layout of the
// file at path: the same size, and every page of both columns at the same
// offset with the same size.
func sameLayout(ctx context.Context, path string, b []byte) (bool, error) {
	st, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	if st.Size() != int64(len(b)) {
		return false, nil
	}
	alt := path + ".alt"
	if err := os.WriteFile(alt, b, 0o644); err != nil {
		return false, err
	}
	defer os.Remove(alt)
	ix, err := index.Build(ctx, []string{path, alt}, index.Options{Columns: []string{"id", "d"}, NoSidecar: true, Logf: func(string, ...any) {}})
	if err != nil {
		return false, fmt.Errorf("index: %w", err)
	}
	for k := 0; k < ix.NumColumns(); k++ {
		var locs [2][]index.Loc
		for g := 0; g < ix.NumPages(k); g++ {
			loc := ix.Locate(k, g)
			locs[loc.File] = append(locs[loc.File], loc)
		}
		if len(locs[0]) != len(locs[1]) {
			return false, nil
		}
		for i, a := range locs[0] {
			if b := locs[1][i]; a.Offset != b.Offset || a.Size != b.Size {
				return false, nil
			}
		}
	}
	return true, nil
}

// rewriteInPlace writes b over the file at path from offset 0 (open
// without O_TRUNC: the same inode and size), again until the file's
// status-change time differs from before. A rewrite within the file
// system's timestamp granularity of the last look keeps it, and no stat
// can see that (the documented limit of the identity check): the soak
// tests the guarantee, not the limit.
func rewriteInPlace(path string, b []byte) error {
	var before unix.Stat_t
	if err := unix.Stat(path, &before); err != nil {
		return err
	}
	for try := 0; ; try++ {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteAt(b, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		var now unix.Stat_t
		if err := unix.Stat(path, &now); err != nil {
			return err
		}
		if now.Ctim != before.Ctim {
			return nil
		}
		if try == 200 {
			return fmt.Errorf("%s: status-change time unchanged after %d rewrites", path, try)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// rewriteRun reads one epoch of the rewrite dataset of v.codec (columns
// id and d) and, after a random number of its batches, writes a victim
// file's replacement over it in place. Every row delivered must be the
// original dataset's, with its own d, at most once. The run must end
// with ErrFileChanged naming the victim (or, with SkipBadPages, skip its
// units), or deliver every row: a run that ends otherwise with rows
// missing or wrong is undetected. The victim is restored afterwards.
func (w *workload) rewriteRun(ctx context.Context, v variant) error {
	set := w.rw[v.codec]
	rng := rand.New(rand.NewPCG(uint64(w.runs), 0x5eed))
	run := uint32(w.runs)
	cfg := rinas.Config{
		Paths: set.paths, Columns: []string{"id", "d"}, LeadColumn: "id", Fetch: v.fetch,
		Seed: uint64(w.runs), World: 1, SkipBadPages: v.skip, BatchPages: 4, BatchRows: v.batchRows,
		Engine: engine.Options{Faults: w.cfg.Faults},
		Index:  index.Options{NoSidecar: true, Logf: func(string, ...any) {}},
		Logf:   func(string, ...any) {},
	}
	if v.batchRows > 0 {
		cfg.BufferRows = 500
	}
	l, err := rinas.Open(ctx, cfg)
	if err != nil {
		return fmt.Errorf("soak: %s: open: %w", v.name, err)
	}
	victim := rng.IntN(rwFiles)
	after := rng.IntN(max(l.Len(), 1))
	rewritten, eof := false, false
	var delivered, wrong int64
	var runErr error
	for n := 0; ; n++ {
		if n == after {
			if err := rewriteInPlace(set.paths[victim], set.alt[victim]); err != nil {
				runErr = fmt.Errorf("soak: %s: rewrite: %w", v.name, err)
				break
			}
			rewritten = true
			w.rewrites++
		}
		b, err := l.Next(ctx)
		if err == io.EOF {
			eof = true
			break
		}
		if err != nil {
			switch {
			case ctx.Err() != nil:
				runErr = ctx.Err()
			case errors.Is(err, syscall.EIO):
				w.eioFailed++ // an injected EIO fails the run: that is the contract
			case rewritten && errors.Is(err, rinas.ErrFileChanged) && strings.Contains(err.Error(), set.paths[victim]):
				w.rewriteErrors++
			default:
				runErr = fmt.Errorf("soak: %s: %w (file %s rewritten: %v)", v.name, err, set.paths[victim], rewritten)
			}
			break
		}
		w.batches++
		w.rowsOut += int64(b.Rows)
		for i, a := range b.Columns[0].Arrays {
			ids, ds := a.(*array.Int64).Int64Values(), b.Columns[1].Arrays[i].(*array.Int64).Int64Values()
			for r, id := range ids {
				if id < rwBase || id >= rwBase+rwFiles*rwRows || ds[r] != rwD(id) {
					wrong++
					continue
				}
				if set.seen[id-rwBase] == run {
					w.dup++
				}
				set.seen[id-rwBase] = run
				delivered++
			}
		}
		b.Release()
	}
	w.wrong += wrong
	if eof {
		// The epoch ended without an error: every row came, or the
		// rewritten file's units were skipped (SkipBadPages) and counted.
		missing := rwFiles*rwRows - delivered
		var inSkipped int64
		sps := l.Skipped()
		lead := l.Index().Lookup("id")[0]
		for _, sp := range sps {
			if sp.Path != set.paths[victim] && runErr == nil {
				runErr = fmt.Errorf("soak: %s: skipped a page of %s, rewritten was %s", v.name, sp.Path, set.paths[victim])
			}
			inSkipped += int64(l.Index().Locate(lead, int(sp.Page)).NumRows)
		}
		if len(sps) > 0 {
			w.rewriteSkips++
		}
		if wrong > 0 || missing > inSkipped {
			w.undetected++
			w.lost += max(missing-inSkipped, 0)
		}
	}
	w.skipped += l.Stats().SkippedPages
	cerr := l.Close()
	// Restore the original for the next run (a new loader indexes it anew).
	if err := os.WriteFile(set.paths[victim], set.orig[victim], 0o644); err != nil && runErr == nil {
		runErr = fmt.Errorf("soak: %s: restore: %w", v.name, err)
	}
	if runErr != nil {
		return runErr
	}
	return cerr
}

// interruptRun reads one epoch of the soak dataset while interrupting
// it: a third of the Next calls get a context that is already cancelled,
// ends after a random few hundred microseconds, or is cancelled by
// another goroutine after a random delay. After each interrupt the run
// either goes on with a fresh context on the same loader or takes the
// loader's State (through JSON), closes it and resumes a new loader from
// it; some delivered batches are given back with Unread, and some are
// followed by a resume too. Over the epoch every row must come exactly
// once (id column), or the tokens delivered must be the dataset's
// (tokens output: the same multiset of document tokens and EOS).
func (w *workload) interruptRun(ctx context.Context, v variant) error {
	rng := rand.New(rand.NewPCG(uint64(w.runs), 0x1e7))
	run := uint32(w.runs)
	cfg := w.config(v)
	cfg.BatchPages = 4 // many steps per epoch, so many points to interrupt
	if v.batchRows > 0 {
		cfg.BatchRows = v.batchRows
	}
	if v.output == rinas.OutputTokens {
		cfg.SharedIndex = w.tokIx
	}
	open := func(st *rinas.State) (*rinas.Loader, error) {
		c := cfg
		c.Resume = st
		l, err := rinas.Open(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("soak: %s: open (resume %v): %w", v.name, st != nil, err)
		}
		return l, nil
	}
	l, err := open(nil)
	if err != nil {
		return err
	}
	skipped := map[uint64]bool{} // pages skipped by any of the run's loaders
	closeL := func() error {
		if l == nil {
			return nil // a resume failed to open
		}
		for _, sp := range l.Skipped() {
			skipped[sp.Page] = true
		}
		w.skipped += l.Stats().SkippedPages
		err := l.Close()
		l = nil
		return err
	}
	resume := func() error {
		raw, err := rinas.MarshalState(l.State())
		if err != nil {
			return err
		}
		st, err := rinas.UnmarshalState(raw)
		if err != nil {
			return err
		}
		if err := closeL(); err != nil {
			return err
		}
		w.resumes++
		l, err = open(st)
		return err
	}
	var delivered int64
	var toks tokenSum
	var runErr error
	for runErr == nil {
		nctx, stop := interruptCtx(ctx, rng)
		b, err := l.Next(nctx)
		stop()
		if err == io.EOF {
			break
		}
		if err != nil {
			switch {
			case ctx.Err() != nil:
				runErr = ctx.Err()
			case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
				w.interrupts++
				if rng.IntN(2) == 0 {
					runErr = resume()
				}
				continue
			case errors.Is(err, syscall.EIO):
				w.eioFailed++ // the run fails, as it must: nothing to account
				delivered = -1
			default:
				runErr = fmt.Errorf("soak: %s: %w", v.name, err)
			}
			break
		}
		if rng.IntN(6) == 0 {
			// Handed out but never received (an interrupt between the
			// call and its consumer): given back, it comes again.
			if err := l.Unread(b); err != nil {
				runErr = fmt.Errorf("soak: %s: unread: %w", v.name, err)
				break
			}
			w.unreads++
		} else {
			w.batches++
			w.rowsOut += int64(b.Rows)
			if v.output == rinas.OutputTokens {
				for i, t := range b.Tokens {
					if b.LossMask[i] != 0 {
						toks.add(t)
					}
				}
			} else {
				for _, a := range b.Arrays {
					for _, id := range a.(*array.Int64).Int64Values() {
						if id < 0 || id >= w.rows {
							w.wrong++
							continue
						}
						if w.seen[id] == run {
							w.dup++
						}
						w.seen[id] = run
						delivered++
					}
				}
			}
			b.Release()
		}
		if rng.IntN(20) == 0 {
			runErr = resume()
		}
	}
	cerr := closeL()
	if runErr != nil {
		return runErr
	}
	switch {
	case delivered < 0:
	case v.output == rinas.OutputTokens:
		switch {
		case toks.n < w.tokens.n:
			w.lost += int64(w.tokens.n - toks.n)
		case toks.n > w.tokens.n:
			w.dup += int64(toks.n - w.tokens.n)
		case toks.sum != w.tokens.sum:
			w.wrong++
		}
	default:
		inSkipped := int64(0)
		for p := range skipped {
			inSkipped += int64(w.idIx.Locate(0, int(p)).NumRows)
		}
		w.lost += max(w.rows-inSkipped-delivered, 0)
	}
	return cerr
}

// interruptCtx returns a context for one Next call derived from ctx, and
// the function that ends it (and the goroutine cancelling it, if any):
// two calls in three are not interrupted; the others get a context already
// cancelled, one with a deadline in the next 500 µs, or one that another
// goroutine cancels within a millisecond.
func interruptCtx(ctx context.Context, rng *rand.Rand) (context.Context, func()) {
	switch rng.IntN(9) {
	case 0:
		c, cancel := context.WithCancel(ctx)
		cancel()
		return c, cancel
	case 1:
		return context.WithTimeout(ctx, time.Duration(rng.IntN(500))*time.Microsecond)
	case 2:
		c, cancel := context.WithCancel(ctx)
		d := time.Duration(rng.IntN(1000)) * time.Microsecond
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
				cancel()
			case <-done:
			}
		}()
		return c, func() { close(done); wg.Wait(); cancel() }
	}
	return ctx, func() {}
}
