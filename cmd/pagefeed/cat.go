package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/pagefeed/pagefeed/codec"
	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/rinas"
)

func init() {
	register("cat", "print a column's rows as JSON lines, read through the page index, engine and codec", runCat)
}

// runCat: pagefeed cat FILE... --column NAME [--format jsonl] [--limit N].
// Rows come in file order, one JSON value per line (codec.AppendJSON).
func runCat(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	column := fs.String("column", "", "the column to print: dotted leaf path, or a top-level name with one leaf; several separated by commas print one JSON object per row (required)")
	format := fs.String("format", "jsonl", "output format; only jsonl")
	limit := fs.Int64("limit", -1, "print at most N rows (default all)")
	var sources multiSource
	fs.Var(&sources, "source", "instead of FILE: one dataset of a weighted mixture, PATH[:WEIGHT] (repeatable): rows in the mixture's order, one epoch")
	seed := fs.Uint64("seed", 0, "with --source: the shuffle seed")
	shuffle := fs.String("shuffle", "none", "with --source: page|row|rowgroup|stream|none (none: each source in file order)")
	usage := "usage: pagefeed cat FILE... --column NAME[,NAME...] [--format jsonl] [--limit N]\n       pagefeed cat --source PATH[:WEIGHT]... --column NAME [--shuffle S] [--seed N] [--limit N]"
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
	}
	paths, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	if len(sources) > 0 {
		if len(paths) > 0 || *column == "" {
			return fmt.Errorf("need --column and either FILE or --source, not both (%s)", usage)
		}
		return catMixture(sources, *column, *shuffle, *seed, *limit, stdout, stderr)
	}
	if len(paths) == 0 || *column == "" {
		return fmt.Errorf("need FILE and --column (%s)", usage)
	}
	if *format != "jsonl" {
		return fmt.Errorf("--format %q: only jsonl is supported", *format)
	}
	if *limit == 0 {
		return nil
	}
	ctx := context.Background()
	rd, err := engine.StartRangeReader(engine.Options{})
	if err != nil {
		return err
	}
	defer rd.Close()
	names := strings.Split(*column, ",")
	ix, err := index.Build(ctx, paths, index.Options{
		Columns:   names,
		NoSidecar: true,
		Reader:    rd,
		Logf:      func(f string, a ...any) { fmt.Fprintf(stderr, "pagefeed cat: "+f+"\n", a...) },
	})
	if err != nil {
		return err
	}
	if len(names) > 1 {
		return catColumns(ctx, rd, ix, names, *limit, stdout)
	}
	if n := ix.NumColumns(); n != 1 {
		var leaves []string
		for k := 0; k < n; k++ {
			leaves = append(leaves, ix.Column(k).Path)
		}
		return fmt.Errorf("--column %q names %d leaf columns; name one of: %s", *column, n, strings.Join(leaves, ", "))
	}
	w := bufio.NewWriterSize(stdout, 1<<16)
	dec := codec.NewDecoder(codec.Options{})
	defer dec.Close()
	left := *limit
	var line []byte
	for c := 0; c < ix.NumChunks() && left != 0; c++ {
		cr, err := readChunk(ctx, rd, ix, 0, c)
		if err != nil {
			return err
		}
		err = cr.decodePages(dec, func(pg *codec.Page) error {
			defer pg.Release()
			arr := pg.Array()
			for r := 0; r < arr.Len() && left != 0; r++ {
				line = codec.AppendJSON(line[:0], arr, r)
				line = append(line, '\n')
				if _, err := w.Write(line); err != nil {
					return err
				}
				left--
			}
			if left == 0 {
				return errEnough
			}
			return nil
		})
		if err != nil && err != errEnough {
			return err
		}
	}
	return w.Flush()
}

// errEnough ends decodePages early: the rows asked for are written.
var errEnough = errors.New("enough rows")

// decodePages decodes cr's data pages in order with dec, its dictionary
// first, and hands each page to fn, which owns it (and releases it). An
// error from fn ends the walk and is returned.
func (cr *chunkRead) decodePages(dec *codec.Decoder, fn func(*codec.Page) error) error {
	var dict *codec.Dictionary
	if cr.dict != nil {
		var err error
		if dict, err = dec.Dictionary(cr.chunk, cr.dict, cr.dictOff); err != nil {
			return err
		}
	}
	for j := range cr.pages {
		pg, err := dec.DecodeSpan(cr.chunk, dict, cr.pages[j:], cr.offs[j:])
		if err != nil {
			return err
		}
		if err := fn(pg); err != nil {
			return err
		}
	}
	return nil
}

