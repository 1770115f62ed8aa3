package rinas

import "container/list"

// pageKey names page g of projected column k in the loader's caches.
func pageKey(k, g int) uint64 { return uint64(k)<<40 | uint64(g) }

// byteLRU holds values by key within max bytes, least recently used out
// first, calling release on every value it lets go (evicted or dropped).
// It does not lock: the cache that owns it does.
type byteLRU[V any] struct {
	max, bytes int64
	evicted    int64 // values let go to fit max (drop not counted)
	m          map[uint64]*list.Element
	lru        list.List // of *lruEntry[V], most recent at the front
	release    func(V)
}

type lruEntry[V any] struct {
	key  uint64
	v    V
	size int64
}

func (c *byteLRU[V]) init(max int64, release func(V)) {
	c.max, c.release = max, release
	c.m = map[uint64]*list.Element{}
}

// get returns key's value, now the most recently used.
func (c *byteLRU[V]) get(key uint64) (v V, ok bool) {
	e := c.m[key]
	if e == nil {
		return v, false
	}
	c.lru.MoveToFront(e)
	return e.Value.(*lruEntry[V]).v, true
}

// has reports whether key is held, leaving the order as it is.
func (c *byteLRU[V]) has(key uint64) bool { return c.m[key] != nil }

// add holds v, of size bytes, under key (which is not held), then lets the
// least recently used go until the rest fits max.
func (c *byteLRU[V]) add(key uint64, v V, size int64) {
	c.m[key] = c.lru.PushFront(&lruEntry[V]{key: key, v: v, size: size})
	c.bytes += size
	for c.bytes > c.max {
		e := c.lru.Back()
		ent := e.Value.(*lruEntry[V])
		c.lru.Remove(e)
		delete(c.m, ent.key)
		c.bytes -= ent.size
		c.evicted++
		c.release(ent.v)
	}
}

// drop lets every value go.
func (c *byteLRU[V]) drop() {
	for e := c.lru.Front(); e != nil; e = e.Next() {
		c.release(e.Value.(*lruEntry[V]).v)
	}
	c.lru.Init()
	c.m = map[uint64]*list.Element{}
	c.bytes = 0
}
