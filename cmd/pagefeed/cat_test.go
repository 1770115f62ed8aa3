package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/pagefeed/pagefeed/internal/pqtest"
)

// writeCatFixture writes a file with a list<int32> column whose rows cross
// V1 pages (rows longer than arrow-go's 1024-level batches, small pages)
// and a nullable string column, and returns its path and the expected JSON
// lines of each column.
func writeCatFixture(t *testing.T) (path string, tokens, names []string) {
	t.Helper()
	mem := memory.DefaultAllocator
	lb := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int32)
	vb := lb.ValueBuilder().(*array.Int32Builder)
	sb := array.NewStringBuilder(mem)
	for r, n := range []int{3, 0, 2500, 1, 1500, 4} {
		lb.Append(true)
		for j := 0; j < n; j++ {
			vb.Append(int32(r*100000 + j))
		}
		if r%2 == 1 {
			sb.AppendNull()
			names = append(names, "null")
		} else {
			sb.Append("row \"" + string(rune('a'+r)) + "\"")
			names = append(names, `"row \"`+string(rune('a'+r))+`\""`)
		}
	}
	la, sa := lb.NewArray(), sb.NewArray()
	lb.Release()
	sb.Release()
	defer la.Release()
	defer sa.Release()
	for r := 0; r < la.Len(); r++ {
		s, e := la.(*array.List).ValueOffsets(r)
		var b bytes.Buffer
		b.WriteByte('[')
		for j := s; j < e; j++ {
			if j > s {
				b.WriteByte(',')
			}
			b.WriteString(itoa(int64(la.(*array.List).ListValues().(*array.Int32).Value(int(j)))))
		}
		b.WriteByte(']')
		tokens = append(tokens, b.String())
	}
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "tokens", Type: la.DataType(), Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	rec := array.NewRecordBatch(sc, []arrow.Array{la, sa}, int64(la.Len()))
	defer rec.Release()
	path = filepath.Join(t.TempDir(), "fixture.parquet")
	props := parquet.NewWriterProperties(parquet.WithDataPageVersion(parquet.DataPageV1),
		parquet.WithDataPageSize(512), parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithDictionaryDefault(false), parquet.WithMaxRowGroupLength(4))
	pqtest.WriteRecords(t, path, props, rec)
	return path, tokens, names
}

func itoa(v int64) string {
	var b [24]byte
	return string(appendInt(b[:0], v))
}

func appendInt(b []byte, v int64) []byte {
	if v < 0 {
		b = append(b, '-')
		v = -v
	}
	var d [20]byte
	i := len(d)
	for {
		i--
		d[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return append(b, d[i:]...)
}

func TestCatCommand(t *testing.T) {
	path, tokens, names := writeCatFixture(t)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	path2 := filepath.Join(t.TempDir(), "copy.parquet")
	if err := os.WriteFile(path2, b, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"tokens", []string{"cat", path, "--column", "tokens"}, tokens},
		{"leaf path", []string{"cat", "--column", "tokens.list.element", path}, tokens},
		{"strings", []string{"cat", path, "--column", "name", "--format", "jsonl"}, names},
		{"limit", []string{"cat", path, "--column", "tokens", "--limit", "3"}, tokens[:3]},
		{"two files", []string{"cat", path, path2, "--column", "name"}, append(append([]string(nil), names...), names...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(got) != len(tc.want) {
				t.Fatalf("%d lines, want %d", len(got), len(tc.want))
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("line %d: %.80s, want %.80s", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestCatCommandErrors(t *testing.T) {
	path, _, _ := writeCatFixture(t)
	for _, args := range [][]string{
		{"cat", path},
		{"cat", "--column", "tokens"},
		{"cat", path, "--column", "nope"},
		{"cat", path, "--column", "tokens", "--format", "csv"},
		{"cat", filepath.Join(t.TempDir(), "missing.parquet"), "--column", "tokens"},
	} {
		if code, _, errOut := runCmd(t, args...); code == 0 || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}

// writeIDs writes one int64 column "id", REQUIRED or OPTIONAL (every
// fourth row null), with or without dictionary and in V1 or V2 pages, and
// returns the JSON lines it holds.
func writeIDs(t *testing.T, path string, base int64, optional, dict bool, version parquet.DataPageVersion) []string {
	t.Helper()
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	var want []string
	for r := int64(0); r < 600; r++ {
		if optional && r%4 == 1 {
			b.AppendNull()
			want = append(want, "null")
			continue
		}
		v := base + r%3 // mostly small values and zeros
		b.Append(v)
		want = append(want, itoa(v))
	}
	a := b.NewArray()
	defer a.Release()
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: optional}}, nil)
	rec := array.NewRecordBatch(sc, []arrow.Array{a}, int64(a.Len()))
	defer rec.Release()
	props := parquet.NewWriterProperties(parquet.WithDataPageVersion(version), parquet.WithDataPageSize(256),
		parquet.WithDictionaryDefault(dict), parquet.WithMaxRowGroupLength(250))
	pqtest.WriteRecords(t, path, props, rec)
	return want
}

// TestCatMixedSchemas: files that declare a column differently print each
// with its own declaration, in either order.
func TestCatMixedSchemas(t *testing.T) {
	dir := t.TempDir()
	req, opt := filepath.Join(dir, "req.parquet"), filepath.Join(dir, "opt.parquet")
	wantReq := writeIDs(t, req, 0, false, true, parquet.DataPageV1)
	wantOpt := writeIDs(t, opt, 100, true, false, parquet.DataPageV2)
	for _, tc := range []struct {
		files []string
		want  []string
	}{
		{[]string{req, opt}, append(append([]string(nil), wantReq...), wantOpt...)},
		{[]string{opt, req}, append(append([]string(nil), wantOpt...), wantReq...)},
	} {
		code, out, errOut := runCmd(t, append([]string{"cat", "--column", "id"}, tc.files...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.files, code, errOut)
		}
		got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(got) != len(tc.want) {
			t.Fatalf("%v: %d lines, want %d", tc.files, len(got), len(tc.want))
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("%v: line %d is %s, the file holds %s", tc.files, i, got[i], tc.want[i])
			}
		}
	}
}
