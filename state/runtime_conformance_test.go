package state

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/events"
	"github.com/nexuscocreate/nexus/internal/redistest"
)

// A runtime backend as the conformance suite sees it: setup prepares what
// its stores need for the test t (a redis-server), and returns open, which
// returns a new, empty store that publishes on bus and refuses values over
// maxValue bytes (0: the default limit).
type runtimeBackend struct {
	name  string
	setup func(t *testing.T) runtimeOpener
}

type runtimeOpener func(t *testing.T, bus *events.Bus, maxValue int) Runtime

// runtimeBackends are bbolt, in a fresh file per store, and Redis, one real
// redis-server per test with a fresh key prefix per store, without and with
// the cache.
var runtimeBackends = []runtimeBackend{
	{"bbolt", func(*testing.T) runtimeOpener {
		return func(t *testing.T, bus *events.Bus, maxValue int) Runtime {
			r, err := OpenRuntime(filepath.Join(t.TempDir(), "runtime.db"), RuntimeOptions{
				Bus: bus, MaxValueSize: maxValue, PurgeInterval: 5 * time.Millisecond})
			if err != nil {
				t.Fatalf("OpenRuntime: %v", err)
			}
			t.Cleanup(func() { r.Close() })
			return r
		}
	}},
	{"redis", redisBackend(false)},
	{"redis cached", redisBackend(true)},
}

// redisBackend sets up a redis-server whose stores, with or without the
// cache, each have a prefix of their own.
func redisBackend(cache bool) func(t *testing.T) runtimeOpener {
	return func(t *testing.T) runtimeOpener {
		srv := redistest.New(t)
		var stores atomic.Int64
		return func(t *testing.T, bus *events.Bus, maxValue int) Runtime {
			return openTestRedis(t, RedisOptions{URL: srv.URL(), Prefix: fmt.Sprintf("t%d:", stores.Add(1)),
				Bus: bus, MaxValueSize: maxValue, Cache: cache})
		}
	}
}

