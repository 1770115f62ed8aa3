package index

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/pagefeed/pagefeed/internal/pqtest"
)

// Schema nodes for the tests.
func prim(name string, rep parquet.Repetition, t parquet.Type, lt schema.LogicalType) schema.Node {
	if lt == nil {
		return schema.MustPrimitive(schema.NewPrimitiveNode(name, rep, t, -1, -1))
	}
	return schema.MustPrimitive(schema.NewPrimitiveNodeLogical(name, rep, lt, t, 0, -1))
}

func i32(name string, rep parquet.Repetition) schema.Node {
	return prim(name, rep, parquet.Types.Int32, nil)
}

func str(name string, rep parquet.Repetition) schema.Node {
	return prim(name, rep, parquet.Types.ByteArray, schema.StringLogicalType{})
}

func grp(name string, rep parquet.Repetition, fields ...schema.Node) *schema.GroupNode {
	return schema.MustGroup(schema.NewGroupNode(name, rep, fields, -1))
}

func listOf(name string, rep parquet.Repetition, fields ...schema.Node) *schema.GroupNode {
	return schema.MustGroup(schema.NewGroupNodeLogical(name, rep, fields, schema.NewListLogicalType(), -1))
}

func conv(name string, rep parquet.Repetition, ct schema.ConvertedType, fields ...schema.Node) *schema.GroupNode {
	return schema.MustGroup(schema.NewGroupNodeConverted(name, rep, fields, ct, -1))
}

func rootOf(fields ...schema.Node) *schema.Schema {
	return schema.NewSchema(grp("schema", parquet.Repetitions.Required, fields...))
}

var (
	req = parquet.Repetitions.Required
	opt = parquet.Repetitions.Optional
	rpt = parquet.Repetitions.Repeated
)