// chunkRead is one column chunk's pages, read through the engine.
type chunkRead struct {
	chunk   *codec.Chunk
	dict    []byte
	dictOff int64
	pages   [][]byte
	offs    []int64
}

// readChunk reads the dictionary and data pages of chunk c of projected
// column k in one batch (all reads in flight at once, completed in any
// order).
func readChunk(ctx context.Context, rd engine.BatchReader, ix *index.Index, k, c int) (*chunkRead, error) {
	ci := ix.Chunk(k, c)
	fi := ix.File(ci.File)
	cr := &chunkRead{chunk: codec.ChunkOf(ci.Descr, ci.Codec, fi.Path, nil)}
	var rs []engine.Range
	if ci.DictSize > 0 {
		rs = append(rs, engine.Range{Path: fi.Path, Off: ci.DictOffset, Len: int(ci.DictSize)})
	}
	for g := ci.FirstPage; g < ci.FirstPage+ci.NumPages; g++ {
		loc := ix.Locate(k, g)
		rs = append(rs, engine.Range{Path: fi.Path, Off: loc.Offset, Len: int(loc.Size)})
	}
	bufs := make([][]byte, len(rs))
	errs := make([]error, len(rs))
	var mu sync.Mutex
	err := rd.ReadBatch(ctx, rs, func(i int, data []byte, err error) {
		b := append([]byte(nil), data...)
		mu.Lock()
		bufs[i], errs[i] = b, err
		mu.Unlock()
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", fi.Path, err)
	}
	for i, r := range rs {
		if errs[i] != nil {
			return nil, fmt.Errorf("read %s at %d: %w", r.Path, r.Off, errs[i])
		}
		if len(bufs[i]) != r.Len {
			return nil, fmt.Errorf("read %s at %d: %d of %d bytes (file truncated?)", r.Path, r.Off, len(bufs[i]), r.Len)
		}
	}
	if ci.DictSize > 0 {
		cr.dict, cr.dictOff = bufs[0], rs[0].Off
		bufs, rs = bufs[1:], rs[1:]
	}
	cr.pages = bufs
	for _, r := range rs {
		cr.offs = append(cr.offs, r.Off)
	}
	return cr, nil
}

// parseMixed parses flags and positional arguments in any order.
func parseMixed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// multiSource collects repeated --source flags.
type multiSource []rinas.Source

func (m *multiSource) String() string { return fmt.Sprint(len(*m), " sources") }

func (m *multiSource) Set(v string) error {
	s, err := rinas.ParseSource(v)
	if err != nil {
		return err
	}
	*m = append(*m, s)
	return nil
}

// catMixture prints a mixture's rows in the order a Deterministic loader
// delivers them (one epoch), one JSON value per line.
func catMixture(srcs []rinas.Source, column, shuffle string, seed uint64, limit int64, stdout, stderr io.Writer) error {
	sh, err := rinas.ParseShuffle(shuffle)
	if err != nil {
		return err
	}
	ctx := context.Background()
	logf := func(f string, a ...any) { fmt.Fprintf(stderr, "pagefeed cat: "+f+"\n", a...) }
	l, err := rinas.Open(ctx, rinas.Config{Sources: srcs, Columns: []string{column}, Shuffle: sh, Seed: seed, World: 1, Deterministic: true,
		Index: index.Options{NoSidecar: true, Logf: logf}, Logf: logf})
	if err != nil {
		return err
	}
	defer l.Close()
	w := bufio.NewWriterSize(stdout, 1<<16)
	var line []byte
	for limit != 0 {
		b, err := l.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		for _, a := range b.Arrays {
			for r := 0; r < a.Len() && limit != 0; r++ {
				line = codec.AppendJSON(line[:0], a, r)
				line = append(line, '\n')
				if _, err := w.Write(line); err != nil {
					b.Release()
					return err
				}
				limit--
			}
		}
		b.Release()
	}
	return w.Flush()
}