// openTestRedis opens a Redis store closed when t ends and waits until its
// subscription is live, so that no change of the test is missed, and its
// cache, if asked for, is on.
func openTestRedis(t *testing.T, opts RedisOptions) *RedisRuntime {
	t.Helper()
	r, err := OpenRedisRuntime(opts)
	if err != nil {
		t.Fatalf("OpenRedisRuntime: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	awaitUp(t, r)
	if opts.Cache {
		awaitCache(t, r, true)
	}
	return r
}

// awaitCache waits until the store's cache is on, or off.
func awaitCache(t *testing.T, r *RedisRuntime, on bool) {
	t.Helper()
	await(t, fmt.Sprintf("the cache to be on: %v", on), func() bool {
		r.cache.mu.Lock()
		defer r.cache.mu.Unlock()
		return r.cache.on == on
	})
}

// awaitUp waits until the store's subscriber has (re)subscribed.
func awaitUp(t *testing.T, r *RedisRuntime) {
	t.Helper()
	await(t, "the subscription", func() bool {
		r.upMu.Lock()
		defer r.upMu.Unlock()
		return r.up
	})
}

// TestRuntimeConformance runs one table of behaviours against every backend.
func TestRuntimeConformance(t *testing.T) {
	behaviours := []struct {
		name string
		run  func(t *testing.T, open runtimeOpener)
	}{
		{"set get delete list", conformSetGetDeleteList},
		{"list prefix with glob characters", conformListGlob},
		{"events", conformEvents},
		{"ttl", conformTTL},
		{"expiry", conformExpiry},
		{"validation", conformValidation},
		{"default value limit", conformDefaultValueLimit},
		{"cancelled context", conformCancelled},
		{"concurrent", conformConcurrent},
		{"closed", conformClosed},
	}
	for _, b := range runtimeBackends {
		t.Run(b.name, func(t *testing.T) {
			open := b.setup(t)
			for _, bh := range behaviours {
				t.Run(bh.name, func(t *testing.T) { bh.run(t, open) })
			}
		})
	}
}

func conformSetGetDeleteList(t *testing.T, open runtimeOpener) {
	r := open(t, nil, 0)
	ctx := t.Context()

	if _, ok := mustGet(t, r, "app1", "missing"); ok {
		t.Fatal("Get of a missing key: ok")
	}
	mustSet(t, r, "app1", "user/1", "ann", 0)
	mustSet(t, r, "app1", "user/2", "bob", 0)
	mustSet(t, r, "app1", "user/10", "cy", 0)
	mustSet(t, r, "app1", "config", "{}", 0)
	mustSet(t, r, "app2", "user/1", "other", 0)
	mustSet(t, r, "app1", "user/2", "bea", 0) // overwrite
	// A namespace that is a prefix of another, and one with the separator.
	mustSet(t, r, "app", "user/1", "short", 0)
	mustSet(t, r, "app1:user", "x", "colon", 0)

	gets := []struct {
		ns, key string
		want    string
		ok      bool
	}{
		{"app1", "user/1", "ann", true},
		{"app1", "user/2", "bea", true},
		{"app2", "user/1", "other", true},
		{"app", "user/1", "short", true},
		{"app1:user", "x", "colon", true},
		{"app2", "user/2", "", false},
		{"app3", "user/1", "", false},
	}
	for _, tt := range gets {
		v, ok := mustGet(t, r, tt.ns, tt.key)
		if ok != tt.ok || v.Value != tt.want || !v.ExpiresAt.IsZero() {
			t.Errorf("Get(%q, %q) = %+v, %v; want %q, %v without expiry", tt.ns, tt.key, v, ok, tt.want, tt.ok)
		}
	}

	lists := []struct {
		ns, prefix string
		want       []string
	}{
		{"app1", "", []string{"config", "user/1", "user/10", "user/2"}},
		{"app1", "user/", []string{"user/1", "user/10", "user/2"}},
		{"app1", "user/1", []string{"user/1", "user/10"}},
		{"app1", "nothing", []string{}},
		{"app", "", []string{"user/1"}},
		{"app1:user", "", []string{"x"}},
		{"app2", "", []string{"user/1"}},
		{"app3", "", []string{}},
	}
	for _, tt := range lists {
		if got := mustList(t, r, tt.ns, tt.prefix); !slices.Equal(got, tt.want) {
			t.Errorf("List(%q, %q) = %q, want %q", tt.ns, tt.prefix, got, tt.want)
		}
	}

	removed, err := r.Delete(ctx, "app1", "user/1")
	if err != nil || !removed {
		t.Fatalf("Delete(app1, user/1) = %v, %v; want true, nil", removed, err)
	}
	removed, err = r.Delete(ctx, "app1", "user/1")
	if err != nil || removed {
		t.Fatalf("second Delete(app1, user/1) = %v, %v; want false, nil", removed, err)
	}
	if removed, err := r.Delete(ctx, "app9", "x"); err != nil || removed {
		t.Fatalf("Delete in a missing namespace = %v, %v; want false, nil", removed, err)
	}
	if _, ok := mustGet(t, r, "app1", "user/1"); ok {
		t.Error("deleted key is still there")
	}
	if v, ok := mustGet(t, r, "app2", "user/1"); !ok || v.Value != "other" {
		t.Errorf("delete in app1 touched app2: %+v, %v", v, ok)
	}

	// Emptying a namespace and using it again.
	if _, err := r.Delete(ctx, "app2", "user/1"); err != nil {
		t.Fatal(err)
	}
	if got := mustList(t, r, "app2", ""); len(got) != 0 {
		t.Errorf("List of an emptied namespace = %q", got)
	}
	mustSet(t, r, "app2", "again", "yes", 0)
	if v, ok := mustGet(t, r, "app2", "again"); !ok || v.Value != "yes" {
		t.Errorf("Get after reuse = %+v, %v", v, ok)
	}

	// Empty values and non-ASCII text are values like any other.
	mustSet(t, r, "app1", "empty", "", 0)
	if v, ok := mustGet(t, r, "app1", "empty"); !ok || v.Value != "" {
		t.Errorf("Get(empty) = %+v, %v; want \"\", true", v, ok)
	}
	mustSet(t, r, "ünï", "ключ", "値 🙂", 0)
	if v, ok := mustGet(t, r, "ünï", "ключ"); !ok || v.Value != "値 🙂" {
		t.Errorf("Get(unicode) = %+v, %v", v, ok)
	}
}

// conformListGlob: a prefix is a prefix, not a pattern.
func conformListGlob(t *testing.T, open runtimeOpener) {
	r := open(t, nil, 0)
	keys := []string{"a*", "a*b", "ab", "a?", "ax", "[a]", "a", `a\`, `a\b`, "%", "a]"}
	for _, k := range keys {
		mustSet(t, r, "g*[?]", k, "v", 0)
	}
	mustSet(t, r, "gx", "a*", "other namespace", 0)
	lists := map[string][]string{
		"":    slices.Sorted(slices.Values(keys)),
		"a*":  {"a*", "a*b"},
		"a?":  {"a?"},
		"[a]": {"[a]"},
		`a\`:  {`a\`, `a\b`},
		"a]":  {"a]"},
		"%":   {"%"},
		"b":   {},
	}
	for prefix, want := range lists {
		if got := mustList(t, r, "g*[?]", prefix); !slices.Equal(got, want) {
			t.Errorf("List(%q) = %q, want %q", prefix, got, want)
		}
	}
}

func conformEvents(t *testing.T, open runtimeOpener) {
	bus := events.New()
	sub := bus.Subscribe(nil, 0)
	defer sub.Close()
	r := open(t, bus, 0)
	ctx := t.Context()

	before := time.Now()
	mustSet(t, r, "app", "k", "v1", 0)
	after := time.Now()
	// Published before Set returned, with the value and the time of the set.
	got := next(t, sub)
	if got.Namespace != "app" || got.Key != "k" || got.Change != RuntimeSet || got.Value != "v1" ||
		got.Time.Before(before) || got.Time.After(after) {
		t.Errorf("event %+v, want set of app/k to v1 between %v and %v", got, before, after)
	}
	if v, ok := mustGet(t, r, "app", "k"); !ok || v.Value != "v1" {
		t.Errorf("Get after set event = %+v, %v", v, ok)
	}

	if _, err := r.Delete(ctx, "app", "k"); err != nil {
		t.Fatal(err)
	}
	if got := next(t, sub); got.Namespace != "app" || got.Key != "k" || got.Change != RuntimeDeleted || got.Value != "" {
		t.Errorf("event %+v, want app/k deleted", got)
	}

	// Nothing removed, nothing stored: no event.
	if _, err := r.Delete(ctx, "app", "k"); err != nil {
		t.Fatal(err)
	}
	if err := r.Set(ctx, "", "k", "v", 0); err == nil {
		t.Fatal("Set with an empty namespace succeeded")
	}
	if err := r.Set(ctx, "app", "k", "\xff", 0); err == nil {
		t.Fatal("Set of a value that is not UTF-8 succeeded")
	}
	noEvent(t, sub)
}

func conformTTL(t *testing.T, open runtimeOpener) {
	r := open(t, nil, 0)
	// Expiries are kept to the millisecond (Redis's unit), read on the
	// same machine's clock.
	within := func(got time.Time, before, after time.Time, ttl time.Duration) bool {
		return !got.Before(before.Add(ttl).Add(-time.Millisecond)) && !got.After(after.Add(ttl).Add(time.Millisecond))
	}

	before := time.Now()
	mustSet(t, r, "app", "hour", "h", time.Hour)
	mustSet(t, r, "app", "persisted", "p1", time.Hour)
	mustSet(t, r, "app", "shortened", "s1", 2*time.Hour)
	after := time.Now()
	if v, ok := mustGet(t, r, "app", "hour"); !ok || v.Value != "h" || !within(v.ExpiresAt, before, after, time.Hour) {
		t.Errorf("Get(hour) = %+v, %v; want an expiry an hour after %v", v, ok, before)
	}

	// Setting again replaces the TTL: none, or a new one.
	before = time.Now()
	mustSet(t, r, "app", "persisted", "p2", 0)
	mustSet(t, r, "app", "shortened", "s2", time.Minute)
	after = time.Now()
	if v, ok := mustGet(t, r, "app", "persisted"); !ok || v.Value != "p2" || !v.ExpiresAt.IsZero() {
		t.Errorf("Get(persisted) = %+v, %v; want p2 without expiry", v, ok)
	}
	if v, ok := mustGet(t, r, "app", "shortened"); !ok || v.Value != "s2" || !within(v.ExpiresAt, before, after, time.Minute) {
		t.Errorf("Get(shortened) = %+v, %v; want an expiry a minute after %v", v, ok, before)
	}
	if got, want := mustList(t, r, "app", ""), []string{"hour", "persisted", "shortened"}; !slices.Equal(got, want) {
		t.Errorf("List = %q, want %q", got, want)
	}
}

// conformExpiry: the backend removes an expired key by itself and tells the
// watchers.
func conformExpiry(t *testing.T, open runtimeOpener) {
	bus := events.New()
	sub := bus.Subscribe(func(ev any) bool {
		ch, ok := ev.(RuntimeChange)
		return ok && ch.Change == RuntimeExpired
	}, 0)
	defer sub.Close()
	r := open(t, bus, 0)
	ctx := t.Context()

	mustSet(t, r, "app", "kept", "v", 0)
	mustSet(t, r, "app", "short", "v", time.Millisecond)
	mustSet(t, r, "app", "sub-ms", "v", time.Microsecond)
	var gone []string
	for range 2 {
		ch := next(t, sub)
		if ch.Namespace != "app" || ch.Value != "" {
			t.Errorf("expired event %+v, want one in app without a value", ch)
		}
		gone = append(gone, ch.Key)
	}
	slices.Sort(gone)
	if want := []string{"short", "sub-ms"}; !slices.Equal(gone, want) {
		t.Errorf("expired %q, want %q", gone, want)
	}
	if _, ok := mustGet(t, r, "app", "short"); ok {
		t.Error("an expired key is visible")
	}
	if removed, err := r.Delete(ctx, "app", "short"); err != nil || removed {
		t.Errorf("Delete of an expired key = %v, %v; want false, nil", removed, err)
	}
	if got := mustList(t, r, "app", ""); !slices.Equal(got, []string{"kept"}) {
		t.Errorf("List = %q, want [kept]", got)
	}
	noEvent(t, sub)
}

func conformValidation(t *testing.T, open runtimeOpener) {
	r := open(t, nil, 16)
	ctx := t.Context()
	long := func(n int) string { return strings.Repeat("a", n) }

	tests := []struct {
		name            string
		ns, key, value  string
		ttl             time.Duration
		wantErr         error
		wantMsg         string
		checkGetAndDrop bool // ns and key are invalid, so Get and Delete fail too
	}{
		{"empty namespace", "", "k", "v", 0, ErrInvalid, "namespace is empty", true},
		{"empty key", "app", "", "v", 0, ErrInvalid, "key in namespace \"app\" is empty", true},
		{"long namespace", long(MaxRuntimeNamespace + 1), "k", "v", 0, ErrInvalid, "namespace is 129 bytes, over the limit of 128", true},
		{"long key", "app", long(MaxRuntimeKey + 1), "v", 0, ErrInvalid, "key in namespace \"app\" is 1025 bytes, over the limit of 1024", true},
		{"namespace not UTF-8", "ap\xffp", "k", "v", 0, ErrInvalid, "not valid UTF-8", true},
		{"key not UTF-8", "app", "k\xc3", "v", 0, ErrInvalid, "not valid UTF-8", true},
		{"namespace with NUL", "a\x00b", "k", "v", 0, ErrInvalid, "contains a NUL byte", true},
		{"key with NUL", "app", "k\x00", "v", 0, ErrInvalid, "contains a NUL byte", true},
		{"value not UTF-8", "app", "k", "\xfe", 0, ErrInvalid, "value of key \"k\" in namespace \"app\" is not valid UTF-8", false},
		{"negative ttl", "app", "k", "v", -time.Second, ErrInvalid, "negative ttl -1s", false},
		{"ttl over 100 years", "app", "k", "v", MaxTTL + time.Second, ErrInvalid, "is over 100 years", false},
		{"value too large", "app", "k", long(17), 0, ErrTooLarge, "is 17 bytes, over the limit of 16 bytes", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := r.Set(ctx, tt.ns, tt.key, tt.value, tt.ttl)
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Set error = %v, want %v containing %q", err, tt.wantErr, tt.wantMsg)
			}
			if !tt.checkGetAndDrop {
				return
			}
			if _, _, err := r.Get(ctx, tt.ns, tt.key); !errors.Is(err, ErrInvalid) {
				t.Errorf("Get error = %v, want ErrInvalid", err)
			}
			if _, err := r.Delete(ctx, tt.ns, tt.key); !errors.Is(err, ErrInvalid) {
				t.Errorf("Delete error = %v, want ErrInvalid", err)
			}
		})
	}

	// At the limits is fine.
	mustSet(t, r, long(MaxRuntimeNamespace), long(MaxRuntimeKey), long(16), 0)
	if v, ok := mustGet(t, r, long(MaxRuntimeNamespace), long(MaxRuntimeKey)); !ok || v.Value != long(16) {
		t.Errorf("Get at the limits = %+v, %v", v, ok)
	}

	for _, ns := range []string{"", "a\x00"} {
		if _, err := r.List(ctx, ns, ""); !errors.Is(err, ErrInvalid) {
			t.Errorf("List(%q) error = %v, want ErrInvalid", ns, err)
		}
	}
	for _, prefix := range []string{"p\xff", "p\x00", long(MaxRuntimeKey + 1)} {
		if _, err := r.List(ctx, "app", prefix); !errors.Is(err, ErrInvalid) {
			t.Errorf("List with prefix %.20q: error = %v, want ErrInvalid", prefix, err)
		}
	}
	if keys := mustList(t, r, "app", ""); len(keys) != 0 {
		t.Errorf("failed sets stored keys: %q", keys)
	}
}

func conformDefaultValueLimit(t *testing.T, open runtimeOpener) {
	r := open(t, nil, 0)
	mustSet(t, r, "app", "big", strings.Repeat("x", DefaultRuntimeMaxValueSize), 0)
	err := r.Set(t.Context(), "app", "bigger", strings.Repeat("x", DefaultRuntimeMaxValueSize+1), 0)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "1048577 bytes, over the limit of 1048576") {
		t.Errorf("Set over 1 MiB: error = %v, want ErrTooLarge with sizes", err)
	}
	if v, ok := mustGet(t, r, "app", "big"); !ok || len(v.Value) != DefaultRuntimeMaxValueSize {
		t.Errorf("Get(big): %d bytes, %v", len(v.Value), ok)
	}
}

func conformCancelled(t *testing.T, open runtimeOpener) {
	r := open(t, nil, 0)
	mustSet(t, r, "app", "k", "v", 0)
	mustGet(t, r, "app", "k") // a cache, if any, may hold it now
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	calls := map[string]func() error{
		"Get":    func() error { _, _, err := r.Get(ctx, "app", "k"); return err },
		"Set":    func() error { return r.Set(ctx, "app", "k", "w", 0) },
		"Delete": func() error { _, err := r.Delete(ctx, "app", "k"); return err },
		"List":   func() error { _, err := r.List(ctx, "app", ""); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: error = %v, want context.Canceled", name, err)
		}
	}
	if v, ok := mustGet(t, r, "app", "k"); !ok || v.Value != "v" {
		t.Errorf("Get after cancelled calls = %+v, %v; want v", v, ok)
	}
}

func conformConcurrent(t *testing.T, open runtimeOpener) {
	bus := events.New()
	sub := bus.Subscribe(nil, 16*200*2)
	defer sub.Close()
	r := open(t, bus, 0)
	ctx := t.Context()

	const workers, rounds = 16, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				key := fmt.Sprintf("k%d", i%5)
				val := fmt.Sprintf("w%d-%d", w, i)
				ns := fmt.Sprintf("app%d", w%4)
				ttl := time.Duration(0)
				if i%3 == 0 {
					ttl = time.Millisecond
				}
				if err := r.Set(ctx, ns, key, val, ttl); err != nil {
					errs <- err
					return
				}
				if _, _, err := r.Get(ctx, ns, key); err != nil {
					errs <- err
					return
				}
				if _, err := r.List(ctx, ns, "k"); err != nil {
					errs <- err
					return
				}
				if i%7 == 0 {
					if _, err := r.Delete(ctx, ns, key); err != nil {
						errs <- err
						return
					}
				}
				// A private key only this worker writes reads back what it wrote.
				own := fmt.Sprintf("own%d", w)
				if err := r.Set(ctx, ns, own, val, 0); err != nil {
					errs <- err
					return
				}
				v, ok, err := r.Get(ctx, ns, own)
				if err != nil || !ok || v.Value != val {
					errs <- fmt.Errorf("Get(%s, %s) = %+v, %v, %v; want %q", ns, own, v, ok, err, val)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := sub.Err(); err != nil {
		t.Errorf("subscription: %v", err)
	}
}

func conformClosed(t *testing.T, open runtimeOpener) {
	r := open(t, nil, 0)
	mustSet(t, r, "app", "k", "v", 0)
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := t.Context()
	calls := map[string]func() error{
		"Get":    func() error { _, _, err := r.Get(ctx, "app", "k"); return err },
		"Set":    func() error { return r.Set(ctx, "app", "k", "v", 0) },
		"Delete": func() error { _, err := r.Delete(ctx, "app", "k"); return err },
		"List":   func() error { _, err := r.List(ctx, "app", ""); return err },
		"Close":  r.Close,
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: error = %v, want ErrClosed", name, err)
		}
	}
}