// TestLogicalLeaves names the leaves of every list, map and struct
// spelling of the format's backward-compatibility rules (the examples of
// LogicalTypes.md among them) by their logical paths and types, and
// refuses the groups annotated LIST or MAP that do not hold one.
func TestLogicalLeaves(t *testing.T) {
	type leaf struct{ path, typ string }
	cases := []struct {
		name string
		sc   *schema.Schema
		want []leaf
		err  string
	}{
		{name: "scalar and struct", sc: rootOf(prim("id", req, parquet.Types.Int64, nil), grp("meta", opt, str("lang", opt), prim("score", opt, parquet.Types.Double, nil))),
			want: []leaf{{"id", "int64"}, {"meta.lang", "struct<lang: string>"}, {"meta.score", "struct<score: double>"}}},
		// LogicalTypes.md, "Lists"
		{name: "spec: List<String> non-null list, nullable elements", sc: rootOf(listOf("my_list", req, grp("list", rpt, str("element", opt)))),
			want: []leaf{{"my_list", "list<string>"}}},
		{name: "spec: List<Integer> two-level", sc: rootOf(listOf("my_list", opt, i32("element", rpt))),
			want: []leaf{{"my_list", "list<int32>"}}},
		{name: "spec: List<Tuple<String, Integer>>", sc: rootOf(listOf("my_list", opt, grp("element", rpt, str("str", req), i32("num", req)))),
			want: []leaf{{"my_list.str", "list<struct<str: string>>"}, {"my_list.num", "list<struct<num: int32>>"}}},
		{name: "spec: List<OneTuple<String>> array", sc: rootOf(listOf("my_list", opt, grp("array", rpt, str("str", req)))),
			want: []leaf{{"my_list.str", "list<struct<str: string>>"}}},
		{name: "spec: List<OneTuple<String>> _tuple", sc: rootOf(listOf("my_list", opt, grp("my_list_tuple", rpt, str("str", req)))),
			want: []leaf{{"my_list.str", "list<struct<str: string>>"}}},
		{name: "spec: List<String> element group of one field", sc: rootOf(listOf("my_list", opt, grp("element", rpt, str("str", opt)))),
			want: []leaf{{"my_list", "list<string>"}}},
		{name: "list of lists", sc: rootOf(listOf("nested", opt, grp("list", rpt, listOf("element", opt, grp("list", rpt, i32("element", opt)))))),
			want: []leaf{{"nested", "list<list<int32>>"}}},
		{name: "list of structs, three-level", sc: rootOf(listOf("points", opt, grp("list", rpt, grp("element", opt, i32("x", opt), prim("y", opt, parquet.Types.Double, nil))))),
			want: []leaf{{"points.x", "list<struct<x: int32>>"}, {"points.y", "list<struct<y: double>>"}}},
		{name: "repeated group outside a list", sc: rootOf(grp("points", rpt, i32("x", req), prim("y", req, parquet.Types.Double, nil))),
			want: []leaf{{"points.x", "list<struct<x: int32>>"}, {"points.y", "list<struct<y: double>>"}}},
		{name: "list inside a struct", sc: rootOf(grp("doc", opt, listOf("toks", opt, grp("list", rpt, i32("item", opt))))),
			want: []leaf{{"doc.toks", "struct<toks: list<int32>>"}}},
		// LogicalTypes.md, "Maps"
		{name: "spec: Map<String, Integer>", sc: rootOf(schema.MustGroup(schema.NewGroupNodeLogical("my_map", req, schema.FieldList{grp("key_value", rpt, str("key", req), i32("value", opt))}, schema.MapLogicalType{}, -1))),
			want: []leaf{{"my_map.key", "map<string, …>"}, {"my_map.value", "map<…, int32>"}}},
		{name: "spec: MAP_KEY_VALUE in place of MAP", sc: rootOf(conv("my_map", req, schema.ConvertedTypes.MapKeyValue, grp("map", rpt, str("str", req), i32("num", req)))),
			want: []leaf{{"my_map.key", "map<string, …>"}, {"my_map.value", "map<…, int32>"}}},
		{name: "MAP with MAP_KEY_VALUE entries", sc: rootOf(conv("my_map", opt, schema.ConvertedTypes.Map, conv("map", rpt, schema.ConvertedTypes.MapKeyValue, str("key", req), i32("value", opt)))),
			want: []leaf{{"my_map.key", "map<string, …>"}, {"my_map.value", "map<…, int32>"}}},
		{name: "MAP of keys only", sc: rootOf(conv("set", opt, schema.ConvertedTypes.Map, grp("key_value", rpt, str("key", req)))),
			want: []leaf{{"set", "list<string>"}}},
		{name: "map of lists", sc: rootOf(conv("m", opt, schema.ConvertedTypes.Map, grp("key_value", rpt, str("key", req), listOf("value", opt, grp("list", rpt, i32("element", opt)))))),
			want: []leaf{{"m.key", "map<string, …>"}, {"m.value", "map<…, list<int32>>"}}},
		// footers that claim a list or map they do not hold
		{name: "LIST of two fields", sc: rootOf(listOf("a", opt, i32("x", rpt), i32("y", rpt))), err: "has 2 fields, not 1"},
		{name: "LIST of a field not repeated", sc: rootOf(listOf("a", opt, i32("x", opt))), err: "is not repeated"},
		{name: "LIST repeated itself", sc: rootOf(listOf("a", rpt, i32("x", rpt))), err: "repeated itself"},
		{name: "LIST of nothing", sc: rootOf(listOf("a", opt), i32("b", req)), err: "has 0 fields"},
		{name: "MAP of an optional key", sc: rootOf(conv("m", opt, schema.ConvertedTypes.Map, grp("key_value", rpt, str("key", opt), i32("value", opt)))), err: "key key is not required"},
		{name: "MAP of entries not repeated", sc: rootOf(conv("m", opt, schema.ConvertedTypes.Map, grp("key_value", opt, str("key", req), i32("value", opt)))), err: "not a repeated group"},
		{name: "MAP of three fields", sc: rootOf(conv("m", opt, schema.ConvertedTypes.Map, grp("key_value", rpt, str("key", req), i32("v1", opt), i32("v2", opt)))), err: "3 fields"},
	}
	for _, sp := range pqtest.ListSpellings {
		cases = append(cases, struct {
			name string
			sc   *schema.Schema
			want []leaf
			err  string
		}{name: "spelling " + sp.Name, sc: rootOf(sp.Node("input_ids")), want: []leaf{{"input_ids", "list<int32>"}}})
	}
	for _, c := range cases {
		got, err := logicalLeaves(c.sc)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want an error saying %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var g []leaf
		for _, l := range got {
			g = append(g, leaf{l.path, l.typ})
		}
		if fmt.Sprint(g) != fmt.Sprint(c.want) {
			t.Errorf("%s: leaves %v, want %v", c.name, g, c.want)
		}
	}
}

