package index

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
)

// Range is one read of a batch: Len bytes at Off of the file at Path.
type Range struct {
	Path string
	Off  int64
	Len  int
}

// BatchReader reads many ranges at once and reports each as it completes,
// in any order.
//
// ReadBatch calls fn exactly once per range i of rs, possibly from several
// goroutines at once, and returns after the last call has returned. data is
// the range's bytes: exactly Len of them, fewer only where the range runs
// past the end of the file. data is valid only during the call; fn must copy
// what it keeps. err, when not nil, is the range's read error (data is then
// nil). ReadBatch returns an error only when it could not attempt the batch
// (ctx done, reader closed); it still calls fn for every range, with that
// error where the range was not read.
//
// Implementations are safe for concurrent use. Build names at most
// Options.MaxOpenFiles distinct paths in one call, so a reader may keep
// every file of a call open until it returns.
type BatchReader interface {
	ReadBatch(ctx context.Context, rs []Range, fn func(i int, data []byte, err error)) error
}

// PreadReader is a BatchReader over pread(2) on a bounded pool of
// goroutines. It opens each path once per batch. The zero value uses 8
// goroutines.
type PreadReader struct {
	// Parallelism bounds the reads in flight; default 8.
	Parallelism int
}

// ReadBatch implements BatchReader.
func (p *PreadReader) ReadBatch(ctx context.Context, rs []Range, fn func(i int, data []byte, err error)) error {
	if len(rs) == 0 {
		return ctx.Err()
	}
	par := p.Parallelism
	if par <= 0 {
		par = 8
	}
	par = min(par, len(rs))

	// Open each distinct path once; ranges of one path are usually adjacent.
	files := make(map[string]*openFile)
	for _, r := range rs {
		if _, ok := files[r.Path]; !ok {
			files[r.Path] = &openFile{}
		}
	}
	defer func() {
		for _, f := range files {
			if f.f != nil {
				f.f.Close()
			}
		}
	}()

	var (
		mu   sync.Mutex
		next int
		wg   sync.WaitGroup
	)
	for w := 0; w < par; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(rs) {
					return
				}
				r := rs[i]
				if err := ctx.Err(); err != nil {
					fn(i, nil, err)
					continue
				}
				f, err := files[r.Path].open(r.Path)
				if err != nil {
					fn(i, nil, err)
					continue
				}
				if r.Len < 0 || r.Off < 0 {
					fn(i, nil, &Error{Op: "read", Path: r.Path, Off: r.Off, Err: errors.New("negative range")})
					continue
				}
				if cap(buf) < r.Len {
					buf = make([]byte, r.Len)
				}
				n, err := f.ReadAt(buf[:r.Len], r.Off)
				if err == io.EOF {
					err = nil
				}
				if err != nil {
					fn(i, nil, &Error{Op: "read", Path: r.Path, Off: r.Off, Err: err})
					continue
				}
				fn(i, buf[:n], nil)
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

type openFile struct {
	once sync.Once
	f    *os.File
	err  error
}

func (o *openFile) open(path string) (*os.File, error) {
	o.once.Do(func() {
		o.f, o.err = os.Open(path)
		if o.err != nil {
			o.err = &Error{Op: "open", Path: path, Off: -1, Err: o.err}
		}
	})
	return o.f, o.err
}
