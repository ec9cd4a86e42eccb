package state

import (
	"container/list"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// blobCache keeps recently read blobs, up to a budget of bytes, least
// recently used first out.
type blobCache struct {
	mu     sync.Mutex
	budget int
	used   int
	order  *list.List // of plumbing.Hash, most recent at the front
	items  map[plumbing.Hash]*list.Element
	data   map[plumbing.Hash][]byte
}

func newBlobCache(budget int) *blobCache {
	return &blobCache{budget: budget, order: list.New(), items: map[plumbing.Hash]*list.Element{}, data: map[plumbing.Hash][]byte{}}
}

func (c *blobCache) get(h plumbing.Hash) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[h]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return c.data[h], true
}

func (c *blobCache) put(h plumbing.Hash, b []byte) {
	if len(b) > c.budget/8 {
		return // a large blob would push out many small ones
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[h]; ok {
		return
	}
	c.items[h] = c.order.PushFront(h)
	c.data[h] = b
	c.used += len(b)
	for c.used > c.budget {
		last := c.order.Back()
		old := last.Value.(plumbing.Hash)
		c.order.Remove(last)
		c.used -= len(c.data[old])
		delete(c.items, old)
		delete(c.data, old)
	}
}
