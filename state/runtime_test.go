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

func mustSet(t *testing.T, r Runtime, ns, key, value string, ttl time.Duration) {
	t.Helper()
	if err := r.Set(t.Context(), ns, key, value, ttl); err != nil {
		t.Fatalf("Set(%q, %q): %v", ns, key, err)
	}
}

func mustGet(t *testing.T, r Runtime, ns, key string) (RuntimeValue, bool) {
	t.Helper()
	v, ok, err := r.Get(t.Context(), ns, key)
	if err != nil {
		t.Fatalf("Get(%q, %q): %v", ns, key, err)
	}
	return v, ok
}

func mustList(t *testing.T, r Runtime, ns, prefix string) []string {
	t.Helper()
	keys, err := r.List(t.Context(), ns, prefix)
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
	removed, err := r.Delete(t.Context(), "app", "extended")
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

	if _, err := r.Delete(t.Context(), "app", "k"); err != nil {
		t.Fatal(err)
	}
	if got, want := next(t, sub), (RuntimeChange{Namespace: "app", Key: "k", Change: RuntimeDeleted, Time: clock.Now()}); got != want {
		t.Errorf("event %+v, want %+v", got, want)
	}

	// Nothing removed, nothing stored: no event.
	if _, err := r.Delete(t.Context(), "app", "k"); err != nil {
		t.Fatal(err)
	}
	if err := r.Set(t.Context(), "", "k", "v", 0); err == nil {
		t.Fatal("Set with an empty namespace succeeded")
	}
	noEvent(t, sub)
}

func TestRuntimeNilBus(t *testing.T) {
	r, _ := openTestRuntime(t, RuntimeOptions{})
	mustSet(t, r, "app", "k", "v", time.Millisecond)
	if _, err := r.Delete(t.Context(), "app", "k"); err != nil {
		t.Fatal(err)
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
