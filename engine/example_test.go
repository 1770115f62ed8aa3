package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pagefeed/pagefeed/engine"
)

// Read a few bytes at an unaligned offset: the engine reads the aligned
// superset with O_DIRECT and slices Data to exactly the bytes asked for.
func ExampleQueue() {
	dir, _ := os.MkdirTemp("", "engine-example-")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "hello.txt")
	os.WriteFile(path, []byte("hello, pagefeed!"), 0o644)

	e, err := engine.New(engine.Options{Logf: func(string, ...any) {}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()
	f, err := e.Open(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	q := e.NewQueue(engine.QueueOptions{})
	ctx := context.Background()
	reqs := []engine.Request{
		{File: f, Off: 7, Len: 8, Tag: 1, Worker: -1},
		{File: f, Off: 14, Len: 100, Tag: 2, Worker: -1}, // clamped at end of file
	}
	if err := q.Submit(ctx, reqs); err != nil {
		fmt.Println(err)
		return
	}
	got := map[uint64]string{}
	for range reqs {
		c, err := q.Next(ctx) // completions arrive in any order
		if err != nil {
			fmt.Println(err)
			return
		}
		got[c.Tag] = string(c.Data)
		c.Release()
	}
	fmt.Printf("%q %q\n", got[1], got[2])
	// Output: "pagefeed" "d!"
}
