package rinas

import (
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
)

// sideCache holds decoded pages of the projection's other columns for the
// spans that need them next (a side page usually covers the rows of
// several lead pages: an 8 KiB id page beside 64 KiB token pages serves
// some twenty spans). A unit whose side pages are all held reads and
// decodes none of them. Entries are immutable arrays, retained once by
// the cache; the least recently used go first beyond max bytes.
// Producer and workers use it concurrently.
type sideCache struct {
	mu  sync.Mutex
	max int64
	c   byteLRU[arrow.Array] // each array retained once by the cache
}

func (c *sideCache) init(max int64) {
	c.max = max
	c.c.init(max, arrow.Array.Release)
}

// get returns the array of page g of column k, retained for the caller,
// or nil.
func (c *sideCache) get(k, g int) arrow.Array {
	if c.max <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.c.get(pageKey(k, g))
	if !ok {
		return nil
	}
	a.Retain()
	return a
}

// put offers the decoded array of page g of column k; the cache retains
// it when it keeps it.
func (c *sideCache) put(k, g int, a arrow.Array) {
	if c.max <= 0 {
		return
	}
	size := int64(a.Data().(interface{ SizeInBytes() uint64 }).SizeInBytes())
	if size > c.max/4 {
		return
	}
	key := pageKey(k, g)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.c.get(key); ok {
		return
	}
	a.Retain()
	c.c.add(key, a, size)
}

// drop releases everything held.
func (c *sideCache) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.c.drop()
}
