package zoo

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// The canonical form of a value, the one text that both DuckDB's reading
// and a delivered Arrow value are turned into before they are compared.
// It is exact: two values have the same form only if they are equal.
//
//	null             null
//	integers         decimal: -12
//	floats           strconv 'g' shortest round-trip: 0.1, -0, +Inf, -Inf, NaN,
//	                 5e-324 (every bit but NaN's payload kept)
//	strings          Go-quoted (strconv.Quote): "a\"b\n日本"
//	binary           <length>:<SHA-256 hex> of the bytes
//	lists            [v,v,...] of the elements' forms
//
// Binary values are hashed so that references of 300 KB images stay small;
// their first eight bytes (the id) are checked by RowID.

// AppendCanonical appends the canonical form of row i of a to dst. It knows
// the integer, float, string, binary (plain, large and view) and list
// (plain, large, fixed-size and view) arrays and dictionaries of them; any
// other type is an error.
func AppendCanonical(dst []byte, a arrow.Array, i int) ([]byte, error) {
	if a.IsNull(i) {
		return append(dst, "null"...), nil
	}
	switch a := a.(type) {
	case *array.Int8:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10), nil
	case *array.Int16:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10), nil
	case *array.Int32:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10), nil
	case *array.Int64:
		return strconv.AppendInt(dst, a.Value(i), 10), nil
	case *array.Uint8:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10), nil
	case *array.Uint16:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10), nil
	case *array.Uint32:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10), nil
	case *array.Uint64:
		return strconv.AppendUint(dst, a.Value(i), 10), nil
	case *array.Float32:
		return appendFloat(dst, float64(a.Value(i))), nil
	case *array.Float64:
		return appendFloat(dst, a.Value(i)), nil
	case *array.String:
		return strconv.AppendQuote(dst, a.Value(i)), nil
	case *array.LargeString:
		return strconv.AppendQuote(dst, a.Value(i)), nil
	case *array.StringView:
		return strconv.AppendQuote(dst, a.Value(i)), nil
	case *array.Binary:
		return appendBinary(dst, a.Value(i)), nil
	case *array.LargeBinary:
		return appendBinary(dst, a.Value(i)), nil
	case *array.BinaryView:
		return appendBinary(dst, a.Value(i)), nil
	case *array.FixedSizeBinary:
		return appendBinary(dst, a.Value(i)), nil
	case *array.Dictionary:
		return AppendCanonical(dst, a.Dictionary(), a.GetValueIndex(i))
	case array.ListLike:
		lo, hi := a.ValueOffsets(i)
		vals := a.ListValues()
		dst = append(dst, '[')
		for j := lo; j < hi; j++ {
			if j > lo {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = AppendCanonical(dst, vals, int(j)); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	}
	return dst, fmt.Errorf("zoo: no canonical form for %s", a.DataType())
}

// Canonical is AppendCanonical as a string.
func Canonical(a arrow.Array, i int) (string, error) {
	b, err := AppendCanonical(nil, a, i)
	return string(b), err
}

