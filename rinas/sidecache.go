package rinas

import (
	"container/list"
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
	mu    sync.Mutex
	max   int64
	bytes int64
	m     map[uint64]*list.Element
	lru   list.List // of *sideEntry, most recent at the front
}

type sideEntry struct {
	key  uint64
	arr  arrow.Array
	size int64
}

func sideKey(k, g int) uint64 { return uint64(k)<<40 | uint64(g) }

func (c *sideCache) init(max int64) {
	c.max = max
	c.m = map[uint64]*list.Element{}
}

// get returns the array of page g of column k, retained for the caller,
// or nil.
func (c *sideCache) get(k, g int) arrow.Array {
	if c.max <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[sideKey(k, g)]
	if e == nil {
		return nil
	}
	c.lru.MoveToFront(e)
	a := e.Value.(*sideEntry).arr
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
	key := sideKey(k, g)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[key]; e != nil {
		c.lru.MoveToFront(e)
		return
	}
	a.Retain()
	c.m[key] = c.lru.PushFront(&sideEntry{key: key, arr: a, size: size})
	c.bytes += size
	for c.bytes > c.max {
		e := c.lru.Back()
		ent := e.Value.(*sideEntry)
		c.lru.Remove(e)
		delete(c.m, ent.key)
		c.bytes -= ent.size
		ent.arr.Release()
	}
}

// drop releases everything held.
func (c *sideCache) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.lru.Front(); e != nil; e = e.Next() {
		e.Value.(*sideEntry).arr.Release()
	}
	c.lru.Init()
	c.m = map[uint64]*list.Element{}
	c.bytes = 0
}
