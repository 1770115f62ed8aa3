package codec

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/thrift/lib/go/thrift"
)

// refParse decodes a PageHeader with the thrift library's compact protocol,
// the way generated code does (known fields of the wrong type are skipped,
// required fields are checked). It is the reference FuzzPageHeader compares
// ParsePageHeader with.
func refParse(b []byte) (h PageHeader, n int, err error) {
	ctx := context.Background()
	buf := thrift.NewTMemoryBufferLen(len(b))
	buf.Write(b)
	p := thrift.NewTCompactProtocolConf(buf, &thrift.TConfiguration{})
	h.V2.IsCompressed = true
	var seen uint8
	if _, err := p.ReadStructBegin(ctx); err != nil {
		return h, 0, err
	}
	for {
		_, typ, id, err := p.ReadFieldBegin(ctx)
		if err != nil {
			return h, 0, err
		}
		if typ == thrift.STOP {
			break
		}
		switch {
		case id >= 1 && id <= 4 && typ == thrift.I32:
			v, err := p.ReadI32(ctx)
			if err != nil {
				return h, 0, err
			}
			switch id {
			case 1:
				h.Type, seen = PageType(v), seen|1
			case 2:
				h.UncompressedSize, seen = v, seen|2
			case 3:
				h.CompressedSize, seen = v, seen|4
			case 4:
				h.CRC, h.HasCRC = uint32(v), true
			}
		case id == 5 && typ == thrift.STRUCT:
			h.Data = DataPageHeader{}
			err = refStruct(ctx, p, func(id int16, typ thrift.TType) (bool, error) {
				if id < 1 || id > 4 || typ != thrift.I32 {
					return false, nil
				}
				v, err := p.ReadI32(ctx)
				switch id {
				case 1:
					h.Data.NumValues = v
				case 2:
					h.Data.Encoding = v
				case 3:
					h.Data.DefEncoding = v
				case 4:
					h.Data.RepEncoding = v
				}
				return true, err
			}, 15)
			h.Data.Set = true
		case id == 6 && typ == thrift.STRUCT:
			err = p.Skip(ctx, typ)
			h.IndexSet = true
		case id == 7 && typ == thrift.STRUCT:
			h.Dict = DictionaryPageHeader{}
			err = refStruct(ctx, p, func(id int16, typ thrift.TType) (bool, error) {
				switch {
				case (id == 1 || id == 2) && typ == thrift.I32:
					v, err := p.ReadI32(ctx)
					if id == 1 {
						h.Dict.NumValues = v
					} else {
						h.Dict.Encoding = v
					}
					return true, err
				case id == 3 && typ == thrift.BOOL:
					v, err := p.ReadBool(ctx)
					h.Dict.IsSorted, h.Dict.SortedSet = v, true
					return true, err
				}
				return false, nil
			}, 3)
			h.Dict.Set = true
		case id == 8 && typ == thrift.STRUCT:
			h.V2 = DataPageHeaderV2{IsCompressed: true}
			err = refStruct(ctx, p, func(id int16, typ thrift.TType) (bool, error) {
				switch {
				case id >= 1 && id <= 6 && typ == thrift.I32:
					v, err := p.ReadI32(ctx)
					switch id {
					case 1:
						h.V2.NumValues = v
					case 2:
						h.V2.NumNulls = v
					case 3:
						h.V2.NumRows = v
					case 4:
						h.V2.Encoding = v
					case 5:
						h.V2.DefLevelsLen = v
					case 6:
						h.V2.RepLevelsLen = v
					}
					return true, err
				case id == 7 && typ == thrift.BOOL:
					v, err := p.ReadBool(ctx)
					h.V2.IsCompressed = v
					return true, err
				}
				return false, nil
			}, 63)
			h.V2.Set = true
		default:
			err = p.Skip(ctx, typ)
		}
		if err != nil {
			return h, 0, err
		}
	}
	if seen != 7 {
		return h, 0, errors.New("required field missing")
	}
	return h, len(b) - buf.Len(), nil
}

