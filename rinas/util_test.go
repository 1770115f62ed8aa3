package rinas

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/array"
)

func uintptrOf(s []int32) uintptr { return uintptr(unsafe.Pointer(&s[0])) }

// eachBatch calls fn with every batch l delivers, until io.EOF; fn owns
// the batch and releases it. A Next error, or a Next waiting more than
// 10 s, fails the test.
func eachBatch(t testing.TB, l *Loader, fn func(*Batch)) {
	t.Helper()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		b, err := l.Next(ctx)
		cancel()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		fn(b)
	}
}

// appendLengths appends the list length of each row of la to lens.
func appendLengths(lens []int, la *array.List) []int {
	for r := 0; r < la.Len(); r++ {
		lo, hi := la.ValueOffsets(r)
		lens = append(lens, int(hi-lo))
	}
	return lens
}
