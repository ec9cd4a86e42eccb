package state

import (
	"sync"
	"sync/atomic"
	"time"
)

// The Redis store's cache (RedisOptions.Cache) keeps values it has read in
// the daemon's memory, and relies on Redis to say when one changes: the
// subscriber's connection turns on CLIENT TRACKING in broadcast mode for the
// store's keys (BCAST PREFIX <prefix>rt:, REDIRECT to itself), so Redis
// sends the name of every such key that changes — set, deleted, expired,
// evicted, by any client — as a message on __redis__:invalidate, and a nil
// message when the database is flushed.
//
// The rules that keep it correct:
//
//   - It serves nothing unless tracking is live on the subscriber's current
//     connection: a new connection, or a broken one, empties and turns off
//     the cache, and it turns on again only once the new connection has
//     tracking on and its subscriptions confirmed (from then on every change
//     is reported to it).
//   - A read that misses puts a placeholder under the key before it asks
//     Redis, and fills it with the answer only if the placeholder is still
//     there: an invalidation of the key, a flush or an own write that came
//     in between removed it, and the answer, perhaps older than the change,
//     is dropped.
//   - An entry holds its deadline on the store's clock: the moment the read
//     was sent plus the PTTL Redis answered, never later than Redis's own
//     expiry whatever the two clocks say. An entry past it is not served.
//   - Set and Delete through the store remove the entry before they return,
//     so a daemon reads its own writes; another daemon's writes are seen
//     once Redis's message arrives.
//   - It holds at most maxBytes of keys, values and bookkeeping, and makes
//     room by dropping entries at random (Go's map order).
type redisCache struct {
	maxBytes int64
	now      func() time.Time
	// afterFetch, when set (by tests), runs between a miss's read from
	// Redis and the filling of its placeholder.
	afterFetch func(name string)
	// applied, when set (by tests), runs after an invalidation is applied:
	// with the key names, or nil for a flush.
	applied func(names []string)

	hits, misses atomic.Int64

	// mu guards the fields below.
	mu      sync.Mutex
	on      bool // serving: tracking is live on the subscriber's connection
	tracked bool // the subscriber's newest connection turned tracking on
	entries map[string]*cacheEntry
	bytes   int64
}

// cacheEntry is a value read from Redis under its key name, or a placeholder
// (filled false) while the read is in flight.
type cacheEntry struct {
	filled   bool
	found    bool
	value    RuntimeValue
	deadline time.Time // on the store's clock; zero: none
	size     int64
}

// cacheEntryOverhead is what an entry costs beyond its key and value: the
// map slot, the entry and the strings' headers, roughly.
const cacheEntryOverhead = 128

// DefaultRedisCacheSize is the default of RedisOptions.CacheSize.
const DefaultRedisCacheSize = 64 << 20

func newRedisCache(maxBytes int64) *redisCache {
	return &redisCache{maxBytes: maxBytes, now: time.Now, entries: map[string]*cacheEntry{}}
}

// get returns the cached answer for the key name: hit is false when there
// is none to serve.
func (c *redisCache) get(name string) (v RuntimeValue, found, hit bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[name]
	if !c.on || e == nil || !e.filled {
		c.misses.Add(1)
		return RuntimeValue{}, false, false
	}
	if !e.deadline.IsZero() && !c.now().Before(e.deadline) {
		c.remove(name, e)
		c.misses.Add(1)
		return RuntimeValue{}, false, false
	}
	c.hits.Add(1)
	return e.value, e.found, true
}

// begin puts a placeholder under the key name before a read from Redis,
// and returns it; nil when the cache is off or another read of the key is
// in flight (this read then goes uncached).
func (c *redisCache) begin(name string) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on {
		return nil
	}
	if e := c.entries[name]; e != nil {
		if !e.filled {
			return nil
		}
		c.remove(name, e)
	}
	p := &cacheEntry{}
	c.entries[name] = p
	return p
}

// fill stores the answer of the read that p was put for, unless p has been
// removed since: then something changed, or may have, during the read.
func (c *redisCache) fill(name string, p *cacheEntry, v RuntimeValue, found bool, deadline time.Time) {
	if c.afterFetch != nil {
		c.afterFetch(name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on || c.entries[name] != p {
		return
	}
	size := int64(len(name)+len(v.Value)) + cacheEntryOverhead
	if size > c.maxBytes {
		delete(c.entries, name)
		return
	}
	for other, e := range c.entries {
		if c.bytes+size <= c.maxBytes {
			break
		}
		if other != name {
			c.remove(other, e)
		}
	}
	*p = cacheEntry{filled: true, found: found, value: v, deadline: deadline, size: size}
	c.bytes += size
}

// remove drops the entry e under name; c.mu is held.
func (c *redisCache) remove(name string, e *cacheEntry) {
	delete(c.entries, name)
	c.bytes -= e.size
}

// drop removes the entries of the key names, for an own write or an
// invalidation; a read of one that is in flight will not be kept.
func (c *redisCache) drop(names ...string) {
	c.mu.Lock()
	for _, name := range names {
		if e := c.entries[name]; e != nil {
			c.remove(name, e)
		}
	}
	c.mu.Unlock()
}

// flush removes every entry; reads in flight will not be kept.
func (c *redisCache) flush() {
	c.mu.Lock()
	c.flushLocked()
	c.mu.Unlock()
}

func (c *redisCache) flushLocked() {
	c.entries = map[string]*cacheEntry{}
	c.bytes = 0
}

// invalidated applies a message of __redis__:invalidate: the key names, or
// none (a flush, or a message the store could not read) to drop all.
func (c *redisCache) invalidated(names []string) {
	if len(names) == 0 {
		c.flush()
		names = nil
	} else {
		c.drop(names...)
	}
	if c.applied != nil {
		c.applied(names)
	}
}

// connected records a new connection of the subscriber and whether it
// turned tracking on. Changes on the old connection may not have been
// reported: the cache is emptied and off until enable.
func (c *redisCache) connected(tracked bool) {
	c.mu.Lock()
	c.on, c.tracked = false, tracked
	c.flushLocked()
	c.mu.Unlock()
}

// enable turns the cache on once the subscriber's connection is
// subscribed, if that connection turned tracking on; it reports whether
// the cache is on.
func (c *redisCache) enable() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on && c.tracked {
		c.flushLocked()
		c.on = true
	}
	return c.on
}

// disable empties and turns off the cache: the subscriber's connection is
// broken, so changes may go unreported.
func (c *redisCache) disable() {
	c.mu.Lock()
	c.on = false
	c.flushLocked()
	c.mu.Unlock()
}
