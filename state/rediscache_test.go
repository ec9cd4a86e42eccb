package state

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexuscocreate/nexus/events"
	"github.com/nexuscocreate/nexus/internal/redistest"
)

// invalidations returns hooks whose applied hands each invalidation the
// store applied to the returned channel, holding the store's subscriber
// until the test takes it: the test decides when the next one is applied.
func invalidations(t *testing.T) (*redisTestHooks, chan []string) {
	ch := make(chan []string)
	return &redisTestHooks{applied: func(names []string) {
		select {
		case ch <- names:
		case <-t.Context().Done():
		}
	}}, ch
}

// awaitInvalidation takes the invalidations the store applies until one
// drops the key named name (a flush, nil, drops all).
func awaitInvalidation(t *testing.T, ch chan []string, name string) {
	t.Helper()
	for {
		if names := <-ch; names == nil || slices.Contains(names, name) {
			return
		}
	}
}

// nextInvalidation takes the next invalidation the store applies. Like
// await, it waits as long as go test lets it.
func nextInvalidation(t *testing.T, ch chan []string) []string {
	t.Helper()
	return <-ch
}

// drainInvalidations lets the store's subscriber go on until the test ends.
func drainInvalidations(t *testing.T, ch chan []string) {
	go func() {
		for {
			select {
			case <-ch:
			case <-t.Context().Done():
				return
			}
		}
	}()
}

// cacheCounts returns the store's cache hits and misses so far.
func cacheCounts(r *RedisRuntime) (hits, misses int64) {
	return r.cache.hits.Load(), r.cache.misses.Load()
}

func wantGet(t *testing.T, r Runtime, ns, key, want string) {
	t.Helper()
	v, ok := mustGet(t, r, ns, key)
	if want == "" && ok {
		t.Errorf("Get(%s, %s) = %q, want none", ns, key, v.Value)
	} else if want != "" && (!ok || v.Value != want) {
		t.Errorf("Get(%s, %s) = %+v, %v; want %q", ns, key, v, ok, want)
	}
}

// TestRedisCacheShared: two stores with the cache on share a Redis, as two
// daemons. Reads are served from memory; a write through one is read by
// the other once Redis's invalidation is applied, and not before (the
// trade-off docs/beyond-one-machine.md states); each reads its own writes at once.
func TestRedisCacheShared(t *testing.T) {
	srv := redistest.New(t)
	hooks, inval := invalidations(t)
	a := openTestRedis(t, RedisOptions{URL: srv.URL(), Cache: true, hooks: hooks})
	b := openTestRedis(t, RedisOptions{URL: srv.URL(), Cache: true})
	ctx := t.Context()
	k := a.key("app", "k")

	mustSet(t, b, "app", "k", "v1", 0)
	awaitInvalidation(t, inval, k)
	wantGet(t, a, "app", "k", "v1")
	hits, misses := cacheCounts(a)
	wantGet(t, a, "app", "k", "v1")
	if h, m := cacheCounts(a); h != hits+1 || m != misses {
		t.Errorf("the second read: %d hits, %d misses; want %d, %d (served from memory)", h, m, hits+1, misses)
	}

	// A write through b: a reads it once the invalidation is applied.
	mustSet(t, b, "app", "k", "v2", 0)
	awaitInvalidation(t, inval, k)
	wantGet(t, a, "app", "k", "v2")

	// An absent key is cached as absent, and its creation invalidates it.
	wantGet(t, a, "app", "new", "")
	mustSet(t, b, "app", "new", "created", 0)
	awaitInvalidation(t, inval, a.key("app", "new"))
	wantGet(t, a, "app", "new", "created")

	// A delete through b.
	if removed, err := b.Delete(ctx, "app", "new"); err != nil || !removed {
		t.Fatalf("b.Delete = %v, %v", removed, err)
	}
	awaitInvalidation(t, inval, a.key("app", "new"))
	wantGet(t, a, "app", "new", "")

	// Held: a's subscriber stops at the invalidation of an own write, so
	// b's next write is not reported to a yet. a reads the old value (the
	// window docs/beyond-one-machine.md states) but its own writes at once.
	mustSet(t, a, "app", "hold", "x", 0)
	mustSet(t, b, "app", "k", "v3", 0)
	wantGet(t, a, "app", "k", "v2")
	mustSet(t, a, "app", "k", "mine", 0)
	wantGet(t, a, "app", "k", "mine")
	if removed, err := a.Delete(ctx, "app", "k"); err != nil || !removed {
		t.Fatalf("a.Delete = %v, %v", removed, err)
	}
	wantGet(t, a, "app", "k", "")
	mustSet(t, a, "app", "k", "last", 0)
	wantGet(t, a, "app", "k", "last")
	awaitInvalidation(t, inval, a.key("app", "hold"))
	// Then b's write and a's own are applied, in order, up to a marker
	// written last: none of them brings back an old value.
	marker := a.key("app", "marker")
	mustSet(t, b, "app", "marker", "m", 0)
	for done := false; !done; {
		names := nextInvalidation(t, inval)
		done = slices.Contains(names, marker)
		wantGet(t, a, "app", "k", "last")
	}

	// Another prefix's keys do not reach a.
	c := openTestRedis(t, RedisOptions{URL: srv.URL(), Prefix: "other:"})
	mustSet(t, c, "app", "k", "theirs", 0)
	mustSet(t, b, "app", "after", "v", 0)
	if names := nextInvalidation(t, inval); !slices.Equal(names, []string{a.key("app", "after")}) {
		t.Errorf("a's next invalidation is of %q, want only %s", names, a.key("app", "after"))
	}
}

