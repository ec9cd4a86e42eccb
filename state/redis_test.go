package state

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/events"
	"github.com/nexuscocreate/nexus/internal/redistest"
)

// logBuffer is a slog destination that tests read while the store writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// await waits until the log holds text.
func (b *logBuffer) await(t *testing.T, text string) {
	t.Helper()
	await(t, fmt.Sprintf("the log to say %q", text), func() bool { return strings.Contains(b.String(), text) })
}

// await polls cond until it holds; what says what it waits for, to the
// reader. A wait that never ends is go test's -timeout, with every
// goroutine's stack (no wall-clock limit here).
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		time.Sleep(10 * time.Millisecond)
	}
}

func subscribeAll(bus *events.Bus) *events.Subscription {
	return bus.Subscribe(func(ev any) bool { _, ok := ev.(RuntimeChange); return ok }, 0)
}

// TestRedisShared: stores with the same prefix, as two daemons, share their
// values and see each other's changes and Redis's expiries; a store with
// another prefix sees none of it.
func TestRedisShared(t *testing.T) {
	srv := redistest.New(t)
	busA, busB, busC := events.New(), events.New(), events.New()
	subA, subB, subC := subscribeAll(busA), subscribeAll(busB), subscribeAll(busC)
	defer subA.Close()
	defer subB.Close()
	defer subC.Close()
	a := openTestRedis(t, RedisOptions{URL: srv.URL(), Bus: busA})
	b := openTestRedis(t, RedisOptions{URL: srv.URL(), Bus: busB})
	c := openTestRedis(t, RedisOptions{URL: srv.URL(), Prefix: "other:", Bus: busC})
	c2 := openTestRedis(t, RedisOptions{URL: srv.URL(), Prefix: "other:"})
	ctx := t.Context()

	mustSet(t, a, "app", "k", "from a", 0)
	if ch := next(t, subA); ch.Change != RuntimeSet || ch.Value != "from a" {
		t.Errorf("a's own event %+v", ch)
	}
	if ch := next(t, subB); ch.Namespace != "app" || ch.Key != "k" || ch.Change != RuntimeSet || ch.Value != "from a" {
		t.Errorf("b saw %+v, want the set of app/k to %q", ch, "from a")
	}
	if v, ok := mustGet(t, b, "app", "k"); !ok || v.Value != "from a" {
		t.Errorf("b reads %+v, %v", v, ok)
	}
	if removed, err := b.Delete(ctx, "app", "k"); err != nil || !removed {
		t.Fatalf("b.Delete = %v, %v", removed, err)
	}
	for name, sub := range map[string]*events.Subscription{"a": subA, "b": subB} {
		if ch := next(t, sub); ch.Key != "k" || ch.Change != RuntimeDeleted {
			t.Errorf("%s saw %+v, want app/k deleted", name, ch)
		}
	}
	mustSet(t, b, "app", "brief", "v", time.Millisecond)
	next(t, subB) // b's own set
	if ch := next(t, subA); ch.Key != "brief" || ch.Change != RuntimeSet {
		t.Errorf("a saw %+v, want app/brief set", ch)
	}
	for name, sub := range map[string]*events.Subscription{"a": subA, "b": subB} {
		if ch := next(t, sub); ch.Key != "brief" || ch.Change != RuntimeExpired {
			t.Errorf("%s saw %+v, want app/brief expired", name, ch)
		}
	}

	// The other prefix: nothing of the above, in values or events. c2's set
	// was published after all of a's and b's, so c has them by now if ever.
	mustSet(t, a, "app", "k", "again", 0)
	mustSet(t, c2, "app", "mine", "c2", 0)
	if ch := next(t, subC); ch.Key != "mine" || ch.Value != "c2" {
		t.Errorf("c saw %+v, want only c2's set of app/mine", ch)
	}
	if _, ok := mustGet(t, c, "app", "k"); ok {
		t.Error("a store with another prefix reads the value")
	}
	if keys := mustList(t, c, "app", ""); len(keys) != 1 || keys[0] != "mine" {
		t.Errorf("c lists %q, want [mine]", keys)
	}
}

