package codec

import (
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// values is the Decoder's dense value scratch, one slice per physical type;
// only the column's type is used for a page.
type values struct {
	b    []bool
	i32  []int32
	i64  []int64
	i96  []parquet.Int96
	f32  []float32
	f64  []float64
	ba   []parquet.ByteArray
	flba []parquet.FixedLenByteArray
}

func grow[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	ns := make([]T, n, n+n/4)
	copy(ns, s)
	return ns
}

// growLevels makes the level scratch hold n levels, keeping what is there.
func (d *Decoder) growLevels(n int) {
	d.defs = grow(d.defs, n)
	d.reps = grow(d.reps, n)
}

// readLevels reads the armed page of st: nv levels into d.defs/d.reps at
// lvlOff and its dense values into the scratch at valOff. It returns the
// number of levels and of values read.
func (d *Decoder) readLevels(st *colState, nv, lvlOff, valOff int) (levels, vals int, err error) {
	defer recoverCorrupt(&err)
	descr := st.descr
	d.growLevels(lvlOff + nv)
	var defs, reps []int16
	if descr.MaxDefinitionLevel() > 0 {
		defs = d.defs[lvlOff : lvlOff+nv]
	} else {
		clear(d.defs[lvlOff : lvlOff+nv])
	}
	if descr.MaxRepetitionLevel() > 0 {
		reps = d.reps[lvlOff : lvlOff+nv]
	} else {
		clear(d.reps[lvlOff : lvlOff+nv])
	}
	n := int64(nv)
	end := valOff + nv
	var total int64
	switch cr := st.cr.(type) {
	case *file.BooleanColumnChunkReader:
		d.vals.b = grow(d.vals.b, end)
		total, vals, err = cr.ReadBatch(n, d.vals.b[valOff:end], defs, reps)
	case *file.Int32ColumnChunkReader:
		d.vals.i32 = grow(d.vals.i32, end)
		total, vals, err = cr.ReadBatch(n, d.vals.i32[valOff:end], defs, reps)
	case *file.Int64ColumnChunkReader:
		d.vals.i64 = grow(d.vals.i64, end)
		total, vals, err = cr.ReadBatch(n, d.vals.i64[valOff:end], defs, reps)
	case *file.Int96ColumnChunkReader:
		d.vals.i96 = grow(d.vals.i96, end)
		total, vals, err = cr.ReadBatch(n, d.vals.i96[valOff:end], defs, reps)
	case *file.Float32ColumnChunkReader:
		d.vals.f32 = grow(d.vals.f32, end)
		total, vals, err = cr.ReadBatch(n, d.vals.f32[valOff:end], defs, reps)
	case *file.Float64ColumnChunkReader:
		d.vals.f64 = grow(d.vals.f64, end)
		total, vals, err = cr.ReadBatch(n, d.vals.f64[valOff:end], defs, reps)
	case *file.ByteArrayColumnChunkReader:
		d.vals.ba = grow(d.vals.ba, end)
		total, vals, err = cr.ReadBatch(n, d.vals.ba[valOff:end], defs, reps)
	case *file.FixedLenByteArrayColumnChunkReader:
		d.vals.flba = grow(d.vals.flba, end)
		total, vals, err = cr.ReadBatch(n, d.vals.flba[valOff:end], defs, reps)
	default:
		return 0, 0, kindf(ErrUnsupported, "physical type %s", descr.PhysicalType())
	}
	if err != nil {
		return 0, 0, wrapKind(ErrCorrupt, err, "levels or values")
	}
	if err := st.cr.Err(); err != nil {
		return 0, 0, wrapKind(ErrCorrupt, err, "levels or values")
	}
	if total != n {
		return 0, 0, kindf(ErrCorrupt, "page decodes %d of the %d values its header claims", total, n)
	}
	// A non-nullable, non-repeated column has one value per level.
	if descr.MaxDefinitionLevel() == 0 && vals != nv {
		return 0, 0, kindf(ErrCorrupt, "page decodes %d values for %d levels", vals, nv)
	}
	return int(total), vals, nil
}