// TestRedisCacheInFlight: a change that lands while a missed read is in
// flight (an invalidation from another store, an own write, a flush) keeps
// the read's answer out of the cache, so the next read goes to Redis.
func TestRedisCacheInFlight(t *testing.T) {
	srv := redistest.New(t)
	raw := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer raw.Close()
	for _, tt := range []struct {
		name   string
		change func(t *testing.T, a, b *RedisRuntime, inval chan []string) // during a's read
		want   string
	}{
		{"another store's write", func(t *testing.T, a, b *RedisRuntime, inval chan []string) {
			mustSet(t, b, "app", "k", "new", 0)
			awaitInvalidation(t, inval, a.key("app", "k"))
		}, "new"},
		{"own write", func(t *testing.T, a, b *RedisRuntime, inval chan []string) {
			mustSet(t, a, "app", "k", "own", 0)
		}, "own"},
		{"own delete", func(t *testing.T, a, b *RedisRuntime, inval chan []string) {
			if _, err := a.Delete(t.Context(), "app", "k"); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"flush", func(t *testing.T, a, b *RedisRuntime, inval chan []string) {
			if err := raw.FlushAll(t.Context()).Err(); err != nil {
				t.Fatal(err)
			}
			awaitInvalidation(t, inval, "")
		}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hooks, inval := invalidations(t)
			// The hook runs in storeA.Get, on this goroutine, once both
			// stores are open.
			var storeA, storeB *RedisRuntime
			var armed atomic.Bool
			hooks.afterFetch = func(string) {
				if armed.CompareAndSwap(true, false) {
					tt.change(t, storeA, storeB, inval)
				}
			}
			prefix := "t-" + strings.ReplaceAll(tt.name, " ", "-") + ":"
			storeA = openTestRedis(t, RedisOptions{URL: srv.URL(), Prefix: prefix, Cache: true, hooks: hooks})
			storeB = openTestRedis(t, RedisOptions{URL: srv.URL(), Prefix: prefix})
			mustSet(t, storeB, "app", "k", "old", 0)
			awaitInvalidation(t, inval, storeA.key("app", "k"))

			armed.Store(true)
			// This read got "old" from Redis before the change.
			wantGet(t, storeA, "app", "k", "old")
			if armed.Load() {
				t.Fatal("the read did not go to Redis")
			}
			wantGet(t, storeA, "app", "k", tt.want)
			wantGet(t, storeA, "app", "k", tt.want)
			drainInvalidations(t, inval)
		})
	}
}

