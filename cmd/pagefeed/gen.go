package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/gen"
)

func init() {
	register("gen", "write a synthetic tokenized-LLM Parquet dataset", runGen)
}

// onOff is a flag taking on|off (or true|false).
type onOff bool

func (o *onOff) String() string {
	if *o {
		return "on"
	}
	return "off"
}

func (o *onOff) Set(s string) error {
	switch strings.ToLower(s) {
	case "on", "true", "1", "yes":
		*o = true
	case "off", "false", "0", "no":
		*o = false
	default:
		return fmt.Errorf("want on or off, got %q", s)
	}
	return nil
}

// runGen binds flags to gen.Config, writes the dataset, then indexes it
// (without a sidecar) to report the pages written.
func runGen(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c gen.Config
	pageIndex, dict := onOff(true), onOff(false)
	fs.StringVar(&c.Dir, "out", "", "output `dir` (required)")
	fs.IntVar(&c.Files, "files", 1, "number of files")
	fs.IntVar(&c.RowsPerFile, "rows-per-file", 1000, "rows (documents) per file")
	fs.StringVar(&c.Codec, "codec", "zstd", "zstd|snappy|gzip|lz4_raw|brotli|none")
	fs.Int64Var(&c.PageSize, "page-size", 1<<20, "target data page size in `bytes`")
	fs.Int64Var(&c.ScalarPageSize, "scalar-page-size", 0, "target page size in `bytes` of the id and text columns (default: --page-size)")
	fs.Int64Var(&c.RowGroupRows, "row-group-rows", 0, "rows per row group (default: rows-per-file)")
	fs.IntVar(&c.PageVersion, "page-version", 1, "data page version, 1 or 2")
	fs.Var(&pageIndex, "page-index", "write column and offset indexes: on|off")
	fs.Var(&dict, "dictionary", "dictionary-encode columns: on|off")
	fs.Uint64Var(&c.Seed, "seed", 0, "generator seed (same seed and flags, same bytes)")
	fs.IntVar(&c.MeanTokens, "mean-tokens", 256, "median document length in tokens")
	fs.IntVar(&c.Parallelism, "parallel", 1, "files written at once")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: pagefeed gen --out DIR [--files N] [--rows-per-file N] [--codec C] [--page-size BYTES] [--scalar-page-size BYTES] [--row-group-rows N] [--page-version 1|2] [--page-index on|off] [--dictionary on|off] [--seed S]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.Dir == "" {
		fs.Usage()
		return fmt.Errorf("--out is required")
	}
	if c.Files < 1 || c.RowsPerFile < 1 {
		return fmt.Errorf("--files and --rows-per-file must be at least 1")
	}
	c.PageIndex, c.Dictionary = bool(pageIndex), bool(dict)
	if !*quiet {
		c.Progress = stderr
	}
	ctx := context.Background()
	res, err := gen.Run(ctx, c)
	if err != nil {
		return err
	}
	ix, err := index.Build(ctx, res.Files, index.Options{NoSidecar: true, Logf: func(f string, a ...any) { fmt.Fprintf(stderr, "pagefeed gen: "+f+"\n", a...) }})
	if err != nil {
		return fmt.Errorf("indexing what was written: %w", err)
	}
	var perCol []string
	for k := 0; k < ix.NumColumns(); k++ {
		perCol = append(perCol, fmt.Sprintf("%s %d", ix.Column(k).Path, ix.NumPages(k)))
	}
	fmt.Fprintf(stdout, "wrote %d files, %d rows, %d pages (%s), %d bytes to %s\n",
		len(res.Files), res.Rows, ix.Stats().Pages, strings.Join(perCol, ", "), res.Bytes, c.Dir)
	return nil
}
