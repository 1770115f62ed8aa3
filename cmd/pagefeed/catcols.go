package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/pagefeed/pagefeed/codec"
	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/index"
)

// catColumns prints the rows of several columns in file order, one JSON
// object per row keyed by the names asked for (a name that means one
// column, logical or leaf path, keys it; a name with several columns keys
// each by its logical path).
// Each row group is read and decoded whole, column by column; columns
// whose row counts differ in a row group fail naming the file.
func catColumns(ctx context.Context, rd engine.BatchReader, ix *index.Index, names []string, limit int64, stdout io.Writer) error {
	keys := make([][]byte, ix.NumColumns())
	for k := range keys {
		key := ix.Column(k).Path
		for _, n := range names {
			if ks := ix.Lookup(n); len(ks) == 1 && ks[0] == k {
				key = n
				break
			}
		}
		keys[k], _ = json.Marshal(key)
	}
	w := bufio.NewWriterSize(stdout, 1<<16)
	dec := codec.NewDecoder(codec.Options{})
	defer dec.Close()
	left := limit
	var line []byte
	cols := make([][]*codec.Page, ix.NumColumns())
	release := func() {
		for k := range cols {
			for _, p := range cols[k] {
				p.Release()
			}
			cols[k] = cols[k][:0]
		}
	}
	defer release()
	for c := 0; c < ix.NumChunks() && left != 0; c++ {
		release()
		for k := range cols {
			cr, err := readChunk(ctx, rd, ix, k, c)
			if err != nil {
				return err
			}
			err = cr.decodePages(dec, func(pg *codec.Page) error {
				cols[k] = append(cols[k], pg)
				return nil
			})
			if err != nil {
				return err
			}
		}
		ci := ix.Chunk(0, c)
		for k := range cols {
			n := int64(0)
			for _, p := range cols[k] {
				n += int64(p.Rows())
			}
			if n != ci.NumRows {
				return fmt.Errorf("%s: row group %d: column %s holds %d rows, the row group %d: the columns' row counts differ",
					ix.File(ci.File).Path, ci.RowGroup, ix.Column(k).Path, n, ci.NumRows)
			}
		}
		// One cursor per column: its page and the row within it.
		pi := make([]int, len(cols))
		ri := make([]int, len(cols))
		for r := int64(0); r < ci.NumRows && left != 0; r++ {
			line = append(line[:0], '{')
			for k := range cols {
				for ri[k] >= cols[k][pi[k]].Rows() {
					pi[k], ri[k] = pi[k]+1, 0
				}
				if k > 0 {
					line = append(line, ',')
				}
				line = append(line, keys[k]...)
				line = append(line, ':')
				var a arrow.Array = cols[k][pi[k]].Array()
				line = codec.AppendJSON(line, a, ri[k])
				ri[k]++
			}
			line = append(line, '}', '\n')
			if _, err := w.Write(line); err != nil {
				return err
			}
			left--
		}
	}
	return w.Flush()
}
