package state

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/events"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// openTestRuntime opens a store in a fresh directory whose background purger
// does not run during the test unless opts says otherwise.
func openTestRuntime(t *testing.T, opts RuntimeOptions) (*RuntimeStore, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "runtime.db")
	if opts.PurgeInterval == 0 {
		opts.PurgeInterval = time.Hour
	}
	r, err := OpenRuntime(path, opts)
	if err != nil {
		t.Fatalf("OpenRuntime: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return r, path
}

func mustSet(t *testing.T, r *RuntimeStore, ns, key, value string, ttl time.Duration) {
	t.Helper()
	if err := r.Set(ns, key, value, ttl); err != nil {
		t.Fatalf("Set(%q, %q): %v", ns, key, err)
	}
}

func mustGet(t *testing.T, r *RuntimeStore, ns, key string) (RuntimeValue, bool) {
	t.Helper()
	v, ok, err := r.Get(ns, key)
	if err != nil {
		t.Fatalf("Get(%q, %q): %v", ns, key, err)
	}
	return v, ok
}

func mustList(t *testing.T, r *RuntimeStore, ns, prefix string) []string {
	t.Helper()
	keys, err := r.List(ns, prefix)
	if err != nil {
		t.Fatalf("List(%q, %q): %v", ns, prefix, err)
	}
	return keys
}

// next returns the next event of sub, failing after a deadline.
func next(t *testing.T, sub *events.Subscription) RuntimeChange {
	t.Helper()
	select {
	case ev, ok := <-sub.C:
		if !ok {
			t.Fatalf("subscription ended: %v", sub.Err())
		}
		ch, ok := ev.(RuntimeChange)
		if !ok {
			t.Fatalf("event %T, want RuntimeChange", ev)
		}
		return ch
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	panic("unreachable")
}

// noEvent fails if sub holds an event now. Events are published before the
// call that caused them returns, so nothing can still be on its way.
func noEvent(t *testing.T, sub *events.Subscription) {
	t.Helper()
	select {
	case ev := <-sub.C:
		t.Fatalf("unexpected event %+v", ev)
	default:
	}
}

func TestRuntimeSetGetDeleteList(t *testing.T) {
	r, _ := openTestRuntime(t, RuntimeOptions{})

	if _, ok := mustGet(t, r, "app1", "missing"); ok {
		t.Fatal("Get of a missing key: ok")
	}
	mustSet(t, r, "app1", "user/1", "ann", 0)
	mustSet(t, r, "app1", "user/2", "bob", 0)
	mustSet(t, r, "app1", "user/10", "cy", 0)
	mustSet(t, r, "app1", "config", "{}", 0)
	mustSet(t, r, "app2", "user/1", "other", 0)
	mustSet(t, r, "app1", "user/2", "bea", 0) // overwrite

	tests := []struct {
		ns, key string
		want    string
		ok      bool
	}{
		{"app1", "user/1", "ann", true},
		{"app1", "user/2", "bea", true},
		{"app2", "user/1", "other", true},
		{"app2", "user/2", "", false},
		{"app3", "user/1", "", false},
	}
	for _, tt := range tests {
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
		{"app2", "", []string{"user/1"}},
		{"app3", "", []string{}},
	}
	for _, tt := range lists {
		if got := mustList(t, r, tt.ns, tt.prefix); !slices.Equal(got, tt.want) {
			t.Errorf("List(%q, %q) = %q, want %q", tt.ns, tt.prefix, got, tt.want)
		}
	}

	removed, err := r.Delete("app1", "user/1")
	if err != nil || !removed {
		t.Fatalf("Delete(app1, user/1) = %v, %v; want true, nil", removed, err)
	}
	removed, err = r.Delete("app1", "user/1")
	if err != nil || removed {
		t.Fatalf("second Delete(app1, user/1) = %v, %v; want false, nil", removed, err)
	}
	if removed, err := r.Delete("app9", "x"); err != nil || removed {
		t.Fatalf("Delete in a missing namespace = %v, %v; want false, nil", removed, err)
	}
	if _, ok := mustGet(t, r, "app1", "user/1"); ok {
		t.Error("deleted key is still there")
	}
	if v, ok := mustGet(t, r, "app2", "user/1"); !ok || v.Value != "other" {
		t.Errorf("delete in app1 touched app2: %+v, %v", v, ok)
	}

	// Emptying a namespace and using it again.
	if _, err := r.Delete("app2", "user/1"); err != nil {
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

func TestRuntimeTTL(t *testing.T) {
	clock := newFakeClock()
	bus := events.New()
	sub := bus.Subscribe(nil, 0)
	defer sub.Close()
	r, _ := openTestRuntime(t, RuntimeOptions{Bus: bus, Now: clock.Now})

	start := clock.Now()
	mustSet(t, r, "app", "short", "s", time.Minute)
	mustSet(t, r, "app", "long", "l", time.Hour)
	mustSet(t, r, "app", "forever", "f", 0)
	mustSet(t, r, "app", "extended", "e1", time.Minute)
	mustSet(t, r, "app", "shortened", "x1", time.Hour)
	mustSet(t, r, "app", "persisted", "p1", time.Minute)
	for range 6 {
		next(t, sub)
	}

	v, ok := mustGet(t, r, "app", "short")
	if !ok || !v.ExpiresAt.Equal(start.Add(time.Minute)) {
		t.Fatalf("Get(short) = %+v, %v; want expiry %v", v, ok, start.Add(time.Minute))
	}

	clock.Advance(30 * time.Second)
	mustSet(t, r, "app", "extended", "e2", time.Hour)    // now expires at start+1h30s
	mustSet(t, r, "app", "shortened", "x2", time.Second) // now expires at start+31s
	mustSet(t, r, "app", "persisted", "p2", 0)           // now never expires
	for range 3 {
		next(t, sub)
	}

	// At the exact expiry the key is gone, without any purge.
	clock.Advance(30 * time.Second)
	if _, ok := mustGet(t, r, "app", "short"); ok {
		t.Error("short is visible at its expiry")
	}
	if _, ok := mustGet(t, r, "app", "shortened"); ok {
		t.Error("shortened is visible after its new expiry")
	}
	want := []string{"extended", "forever", "long", "persisted"}
	if got := mustList(t, r, "app", ""); !slices.Equal(got, want) {
		t.Errorf("List = %q, want %q", got, want)
	}
	noEvent(t, sub)

	n, err := r.Purge()
	if err != nil {
		t.Fatalf("Purge: %v", err)
	}
	if n != 2 {
		t.Errorf("Purge removed %d, want 2", n)
	}
	var expiredKeys []string
	for range 2 {
		ch := next(t, sub)
		if ch.Change != RuntimeExpired || ch.Namespace != "app" || !ch.Time.Equal(clock.Now()) {
			t.Errorf("event %+v, want expired in app at %v", ch, clock.Now())
		}
		expiredKeys = append(expiredKeys, ch.Key)
	}
	slices.Sort(expiredKeys)
	if want := []string{"short", "shortened"}; !slices.Equal(expiredKeys, want) {
		t.Errorf("expired %q, want %q", expiredKeys, want)
	}
	noEvent(t, sub)
	if n, err := r.Purge(); err != nil || n != 0 {
		t.Errorf("second Purge = %d, %v; want 0, nil", n, err)
	}

	// The keys re-set with a later expiry, or none, survived.
	for key, want := range map[string]string{"extended": "e2", "persisted": "p2", "long": "l", "forever": "f"} {
		if v, ok := mustGet(t, r, "app", key); !ok || v.Value != want {
			t.Errorf("Get(%s) after purge = %+v, %v; want %q", key, v, ok, want)
		}
	}

	// Past the hour: long expires; extended (start+1h30s) not yet.
	clock.Advance(time.Hour - time.Minute)
	if n, err := r.Purge(); err != nil || n != 1 {
		t.Errorf("Purge at start+1h = %d, %v; want 1, nil", n, err)
	}
	if ch := next(t, sub); ch.Key != "long" || ch.Change != RuntimeExpired {
		t.Errorf("event %+v, want long expired", ch)
	}
	if _, ok := mustGet(t, r, "app", "extended"); !ok {
		t.Error("extended is gone before its expiry")
	}

	// Deleting a key that expired but was not purged reports false and
	// publishes the expiry.
	clock.Advance(time.Minute)
	removed, err := r.Delete("app", "extended")
	if err != nil || removed {
		t.Errorf("Delete of an expired key = %v, %v; want false, nil", removed, err)
	}
	if ch := next(t, sub); ch.Key != "extended" || ch.Change != RuntimeExpired {
		t.Errorf("event %+v, want extended expired", ch)
	}
	if n, err := r.Purge(); err != nil || n != 0 {
		t.Errorf("Purge after Delete = %d, %v; want 0, nil", n, err)
	}
	if got, want := mustList(t, r, "app", ""), []string{"forever", "persisted"}; !slices.Equal(got, want) {
		t.Errorf("List = %q, want %q", got, want)
	}
}

func TestRuntimePurgeLarge(t *testing.T) {
	clock := newFakeClock()
	r, _ := openTestRuntime(t, RuntimeOptions{Now: clock.Now})
	const n = purgeBatch*2 + 7
	for i := range n {
		mustSet(t, r, "app", fmt.Sprintf("k%05d", i), "v", time.Duration(i+1)*time.Millisecond)
	}
	mustSet(t, r, "app", "kept", "v", time.Hour)
	clock.Advance(time.Minute)
	got, err := r.Purge()
	if err != nil || got != n {
		t.Fatalf("Purge = %d, %v; want %d, nil", got, err, n)
	}
	if keys := mustList(t, r, "app", ""); !slices.Equal(keys, []string{"kept"}) {
		t.Errorf("List after purge = %q", keys)
	}
}

func TestRuntimeBackgroundPurge(t *testing.T) {
	clock := newFakeClock()
	bus := events.New()
	sub := bus.Subscribe(func(ev any) bool {
		ch, ok := ev.(RuntimeChange)
		return ok && ch.Change == RuntimeExpired
	}, 0)
	defer sub.Close()
	r, _ := openTestRuntime(t, RuntimeOptions{Bus: bus, Now: clock.Now, PurgeInterval: 5 * time.Millisecond})

	mustSet(t, r, "app", "k", "v", time.Second)
	clock.Advance(time.Second)
	if ch := next(t, sub); ch.Key != "k" {
		t.Errorf("expired event %+v, want k", ch)
	}
	if n, err := r.Purge(); err != nil || n != 0 {
		t.Errorf("Purge after the background purge = %d, %v; want 0, nil", n, err)
	}
}

func TestRuntimeEvents(t *testing.T) {
	clock := newFakeClock()
	bus := events.New()
	sub := bus.Subscribe(nil, 0)
	defer sub.Close()
	r, _ := openTestRuntime(t, RuntimeOptions{Bus: bus, Now: clock.Now})

	mustSet(t, r, "app", "k", "v1", 0)
	if got, want := next(t, sub), (RuntimeChange{Namespace: "app", Key: "k", Change: RuntimeSet, Value: "v1", Time: clock.Now()}); got != want {
		t.Errorf("event %+v, want %+v", got, want)
	}
	// The change is visible by the time its event arrives.
	if v, ok := mustGet(t, r, "app", "k"); !ok || v.Value != "v1" {
		t.Errorf("Get after set event = %+v, %v", v, ok)
	}

	if _, err := r.Delete("app", "k"); err != nil {
		t.Fatal(err)
	}
	if got, want := next(t, sub), (RuntimeChange{Namespace: "app", Key: "k", Change: RuntimeDeleted, Time: clock.Now()}); got != want {
		t.Errorf("event %+v, want %+v", got, want)
	}

	// Nothing removed, nothing stored: no event.
	if _, err := r.Delete("app", "k"); err != nil {
		t.Fatal(err)
	}
	if err := r.Set("", "k", "v", 0); err == nil {
		t.Fatal("Set with an empty namespace succeeded")
	}
	noEvent(t, sub)
}

func TestRuntimeNilBus(t *testing.T) {
	r, _ := openTestRuntime(t, RuntimeOptions{})
	mustSet(t, r, "app", "k", "v", time.Millisecond)
	if _, err := r.Delete("app", "k"); err != nil {
		t.Fatal(err)
	}
}

func TestRuntimeValidation(t *testing.T) {
	r, _ := openTestRuntime(t, RuntimeOptions{MaxValueSize: 16})
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
		{"value too large", "app", "k", long(17), 0, ErrTooLarge, "is 17 bytes, over the limit of 16 bytes", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := r.Set(tt.ns, tt.key, tt.value, tt.ttl)
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Set error = %v, want %v containing %q", err, tt.wantErr, tt.wantMsg)
			}
			if !tt.checkGetAndDrop {
				return
			}
			if _, _, err := r.Get(tt.ns, tt.key); !errors.Is(err, ErrInvalid) {
				t.Errorf("Get error = %v, want ErrInvalid", err)
			}
			if _, err := r.Delete(tt.ns, tt.key); !errors.Is(err, ErrInvalid) {
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
		if _, err := r.List(ns, ""); !errors.Is(err, ErrInvalid) {
			t.Errorf("List(%q) error = %v, want ErrInvalid", ns, err)
		}
	}
	if _, err := r.List("app", "p\xff"); !errors.Is(err, ErrInvalid) {
		t.Errorf("List with a bad prefix: error = %v, want ErrInvalid", err)
	}
	if keys := mustList(t, r, "app", ""); len(keys) != 0 {
		t.Errorf("failed sets stored keys: %q", keys)
	}
}

func TestRuntimeDefaultValueLimit(t *testing.T) {
	r, _ := openTestRuntime(t, RuntimeOptions{})
	mustSet(t, r, "app", "big", strings.Repeat("x", DefaultRuntimeMaxValueSize), 0)
	err := r.Set("app", "bigger", strings.Repeat("x", DefaultRuntimeMaxValueSize+1), 0)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "1048577 bytes, over the limit of 1048576") {
		t.Errorf("Set over 1 MiB: error = %v, want ErrTooLarge with sizes", err)
	}
	if v, ok := mustGet(t, r, "app", "big"); !ok || len(v.Value) != DefaultRuntimeMaxValueSize {
		t.Errorf("Get(big): %d bytes, %v", len(v.Value), ok)
	}
}

func TestRuntimeReopen(t *testing.T) {
	clock := newFakeClock()
	path := filepath.Join(t.TempDir(), "runtime.db")
	opts := RuntimeOptions{Now: clock.Now, PurgeInterval: time.Hour}
	r, err := OpenRuntime(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	mustSet(t, r, "app", "k", "v", 0)
	mustSet(t, r, "app", "ttl", "t", time.Minute)
	mustSet(t, r, "other", "k", "o", 0)
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	r, err = OpenRuntime(path, opts)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer r.Close()
	if v, ok := mustGet(t, r, "app", "k"); !ok || v.Value != "v" {
		t.Errorf("Get(app, k) after reopen = %+v, %v", v, ok)
	}
	if v, ok := mustGet(t, r, "app", "ttl"); !ok || !v.ExpiresAt.Equal(clock.Now().Add(time.Minute)) {
		t.Errorf("Get(app, ttl) after reopen = %+v, %v", v, ok)
	}
	if got := mustList(t, r, "other", ""); !slices.Equal(got, []string{"k"}) {
		t.Errorf("List(other) after reopen = %q", got)
	}
	// The expiry index survived too.
	clock.Advance(time.Minute)
	if n, err := r.Purge(); err != nil || n != 1 {
		t.Errorf("Purge after reopen = %d, %v; want 1, nil", n, err)
	}
}

func TestRuntimeLocked(t *testing.T) {
	_, path := openTestRuntime(t, RuntimeOptions{})

	done := make(chan error, 1)
	go func() {
		r2, err := OpenRuntime(path, RuntimeOptions{})
		if err == nil {
			r2.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "runtime database "+path+" is locked by another process") {
			t.Errorf("second OpenRuntime error = %v, want locked", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("second OpenRuntime hangs")
	}
}

func TestRuntimeClosed(t *testing.T) {
	r, _ := openTestRuntime(t, RuntimeOptions{})
	mustSet(t, r, "app", "k", "v", 0)
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	calls := map[string]func() error{
		"Get":    func() error { _, _, err := r.Get("app", "k"); return err },
		"Set":    func() error { return r.Set("app", "k", "v", 0) },
		"Delete": func() error { _, err := r.Delete("app", "k"); return err },
		"List":   func() error { _, err := r.List("app", ""); return err },
		"Purge":  func() error { _, err := r.Purge(); return err },
		"Close":  r.Close,
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: error = %v, want ErrClosed", name, err)
		}
	}
}

func TestRuntimeConcurrent(t *testing.T) {
	bus := events.New()
	sub := bus.Subscribe(nil, 16*200*2)
	defer sub.Close()
	r, _ := openTestRuntime(t, RuntimeOptions{Bus: bus, PurgeInterval: time.Millisecond})

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
				if err := r.Set(ns, key, val, ttl); err != nil {
					errs <- err
					return
				}
				if _, _, err := r.Get(ns, key); err != nil {
					errs <- err
					return
				}
				if _, err := r.List(ns, "k"); err != nil {
					errs <- err
					return
				}
				if i%7 == 0 {
					if _, err := r.Delete(ns, key); err != nil {
						errs <- err
						return
					}
				}
				// A private key only this worker writes reads back what it wrote.
				own := fmt.Sprintf("own%d", w)
				if err := r.Set(ns, own, val, 0); err != nil {
					errs <- err
					return
				}
				v, ok, err := r.Get(ns, own)
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