// refStruct reads a nested struct; field reads a known field (returning
// false to have it skipped); all must be the bit mask of required fields
// (numbered from 1), checked as generated code does.
func refStruct(ctx context.Context, p thrift.TProtocol, field func(int16, thrift.TType) (bool, error), all uint8) error {
	if _, err := p.ReadStructBegin(ctx); err != nil {
		return err
	}
	var seen uint8
	for {
		_, typ, id, err := p.ReadFieldBegin(ctx)
		if err != nil {
			return err
		}
		if typ == thrift.STOP {
			break
		}
		ok, err := field(id, typ)
		if err != nil {
			return err
		}
		if ok {
			if id >= 1 && id <= 8 {
				seen |= 1 << (id - 1)
			}
		} else if err := p.Skip(ctx, typ); err != nil {
			return err
		}
	}
	if err := p.ReadStructEnd(ctx); err != nil {
		return err
	}
	if seen&all != all {
		return errors.New("required field missing")
	}
	return nil
}

// writeHeader serializes h with the thrift library (for seeds and tests).
func writeHeader(t testing.TB, h PageHeader, extra func(context.Context, thrift.TProtocol)) []byte {
	t.Helper()
	ctx := context.Background()
	buf := thrift.NewTMemoryBuffer()
	p := thrift.NewTCompactProtocolConf(buf, &thrift.TConfiguration{})
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	i32 := func(id int16, v int32) {
		must(p.WriteFieldBegin(ctx, "", thrift.I32, id))
		must(p.WriteI32(ctx, v))
		must(p.WriteFieldEnd(ctx))
	}
	must(p.WriteStructBegin(ctx, "PageHeader"))
	i32(1, int32(h.Type))
	i32(2, h.UncompressedSize)
	i32(3, h.CompressedSize)
	if h.HasCRC {
		i32(4, int32(h.CRC))
	}
	if extra != nil {
		extra(ctx, p)
	}
	sub := func(id int16, body func()) {
		must(p.WriteFieldBegin(ctx, "", thrift.STRUCT, id))
		must(p.WriteStructBegin(ctx, ""))
		body()
		must(p.WriteFieldStop(ctx))
		must(p.WriteStructEnd(ctx))
		must(p.WriteFieldEnd(ctx))
	}
	if h.Data.Set {
		sub(5, func() {
			i32(1, h.Data.NumValues)
			i32(2, h.Data.Encoding)
			i32(3, h.Data.DefEncoding)
			i32(4, h.Data.RepEncoding)
		})
	}
	if h.Dict.Set {
		sub(7, func() {
			i32(1, h.Dict.NumValues)
			i32(2, h.Dict.Encoding)
			if h.Dict.SortedSet {
				must(p.WriteFieldBegin(ctx, "", thrift.BOOL, 3))
				must(p.WriteBool(ctx, h.Dict.IsSorted))
				must(p.WriteFieldEnd(ctx))
			}
		})
	}
	if h.V2.Set {
		sub(8, func() {
			i32(1, h.V2.NumValues)
			i32(2, h.V2.NumNulls)
			i32(3, h.V2.NumRows)
			i32(4, h.V2.Encoding)
			i32(5, h.V2.DefLevelsLen)
			i32(6, h.V2.RepLevelsLen)
			if !h.V2.IsCompressed {
				must(p.WriteFieldBegin(ctx, "", thrift.BOOL, 7))
				must(p.WriteBool(ctx, false))
				must(p.WriteFieldEnd(ctx))
			}
		})
	}
	must(p.WriteFieldStop(ctx))
	must(p.WriteStructEnd(ctx))
	must(p.Flush(ctx))
	return buf.Bytes()
}

