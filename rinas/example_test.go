package rinas_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/gen"
	"github.com/pagefeed/pagefeed/rinas"
)

// exampleData writes a tiny dataset (2 files of 400 rows, 256-byte pages)
// into a temporary folder and returns it with a function that removes it.
func exampleData() (dir string, cleanup func()) {
	dir, err := os.MkdirTemp("", "rinas-example-")
	if err != nil {
		panic(err)
	}
	_, err = gen.Run(context.Background(), gen.Config{Dir: dir, Files: 2, RowsPerFile: 400,
		Codec: "snappy", PageSize: 256, RowGroupRows: 200, PageVersion: 2, PageIndex: true, Seed: 1, MeanTokens: 16})
	if err != nil {
		panic(err)
	}
	return dir, func() { os.RemoveAll(dir) }
}

// exampleConfig reads the "id" column of dir as Arrow, with a page shuffle.
func exampleConfig(dir string) rinas.Config {
	return rinas.Config{
		Paths:      []string{filepath.Join(dir, "*.parquet")},
		Columns:    []string{"id"},
		Shuffle:    rinas.ShufflePage,
		Output:     rinas.OutputArrow,
		BatchPages: 2,
		Seed:       42,
		World:      1, // rank 0 of 1, whatever $RANK and $WORLD_SIZE say
		Index:      index.Options{NoSidecar: true, Logf: func(string, ...any) {}},
		Logf:       func(string, ...any) {},
	}
}

// countIDs sums the rows of the "id" arrays of a batch, marking each id.
func countIDs(b *rinas.Batch, seen map[int64]int) {
	for _, a := range b.Arrays {
		for _, id := range a.(*array.Int64).Int64Values() {
			seen[id]++
		}
	}
}

// drain reads l to the end of its epochs, marking each id; it returns the
// rows read.
func drain(ctx context.Context, l *rinas.Loader, seen map[int64]int) (int, error) {
	rows := 0
	for {
		b, err := l.Next(ctx)
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return rows, err
		}
		rows += b.Rows
		countIDs(b, seen)
		b.Release() // nothing of b is valid after this
	}
}

// twice counts the ids seen more than once.
func twice(seen map[int64]int) int {
	n := 0
	for _, c := range seen {
		if c > 1 {
			n++
		}
	}
	return n
}

// Open a loader, read one epoch, and check that every row came once.
func ExampleOpen() {
	dir, cleanup := exampleData()
	defer cleanup()
	ctx := context.Background()
	l, err := rinas.Open(ctx, exampleConfig(dir))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	seen := map[int64]int{}
	rows, err := drain(ctx, l, seen)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rows, "rows,", len(seen), "distinct ids")
	// Output:
	// 800 rows, 800 distinct ids
}

// Checkpoint with State after some batches, then resume in a new loader
// with Config.Resume: together the two runs deliver every row once.
func ExampleLoader_State() {
	dir, cleanup := exampleData()
	defer cleanup()
	ctx := context.Background()
	seen := map[int64]int{}

	l, err := rinas.Open(ctx, exampleConfig(dir))
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := 0; i < 3; i++ {
		b, err := l.Next(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		countIDs(b, seen)
		b.Release()
	}
	js, err := rinas.MarshalState(l.State()) // what a trainer saves
	l.Close()
	if err != nil {
		fmt.Println(err)
		return
	}

	st, err := rinas.UnmarshalState(js)
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := exampleConfig(dir)
	cfg.Resume = st
	l, err = rinas.Open(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	if _, err := drain(ctx, l, seen); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(seen), "distinct ids,", twice(seen), "delivered twice")
	// Output:
	// 800 distinct ids, 0 delivered twice
}

// Stop a world of 2 ranks mid-epoch and continue with 3 ranks: Reshard
// turns the 2 states into 3 that deliver exactly the rows left.
func ExampleReshard() {
	dir, cleanup := exampleData()
	defer cleanup()
	ctx := context.Background()
	seen := map[int64]int{}
	var states []*rinas.State
	for rank := 0; rank < 2; rank++ {
		cfg := exampleConfig(dir)
		cfg.Rank, cfg.World = rank, 2
		l, err := rinas.Open(ctx, cfg)
		if err != nil {
			fmt.Println(err)
			return
		}
		for i := 0; i < 2+rank; i++ { // ranks need not stop at the same step
			b, err := l.Next(ctx)
			if err != nil {
				fmt.Println(err)
				return
			}
			countIDs(b, seen)
			b.Release()
		}
		states = append(states, l.State())
		l.Close()
	}
	next, err := rinas.Reshard(states, 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	for rank, st := range next {
		cfg := exampleConfig(dir)
		cfg.Rank, cfg.World, cfg.Resume = rank, 3, st
		l, err := rinas.Open(ctx, cfg)
		if err != nil {
			fmt.Println(err)
			return
		}
		_, err = drain(ctx, l, seen)
		l.Close()
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Println(len(states), "states became", len(next), "for world 3;", len(seen), "distinct ids,", twice(seen), "delivered twice")
	// Output:
	// 2 states became 3 for world 3; 800 distinct ids, 0 delivered twice
}

// Detach keeps a copy of a batch that outlives Release.
func ExampleBatch_Detach() {
	dir, cleanup := exampleData()
	defer cleanup()
	ctx := context.Background()
	l, err := rinas.Open(ctx, exampleConfig(dir))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	b, err := l.Next(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	kept := b.Detach()
	b.Release() // the loader reuses b's buffers; kept has its own
	seen := map[int64]int{}
	countIDs(kept, seen)
	fmt.Println(kept.Rows == len(seen), len(kept.Arrays) > 0)
	// Output:
	// true true
}
