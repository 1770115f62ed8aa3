package codec

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestAppendJSON(t *testing.T) {
	mem := memory.DefaultAllocator
	build := func(dt arrow.DataType, add func(b array.Builder)) arrow.Array {
		b := array.NewBuilder(mem, dt)
		defer b.Release()
		add(b)
		return b.NewArray()
	}
	tests := []struct {
		name string
		arr  arrow.Array
		want []string
	}{
		{"int64", build(arrow.PrimitiveTypes.Int64, func(b array.Builder) {
			b.(*array.Int64Builder).AppendValues([]int64{math.MaxInt64, -3}, nil)
			b.AppendNull()
		}), []string{"9223372036854775807", "-3", "null"}},
		{"float64", build(arrow.PrimitiveTypes.Float64, func(b array.Builder) {
			b.(*array.Float64Builder).AppendValues([]float64{0.1, 1e300, math.NaN(), math.Inf(-1)}, nil)
		}), []string{"0.1", "1e+300", `"NaN"`, `"-Infinity"`}},
		{"float32", build(arrow.PrimitiveTypes.Float32, func(b array.Builder) {
			b.(*array.Float32Builder).Append(0.1)
		}), []string{"0.1"}},
		{"string", build(arrow.BinaryTypes.String, func(b array.Builder) {
			b.(*array.StringBuilder).AppendValues([]string{"a\"b\\\n\x01é", "\xff"}, nil)
		}), []string{`"a\"b\\\n\u0001é"`, `"\ufffd"`}},
		{"binary", build(arrow.BinaryTypes.Binary, func(b array.Builder) {
			b.(*array.BinaryBuilder).Append([]byte{0, 1, 2, 255})
		}), []string{`"AAEC/w=="`}},
		{"timestamp", build(&arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, func(b array.Builder) {
			b.(*array.TimestampBuilder).Append(1593604800123)
		}), []string{`"2020-07-01T12:00:00.123Z"`}},
		{"date32", build(arrow.FixedWidthTypes.Date32, func(b array.Builder) {
			b.(*array.Date32Builder).Append(18444)
		}), []string{`"2020-07-01"`}},
		{"decimal", build(&arrow.Decimal128Type{Precision: 9, Scale: 2}, func(b array.Builder) {
			b.(*array.Decimal128Builder).Append(decimal128.FromI64(-12345))
		}), []string{`"-123.45"`}},
		{"list", build(arrow.ListOf(arrow.PrimitiveTypes.Int32), func(b array.Builder) {
			lb := b.(*array.ListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.Int32Builder).AppendValues([]int32{1, 2}, nil)
			lb.Append(true)
			lb.AppendNull()
		}), []string{"[1,2]", "[]", "null"}},
		{"struct", build(arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), func(b array.Builder) {
			sb := b.(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int32Builder).AppendNull()
		}), []string{`{"a":null}`}},
		{"map", build(arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), func(b array.Builder) {
			mb := b.(*array.MapBuilder)
			mb.Append(true)
			mb.KeyBuilder().(*array.StringBuilder).Append("k")
			mb.ItemBuilder().(*array.Int32Builder).Append(1)
		}), []string{`[{"key":"k","value":1}]`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer tc.arr.Release()
			for i, want := range tc.want {
				got := string(AppendJSON(nil, tc.arr, i))
				if got != want {
					t.Errorf("row %d: %s, want %s", i, got, want)
				}
				if !json.Valid([]byte(got)) {
					t.Errorf("row %d: %s is not valid JSON", i, got)
				}
			}
		})
	}
}