func appendFloat(dst []byte, f float64) []byte {
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

func appendBinary(dst, b []byte) []byte {
	sum := sha256.Sum256(b)
	dst = strconv.AppendInt(dst, int64(len(b)), 10)
	dst = append(dst, ':')
	return hex.AppendEncode(dst, sum[:])
}

// RowID returns the id that row i of a names (the package documentation
// says how each column holds it): an integer column's value, a list's
// first element, a binary value's first eight bytes, little-endian. It
// returns false for a null, an empty list or a value of another type.
func RowID(a arrow.Array, i int) (int64, bool) {
	if a.IsNull(i) {
		return 0, false
	}
	switch a := a.(type) {
	case *array.Int64:
		return a.Value(i), true
	case *array.Int32:
		return int64(a.Value(i)), true
	case *array.Dictionary:
		return RowID(a.Dictionary(), a.GetValueIndex(i))
	case *array.Binary:
		return idBytes(a.Value(i))
	case *array.LargeBinary:
		return idBytes(a.Value(i))
	case *array.BinaryView:
		return idBytes(a.Value(i))
	case array.ListLike:
		lo, hi := a.ValueOffsets(i)
		if hi <= lo {
			return 0, false
		}
		return RowID(a.ListValues(), int(lo))
	}
	return 0, false
}

func idBytes(b []byte) (int64, bool) {
	if len(b) < 8 {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(b)), true
}

// Reference is DuckDB's reading of a fixture: every row's canonical values
// by id.
type Reference struct {
	Path    string   // the fixture's Parquet file
	Columns []string // the file's top-level columns
	rows    map[int64][]string
}

var refs sync.Map // RefPath → *refEntry

type refEntry struct {
	once sync.Once
	ref  *Reference
	err  error
}

// Reference loads DuckDB's reading of f (once per process; the result is
// shared and read-only).
func (f Fixture) Reference() (*Reference, error) {
	e, _ := refs.LoadOrStore(f.RefPath, &refEntry{})
	ent := e.(*refEntry)
	ent.once.Do(func() { ent.ref, ent.err = loadReference(f) })
	return ent.ref, ent.err
}

// Len returns the number of rows.
func (r *Reference) Len() int { return len(r.rows) }

// IDs returns every id, in no particular order.
func (r *Reference) IDs() []int64 {
	out := make([]int64, 0, len(r.rows))
	for id := range r.rows {
		out = append(out, id)
	}
	return out
}

// Value returns the canonical form of column col of the row with this id,
// and whether the reference has that row and column.
func (r *Reference) Value(id int64, col string) (string, bool) {
	row, ok := r.rows[id]
	if !ok {
		return "", false
	}
	for k, c := range r.Columns {
		if c == col {
			return row[k], true
		}
	}
	return "", false
}

// Check compares got, the canonical form of a delivered value of column
// col (a top-level name, or a leaf path whose first part is one), with
// the row with this id, and describes any difference.
func (r *Reference) Check(id int64, col string, got []byte) error {
	col, _, _ = strings.Cut(col, ".")
	want, ok := r.Value(id, col)
	if !ok {
		return fmt.Errorf("%s: no row with id %d and column %s in DuckDB's reading", r.Path, id, col)
	}
	if string(got) == want {
		return nil
	}
	return fmt.Errorf("%s id %d column %s: %s", r.Path, id, col, Diff(string(got), want))
}

// Diff describes how got differs from want (two canonical forms): where
// they first differ, which list element that is, and both texts around it.
func Diff(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	elem := ""
	if strings.HasPrefix(want, "[") {
		elem = fmt.Sprintf(" (list element %d)", strings.Count(want[:i], ","))
	}
	around := func(s string) string {
		lo, hi := max(0, i-40), min(len(s), i+40)
		out := s[lo:hi]
		if lo > 0 {
			out = "…" + out
		}
		if hi < len(s) {
			out += "…"
		}
		return out
	}
	return fmt.Sprintf("got %s, DuckDB reads %s: they differ at byte %d%s (%d and %d bytes)", around(got), around(want), i, elem, len(got), len(want))
}

// loadReference reads f's ref.jsonl (node/ref.mjs) into canonical forms.
func loadReference(f Fixture) (*Reference, error) {
	file, err := os.Open(f.RefPath)
	if err != nil {
		return nil, fmt.Errorf("zoo: %w", err)
	}
	defer file.Close()
	r := &Reference{Path: f.Path, Columns: f.Columns, rows: make(map[int64][]string, f.Rows)}
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		var obj map[string]json.RawMessage
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		if err := dec.Decode(&obj); err != nil {
			return nil, fmt.Errorf("zoo: %s line %d: %w", f.RefPath, line, err)
		}
		row := make([]string, len(f.Columns))
		for k, c := range f.Columns {
			v, err := CanonicalJSON(c, obj[c], RefForms)
			if err != nil {
				return nil, fmt.Errorf("zoo: %s line %d column %s: %w", f.RefPath, line, c, err)
			}
			row[k] = v
		}
		id, err := strconv.ParseInt(row[0], 10, 64)
		if err != nil || f.Columns[0] != "id" {
			return nil, fmt.Errorf("zoo: %s line %d: the first column is not an id: %q", f.RefPath, line, row[0])
		}
		if _, dup := r.rows[id]; dup {
			return nil, fmt.Errorf("zoo: %s: id %d twice", f.RefPath, id)
		}
		r.rows[id] = row
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("zoo: %s: %w", f.RefPath, err)
	}
	return r, nil
}

// Forms says how a JSON text writes the values that JSON has no type for.
type Forms int

