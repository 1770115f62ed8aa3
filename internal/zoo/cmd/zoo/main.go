// Command zoo builds the writer zoo (package internal/zoo) for tests that
// are not Go's, such as the Python package's: run from inside the module,
//
//	go run ./internal/zoo/cmd/zoo dir        build if needed, print the zoo's directory
//	go run ./internal/zoo/cmd/zoo describe   print each fixture's writer traits
//	go run ./internal/zoo/cmd/zoo seeds      rewrite the tiny per-writer files of
//	                                         internal/zoo/testdata/seeds and the fuzz
//	                                         seed corpora made from them
//
// It exits with status 3 where node is not installed (callers skip then).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/pagefeed/pagefeed/internal/zoo"
)

func main() {
	if len(os.Args) != 2 || (os.Args[1] != "dir" && os.Args[1] != "describe" && os.Args[1] != "seeds") {
		fmt.Fprintln(os.Stderr, "usage: zoo dir|describe|seeds")
		os.Exit(2)
	}
	logf := func(f string, a ...any) { fmt.Fprintf(os.Stderr, "zoo: "+f+"\n", a...) }
	if os.Args[1] == "seeds" {
		exitOn(seeds(logf))
		return
	}
	z, err := zoo.Build(context.Background(), logf)
	exitOn(err)
	if os.Args[1] == "dir" {
		fmt.Println(z.Dir)
		return
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 1, ' ', 0)
	fmt.Fprintln(w, "fixture\trows\trow groups\tleaf\trep\tcodec\tpages\tpages/chunk\tmax page\tmax dict\toffset index\tcolumn index\tcreated by")
	for _, f := range z.Fixtures {
		t, err := zoo.Describe(f.Path)
		if err != nil {
			fmt.Fprintf(w, "%s\tERROR %v\n", f.Name, err)
			continue
		}
		for _, l := range t.Leaves {
			fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%d-%d\t%d\t%d\t%s\t%v\t%s\n", f.Name, f.Rows, t.RowGroups, l.Path, l.Repetition, l.Codecs,
				l.PageKinds, l.MinPages, l.MaxPages, l.MaxPageBytes, l.MaxDictBytes, l.OffsetIndex, l.ColumnIndex, t.CreatedBy)
		}
	}
	w.Flush()
}

// exitOn ends the command on an error: status 3 where node is missing, 1
// otherwise.
func exitOn(err error) {
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, err)
	if errors.Is(err, zoo.ErrNoNode) {
		os.Exit(3)
	}
	os.Exit(1)
}