// TestRedisDownAndBack: while Redis is down every call fails with
// ErrUnavailable naming the server, the store says so in its log, and once
// Redis is back calls work and watchers resume by themselves; with the
// append-only file fsynced on every write, a kill -9 loses nothing that was
// acknowledged.
func TestRedisDownAndBack(t *testing.T) {
	srv := redistest.New(t, redistest.Durable...)
	var log, logB logBuffer
	bus := events.New()
	sub := subscribeAll(bus)
	defer sub.Close()
	a := openTestRedis(t, RedisOptions{URL: srv.URL(), Logger: log.logger()})
	openTestRedis(t, RedisOptions{URL: srv.URL(), Bus: bus, Logger: logB.logger(), HealthInterval: 50 * time.Millisecond})
	ctx := t.Context()

	for i := range 20 {
		mustSet(t, a, "app", "k"+strconv.Itoa(i), strconv.Itoa(i), 0)
	}
	for range 20 {
		next(t, sub)
	}

	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	calls := map[string]func() error{
		"Get":    func() error { _, _, err := a.Get(ctx, "app", "k1"); return err },
		"Set":    func() error { return a.Set(ctx, "app", "k1", "down", 0) },
		"Delete": func() error { _, err := a.Delete(ctx, "app", "k1"); return err },
		"List":   func() error { _, err := a.List(ctx, "app", ""); return err },
	}
	for name, call := range calls {
		err := call()
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "redis at "+srv.Addr()+" is unreachable") {
			t.Errorf("%s while Redis is down: error = %v, want ErrUnavailable naming %s", name, err, srv.Addr())
		}
	}
	log.await(t, "runtime redis is unreachable")

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	log.await(t, "runtime redis is back")
	for i := range 20 {
		if v, ok := mustGet(t, a, "app", "k"+strconv.Itoa(i)); !ok || v.Value != strconv.Itoa(i) {
			t.Errorf("k%d after the restart = %+v, %v; want %d", i, v, ok, i)
		}
	}
	// b's watch resumes: a's next sets reach it.
	logB.await(t, "runtime redis is back")
	mustSet(t, a, "app", "after", "yes", 0)
	if ch := next(t, sub); ch.Key != "after" || ch.Value != "yes" {
		t.Errorf("b saw %+v after the restart, want app/after set", ch)
	}
	// A restarted Redis forgot the CONFIG SET; the store set it again.
	mustSet(t, a, "app", "brief", "v", time.Millisecond)
	next(t, sub)
	if ch := next(t, sub); ch.Key != "brief" || ch.Change != RuntimeExpired {
		t.Errorf("b saw %+v, want app/brief expired", ch)
	}
}

// TestRedisDownAtStart: a store opens while Redis is down and works once
// Redis is there.
func TestRedisDownAtStart(t *testing.T) {
	srv := redistest.New(t)
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	var log logBuffer
	r, err := OpenRedisRuntime(RedisOptions{URL: srv.URL(), Logger: log.logger()})
	if err != nil {
		t.Fatalf("OpenRedisRuntime with Redis down: %v", err)
	}
	defer r.Close()
	if _, _, err := r.Get(t.Context(), "app", "k"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Get with Redis down: error = %v, want ErrUnavailable", err)
	}
	log.await(t, "runtime redis is unreachable")
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	awaitUp(t, r)
	mustSet(t, r, "app", "k", "v", 0)
	if v, ok := mustGet(t, r, "app", "k"); !ok || v.Value != "v" {
		t.Errorf("Get = %+v, %v", v, ok)
	}
}

// TestRedisConfigRefused: where CONFIG is disabled the store cannot turn on
// expiry notifications; it says so and works otherwise.
func TestRedisConfigRefused(t *testing.T) {
	srv := redistest.New(t, `rename-command CONFIG ""`)
	var log logBuffer
	r := openTestRedis(t, RedisOptions{URL: srv.URL(), Logger: log.logger()})
	log.await(t, "set notify-keyspace-events Ex in redis.conf")
	mustSet(t, r, "app", "k", "v", time.Hour)
	if v, ok := mustGet(t, r, "app", "k"); !ok || v.Value != "v" {
		t.Errorf("Get = %+v, %v", v, ok)
	}
}

