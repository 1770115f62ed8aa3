package index_test

import (
	"context"
	"fmt"

	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/index/perm"
)

// Build an index of one projected column, then read an epoch's pages in
// shuffled order, as rank 0 of 2.
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
	shard, _ := order.Shard(0, 0, 2)
	rows := 0
	for j := uint64(0); j < shard.Len(); j++ {
		loc := ix.Locate(0, int(shard.At(j)))
		rows += int(loc.NumRows)
	}
	fmt.Println("rank 0 reads", shard.Len(), "pages")
	_ = rows
	// Output:
	// input_ids list<int32> (leaf input_ids.list.element): 5 pages, 60 rows, 1 chunk from its offset index
	// rank 0 reads 3 pages
}
