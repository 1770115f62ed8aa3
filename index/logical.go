package index

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Logical columns. Writers spell the same column differently in Parquet:
// a list<int32> named input_ids is input_ids.list.element (arrow-go,
// DuckDB, pyarrow ≥ 13), input_ids.list.item (arrow-rs, pyarrow < 13),
// input_ids.array or input_ids.bag.array_element (older two- and
// three-level writers), or a bare repeated input_ids (parquetjs). The
// index names every leaf by its logical path instead, after the Parquet
// format's LIST and MAP backward-compatibility rules (LogicalTypes.md), as
// arrow-go's pqarrow reads them:
//
//   - a LIST group's repeated child is the list's element when it is a
//     primitive (two-level list), a group of several fields, or a group of
//     one field named "array" or "<list name>_tuple" (a list of structs);
//     otherwise its one field is the element (three-level list, whatever
//     the names of the repeated group and of the element);
//   - a MAP (or MAP_KEY_VALUE) group's repeated child holds the key and
//     the value, named key and value whatever the file calls them (a
//     key_value group of one field is a list of keys, as pqarrow has it);
//   - a repeated field outside a LIST or MAP group is a list of its type;
//   - any other group is a struct of its fields.
//
// A leaf's logical path is the names of the fields from the top-level
// field down, dot-separated, leaving out the groups that only wrap a
// list's elements or a map's entries: input_ids, tags, meta.lang,
// points.x (a list of structs), attrs.key and attrs.value (a map).

// Nesting kinds of a logical leaf, outermost first.
const (
	kindList   = 'L'
	kindMap    = 'M'
	kindStruct = 'S'
)

// step is one container on the way from a top-level field to a leaf: its
// kind, and the field taken in it (a struct's field, a map's key or value).
type step struct {
	kind byte
	name string
}

// logicalLeaf is one leaf of a file's schema, named logically.
type logicalLeaf struct {
	path  string // logical path
	shape string // container kinds, outermost first (kindList, ...)
	typ   string // the logical type, e.g. list<int32>, for messages
}

// logicalLeaves names every leaf of sc by its logical path, in leaf order.
// A group annotated LIST or MAP that does not have the shape the format
// requires (one repeated child; a map's entries a group of a required key
// and at most a value; neither itself repeated) is an error: the footer
// claims a list or map its columns do not hold.
func logicalLeaves(sc *schema.Schema) (leaves []logicalLeaf, err error) {
	w := &logicalWalker{sc: sc, out: make([]logicalLeaf, sc.NumColumns())}
	root := sc.Root()
	for i := 0; i < root.NumFields(); i++ {
		f := root.Field(i)
		if err := w.field(f, f.Name(), nil); err != nil {
			return nil, err
		}
	}
	seen := make(map[string]int, len(w.out))
	for i, l := range w.out {
		if l.path == "" {
			return nil, fmt.Errorf("leaf %d (%s) has no logical path", i, sc.Column(i).Path())
		}
		if j, dup := seen[l.path]; dup {
			return nil, fmt.Errorf("leaves %s and %s both have the logical path %s", sc.Column(j).Path(), sc.Column(i).Path(), l.path)
		}
		seen[l.path] = i
	}
	return w.out, nil
}

type logicalWalker struct {
	sc  *schema.Schema
	out []logicalLeaf
}

// field names node n, whose logical path is path: a repeated field is a
// list of its type, a LIST or MAP group a list or map, another group a
// struct.
func (w *logicalWalker) field(n schema.Node, path string, steps []step) error {
	g, ok := n.(*schema.GroupNode)
	if !ok {
		if n.RepetitionType() == parquet.Repetitions.Repeated {
			steps = appendStep(steps, kindList, "")
		}
		return w.leaf(n.(*schema.PrimitiveNode), path, steps)
	}
	switch {
	case isList(g):
		return w.list(g, path, steps)
	case isMap(g):
		return w.mapGroup(g, path, steps)
	}
	if g.RepetitionType() == parquet.Repetitions.Repeated {
		steps = appendStep(steps, kindList, "")
	}
	return w.fields(g, path, steps)
}

// fields names the fields of struct g, whose logical path is path.
func (w *logicalWalker) fields(g *schema.GroupNode, path string, steps []step) error {
	for i := 0; i < g.NumFields(); i++ {
		f := g.Field(i)
		if err := w.field(f, path+"."+f.Name(), appendStep(steps, kindStruct, f.Name())); err != nil {
			return err
		}
	}
	return nil
}

func (w *logicalWalker) list(g *schema.GroupNode, path string, steps []step) error {
	if g.RepetitionType() == parquet.Repetitions.Repeated {
		return fmt.Errorf("%s is annotated LIST but repeated itself (a LIST group must be required or optional)", g.Path())
	}
	if g.NumFields() != 1 {
		return fmt.Errorf("%s is annotated LIST but has %d fields, not 1", g.Path(), g.NumFields())
	}
	rep := g.Field(0)
	if rep.RepetitionType() != parquet.Repetitions.Repeated {
		return fmt.Errorf("%s is annotated LIST but its field %s is not repeated", g.Path(), rep.Name())
	}
	steps = appendStep(steps, kindList, "")
	rg, ok := rep.(*schema.GroupNode)
	switch {
	case !ok:
		// two-level: the repeated primitive is the element
		return w.leaf(rep.(*schema.PrimitiveNode), path, steps)
	case rg.NumFields() == 1 && rg.Name() != "array" && rg.Name() != g.Name()+"_tuple":
		// three-level: the repeated group's one field is the element,
		// whose own name is no part of the path
		return w.field(rg.Field(0), path, steps)
	default:
		// the repeated group is the element: a struct of its fields
		return w.fields(rg, path, steps)
	}
}