// writeSpelled writes a file of an int64 id and input_ids spelled as sp
// (pqtest.WriteSpelled) in small pages and row groups.
func writeSpelled(t *testing.T, path string, sp pqtest.ListSpelling, rows int, idFirst bool) {
	t.Helper()
	pqtest.WriteSpelled(t, path, sp, 0, rows, idFirst, parquet.NewWriterProperties(parquet.WithDataPageSize(256), parquet.WithMaxRowGroupLength(40)))
}

// TestLogicalColumnsAcrossSpellings: files that spell input_ids in every
// way the format allows are one dataset: one index column named
// input_ids, reached by the logical name or by any file's raw leaf path,
// each file decoded with its own descriptor; files that order their
// fields differently line up. Before, Build failed with "projected leaf 0
// is input_ids.list.item here, input_ids.list.element in …".
func TestLogicalColumnsAcrossSpellings(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i, sp := range pqtest.ListSpellings {
		p := filepath.Join(dir, fmt.Sprintf("%d.parquet", i))
		writeSpelled(t, p, sp, 90, i%2 == 0)
		files = append(files, p)
	}
	for _, names := range [][]string{nil, {"input_ids"}, {"id", "input_ids"}, {"input_ids.list.item"}, {"input_ids.array", "id"}, {"input_ids.bag.array_element"}} {
		for _, order := range [][]string{files, reversed(files)} {
			ix := build(t, order, Options{Columns: names})
			want := map[string]bool{"input_ids": true, "id": len(names) == 0 || len(names) == 2}
			if ix.NumColumns() != len(want)-boolInt(!want["id"]) {
				t.Fatalf("%v: %d columns", names, ix.NumColumns())
			}
			for k := 0; k < ix.NumColumns(); k++ {
				c := ix.Column(k)
				if !want[c.Path] {
					t.Fatalf("%v: column %q", names, c.Path)
				}
				if c.Path == "input_ids" && c.Type != "list<int32>" {
					t.Fatalf("input_ids is %s", c.Type)
				}
			}
			if ix.Stats().Schemas != len(files) || ix.NumRows() != int64(90*len(files)) {
				t.Fatalf("%v: %d declarations, %d rows", names, ix.Stats().Schemas, ix.NumRows())
			}
			k := ix.Lookup("input_ids")[0]
			for _, raw := range []string{"input_ids", "input_ids.list.item", "input_ids.list.element", "input_ids.array", "input_ids.bag"} {
				if got := ix.Lookup(raw); len(got) != 1 || got[0] != k {
					t.Fatalf("Lookup(%q) = %v, want [%d]", raw, got, k)
				}
			}
			if got := ix.Lookup("input"); got != nil {
				t.Fatalf("Lookup(\"input\") = %v, want none", got)
			}
			for f := range order {
				if d := ix.Descr(k, f); !strings.HasPrefix(d.Path(), "input_ids") || d.MaxRepetitionLevel() != 1 {
					t.Fatalf("file %d: descriptor %s", f, d.Path())
				}
			}
		}
	}
	if _, err := Build(context.Background(), files, Options{Columns: []string{"input_ids.list.nothing"}, NoSidecar: true, Logf: t.Logf}); !errors.Is(err, ErrColumn) || !strings.Contains(err.Error(), "input_ids.list.nothing") {
		t.Fatalf("unknown raw path: %v", err)
	}
}