// TestRedisPassword: the password comes from the URL; a wrong one is an
// unavailable store whose errors do not show it.
func TestRedisPassword(t *testing.T) {
	srv := redistest.New(t, "requirepass s3cret-pw")
	good := openTestRedis(t, RedisOptions{URL: "redis://:s3cret-pw@" + srv.Addr() + "/0"})
	mustSet(t, good, "app", "k", "v", 0)

	bad, err := OpenRedisRuntime(RedisOptions{URL: "redis://default:wrong-pw@" + srv.Addr() + "/0"})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	_, _, err = bad.Get(t.Context(), "app", "k")
	if !errors.Is(err, ErrUnavailable) || strings.Contains(err.Error(), "wrong-pw") {
		t.Errorf("Get with a wrong password: error = %v, want ErrUnavailable without the password", err)
	}

	for _, u := range []string{"redis://user:hunter2@" + srv.Addr() + "/notadb", "redis://user:hunter2@127.0.0.1:port/0", "redis://user:hunter2@ho st/0"} {
		_, err = OpenRedisRuntime(RedisOptions{URL: u})
		if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "user:xxxxx@") {
			t.Errorf("bad URL %q: error = %v, want one naming the URL without its password", u, err)
		}
	}
}

func TestRedisKeyLayout(t *testing.T) {
	r := &RedisRuntime{prefix: "nexus:"}
	for _, tt := range []struct{ ns, key string }{
		{"app", "k"}, {"a:b", "c:d"}, {"a", ":"}, {"12:x", "3:y:"}, {"ünï", "ключ"},
	} {
		name := r.key(tt.ns, tt.key)
		ns, key, ok := r.parseKey(name)
		if !ok || ns != tt.ns || key != tt.key {
			t.Errorf("parseKey(%q) = %q, %q, %v; want %q, %q", name, ns, key, ok, tt.ns, tt.key)
		}
	}
	if got := r.key("app1", "user/1"); got != "nexus:rt:4:app1:user/1" {
		t.Errorf("key = %q", got)
	}
	for _, name := range []string{"other:rt:3:app:k", "nexus:rt:x:app:k", "nexus:rt:9:app:k", "nexus:rt:3:appk", "nexus:rt:0::k", "nexus:events:app"} {
		if ns, key, ok := r.parseKey(name); ok {
			t.Errorf("parseKey(%q) = %q, %q, true; want not ours", name, ns, key)
		}
	}
}

// TestRedisTTL: a TTL goes to Redis in whole milliseconds, rounded up, so
// a value never expires before its TTL has passed.
func TestRedisTTL(t *testing.T) {
	for _, tt := range []struct{ ttl, want time.Duration }{
		{0, 0},
		{time.Microsecond, time.Millisecond},
		{time.Millisecond, time.Millisecond},
		{1400 * time.Microsecond, 2 * time.Millisecond},
		{time.Hour + time.Nanosecond, time.Hour + time.Millisecond},
		{MaxTTL, MaxTTL},
	} {
		if got := redisTTL(tt.ttl); got != tt.want {
			t.Errorf("redisTTL(%s) = %s, want %s", tt.ttl, got, tt.want)
		}
	}
}

// TestRedisSilentPeer: a Redis that stops answering without closing its
// connections (SIGSTOP, like a network that drops packets) is noticed by
// the subscription's ping, and the store comes back when Redis answers.
func TestRedisSilentPeer(t *testing.T) {
	srv := redistest.New(t)
	var log logBuffer
	bus := events.New()
	sub := subscribeAll(bus)
	defer sub.Close()
	openTestRedis(t, RedisOptions{URL: srv.URL(), Bus: bus, Logger: log.logger(), HealthInterval: 50 * time.Millisecond})
	other := openTestRedis(t, RedisOptions{URL: srv.URL() + "?read_timeout=100ms"})

	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	// A call does not hang: it fails after the read timeout.
	if _, _, err := other.Get(t.Context(), "app", "k"); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("Get while Redis does not answer: error = %v, want ErrUnavailable after a timeout", err)
	}
	log.await(t, "runtime redis is unreachable")
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	log.await(t, "runtime redis is back")
	mustSet(t, other, "app", "k", "after the pause", 0)
	if ch := next(t, sub); ch.Key != "k" || ch.Value != "after the pause" {
		t.Errorf("watched %+v after the pause, want app/k set", ch)
	}
}
