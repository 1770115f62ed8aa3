package codec

import (
	"encoding/base64"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// AppendJSON appends row i of arr as one JSON value: integers as integers,
// floats in their shortest round-trip form (NaN and infinities, which JSON
// lacks, as the strings "NaN", "Infinity", "-Infinity"), strings as JSON
// strings (invalid UTF-8 replaced), binary as base64 strings, lists as
// arrays, structs as objects, maps as arrays of {"key","value"} objects,
// null as null, timestamps as RFC 3339 strings in UTC (in their time zone
// when the type names one), dates as "2006-01-02", times of day as
// "15:04:05.999999999", decimals as strings, durations as integers.
// It is one long function because it is a type switch with a short case
// per Arrow type.
func AppendJSON(dst []byte, arr arrow.Array, i int) []byte {
	if arr.IsNull(i) {
		return append(dst, "null"...)
	}
	switch a := arr.(type) {
	case *array.Null:
		return append(dst, "null"...)
	case *array.Boolean:
		return strconv.AppendBool(dst, a.Value(i))
	case *array.Int8:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Int16:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Int32:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Int64:
		return strconv.AppendInt(dst, a.Value(i), 10)
	case *array.Uint8:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10)
	case *array.Uint16:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10)
	case *array.Uint32:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10)
	case *array.Uint64:
		return strconv.AppendUint(dst, a.Value(i), 10)
	case *array.Float16:
		return appendFloat(dst, float64(a.Value(i).Float32()), 32)
	case *array.Float32:
		return appendFloat(dst, float64(a.Value(i)), 32)
	case *array.Float64:
		return appendFloat(dst, a.Value(i), 64)
	case *array.String:
		return appendString(dst, a.Value(i))
	case *array.LargeString:
		return appendString(dst, a.Value(i))
	case *array.Binary:
		return appendBase64(dst, a.Value(i))
	case *array.LargeBinary:
		return appendBase64(dst, a.Value(i))
	case *array.FixedSizeBinary:
		return appendBase64(dst, a.Value(i))
	case *array.Decimal128:
		return appendString(dst, a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale))
	case *array.Decimal256:
		return appendString(dst, a.Value(i).ToString(a.DataType().(*arrow.Decimal256Type).Scale))
	case *array.Timestamp:
		tt := a.DataType().(*arrow.TimestampType)
		t := a.Value(i).ToTime(tt.Unit)
		if loc, err := tt.GetZone(); err == nil && loc != nil {
			t = t.In(loc)
		}
		dst = append(dst, '"')
		dst = t.AppendFormat(dst, time.RFC3339Nano)
		return append(dst, '"')
	case *array.Date32:
		return appendString(dst, a.Value(i).FormattedString())
	case *array.Date64:
		return appendString(dst, a.Value(i).FormattedString())
	case *array.Time32:
		return appendString(dst, a.Value(i).FormattedString(a.DataType().(*arrow.Time32Type).Unit))
	case *array.Time64:
		return appendString(dst, a.Value(i).FormattedString(a.DataType().(*arrow.Time64Type).Unit))
	case *array.Duration:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Map:
		s, e := a.ValueOffsets(i)
		keys, items := a.Keys(), a.Items()
		dst = append(dst, '[')
		for j := s; j < e; j++ {
			if j > s {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"key":`...)
			dst = AppendJSON(dst, keys, int(j))
			dst = append(dst, `,"value":`...)
			dst = AppendJSON(dst, items, int(j))
			dst = append(dst, '}')
		}
		return append(dst, ']')
	case array.ListLike:
		s, e := a.ValueOffsets(i)
		vals := a.ListValues()
		dst = append(dst, '[')
		for j := s; j < e; j++ {
			if j > s {
				dst = append(dst, ',')
			}
			dst = AppendJSON(dst, vals, int(j))
		}
		return append(dst, ']')
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		dst = append(dst, '{')
		for k := 0; k < a.NumField(); k++ {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, st.Field(k).Name)
			dst = append(dst, ':')
			dst = AppendJSON(dst, a.Field(k), i)
		}
		return append(dst, '}')
	case *array.Dictionary:
		return AppendJSON(dst, a.Dictionary(), a.GetValueIndex(i))
	case array.ExtensionArray:
		return AppendJSON(dst, a.Storage(), i)
	}
	return appendString(dst, arr.ValueStr(i))
}

func appendFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bits)
}

func appendBase64(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}
