package index_test

import (
	"context"
	"fmt"

	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/index/perm"
)

// Build an index of one projected column, then read the first half of an
// epoch's pages in shuffled order.
func ExampleBuild() {
	ix, err := index.Build(context.Background(),
		[]string{"testdata/v1_pageindex_dict.parquet"},
		index.Options{Columns: []string{"input_ids"}, NoSidecar: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	col := ix.Column(0)
	n := ix.NumPages(0)
	fmt.Println(col.Path, col.Type, "(leaf "+col.Descr.Path()+"):", n, "pages,", ix.NumRows(), "rows,", ix.Stats().OffsetIndex, "chunk from its offset index")

	order := perm.New(uint64(n), 42, 0)
	half := (order.Len() + 1) / 2
	rows := 0
	for pos := uint64(0); pos < half; pos++ {
		loc := ix.Locate(0, int(order.At(pos)))
		rows += int(loc.NumRows)
	}
	fmt.Println("the first half reads", half, "pages")
	_ = rows
	// Output:
	// input_ids list<int32> (leaf input_ids.list.element): 5 pages, 60 rows, 1 chunk from its offset index
	// the first half reads 3 pages
}
