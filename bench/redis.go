package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/nexuscocreate/nexus/internal/redistest"
	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
	"github.com/nexuscocreate/nexus/state"
)

// benchRedis measures the Redis runtime backend on a redis-server of its
// own: GetRuntimeValue over gRPC through a daemon without the cache and one
// with it (runtime.cache), and the store's Get in this process, against a
// bare go-redis GET of the same key on the same server; and against the
// same read from a daemon whose values are in bbolt.
func benchRedis(tmp string) error {
	srv, err := redistest.Start(filepath.Join(tmp, "redis-data"))
	if err != nil {
		return err
	}
	defer srv.Stop()
	conn, cf, actx, stop, err := redisDaemon(filepath.Join(tmp, "redis-ws"), srv.URL(), false)
	if err != nil {
		return err
	}
	defer stop()
	health := healthpb.NewHealthClient(conn)
	_, cfCached, actxCached, stopCached, err := redisDaemon(filepath.Join(tmp, "redis-cached-ws"), srv.URL(), true)
	if err != nil {
		return err
	}
	defer stopCached()

	// The same read from a daemon whose values are in bbolt.
	wsBolt := filepath.Join(tmp, "bbolt-ws")
	if err := os.MkdirAll(wsBolt, 0o755); err != nil {
		return err
	}
	connBolt, actxBolt, stopBolt, err := daemonClient(wsBolt)
	if err != nil {
		return err
	}
	defer stopBolt()
	cfBolt := nexusv1.NewCoreFrameworkClient(connBolt)
	if _, err := cfBolt.SetRuntimeValue(actxBolt, &nexusv1.SetRuntimeValueRequest{Namespace: "bench", Key: "k", Value: "a small value"}); err != nil {
		return err
	}

	opts, err := redis.ParseURL(srv.URL())
	if err != nil {
		return err
	}
	bare := redis.NewClient(opts)
	defer bare.Close()
	store, err := state.OpenRedisRuntime(state.RedisOptions{URL: srv.URL()})
	if err != nil {
		return err
	}
	defer store.Close()
	ctx := context.Background()
	const key = "nexus:rt:5:bench:k" // the daemon's key of bench/k

	const n = 5000
	calls := []namedCall{
		{"GET", func() error {
			v, err := bare.Get(ctx, key).Result()
			if err == nil && v != "a small value" {
				err = fmt.Errorf("GET %s = %q: not the value the daemon set", key, v)
			}
			return err
		}},
		{"GetRuntimeValue", func() error {
			r, err := cf.GetRuntimeValue(actx, &nexusv1.GetRuntimeValueRequest{Namespace: "bench", Key: "k"})
			if err == nil && !r.Found {
				err = fmt.Errorf("GetRuntimeValue bench/k: not found")
			}
			return err
		}},
		{"store Get", func() error { _, _, err := store.Get(ctx, "bench", "k"); return err }},
		{"cached GetRuntimeValue", func() error {
			r, err := cfCached.GetRuntimeValue(actxCached, &nexusv1.GetRuntimeValueRequest{Namespace: "bench", Key: "k"})
			if err == nil && (!r.Found || r.Value != "a small value") {
				err = fmt.Errorf("GetRuntimeValue bench/k with the cache: %v, %q", r.Found, r.Value)
			}
			return err
		}},
		{"echo", func() error { _, err := health.Check(actx, &healthpb.HealthCheckRequest{}); return err }},
		{"bbolt GetRuntimeValue", func() error {
			_, err := cfBolt.GetRuntimeValue(actxBolt, &nexusv1.GetRuntimeValueRequest{Namespace: "bench", Key: "k"})
			return err
		}},
	}
	p50, err := interleavedP50(calls, n)
	if err != nil {
		return err
	}
	fmt.Printf("\nRedis runtime backend (redis-server on %s):\n", srv.Addr())
	report("Redis GetRuntimeValue over gRPC, p50", p50[1], p50[0], "bare go-redis GET, same server", "report: every read goes to Redis")
	report("Redis GetRuntimeValue, gRPC, cache on, p50", p50[3], p50[0], "bare go-redis GET, same server", "≤ 1.5×")
	report("Redis store Get in process, p50", p50[2], p50[0], "bare go-redis GET, same server", "none: where the time goes")
	report("health check on the daemon's socket, p50", p50[4], p50[0], "bare go-redis GET, same server", "none: where the time goes")
	report("Redis GetRuntimeValue over gRPC, p50", p50[1], p50[5], "bbolt GetRuntimeValue over gRPC", "none: the price of sharing")
	return nil
}

// redisDaemon starts a daemon in the workspace ws whose runtime values are
// in the Redis at url, with or without the cache, and sets bench/k there.
func redisDaemon(ws, url string, cache bool) (*grpc.ClientConn, nexusv1.CoreFrameworkClient, context.Context, func(), error) {
	if err := os.MkdirAll(filepath.Join(ws, ".nexus"), 0o755); err != nil {
		return nil, nil, nil, nil, err
	}
	config := fmt.Sprintf("runtime:\n  backend: redis\n  url: %s\n  cache: %v\n", url, cache)
	if err := os.WriteFile(filepath.Join(ws, ".nexus", "config.yaml"), []byte(config), 0o644); err != nil {
		return nil, nil, nil, nil, err
	}
	conn, actx, stop, err := daemonClient(ws)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	cf := nexusv1.NewCoreFrameworkClient(conn)
	// The daemon may still be connecting to Redis: try while it answers
	// UNAVAILABLE, for a while.
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		_, err := cf.SetRuntimeValue(actx, &nexusv1.SetRuntimeValueRequest{Namespace: "bench", Key: "k", Value: "a small value"})
		if err == nil {
			return conn, cf, actx, stop, nil
		}
		if status.Code(err) != codes.Unavailable || time.Since(start) > 30*time.Second {
			stop()
			return nil, nil, nil, nil, fmt.Errorf("set bench/k in the daemon on Redis: %w", err)
		}
	}
}
