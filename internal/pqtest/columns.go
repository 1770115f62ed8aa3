package pqtest

import (
	"fmt"
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Leaf is what WriteColumns writes to one leaf column of a row group: its
// non-null values (a []int32, []int64, []float64 or []parquet.ByteArray,
// matching the leaf's physical type) and its definition and repetition
// levels (nil where the leaf's maximum level is 0).
type Leaf struct {
	Values   any
	Def, Rep []int16
}

// WriteColumns writes a Parquet file at path with arrow-go's low-level
// writer: any schema root (lists, maps and structs spelled however a test
// needs: two-level lists, other element names, legacy annotations, even
// shapes the format forbids), and rowGroups[r][i] written to leaf i of row
// group r, in leaf order. props nil means parquet.NewWriterProperties().
// Any error fails t naming path.
func WriteColumns(t testing.TB, path string, root *schema.GroupNode, props *parquet.WriterProperties, rowGroups ...[]Leaf) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("pqtest: %v", err)
	}
	defer f.Close()
	if props == nil {
		props = parquet.NewWriterProperties()
	}
	w, err := file.NewParquetWriterWithError(f, root, file.WithWriterProps(props))
	if err != nil {
		t.Fatalf("pqtest: writing %s: %v", path, err)
	}
	for r, leaves := range rowGroups {
		rg := w.AppendRowGroup()
		for i, l := range leaves {
			cw, err := rg.NextColumn()
			if err != nil {
				t.Fatalf("pqtest: writing %s: row group %d leaf %d: %v", path, r, i, err)
			}
			if err := writeLeaf(cw, l); err != nil {
				t.Fatalf("pqtest: writing %s: row group %d leaf %d (%s): %v", path, r, i, cw.Descr().Path(), err)
			}
		}
		if err := rg.Close(); err != nil {
			t.Fatalf("pqtest: writing %s: row group %d: %v", path, r, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("pqtest: writing %s: %v", path, err)
	}
}

func writeLeaf(cw file.ColumnChunkWriter, l Leaf) error {
	var err error
	switch v := l.Values.(type) {
	case []int32:
		_, err = cw.(*file.Int32ColumnChunkWriter).WriteBatch(v, l.Def, l.Rep)
	case []int64:
		_, err = cw.(*file.Int64ColumnChunkWriter).WriteBatch(v, l.Def, l.Rep)
	case []float64:
		_, err = cw.(*file.Float64ColumnChunkWriter).WriteBatch(v, l.Def, l.Rep)
	case []parquet.ByteArray:
		_, err = cw.(*file.ByteArrayColumnChunkWriter).WriteBatch(v, l.Def, l.Rep)
	default:
		return fmt.Errorf("values of type %T", l.Values)
	}
	if err != nil {
		return err
	}
	return cw.Close()
}

// ListLevels returns the levels of a leaf col that lies under exactly one
// repeated node (a list or map, however spelled), for rows of n[i]
// elements each, every element present (all its optional nodes defined);
// n[i] < 0 writes row i as a null list, which needs an optional node above
// the repeated one.
func ListLevels(col *schema.Column, n []int) (def, rep []int16, err error) {
	var nodes []schema.Node
	for x := col.SchemaNode(); x != nil && x.Parent() != nil; x = x.Parent() {
		nodes = append([]schema.Node{x}, nodes...)
	}
	r := -1
	defAt := make([]int16, len(nodes)) // definition level with nodes[0..i] present
	d := int16(0)
	for i, x := range nodes {
		if x.RepetitionType() != parquet.Repetitions.Required {
			d++
		}
		defAt[i] = d
		if x.RepetitionType() == parquet.Repetitions.Repeated {
			if r >= 0 {
				return nil, nil, fmt.Errorf("%s has more than one repeated node", col.Path())
			}
			r = i
		}
	}
	if r < 0 {
		return nil, nil, fmt.Errorf("%s has no repeated node", col.Path())
	}
	for _, m := range n {
		switch {
		case m < 0:
			o := r - 1
			for o >= 0 && nodes[o].RepetitionType() == parquet.Repetitions.Required {
				o--
			}
			if o < 0 {
				return nil, nil, fmt.Errorf("%s: a null list needs an optional node above the repeated one", col.Path())
			}
			def, rep = append(def, defAt[o]-1), append(rep, 0)
		case m == 0:
			def, rep = append(def, defAt[r]-1), append(rep, 0)
		default:
			for j := 0; j < m; j++ {
				def = append(def, col.MaxDefinitionLevel())
				if j == 0 {
					rep = append(rep, 0)
				} else {
					rep = append(rep, 1)
				}
			}
		}
	}
	return def, rep, nil
}

// ListSpelling is one way writers spell a list<int32> column named name.
type ListSpelling struct {
	Name string // of the spelling, for test names
	// Node builds the column's top-level field.
	Node func(name string) schema.Node
}

// ListSpellings are the spellings of a list<int32> the Parquet format's
// backward-compatibility rules (LogicalTypes.md) read as one logical
// list<int32>: three-level lists whatever their names (list/element as
// arrow-go, DuckDB and pyarrow ≥ 13 write; list/item as arrow-rs and
// pyarrow < 13; bag/array_element as Hive; the legacy converted type
// alone), a two-level list (repeated int32 array), and a bare repeated
// field (as parquetjs writes).
var ListSpellings = []ListSpelling{
	{"list.element", func(n string) schema.Node { return threeLevel(n, "list", "element", true) }},
	{"list.item", func(n string) schema.Node { return threeLevel(n, "list", "item", true) }},
	{"bag.array_element", func(n string) schema.Node { return threeLevel(n, "bag", "array_element", true) }},
	{"converted only", func(n string) schema.Node { return threeLevel(n, "list", "element", false) }},
	{"two-level array", func(n string) schema.Node {
		return schema.MustGroup(schema.NewGroupNodeLogical(n, parquet.Repetitions.Optional, schema.FieldList{
			int32Node("array", parquet.Repetitions.Repeated),
		}, schema.NewListLogicalType(), -1))
	}},
	{"bare repeated", func(n string) schema.Node { return int32Node(n, parquet.Repetitions.Repeated) }},
}

func int32Node(name string, rep parquet.Repetition) schema.Node {
	return schema.MustPrimitive(schema.NewPrimitiveNodeLogical(name, rep, schema.NewIntLogicalType(32, true), parquet.Types.Int32, 0, -1))
}

// threeLevel is optional group name (LIST) { repeated group mid { optional
// int32 elem } }, annotated with the LIST logical type, or with only the
// LIST converted type as writers before logical types did.
func threeLevel(name, mid, elem string, logical bool) schema.Node {
	inner := schema.MustGroup(schema.NewGroupNode(mid, parquet.Repetitions.Repeated, schema.FieldList{int32Node(elem, parquet.Repetitions.Optional)}, -1))
	if logical {
		return schema.MustGroup(schema.NewGroupNodeLogical(name, parquet.Repetitions.Optional, schema.FieldList{inner}, schema.NewListLogicalType(), -1))
	}
	return schema.MustGroup(schema.NewGroupNodeConverted(name, parquet.Repetitions.Optional, schema.FieldList{inner}, schema.ConvertedTypes.List, -1))
}

// WriteSpelled writes a file of two columns, an int64 id (firstID on) and
// input_ids, a list<int32> spelled as sp, of rows rows: list i holds
// (i*7)%6 values id*100+j, every 11th list is null where the spelling can
// say so (else empty). idFirst puts id before input_ids in the schema.
// props nil means parquet.NewWriterProperties().
func WriteSpelled(t testing.TB, path string, sp ListSpelling, firstID int64, rows int, idFirst bool, props *parquet.WriterProperties) {
	t.Helper()
	id := schema.MustPrimitive(schema.NewPrimitiveNode("id", parquet.Repetitions.Required, parquet.Types.Int64, -1, -1))
	fields := schema.FieldList{id, sp.Node("input_ids")}
	if !idFirst {
		fields[0], fields[1] = fields[1], fields[0]
	}
	root := schema.MustGroup(schema.NewGroupNode("schema", parquet.Repetitions.Required, fields, -1))
	sc := schema.NewSchema(root)
	col := sc.Column(boolInt(idFirst))
	n := make([]int, rows)
	ids := make([]int64, rows)
	for i := range n {
		ids[i] = firstID + int64(i)
		n[i] = (i * 7) % 6
		if i%11 == 3 {
			n[i] = -1
		}
	}
	def, rep, err := ListLevels(col, n)
	if err != nil { // this spelling has no null lists
		for i := range n {
			n[i] = max(n[i], 0)
		}
		if def, rep, err = ListLevels(col, n); err != nil {
			t.Fatalf("pqtest: %v", err)
		}
	}
	var vals []int32
	for i, m := range n {
		for j := 0; j < m; j++ {
			vals = append(vals, int32(ids[i]*100+int64(j)))
		}
	}
	leaves := []Leaf{{Values: ids}, {Values: vals, Def: def, Rep: rep}}
	if !idFirst {
		leaves[0], leaves[1] = leaves[1], leaves[0]
	}
	WriteColumns(t, path, root, props, leaves)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