func TestParsePageHeader(t *testing.T) {
	statsField := func(ctx context.Context, p thrift.TProtocol) {
		// an unknown field holding a struct with a list, a map and a string
		p.WriteFieldBegin(ctx, "", thrift.STRUCT, 20)
		p.WriteStructBegin(ctx, "")
		p.WriteFieldBegin(ctx, "", thrift.LIST, 1)
		p.WriteListBegin(ctx, thrift.BOOL, 3)
		for i := 0; i < 3; i++ {
			p.WriteBool(ctx, i == 1)
		}
		p.WriteListEnd(ctx)
		p.WriteFieldBegin(ctx, "", thrift.MAP, 2)
		p.WriteMapBegin(ctx, thrift.I64, thrift.STRING, 1)
		p.WriteI64(ctx, -5)
		p.WriteString(ctx, "min")
		p.WriteMapEnd(ctx)
		p.WriteFieldBegin(ctx, "", thrift.DOUBLE, 300)
		p.WriteDouble(ctx, 1.5)
		p.WriteFieldStop(ctx)
		p.WriteStructEnd(ctx)
	}
	tests := []struct {
		name  string
		h     PageHeader
		extra func(context.Context, thrift.TProtocol)
	}{
		{"v1", PageHeader{Type: DataPage, UncompressedSize: 100, CompressedSize: 80, Data: DataPageHeader{Set: true, NumValues: 10, Encoding: 8, DefEncoding: 3, RepEncoding: 3}}, nil},
		{"v1 crc", PageHeader{Type: DataPage, UncompressedSize: 1 << 20, CompressedSize: 7, CRC: 0xdeadbeef, HasCRC: true, Data: DataPageHeader{Set: true, NumValues: 1}}, nil},
		{"dict", PageHeader{Type: DictionaryPage, UncompressedSize: 5, CompressedSize: 5, Dict: DictionaryPageHeader{Set: true, NumValues: 3, IsSorted: true, SortedSet: true}}, nil},
		{"v2", PageHeader{Type: DataPageV2, UncompressedSize: 9, CompressedSize: 9, V2: DataPageHeaderV2{Set: true, NumValues: 4, NumNulls: 1, NumRows: 2, Encoding: 0, DefLevelsLen: 3, RepLevelsLen: 2, IsCompressed: false}}, nil},
		{"unknown fields", PageHeader{Type: DataPage, UncompressedSize: 1, CompressedSize: 1, Data: DataPageHeader{Set: true, NumValues: 1}}, statsField},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := writeHeader(t, tc.h, tc.extra)
			b = append(b, 0xAA, 0xBB) // body bytes must not be consumed
			h, n, err := ParsePageHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(b)-2 {
				t.Errorf("n = %d, want %d", n, len(b)-2)
			}
			want := tc.h
			if !want.V2.Set {
				want.V2.IsCompressed = true
			}
			if h != want {
				t.Errorf("got %+v\nwant %+v", h, want)
			}
			for i := 0; i < n; i++ {
				if _, _, err := ParsePageHeader(b[:i]); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("truncated to %d bytes: err %v, want ErrCorrupt", i, err)
				}
			}
		})
	}
}

func TestParsePageHeaderAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts change under -race")
	}
	b := writeHeader(t, PageHeader{Type: DataPage, UncompressedSize: 100, CompressedSize: 80, Data: DataPageHeader{Set: true, NumValues: 10}}, nil)
	allocs := testing.AllocsPerRun(100, func() {
		if _, _, err := ParsePageHeader(b); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("ParsePageHeader allocates %v times", allocs)
	}
}

// FuzzPageHeader checks ParsePageHeader against the thrift library: both
// accept the same inputs with the same result and length.
func FuzzPageHeader(f *testing.F) {
	f.Add(writeHeader(f, PageHeader{Type: DataPage, UncompressedSize: 100, CompressedSize: 80, Data: DataPageHeader{Set: true, NumValues: 10, Encoding: 8, DefEncoding: 3, RepEncoding: 3}}, nil))
	f.Add(writeHeader(f, PageHeader{Type: DictionaryPage, UncompressedSize: 5, CompressedSize: 5, Dict: DictionaryPageHeader{Set: true, NumValues: 3, SortedSet: true}}, nil))
	f.Add(writeHeader(f, PageHeader{Type: DataPageV2, UncompressedSize: 9, CompressedSize: 9, HasCRC: true, CRC: 7, V2: DataPageHeaderV2{Set: true, NumValues: 4, DefLevelsLen: 3}}, nil))
	// real headers from parquet-testing, when present
	if files, _ := filepath.Glob(filepath.Join(testingData, "*.parquet")); len(files) > 0 {
		for _, name := range files[:min(len(files), 8)] {
			b, err := os.ReadFile(name)
			if err == nil && len(b) > 64 {
				f.Add(b[4:64])
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		b = b[:min(len(b), maxFuzzInput)]
		h, n, err := ParsePageHeader(b)
		rh, rn, rerr := refParse(b)
		if (err == nil) != (rerr == nil) {
			t.Fatalf("ParsePageHeader err %v, thrift err %v", err, rerr)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if h != rh || n != rn {
			t.Fatalf("got %+v n=%d\nthrift %+v n=%d", h, n, rh, rn)
		}
		if !bytes.Equal(b[:n], b[:rn]) {
			t.Fatal("length differs")
		}
	})
}