// TestRedisCacheExpiry: an entry is not served past its deadline on the
// store's clock (the moment the read was sent plus Redis's PTTL), whether or
// not Redis has reported the expiry; a value without TTL has no deadline.
func TestRedisCacheExpiry(t *testing.T) {
	srv := redistest.New(t)
	clock := newFakeClock()
	hooks, inval := invalidations(t)
	hooks.now = clock.Now
	r := openTestRedis(t, RedisOptions{URL: srv.URL(), Cache: true, hooks: hooks})

	// Each write's invalidation is applied before the reads, which would
	// otherwise see their entries dropped by it.
	mustSet(t, r, "app", "hour", "h", time.Hour)
	mustSet(t, r, "app", "forever", "f", 0)
	awaitInvalidation(t, inval, r.key("app", "forever"))
	start := clock.Now()
	v, ok := mustGet(t, r, "app", "hour")
	if !ok || v.Value != "h" || v.ExpiresAt.IsZero() {
		t.Fatalf("Get(hour) = %+v, %v; want h with its expiry", v, ok)
	}
	wantGet(t, r, "app", "forever", "f")
	r.cache.mu.Lock()
	deadline, none := r.cache.entries[r.key("app", "hour")].deadline, r.cache.entries[r.key("app", "forever")].deadline
	r.cache.mu.Unlock()
	if deadline.After(start.Add(time.Hour)) || !deadline.After(start.Add(59*time.Minute)) || !none.IsZero() {
		t.Errorf("deadlines %v and %v, want at most an hour after %v, and none", deadline, none, start)
	}

	clock.Advance(deadline.Sub(clock.Now()) - time.Millisecond)
	hits, misses := cacheCounts(r)
	if got, ok := mustGet(t, r, "app", "hour"); !ok || got != v {
		t.Errorf("Get(hour) just before the deadline = %+v, %v; want %+v", got, ok, v)
	}
	if h, m := cacheCounts(r); h != hits+1 || m != misses {
		t.Errorf("just before the deadline: %d hits, %d misses; want %d, %d", h, m, hits+1, misses)
	}

	// Past the deadline on the store's clock, Redis still holds the value
	// (its clock has not moved): the read goes there.
	clock.Advance(time.Millisecond)
	wantGet(t, r, "app", "hour", "h")
	wantGet(t, r, "app", "forever", "f")
	if h, m := cacheCounts(r); h != hits+2 || m != misses+1 {
		t.Errorf("at the deadline: %d hits, %d misses; want %d, %d (hour from Redis, forever from memory)", h, m, hits+2, misses+1)
	}

	// A value that Redis expires is not read from memory either.
	mustSet(t, r, "app", "brief", "b", 20*time.Millisecond)
	awaitInvalidation(t, inval, r.key("app", "brief"))
	wantGet(t, r, "app", "brief", "b")
	clock.Advance(20 * time.Millisecond)
	// The test holds Redis's report of the expiry: the store goes by its
	// own clock.
	await(t, "Redis to expire app/brief", func() bool {
		n, err := r.client.Exists(t.Context(), r.key("app", "brief")).Result()
		return err == nil && n == 0
	})
	wantGet(t, r, "app", "brief", "")
	drainInvalidations(t, inval)
}

// TestRedisCacheFlushAll: FLUSHALL (Redis's nil invalidation) drops every
// entry.
func TestRedisCacheFlushAll(t *testing.T) {
	srv := redistest.New(t)
	hooks, inval := invalidations(t)
	r := openTestRedis(t, RedisOptions{URL: srv.URL(), Cache: true, hooks: hooks})
	for i := range 3 {
		mustSet(t, r, "app", "k"+strconv.Itoa(i), "v", 0)
	}
	awaitInvalidation(t, inval, r.key("app", "k2"))
	for i := range 3 {
		wantGet(t, r, "app", "k"+strconv.Itoa(i), "v")
	}
	hits, _ := cacheCounts(r)
	for i := range 3 {
		wantGet(t, r, "app", "k"+strconv.Itoa(i), "v")
	}
	if h, _ := cacheCounts(r); h != hits+3 {
		t.Fatalf("%d hits, want %d: the values are not cached", h, hits+3)
	}
	raw := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer raw.Close()
	if err := raw.FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	for names := []string{"start"}; names != nil; {
		names = nextInvalidation(t, inval)
	}
	for i := range 3 {
		wantGet(t, r, "app", "k"+strconv.Itoa(i), "")
	}
	// The subscriber goes on after the message go-redis could not read.
	mustSet(t, r, "app", "after", "v", 0)
	wantGet(t, r, "app", "after", "v")
	mustSet(t, r, "app", "after", "w", 0)
	awaitInvalidation(t, inval, r.key("app", "after"))
	r.cache.mu.Lock()
	on := r.cache.on
	r.cache.mu.Unlock()
	if !on {
		t.Error("the flush turned the cache off")
	}
}