func reversed(a []string) []string {
	out := make([]string, len(a))
	for i, s := range a {
		out[len(a)-1-i] = s
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// writeLeaves writes one row group of root's leaves for rows rows: every
// leaf under one repeated node gets rows of (i % 3) present elements,
// every other leaf a present value per row, of the leaf's physical type.
func writeLeaves(t *testing.T, path string, root *schema.GroupNode, rows int) {
	t.Helper()
	sc := schema.NewSchema(root)
	var leaves []pqtest.Leaf
	for k := 0; k < sc.NumColumns(); k++ {
		col := sc.Column(k)
		n, values := rows, rows
		var l pqtest.Leaf
		if col.MaxRepetitionLevel() > 0 {
			counts := make([]int, rows)
			values = 0
			for i := range counts {
				counts[i] = i % 3
				values += counts[i]
			}
			var err error
			if l.Def, l.Rep, err = pqtest.ListLevels(col, counts); err != nil {
				t.Fatal(err)
			}
		} else if col.MaxDefinitionLevel() > 0 {
			l.Def = make([]int16, n)
			for i := range l.Def {
				l.Def[i] = col.MaxDefinitionLevel()
			}
		}
		switch col.PhysicalType() {
		case parquet.Types.Int32:
			l.Values = make([]int32, values)
		case parquet.Types.Int64:
			l.Values = make([]int64, values)
		case parquet.Types.Double:
			l.Values = make([]float64, values)
		default:
			v := make([]parquet.ByteArray, values)
			for i := range v {
				v[i] = parquet.ByteArray("v")
			}
			l.Values = v
		}
		leaves = append(leaves, l)
	}
	pqtest.WriteColumns(t, path, root, nil, leaves)
}

// TestLogicalTypeConflicts: only a real conflict fails (another physical
// type, another nesting), naming both files and both logical types.
func TestLogicalTypeConflicts(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, fields ...schema.Node) string {
		p := filepath.Join(dir, name+".parquet")
		writeLeaves(t, p, grp("schema", req, fields...), 30)
		return p
	}
	id64 := prim("id", req, parquet.Types.Int64, nil)
	base := write("base", id64, pqtest.ListSpellings[0].Node("input_ids"), listOf("points", opt, grp("list", rpt, grp("element", opt, i32("x", req)))))
	for _, c := range []struct {
		name    string
		other   string
		columns []string
		want    []string
	}{
		{"list and scalar", write("scalar", id64, i32("input_ids", opt), listOf("points", opt, grp("list", rpt, grp("element", opt, i32("x", req))))),
			[]string{"input_ids"}, []string{"list<int32>", "int32 here", "nest differently"}},
		{"int64 and string", write("strid", str("id", req), pqtest.ListSpellings[1].Node("input_ids"), listOf("points", opt, grp("list", rpt, grp("element", opt, i32("x", req))))),
			[]string{"id"}, []string{"string here (physical type BYTE_ARRAY)", "int64 in", "(physical type INT64)"}},
		{"list of structs and struct of lists", write("structlist", id64, pqtest.ListSpellings[1].Node("input_ids"), grp("points", opt, listOf("x", opt, grp("list", rpt, i32("element", req))))),
			[]string{"points"}, []string{"struct<x: list<int32>> here", "list<struct<x: int32>> in", "nest differently"}},
	} {
		for _, files := range [][]string{{base, c.other}, {c.other, base}} {
			_, err := Build(context.Background(), files, Options{Columns: c.columns, NoSidecar: true, Logf: t.Logf})
			if !errors.Is(err, ErrColumn) || !strings.Contains(err.Error(), base) || !strings.Contains(err.Error(), c.other) {
				t.Fatalf("%s: %v, want ErrColumn naming both files", c.name, err)
			}
			if testing.Verbose() {
				t.Log(err)
			}
			if files[0] == base {
				for _, s := range c.want {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("%s: %q does not say %q", c.name, err, s)
					}
				}
			}
		}
	}
	// Nullability, names and leaf order are no conflict.
	same := write("same", pqtest.ListSpellings[4].Node("input_ids"), prim("id", opt, parquet.Types.Int64, nil), listOf("points", req, grp("array", rpt, i32("x", opt))))
	ix := build(t, []string{base, same}, Options{Columns: []string{"id", "input_ids", "points"}})
	if ix.NumColumns() != 3 || ix.Column(2).Path != "points.x" || ix.Stats().Schemas != 2 {
		t.Fatalf("%d columns (%s), %d declarations", ix.NumColumns(), ix.Column(2).Path, ix.Stats().Schemas)
	}
}

// TestFooterClaimsAListItDoesNotHold: a footer whose LIST group has two
// fields, or a field that is not repeated, is a corruption error naming
// the file and the footer's offset.
func TestFooterClaimsAListItDoesNotHold(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		root *schema.GroupNode
		want string
	}{
		{"two fields", grp("schema", req, listOf("a", opt, i32("x", rpt), i32("y", rpt))), "has 2 fields"},
		{"not repeated", grp("schema", req, listOf("a", opt, i32("x", opt))), "is not repeated"},
		{"map key optional", grp("schema", req, conv("m", opt, schema.ConvertedTypes.Map, grp("key_value", rpt, str("key", opt), i32("value", opt)))), "not required"},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".parquet")
		writeLeaves(t, p, c.root, 20)
		_, err := Build(context.Background(), []string{p}, Options{NoSidecar: true, Logf: t.Logf})
		var e *Error
		if !errors.Is(err, ErrCorrupt) || !errors.As(err, &e) || e.Path != p || e.Off <= 0 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a corruption error naming %s, the footer's offset and %q", c.name, err, p, c.want)
		}
	}
}
