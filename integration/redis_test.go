package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/nexuscocreate/nexus/internal/redistest"
	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// runtimeWatch forwards a WatchRuntimeValues stream to a channel.
type runtimeWatch struct {
	events chan *nexusv1.RuntimeChange
	errs   chan error
}

func watchRuntime(t *testing.T, d *daemon, ctx context.Context, prefix string) *runtimeWatch {
	t.Helper()
	stream, err := d.framework().WatchRuntimeValues(ctx, &nexusv1.WatchRuntimeValuesRequest{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Header(); err != nil { // the watch is in place
		t.Fatal(err)
	}
	w := &runtimeWatch{events: make(chan *nexusv1.RuntimeChange, 1000), errs: make(chan error, 1)}
	go func() {
		for {
			ev, err := stream.Recv()
			if err != nil {
				w.errs <- err
				return
			}
			w.events <- ev
		}
	}()
	return w
}

// next returns the next change, failing if the stream ends or stays silent
// for 30s (a guard against a hang, not a speed check).
func (w *runtimeWatch) next(t *testing.T) *nexusv1.RuntimeChange {
	t.Helper()
	select {
	case ev := <-w.events:
		return ev
	case err := <-w.errs:
		t.Fatalf("watch ended: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no runtime change within 30s")
	}
	return nil
}

// until sets keys "<prefix><n>" through set until w sees one of them: a
// daemon's subscription to Redis may come up (again) a moment after the
// daemon answers, and a change published before it is not replayed.
// Changes w sees that are not of prefix are returned in order.
func (w *runtimeWatch) until(t *testing.T, prefix string, set func(key string) error) []*nexusv1.RuntimeChange {
	t.Helper()
	var other []*nexusv1.RuntimeChange
	for n := 0; ; n++ {
		if err := set(prefix + strconv.Itoa(n)); err != nil {
			t.Fatalf("set %s%d: %v", prefix, n, err)
		}
		select {
		case ev := <-w.events:
			if strings.HasPrefix(ev.Key, prefix) {
				return other
			}
			other = append(other, ev)
		case err := <-w.errs:
			t.Fatalf("watch ended: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestRedisTwoDaemons: two nexusd on two workspaces share one real
// redis-server. A value set through one is read and watched through the
// other; with Redis killed (-9) and restarted mid-test no acknowledged write
// is lost (appendonly yes, appendfsync always), calls while it is down are
// UNAVAILABLE while the rest of the daemon serves, and both daemons
// reconnect by themselves with their watchers resuming.
func TestRedisTwoDaemons(t *testing.T) {
	srv := redistest.New(t, append([]string{"requirepass it-s3cret"}, redistest.Durable...)...)
	t.Setenv("NEXUS_IT_REDIS_PASSWORD", "it-s3cret")
	config := fmt.Sprintf(`runtime:
  backend: redis
  url: redis://:${NEXUS_IT_REDIS_PASSWORD}@%s/0
  prefix: "it:"
`, srv.Addr()) + twoApps
	a := startDaemon(t, newWorkspace(t, config))
	b := startDaemon(t, newWorkspace(t, config))
	cfA, cfB := a.framework(), b.framework()
	plannerA, plannerB := as(a.appToken("planner")), as(b.appToken("planner"))
	ctx, cancel := context.WithCancel(plannerB)
	defer cancel()
	watchB := watchRuntime(t, b, ctx, "")

	setA := func(key string) error {
		_, err := cfA.SetRuntimeValue(plannerA, &nexusv1.SetRuntimeValueRequest{Key: key, Value: "v"})
		return err
	}
	watchB.until(t, "hello/", setA)

	// Set through a; read, list and watch through b.
	if _, err := cfA.SetRuntimeValue(plannerA, &nexusv1.SetRuntimeValueRequest{Key: "job/1", Value: "from a"}); err != nil {
		t.Fatal(err)
	}
	if ev := watchB.next(t); ev.Namespace != "planner" || ev.Key != "job/1" || ev.Change != "set" || ev.Value != "from a" {
		t.Errorf("b watched %v, want the set of planner/job/1", ev)
	}
	got, err := cfB.GetRuntimeValue(plannerB, &nexusv1.GetRuntimeValueRequest{Key: "job/1"})
	if err != nil || !got.Found || got.Value != "from a" {
		t.Errorf("b reads job/1: %v, %v", got, err)
	}
	list, err := cfB.ListRuntimeKeys(plannerB, &nexusv1.ListRuntimeKeysRequest{Prefix: "job/"})
	if err != nil || strings.Join(list.GetKeys(), ",") != "job/1" {
		t.Errorf("b lists job/: %v, %v", list, err)
	}
	// Redis's expiry reaches b's watcher; a delete through b is gone for a.
	if _, err := cfA.SetRuntimeValue(plannerA, &nexusv1.SetRuntimeValueRequest{Key: "brief", Value: "x", TtlSeconds: 1}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"set", "expired"} {
		if ev := watchB.next(t); ev.Key != "brief" || ev.Change != want {
			t.Errorf("b watched %v, want %s of brief", ev, want)
		}
	}
	if del, err := cfB.DeleteRuntimeValue(plannerB, &nexusv1.DeleteRuntimeValueRequest{Key: "job/1"}); err != nil || !del.Deleted {
		t.Fatalf("b deletes job/1: %v, %v", del, err)
	}
	if ev := watchB.next(t); ev.Key != "job/1" || ev.Change != "deleted" {
		t.Errorf("b watched %v, want job/1 deleted", ev)
	}
	if got, err := cfA.GetRuntimeValue(plannerA, &nexusv1.GetRuntimeValueRequest{Key: "job/1"}); err != nil || got.Found {
		t.Errorf("a reads the deleted job/1: %v, %v", got, err)
	}

	// A writer on a keeps writing; Redis is killed under it.
	acked := make(chan int, 10000)
	written := make(chan error, 1)
	go func() {
		defer close(acked)
		for i := 0; ; i++ {
			_, err := cfA.SetRuntimeValue(plannerA, &nexusv1.SetRuntimeValueRequest{Key: "w/" + strconv.Itoa(i), Value: strconv.Itoa(i)})
			if err != nil {
				written <- err
				return
			}
			acked <- i
		}
	}()
	var keys []int
	for range 50 {
		keys = append(keys, <-acked)
	}
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := <-written; code(err) != codes.Unavailable || !strings.Contains(err.Error(), srv.Addr()) {
		t.Errorf("the write that met the kill: %v, want UNAVAILABLE naming %s", err, srv.Addr())
	}
	for i := range acked {
		keys = append(keys, i)
	}

	// Down: runtime calls are UNAVAILABLE and name the server; the rest of
	// the daemon serves.
	for name, call := range map[string]func() error{
		"get": func() error {
			_, err := cfB.GetRuntimeValue(plannerB, &nexusv1.GetRuntimeValueRequest{Key: "w/0"})
			return err
		},
		"set": func() error {
			_, err := cfB.SetRuntimeValue(plannerB, &nexusv1.SetRuntimeValueRequest{Key: "down", Value: "x"})
			return err
		},
		"delete": func() error {
			_, err := cfB.DeleteRuntimeValue(plannerB, &nexusv1.DeleteRuntimeValueRequest{Key: "w/0"})
			return err
		},
		"list": func() error {
			_, err := cfB.ListRuntimeKeys(plannerB, &nexusv1.ListRuntimeKeysRequest{})
			return err
		},
	} {
		if err := call(); code(err) != codes.Unavailable || !strings.Contains(err.Error(), "redis at "+srv.Addr()+" is unreachable") {
			t.Errorf("%s with Redis down: %v, want UNAVAILABLE naming %s", name, err, srv.Addr())
		}
	}
	if _, err := cfB.SetDefinitionFileContent(plannerB, &nexusv1.SetDefinitionFileContentRequest{Path: "down.md", Content: "still here"}); err != nil {
		t.Errorf("a definition write with Redis down: %v", err)
	}
	if h, err := healthpb.NewHealthClient(b.conn).Check(plannerB, &healthpb.HealthCheckRequest{}); err != nil || h.Status != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health with Redis down: %v, %v", h, err)
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// b's watcher resumes by itself, on the same stream.
	watchB.until(t, "back/", setA)
	for _, i := range keys {
		got, err := cfB.GetRuntimeValue(plannerB, &nexusv1.GetRuntimeValueRequest{Key: "w/" + strconv.Itoa(i)})
		if err != nil || !got.Found || got.Value != strconv.Itoa(i) {
			t.Errorf("acknowledged write w/%d after the restart: %v, %v", i, got, err)
		}
	}
	t.Logf("%d acknowledged writes, all kept across kill -9", len(keys))

	cancel()
	a.stop()
	b.stop()
	for name, d := range map[string]*daemon{"a": a, "b": b} {
		log := d.stderr.String()
		for _, want := range []string{"runtime values in redis", "runtime redis is unreachable", "runtime redis is back"} {
			if !strings.Contains(log, want) {
				t.Errorf("%s's log does not say %q:\n%s", name, want, log)
			}
		}
		if strings.Contains(log, "it-s3cret") {
			t.Errorf("%s's log shows the Redis password", name)
		}
	}
}

// TestRedisTwoDaemonsCached: with runtime.cache on in both daemons, a
// daemon serves reads from memory and still reads the other's writes once
// its watcher has heard of them, and its own writes at once.
func TestRedisTwoDaemonsCached(t *testing.T) {
	srv := redistest.New(t)
	config := fmt.Sprintf(`runtime:
  backend: redis
  url: redis://%s/0
  cache: true
`, srv.Addr()) + twoApps
	a := startDaemon(t, newWorkspace(t, config))
	b := startDaemon(t, newWorkspace(t, config))
	cfA, cfB := a.framework(), b.framework()
	plannerA, plannerB := as(a.appToken("planner")), as(b.appToken("planner"))
	ctx, cancel := context.WithCancel(plannerB)
	defer cancel()
	watchB := watchRuntime(t, b, ctx, "job/")
	watchB.until(t, "job/hello-", func(key string) error {
		_, err := cfA.SetRuntimeValue(plannerA, &nexusv1.SetRuntimeValueRequest{Key: key, Value: "v"})
		return err
	})
	readB := func(want string) {
		t.Helper()
		for range 2 { // the first read may fill b's cache, the second is served by it
			got, err := cfB.GetRuntimeValue(plannerB, &nexusv1.GetRuntimeValueRequest{Key: "job/1"})
			if err != nil || got.Found != (want != "") || got.Value != want {
				t.Errorf("b reads job/1: %v, %v; want %q", got, err, want)
			}
		}
	}

	for i := range 5 {
		v := "from a " + strconv.Itoa(i)
		if _, err := cfA.SetRuntimeValue(plannerA, &nexusv1.SetRuntimeValueRequest{Key: "job/1", Value: v}); err != nil {
			t.Fatal(err)
		}
		if ev := watchB.next(t); ev.Key != "job/1" || ev.Value != v {
			t.Fatalf("b watched %v, want job/1 set to %q", ev, v)
		}
		readB(v)
	}
	if _, err := cfA.DeleteRuntimeValue(plannerA, &nexusv1.DeleteRuntimeValueRequest{Key: "job/1"}); err != nil {
		t.Fatal(err)
	}
	if ev := watchB.next(t); ev.Key != "job/1" || ev.Change != "deleted" {
		t.Fatalf("b watched %v, want job/1 deleted", ev)
	}
	readB("")
	if _, err := cfB.SetRuntimeValue(plannerB, &nexusv1.SetRuntimeValueRequest{Key: "job/1", Value: "b's own"}); err != nil {
		t.Fatal(err)
	}
	readB("b's own")
}

// TestRedisDaemonStartsWithRedisDown: the daemon starts and serves while its
// Redis is down; runtime calls are UNAVAILABLE until Redis is there.
func TestRedisDaemonStartsWithRedisDown(t *testing.T) {
	srv := redistest.New(t)
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, newWorkspace(t, "runtime:\n  backend: redis\n  url: "+srv.URL()+"\n"))
	cf := d.framework()
	admin := as(d.admin)
	_, err := cf.GetRuntimeValue(admin, &nexusv1.GetRuntimeValueRequest{Namespace: "n", Key: "k"})
	if code(err) != codes.Unavailable || !strings.Contains(err.Error(), srv.Addr()) {
		t.Errorf("get with Redis down: %v, want UNAVAILABLE naming %s", err, srv.Addr())
	}
	if _, err := cf.SetDefinitionFileContent(admin, &nexusv1.SetDefinitionFileContentRequest{Path: "a.md", Content: "a"}); err != nil {
		t.Errorf("a definition write with Redis down: %v", err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := cf.SetRuntimeValue(admin, &nexusv1.SetRuntimeValueRequest{Namespace: "n", Key: "k", Value: "v"})
		if err == nil {
			break
		}
		if code(err) != codes.Unavailable {
			t.Fatalf("set once Redis is there: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	got, err := cf.GetRuntimeValue(admin, &nexusv1.GetRuntimeValueRequest{Namespace: "n", Key: "k"})
	if err != nil || !got.Found || got.Value != "v" {
		t.Errorf("get once Redis is there: %v, %v", got, err)
	}
}