// TestRedisCacheRedisDown: when Redis goes away the cache is emptied and
// off, so reads fail UNAVAILABLE instead of serving memory; a value changed
// while the store was cut off is not served stale once it is back.
func TestRedisCacheRedisDown(t *testing.T) {
	srv := redistest.New(t, redistest.Durable...)
	var log logBuffer
	// Once armed, a's subscriber waits on its next new connection until
	// the test lets it go: b writes in between.
	var armed atomic.Bool
	release := make(chan struct{})
	hooks, inval := invalidations(t)
	hooks.beforeTrack = func() {
		if armed.CompareAndSwap(true, false) {
			select {
			case <-release:
			case <-t.Context().Done():
			}
		}
	}
	a := openTestRedis(t, RedisOptions{URL: srv.URL(), Cache: true, Logger: log.logger(), hooks: hooks})
	mustSet(t, a, "app", "k", "before", 0)
	awaitInvalidation(t, inval, a.key("app", "k"))
	drainInvalidations(t, inval)
	wantGet(t, a, "app", "k", "before")
	wantGet(t, a, "app", "k", "before")
	if h, _ := cacheCounts(a); h == 0 {
		t.Fatal("no read was served from memory")
	}

	armed.Store(true)
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	log.await(t, "runtime redis is unreachable")
	awaitCache(t, a, false)
	if _, _, err := a.Get(t.Context(), "app", "k"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Get while Redis is down: error = %v, want ErrUnavailable", err)
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	b := openTestRedis(t, RedisOptions{URL: srv.URL()})
	mustSet(t, b, "app", "k", "changed while a was cut off", 0)
	// a's reads go to Redis while its subscriber is not back.
	wantGet(t, a, "app", "k", "changed while a was cut off")
	close(release)
	awaitCache(t, a, true)
	wantGet(t, a, "app", "k", "changed while a was cut off")
	mustSet(t, b, "app", "k", "after", 0)
	await(t, "a to read b's write", func() bool {
		v, ok, err := a.Get(t.Context(), "app", "k")
		return err == nil && ok && v.Value == "after"
	})
}

// TestRedisCacheBounded: the cache holds at most CacheSize bytes, dropping
// entries to make room, and values larger than all of it are not kept.
func TestRedisCacheBounded(t *testing.T) {
	srv := redistest.New(t)
	const size = 10 * (cacheEntryOverhead + 100)
	hooks, inval := invalidations(t)
	r := openTestRedis(t, RedisOptions{URL: srv.URL(), Cache: true, CacheSize: size, hooks: hooks})
	for i := range 50 {
		mustSet(t, r, "app", "k"+strconv.Itoa(i), strings.Repeat("v", 60), 0)
	}
	awaitInvalidation(t, inval, r.key("app", "k49"))
	for range 3 {
		for i := range 50 {
			wantGet(t, r, "app", "k"+strconv.Itoa(i), strings.Repeat("v", 60))
		}
	}
	mustSet(t, r, "app", "big", strings.Repeat("b", size), 0)
	awaitInvalidation(t, inval, r.key("app", "big"))
	wantGet(t, r, "app", "big", strings.Repeat("b", size))
	drainInvalidations(t, inval)
	r.cache.mu.Lock()
	bytes, n := r.cache.bytes, len(r.cache.entries)
	var sum int64
	for _, e := range r.cache.entries {
		sum += e.size
	}
	_, big := r.cache.entries[r.key("app", "big")]
	r.cache.mu.Unlock()
	if most := size / (cacheEntryOverhead + 60); bytes > size || bytes != sum || n == 0 || n > most || big {
		t.Errorf("the cache holds %d entries, %d bytes (entries sum to %d), the big value: %v; want at most %d entries and %d bytes, not the big value",
			n, bytes, sum, big, most, size)
	}
}

// TestRedisCacheTrackingRefused: a Redis that refuses CLIENT (renamed away)
// leaves the cache off; the store works and watches as without it.
func TestRedisCacheTrackingRefused(t *testing.T) {
	srv := redistest.New(t, `rename-command CLIENT ""`)
	var log logBuffer
	r, err := OpenRedisRuntime(RedisOptions{URL: srv.URL(), Cache: true, Logger: log.logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	awaitUp(t, r)
	if !strings.Contains(log.String(), "refused CLIENT TRACKING") {
		t.Errorf("log %q, want a warning that CLIENT TRACKING was refused", log.String())
	}
	mustSet(t, r, "app", "k", "v", 0)
	wantGet(t, r, "app", "k", "v")
	wantGet(t, r, "app", "k", "v")
	if h, _ := cacheCounts(r); h != 0 {
		t.Errorf("%d reads served from memory without tracking", h)
	}
}

// TestRedisCacheWatchOrder: a watcher that reads when it is told of
// another store's change reads that change (or a newer one), though Redis
// sends the change's message before the invalidation.
func TestRedisCacheWatchOrder(t *testing.T) {
	srv := redistest.New(t)
	bus := events.New()
	sub := subscribeAll(bus)
	defer sub.Close()
	a := openTestRedis(t, RedisOptions{URL: srv.URL(), Cache: true, Bus: bus})
	b := openTestRedis(t, RedisOptions{URL: srv.URL()})
	for i := range 50 {
		v := strconv.Itoa(i)
		if i%5 == 4 {
			if _, err := b.Delete(t.Context(), "app", "k"); err != nil {
				t.Fatal(err)
			}
			v = ""
		} else {
			mustSet(t, b, "app", "k", v, 0)
		}
		next(t, sub)
		// Twice: the first may fill the cache, the second reads it.
		wantGet(t, a, "app", "k", v)
		wantGet(t, a, "app", "k", v)
	}
	if h, _ := cacheCounts(a); h == 0 {
		t.Error("no read was served from memory")
	}
}