const (
	// RefForms are node/ref.mjs's: a double as a string in C's %a form
	// ("0x1.8p+0", "-0x0p+0", "inf", "nan"), a binary as the string
	// "<length>:<sha256 hex>".
	RefForms Forms = iota
	// CatForms are pagefeed cat's (codec.AppendJSON): a double as a JSON
	// number in shortest round-trip form, or the string "NaN", "Infinity"
	// or "-Infinity"; a binary as a base64 string.
	CatForms
)

// CanonicalJSON turns a value of the zoo's column col, as a JSON text in
// the given forms writes it, into its canonical form (AppendCanonical's):
// id an integer, input_ids an array of integers, text and caption
// strings, score a double, image a binary, null for a null.
func CanonicalJSON(col string, raw json.RawMessage, forms Forms) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "null", nil
	}
	if (col == "id" || col == "input_ids") && canonicalInts(raw) {
		// Integers and lists of them come in the canonical form already
		// from both DuckDB and cat; most of a reference is such lists.
		return string(raw), nil
	}
	dec := func(v any) error {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		return d.Decode(v)
	}
	switch col {
	case "id":
		var n json.Number
		if err := dec(&n); err != nil {
			return "", err
		}
		v, err := n.Int64()
		return strconv.FormatInt(v, 10), err
	case "input_ids":
		var l []*json.Number
		if err := dec(&l); err != nil {
			return "", err
		}
		b := []byte{'['}
		for j, e := range l {
			if j > 0 {
				b = append(b, ',')
			}
			if e == nil {
				b = append(b, "null"...)
				continue
			}
			v, err := e.Int64()
			if err != nil {
				return "", err
			}
			b = strconv.AppendInt(b, v, 10)
		}
		return string(append(b, ']')), nil
	case "text", "caption":
		var s string
		if err := dec(&s); err != nil {
			return "", err
		}
		return strconv.Quote(s), nil
	case "score":
		var v any
		if err := dec(&v); err != nil {
			return "", err
		}
		f, err := jsonFloat(v, forms)
		if err != nil {
			return "", err
		}
		return string(appendFloat(nil, f)), nil
	case "image":
		var s string
		if err := dec(&s); err != nil {
			return "", err
		}
		if forms == RefForms {
			return s, nil
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return "", err
		}
		return string(appendBinary(nil, b)), nil
	}
	return "", fmt.Errorf("unknown zoo column %q", col)
}

// jsonFloat reads a double decoded from JSON (a json.Number or a string)
// in the given forms.
func jsonFloat(v any, forms Forms) (float64, error) {
	switch v := v.(type) {
	case json.Number:
		if forms == CatForms {
			return strconv.ParseFloat(string(v), 64)
		}
	case string:
		if forms == RefForms {
			return parseHexFloat(v)
		}
		switch v {
		case "NaN":
			return math.NaN(), nil
		case "Infinity":
			return math.Inf(1), nil
		case "-Infinity":
			return math.Inf(-1), nil
		}
	}
	return 0, fmt.Errorf("%v (%T) is not a double in these JSON forms", v, v)
}

// canonicalInts reports whether raw, a JSON value, is an integer or a
// list of integers already in the canonical form (no spaces, no leading
// zeros or plus signs), so that it needs no parsing.
func canonicalInts(raw []byte) bool {
	if len(raw) == 0 {
		return false
	}
	b := raw
	list := b[0] == '['
	if list {
		if b[len(b)-1] != ']' {
			return false
		}
		b = b[1 : len(b)-1]
		if len(b) == 0 {
			return true
		}
	}
	start := true // at the start of a number
	for i, c := range b {
		switch {
		case c == '-' && start:
			if i+1 == len(b) || b[i+1] < '1' || b[i+1] > '9' {
				return false
			}
			start = false
		case c == '0' && start:
			if i+1 < len(b) && b[i+1] != ',' {
				return false
			}
			start = false
		case c >= '1' && c <= '9' && start, c >= '0' && c <= '9' && !start:
			start = false
		case c == ',' && list && !start:
			start = true
		default:
			return false
		}
	}
	return !start
}

// parseHexFloat parses C's %a form as DuckDB prints it ("0x1.8p+0",
// "-0x0p+0", "inf", "-inf", "nan").
func parseHexFloat(s string) (float64, error) {
	switch s {
	case "nan", "-nan":
		return math.NaN(), nil
	case "inf":
		return math.Inf(1), nil
	case "-inf":
		return math.Inf(-1), nil
	}
	return strconv.ParseFloat(s, 64)
}