func (w *logicalWalker) mapGroup(g *schema.GroupNode, path string, steps []step) error {
	if g.RepetitionType() == parquet.Repetitions.Repeated {
		return fmt.Errorf("%s is annotated MAP but repeated itself (a MAP group must be required or optional)", g.Path())
	}
	if g.NumFields() != 1 {
		return fmt.Errorf("%s is annotated MAP but has %d fields, not 1", g.Path(), g.NumFields())
	}
	kv, ok := g.Field(0).(*schema.GroupNode)
	if !ok || kv.RepetitionType() != parquet.Repetitions.Repeated {
		return fmt.Errorf("%s is annotated MAP but its field %s is not a repeated group", g.Path(), g.Field(0).Name())
	}
	if kv.NumFields() != 1 && kv.NumFields() != 2 {
		return fmt.Errorf("%s is annotated MAP but its entries %s have %d fields, not a key and a value", g.Path(), kv.Name(), kv.NumFields())
	}
	key := kv.Field(0)
	if key.RepetitionType() != parquet.Repetitions.Required {
		return fmt.Errorf("%s is annotated MAP but its key %s is not required", g.Path(), key.Name())
	}
	if kv.NumFields() == 1 {
		// keys only: a list of keys
		return w.field(key, path, appendStep(steps, kindList, ""))
	}
	if err := w.field(key, path+".key", appendStep(steps, kindMap, "key")); err != nil {
		return err
	}
	return w.field(kv.Field(1), path+".value", appendStep(steps, kindMap, "value"))
}

func (w *logicalWalker) leaf(p *schema.PrimitiveNode, path string, steps []step) error {
	i := w.sc.ColumnIndexByNode(p)
	if i < 0 || i >= len(w.out) {
		return fmt.Errorf("leaf %s is not a column of its schema", p.Path())
	}
	var shape []byte
	for _, s := range steps {
		shape = append(shape, s.kind)
	}
	typ := leafType(p)
	for j := len(steps) - 1; j >= 0; j-- {
		switch s := steps[j]; s.kind {
		case kindList:
			typ = "list<" + typ + ">"
		case kindMap:
			if s.name == "key" {
				typ = "map<" + typ + ", …>"
			} else {
				typ = "map<…, " + typ + ">"
			}
		case kindStruct:
			typ = "struct<" + s.name + ": " + typ + ">"
		}
	}
	w.out[i] = logicalLeaf{path: path, shape: string(shape), typ: typ}
	return nil
}

// appendStep appends a step to a copy of steps (siblings share the prefix).
func appendStep(steps []step, kind byte, name string) []step {
	return append(steps[:len(steps):len(steps)], step{kind, name})
}

func isList(g *schema.GroupNode) bool {
	_, ok := g.LogicalType().(schema.ListLogicalType)
	return ok || g.ConvertedType() == schema.ConvertedTypes.List
}

func isMap(g *schema.GroupNode) bool {
	_, ok := g.LogicalType().(schema.MapLogicalType)
	return ok || g.ConvertedType() == schema.ConvertedTypes.Map || g.ConvertedType() == schema.ConvertedTypes.MapKeyValue
}

// leafType names a leaf's value type: its logical annotation where it has
// one, else its physical type.
func leafType(p *schema.PrimitiveNode) string {
	switch lt := p.LogicalType().(type) {
	case schema.StringLogicalType, schema.EnumLogicalType:
		return "string"
	case schema.IntLogicalType:
		if lt.IsSigned() {
			return fmt.Sprintf("int%d", lt.BitWidth())
		}
		return fmt.Sprintf("uint%d", lt.BitWidth())
	case schema.DecimalLogicalType:
		return fmt.Sprintf("decimal(%d, %d)", lt.Precision(), lt.Scale())
	case schema.DateLogicalType:
		return "date"
	case schema.TimeLogicalType, schema.TimestampLogicalType, schema.JSONLogicalType, schema.BSONLogicalType,
		schema.UUIDLogicalType, schema.Float16LogicalType, schema.IntervalLogicalType:
		return strings.ToLower(lt.String())
	}
	switch p.PhysicalType() {
	case parquet.Types.Boolean:
		return "bool"
	case parquet.Types.Int32:
		return "int32"
	case parquet.Types.Int64:
		return "int64"
	case parquet.Types.Int96:
		return "int96"
	case parquet.Types.Float:
		return "float"
	case parquet.Types.Double:
		return "double"
	case parquet.Types.ByteArray:
		return "binary"
	case parquet.Types.FixedLenByteArray:
		return fmt.Sprintf("fixed_len_byte_array(%d)", p.TypeLength())
	}
	return strings.ToLower(p.PhysicalType().String())
}
