package codec

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// schemaInfo is pqarrow's view of one file schema: the Arrow fields and
// level information of every node, which is what rebuilding nesting from
// levels needs.
type schemaInfo struct {
	sc       *schema.Schema
	manifest *pqarrow.SchemaManifest
}

// plan says how to turn one leaf column's levels and values into rows.
type plan struct {
	path []*pqarrow.SchemaField // top-level field first, leaf last
	leaf *pqarrow.SchemaField
	// types caches the projected Arrow type of each node of path but the
	// leaf, built on first use (a plan belongs to one Decoder).
	types []arrow.DataType
	// fail is set when the column's shape is not supported; every page of
	// the column fails with it.
	fail error
}

func rootOf(n schema.Node) *schema.GroupNode {
	for n.Parent() != nil {
		n = n.Parent()
	}
	g, _ := n.(*schema.GroupNode)
	return g
}

func (d *Decoder) plan(c *Chunk) (*plan, error) {
	if p, ok := d.plans[c.Descr]; ok {
		return p, nil
	}
	p, err := d.makePlan(c)
	if err != nil {
		return nil, err
	}
	d.plans[c.Descr] = p
	return p, nil
}

func (d *Decoder) makePlan(c *Chunk) (p *plan, err error) {
	defer recoverCorrupt(&err)
	root := rootOf(c.Descr.SchemaNode())
	if root == nil {
		return nil, kindf(ErrCorrupt, "column %s has no schema root", c.Descr.Path())
	}
	si := d.schemas[root]
	if si == nil {
		sc := schema.NewSchema(root)
		m, err := pqarrow.NewSchemaManifest(sc, c.Meta, &pqarrow.ArrowReadProperties{})
		if err != nil {
			// A stored Arrow schema that does not fit is ignored, as pqarrow
			// does when it does not match the Parquet schema.
			if c.Meta != nil {
				m, err = pqarrow.NewSchemaManifest(sc, nil, &pqarrow.ArrowReadProperties{})
			}
			if err != nil {
				return nil, wrapKind(ErrUnsupported, err, "schema")
			}
		}
		si = &schemaInfo{sc: sc, manifest: m}
		d.schemas[root] = si
	}
	idx := -1
	for i := 0; i < si.sc.NumColumns(); i++ {
		if si.sc.Column(i).SchemaNode() == c.Descr.SchemaNode() {
			idx = i
			break
		}
	}
	if idx < 0 {
		return nil, kindf(ErrCorrupt, "column %s not found in its schema", c.Descr.Path())
	}
	p = &plan{}
	leaf, err := si.manifest.GetColumnField(idx)
	if err != nil || leaf == nil {
		p.fail = kindf(ErrUnsupported, "column %s has no Arrow field", c.Descr.Path())
		return p, nil
	}
	p.leaf = leaf
	for f := leaf; f != nil; f = si.manifest.GetParent(f) {
		p.path = append([]*pqarrow.SchemaField{f}, p.path...)
	}
	p.types = make([]arrow.DataType, len(p.path))
	for _, f := range p.path[:len(p.path)-1] {
		switch f.Field.Type.ID() {
		case arrow.STRUCT, arrow.LIST, arrow.LARGE_LIST, arrow.MAP:
		default:
			p.fail = kindf(ErrUnsupported, "nested %s field %q", f.Field.Type, f.Field.Name)
		}
		if f.LevelInfo.NullSlotUsage > 1 {
			p.fail = kindf(ErrUnsupported, "fixed-size list field %q", f.Field.Name)
		}
	}
	if p.fail == nil {
		if err := leafSupported(leaf.Field.Type, c.Descr); err != nil {
			p.fail = err
		}
	}
	return p, nil
}

// leafSupported says whether buildLeaf handles Arrow type dt stored as the
// column's physical type.
func leafSupported(dt arrow.DataType, descr *schema.Column) error {
	if ext, ok := dt.(arrow.ExtensionType); ok {
		dt = ext.StorageType()
	}
	pt := descr.PhysicalType().String()
	ok := false
	switch descr.PhysicalType().String() {
	case "BOOLEAN":
		ok = dt.ID() == arrow.BOOL
	case "INT32":
		switch dt.ID() {
		case arrow.INT32, arrow.UINT32, arrow.INT16, arrow.UINT16, arrow.INT8, arrow.UINT8,
			arrow.DATE32, arrow.TIME32, arrow.DATE64, arrow.DECIMAL128, arrow.DECIMAL256:
			ok = true
		}
	case "INT64":
		switch dt.ID() {
		case arrow.INT64, arrow.UINT64, arrow.TIME64, arrow.DECIMAL128, arrow.DECIMAL256:
			ok = true
		case arrow.TIMESTAMP:
			ok = dt.(*arrow.TimestampType).Unit != arrow.Second
		}
	case "INT96":
		ok = dt.ID() == arrow.TIMESTAMP && dt.(*arrow.TimestampType).Unit == arrow.Nanosecond
	case "FLOAT":
		ok = dt.ID() == arrow.FLOAT32
	case "DOUBLE":
		ok = dt.ID() == arrow.FLOAT64
	case "BYTE_ARRAY":
		switch dt.ID() {
		case arrow.BINARY, arrow.STRING, arrow.LARGE_BINARY, arrow.LARGE_STRING, arrow.DECIMAL128, arrow.DECIMAL256:
			ok = true
		}
	case "FIXED_LEN_BYTE_ARRAY":
		switch dt.ID() {
		case arrow.FIXED_SIZE_BINARY:
			ok = dt.(*arrow.FixedSizeBinaryType).ByteWidth == descr.TypeLength()
		case arrow.FLOAT16:
			ok = descr.TypeLength() == 2
		case arrow.DECIMAL128, arrow.DECIMAL256:
			ok = true
		}
	}
	if dt.ID() == arrow.NULL {
		ok = true
	}
	if !ok {
		return kindf(ErrUnsupported, "Arrow type %s from physical type %s", dt, pt)
	}
	return nil
}

func (p *plan) String() string {
	s := ""
	for _, f := range p.path {
		s += fmt.Sprintf("/%s:%s", f.Field.Name, f.Field.Type.ID())
	}
	return s
}
