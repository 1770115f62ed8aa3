package index

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// allocatedBy returns the bytes fn allocates on the heap.
func allocatedBy(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// parquetWithFooter writes "PAR1", a body of pad bytes (a hole: the file
// is sparse), footer, its length and "PAR1"; claim, when > 0, is the
// footer length written instead of len(footer).
func parquetWithFooter(t *testing.T, pad int64, footer []byte, claim uint32) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hostile.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if claim == 0 {
		claim = uint32(len(footer))
	}
	tail := binary.LittleEndian.AppendUint32(append([]byte(nil), footer...), claim)
	tail = append(tail, "PAR1"...)
	if _, err := f.WriteAt([]byte("PAR1"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(tail, 4+pad); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFooterLengthIsCapped: a sparse file whose footer claims 300 MiB (within
// the file) fails with a clear error, and nothing near that is allocated.
func TestFooterLengthIsCapped(t *testing.T) {
	const claim = 300 << 20
	path := parquetWithFooter(t, claim+16, nil, claim)
	var err error
	n := allocatedBy(func() {
		_, err = Build(context.Background(), []string{path}, Options{NoSidecar: true, Logf: t.Logf})
	})
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "MaxFooterSize") || !strings.Contains(err.Error(), path) {
		t.Fatalf("Build: %v", err)
	}
	if n > 64<<20 {
		t.Fatalf("allocated %d MiB for a footer claiming %d MiB", n>>20, claim>>20)
	}
	// the cap is an option
	small := parquetWithFooter(t, 3<<20, nil, 2<<20)
	if _, err = Build(context.Background(), []string{small}, Options{NoSidecar: true, Logf: t.Logf, MaxFooterSize: 1 << 20}); err == nil || !strings.Contains(err.Error(), "MaxFooterSize") {
		t.Fatalf("2 MiB footer, 1 MiB cap: %v", err)
	}
	if _, err = Build(context.Background(), []string{small}, Options{NoSidecar: true, Logf: t.Logf, MaxFooterSize: 4 << 20}); err == nil || strings.Contains(err.Error(), "MaxFooterSize") {
		t.Fatalf("2 MiB footer, 4 MiB cap: %v", err)
	}
}

// TestFooterThriftCountsAreChecked: a 12-byte footer whose schema list
// claims 100 million elements fails as corrupt without Thrift allocating
// for them first (800 MB of pointers).
func TestFooterThriftCountsAreChecked(t *testing.T) {
	footer := []byte{
		0x15, 0x02, // field 1 (version), i32 1
		0x19, 0xfc, // field 2 (schema), list of structs, size follows
	}
	footer = binary.AppendUvarint(footer, 100_000_000)
	footer = append(footer, 0x00, 0x00)
	path := parquetWithFooter(t, 0, footer, 0)
	var err error
	n := allocatedBy(func() {
		_, err = Build(context.Background(), []string{path}, Options{NoSidecar: true, Logf: t.Logf})
	})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Build: %v", err)
	}
	if n > 64<<20 {
		t.Fatalf("allocated %d MiB for a %d-byte footer", n>>20, len(footer))
	}
	t.Logf("%v (%d KiB allocated)", err, n>>10)

	// the same claim inside an offset index
	oi := []byte{0x19, 0xfc} // field 1 (page_locations), list of structs
	oi = binary.AppendUvarint(oi, 100_000_000)
	n = allocatedBy(func() { _, err = parseOffsetIndex(oi) })
	if err == nil || n > 64<<20 {
		t.Fatalf("offset index: %v, %d MiB allocated", err, n>>20)
	}
}
