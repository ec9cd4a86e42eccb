package state

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexuscocreate/nexus/events"
)

// The Redis runtime backend keeps the same values as the bbolt one, in a
// Redis server that several daemons may share.
//
// Layout, under the configured prefix P (default "nexus:"):
//
//	P rt:<len(ns)>:<ns>:<key>   a string: the value; its TTL is Redis's own (SET PX)
//	P events:<ns>               a pub/sub channel: every set and delete in ns, as JSON
//
// The namespace's length makes the key name unambiguous whatever bytes ns
// and key hold, so an expiry notification (which carries only the key name)
// can be turned back into namespace and key.
//
// Changes reach every daemon sharing the prefix: each write publishes a
// message on its namespace's channel in the same MULTI/EXEC (or script) as
// the write itself, and each daemon subscribes to P events:* and forwards
// the others' messages to its bus (its own it has published already, before
// the call returned). Expiries come from Redis's keyspace notifications
// (__keyevent@<db>__:expired), which need notify-keyspace-events to hold E
// and x: the store turns them on with CONFIG SET when they are off, and
// says so in the log when CONFIG is refused.
//
// Nothing is swept by the client: Redis expires keys itself, and List scans
// with SCAN MATCH (never KEYS), which skips expired keys.
//
// The subscriber has a client of its own that speaks RESP2, where Redis's
// invalidation messages for the cache (rediscache.go) arrive as pub/sub
// messages on the subscribed connection.

// RedisOptions configure OpenRedisRuntime. Zero values get defaults.
type RedisOptions struct {
	// URL is the server: redis://[user:password@]host:port/db, rediss://
	// for TLS, or unix:///path/to/socket (go-redis's ParseURL).
	URL string
	// Prefix starts every key and channel name; daemons that share the
	// prefix share their values. Default "nexus:".
	Prefix       string
	Bus          *events.Bus  // receives a RuntimeChange per change; may be nil
	MaxValueSize int          // largest value in bytes; default 1 MiB
	Logger       *slog.Logger // default discards
	// HealthInterval is how often an idle subscription is pinged, so a
	// silent network failure is noticed; default 5s.
	HealthInterval time.Duration
	// Cache keeps the values read in memory, and serves them again until
	// Redis reports a change (CLIENT TRACKING): a read through this store
	// may return the old value for the moment between a write through
	// another store and Redis's message reaching this one. Writes through
	// this store are always read back.
	Cache bool
	// CacheSize bounds the cache's memory in bytes; default 64 MiB.
	CacheSize int64

	// hooks are the tests' views into the cache; nil outside tests.
	hooks *redisTestHooks
}

// redisTestHooks let tests watch and steer the cache.
type redisTestHooks struct {
	now         func() time.Time
	afterFetch  func(name string)
	applied     func(names []string)
	beforeTrack func() // runs on each new connection of the subscriber
}

// DefaultRedisPrefix is the default of RedisOptions.Prefix.
const DefaultRedisPrefix = "nexus:"

const (
	defaultRedisHealthInterval = 5 * time.Second
	defaultRedisDialTimeout    = 2 * time.Second
	defaultRedisReadTimeout    = 3 * time.Second
	// redisScanCount is the COUNT hint of each SCAN step of List.
	redisScanCount = 1000
	// redisBackoffMax bounds the wait between reconnection attempts.
	redisBackoffMax = 2 * time.Second
)

// RedisRuntime holds runtime values in Redis. It is safe for concurrent
// use. It connects lazily and reconnects by itself: while Redis cannot be
// reached, calls fail with ErrUnavailable naming the server, and the store
// logs when Redis goes away and when it is back.
type RedisRuntime struct {
	client  *redis.Client
	sub     *redis.Client // the subscriber's, in RESP2
	cache   *redisCache   // nil unless RedisOptions.Cache
	addr    string        // the server, as error messages and logs name it
	db      int
	prefix  string
	bus     *events.Bus
	maxSize int
	logger  *slog.Logger
	origin  string // this store's id in published messages
	health  time.Duration

	cancel  context.CancelFunc // stops the subscriber
	watched sync.WaitGroup

	// psMu guards ps, the subscriber's connection, which Close closes to
	// end a read in progress.
	psMu sync.Mutex
	ps   *redis.PubSub

	// upMu guards up and known: what the subscriber last saw of Redis.
	upMu  sync.Mutex
	up    bool
	known bool

	// closeMu guards closed; every operation holds it for reading.
	closeMu sync.RWMutex
	closed  bool
}

var _ Runtime = (*RedisRuntime)(nil)

// redisChange is the JSON message of a set or delete on a namespace's channel.
type redisChange struct {
	Origin    string `json:"origin"`
	Namespace string `json:"namespace"`
	Key       string `json:"key"`
	Change    string `json:"change"`
	Value     string `json:"value,omitempty"`
	Time      int64  `json:"time"` // unix nanoseconds
}

// deleteScript deletes a key and, when it was there, publishes the change
// in the same step, so no watcher misses a delete that happened.
var deleteScript = redis.NewScript(`
local n = redis.call('DEL', KEYS[1])
if n == 1 then redis.call('PUBLISH', ARGV[1], ARGV[2]) end
return n`)

// OpenRedisRuntime returns a store on the Redis server at opts.URL. It does
// not wait for the server: a daemon starts while Redis is down, and its
// runtime calls fail with ErrUnavailable until Redis is back. Only a URL
// that cannot be parsed is an error.
func OpenRedisRuntime(opts RedisOptions) (*RedisRuntime, error) {
	if opts.Prefix == "" {
		opts.Prefix = DefaultRedisPrefix
	}
	if opts.MaxValueSize <= 0 {
		opts.MaxValueSize = DefaultRuntimeMaxValueSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.HealthInterval <= 0 {
		opts.HealthInterval = defaultRedisHealthInterval
	}
	if err := CheckRedisURL(opts.URL); err != nil {
		return nil, err
	}
	ro, _ := redis.ParseURL(opts.URL)
	// A call fails fast while Redis is down instead of retrying: one dial,
	// no command retries (a retried delete could report a removal as none).
	ro.MaxRetries = -1
	ro.DialerRetries = 1
	// A Redis that stops answering fails a call after these, unless the
	// URL sets them (?dial_timeout=, ?read_timeout=).
	if ro.DialTimeout == 0 {
		ro.DialTimeout = defaultRedisDialTimeout
	}
	if ro.ReadTimeout == 0 {
		ro.ReadTimeout = defaultRedisReadTimeout
	}
	ro.ContextTimeoutEnabled = true
	ro.DisableIdentity = true
	subOpts := *ro
	subOpts.Protocol = 2

	// go-redis has one logger per process, which writes its own notes
	// (a failed dial, a reconnect) to stderr; they go to the store's log at
	// debug level, as the store reports what matters itself.
	redis.SetLogger(redisLog{opts.Logger})

	var origin [12]byte
	if _, err := rand.Read(origin[:]); err != nil {
		return nil, fmt.Errorf("runtime redis: origin id: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &RedisRuntime{
		client:  redis.NewClient(ro),
		addr:    ro.Addr,
		db:      ro.DB,
		prefix:  opts.Prefix,
		bus:     opts.Bus,
		maxSize: opts.MaxValueSize,
		logger:  opts.Logger,
		origin:  hex.EncodeToString(origin[:]),
		health:  opts.HealthInterval,
		cancel:  cancel,
	}
	if opts.Cache {
		if opts.CacheSize <= 0 {
			opts.CacheSize = DefaultRedisCacheSize
		}
		r.cache = newRedisCache(opts.CacheSize)
		// OnConnect runs on every new connection of the subscriber before
		// it subscribes, so tracking is on again after each reconnection.
		subOpts.OnConnect = r.track
		if h := opts.hooks; h != nil {
			if h.now != nil {
				r.cache.now = h.now
			}
			r.cache.afterFetch, r.cache.applied = h.afterFetch, h.applied
			if h.beforeTrack != nil {
				subOpts.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
					h.beforeTrack()
					return r.track(ctx, cn)
				}
			}
		}
	}
	r.sub = redis.NewClient(&subOpts)
	r.watched.Add(1)
	go r.subscribe(ctx)
	return r, nil
}

// redisLog takes go-redis's own log lines to a slog.Logger at debug level.
type redisLog struct{ logger *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	l.logger.DebugContext(ctx, "redis client: "+fmt.Sprintf(format, v...))
}

// CheckRedisURL reports whether u is a Redis URL that OpenRedisRuntime
// accepts; the error names the URL without its password.
func CheckRedisURL(u string) error {
	if _, err := redis.ParseURL(u); err != nil {
		// net/url's errors quote the whole URL, password included.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%s is not a Redis URL (redis://[user:password@]host:6379/0, rediss:// for TLS, unix:///path): %w", redactURL(u), err)
	}
	return nil
}

// redactURL returns u with its password replaced by "xxxxx", for messages.
func redactURL(u string) string {
	at := strings.LastIndex(u, "@")
	scheme := strings.Index(u, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return u
	}
	userinfo := u[scheme+3 : at]
	if user, _, ok := strings.Cut(userinfo, ":"); ok {
		return u[:scheme+3] + user + ":xxxxx" + u[at:]
	}
	return u
}

// Close stops the subscriber and closes the connections. Later calls,
// Close included, return ErrClosed.
func (r *RedisRuntime) Close() error {
	r.closeMu.Lock()
	if r.closed {
		r.closeMu.Unlock()
		return fmt.Errorf("runtime redis at %s: %w", r.addr, ErrClosed)
	}
	r.closed = true
	r.closeMu.Unlock()

	r.cancel()
	r.psMu.Lock()
	if r.ps != nil {
		r.ps.Close()
	}
	r.psMu.Unlock()
	r.watched.Wait()
	r.sub.Close()
	if err := r.client.Close(); err != nil {
		return fmt.Errorf("close runtime redis at %s: %w", r.addr, err)
	}
	return nil
}

func (r *RedisRuntime) acquire() error {
	r.closeMu.RLock()
	if r.closed {
		r.closeMu.RUnlock()
		return fmt.Errorf("runtime redis at %s: %w", r.addr, ErrClosed)
	}
	return nil
}

// key is the Redis key of key in namespace ns.
func (r *RedisRuntime) key(ns, key string) string {
	return r.nsPrefix(ns) + key
}

// nsPrefix starts the Redis keys of namespace ns.
func (r *RedisRuntime) nsPrefix(ns string) string {
	return r.prefix + "rt:" + strconv.Itoa(len(ns)) + ":" + ns + ":"
}

func (r *RedisRuntime) channel(ns string) string {
	return r.prefix + "events:" + ns
}

// parseKey turns a Redis key name back into namespace and key; ok is false
// for a key that is not one of this prefix's values.
func (r *RedisRuntime) parseKey(name string) (ns, key string, ok bool) {
	rest, ok := strings.CutPrefix(name, r.prefix+"rt:")
	if !ok {
		return "", "", false
	}
	n, rest, ok := strings.Cut(rest, ":")
	if !ok {
		return "", "", false
	}
	size, err := strconv.Atoi(n)
	if err != nil || size <= 0 || size >= len(rest) || rest[size] != ':' {
		return "", "", false
	}
	return rest[:size], rest[size+1:], true
}

// fail turns an error of a Redis call into the store's: a context's error as
// it is, a reply error as it is, anything else (a refused or broken
// connection, a timeout, a server still loading) as ErrUnavailable.
func (r *RedisRuntime) fail(ctx context.Context, what string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", what, ctxErr)
	}
	if redisRefused(err) {
		return fmt.Errorf("%s: redis at %s: %w", what, r.addr, err)
	}
	return fmt.Errorf("%s: redis at %s is unreachable (%v): %w", what, r.addr, err, ErrUnavailable)
}

// redisRefused reports a reply error of Redis other than the "not now"
// ones of redisUnavailable: the server is there and said no.
func redisRefused(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply) && !redisUnavailable(err)
}

// redisUnavailable reports the reply errors that mean "not now": the server
// is loading its data, is a replica (during a failover) or has lost its
// primary, is busy with a script, or we may not log in.
func redisUnavailable(err error) bool {
	for _, p := range []string{"LOADING", "MASTERDOWN", "READONLY", "TRYAGAIN", "BUSY", "NOAUTH", "WRONGPASS", "CLUSTERDOWN"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}

// Get returns the value of key in namespace ns and its expiry, both read in
// one MULTI/EXEC; ok is false when the key is absent or expired. With the
// cache on, an answer read before is served from memory while it holds.
func (r *RedisRuntime) Get(ctx context.Context, ns, key string) (RuntimeValue, bool, error) {
	if err := validNamespaceKey(ns, key); err != nil {
		return RuntimeValue{}, false, err
	}
	if err := r.acquire(); err != nil {
		return RuntimeValue{}, false, err
	}
	defer r.closeMu.RUnlock()

	k := r.key(ns, key)
	var p *cacheEntry // the placeholder of a read the cache keeps
	if r.cache != nil {
		// A cancelled call fails as it does without the cache.
		if err := ctx.Err(); err != nil {
			return RuntimeValue{}, false, fmt.Errorf("get runtime key %q in namespace %q: %w", key, ns, err)
		}
		if v, ok, hit := r.cache.get(k); hit {
			return v, ok, nil
		}
		p = r.cache.begin(k)
	}
	v, ok, deadline, err := r.read(ctx, k, p != nil)
	if err != nil {
		if p != nil {
			r.cache.drop(k)
		}
		return RuntimeValue{}, false, r.fail(ctx, fmt.Sprintf("get runtime key %q in namespace %q", key, ns), err)
	}
	if p != nil {
		r.cache.fill(k, p, v, ok, deadline)
	}
	return v, ok, nil
}

// read reads the key named name and its expiry in one MULTI/EXEC. With
// deadline, it also reads its PTTL, and returns when the value expires on
// this store's clock: the moment the read was sent plus the PTTL, which is
// never later than Redis's own expiry (zero: none).
func (r *RedisRuntime) read(ctx context.Context, name string, deadline bool) (RuntimeValue, bool, time.Time, error) {
	var get *redis.StringCmd
	var exp *redis.Cmd
	var ttl *redis.DurationCmd
	var sent time.Time
	if deadline {
		sent = r.cache.now()
	}
	_, err := r.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, name)
		exp = p.Do(ctx, "pexpiretime", name)
		if deadline {
			ttl = p.PTTL(ctx, name)
		}
		return nil
	})
	if errors.Is(err, redis.Nil) {
		return RuntimeValue{}, false, time.Time{}, nil
	}
	if err != nil {
		return RuntimeValue{}, false, time.Time{}, err
	}
	v := RuntimeValue{Value: get.Val()}
	if ms, err := exp.Int64(); err == nil && ms > 0 {
		v.ExpiresAt = time.UnixMilli(ms)
	}
	var until time.Time
	if deadline {
		// PTTL is -1 for a key without expiry; a value that expires is
		// never held longer than it lives.
		if d := ttl.Val(); d >= 0 {
			until = sent.Add(d)
		}
	}
	return v, true, until, nil
}

// Set stores value under key in namespace ns with Redis's own TTL (PX, in
// whole milliseconds, rounded up) and publishes the change, in one
// MULTI/EXEC.
func (r *RedisRuntime) Set(ctx context.Context, ns, key, value string, ttl time.Duration) error {
	if err := validRuntimeSet(ns, key, value, ttl, r.maxSize); err != nil {
		return err
	}
	if err := r.acquire(); err != nil {
		return err
	}
	defer r.closeMu.RUnlock()

	ttl = redisTTL(ttl)
	now := time.Now()
	msg, err := json.Marshal(redisChange{Origin: r.origin, Namespace: ns, Key: key, Change: RuntimeSet, Value: value, Time: now.UnixNano()})
	if err != nil {
		return fmt.Errorf("set runtime key %q in namespace %q: %w", key, ns, err)
	}
	k := r.key(ns, key)
	_, err = r.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, k, value, ttl)
		p.Publish(ctx, r.channel(ns), msg)
		return nil
	})
	// Failed or not, the write may have happened: the cache forgets the key.
	r.forget(k)
	if err != nil {
		return r.fail(ctx, fmt.Sprintf("set runtime key %q in namespace %q", key, ns), err)
	}
	r.publish(RuntimeChange{Namespace: ns, Key: key, Change: RuntimeSet, Value: value, Time: now})
	return nil
}

// redisTTL is ttl in whole milliseconds, as PX takes it, rounded up: a
// value never expires before its ttl has passed.
func redisTTL(ttl time.Duration) time.Duration {
	return (ttl + time.Millisecond - 1).Truncate(time.Millisecond)
}

// Delete removes key from namespace ns and reports whether a live value was
// removed. A key that has expired is not there to delete: Redis reports its
// expiry to every watcher instead.
func (r *RedisRuntime) Delete(ctx context.Context, ns, key string) (bool, error) {
	if err := validNamespaceKey(ns, key); err != nil {
		return false, err
	}
	if err := r.acquire(); err != nil {
		return false, err
	}
	defer r.closeMu.RUnlock()

	now := time.Now()
	msg, err := json.Marshal(redisChange{Origin: r.origin, Namespace: ns, Key: key, Change: RuntimeDeleted, Time: now.UnixNano()})
	if err != nil {
		return false, fmt.Errorf("delete runtime key %q in namespace %q: %w", key, ns, err)
	}
	k := r.key(ns, key)
	n, err := deleteScript.Run(ctx, r.client, []string{k}, r.channel(ns), msg).Int64()
	r.forget(k)
	if err != nil {
		return false, r.fail(ctx, fmt.Sprintf("delete runtime key %q in namespace %q", key, ns), err)
	}
	if n == 0 {
		return false, nil
	}
	r.publish(RuntimeChange{Namespace: ns, Key: key, Change: RuntimeDeleted, Time: now})
	return true, nil
}

// List returns the live keys of namespace ns that start with prefix, sorted.
// It walks the database with SCAN MATCH, so its cost grows with the number
// of keys in the Redis database, not only in ns.
func (r *RedisRuntime) List(ctx context.Context, ns, prefix string) ([]string, error) {
	if err := validRuntimeList(ns, prefix); err != nil {
		return nil, err
	}
	if err := r.acquire(); err != nil {
		return nil, err
	}
	defer r.closeMu.RUnlock()

	base := r.nsPrefix(ns)
	match := globEscape(base+prefix) + "*"
	seen := map[string]bool{}
	var cursor uint64
	for {
		names, next, err := r.client.Scan(ctx, cursor, match, redisScanCount).Result()
		if err != nil {
			return nil, r.fail(ctx, fmt.Sprintf("list runtime namespace %q", ns), err)
		}
		for _, name := range names {
			// SCAN may return a key twice; MATCH already checked the prefix.
			seen[strings.TrimPrefix(name, base)] = true
		}
		if next == 0 {
			break
		}
		cursor = next
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, nil
}

// globEscape quotes the characters that Redis's glob patterns (SCAN MATCH,
// PSUBSCRIBE) treat specially.
func globEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// forget drops the cache's entry of the key named name, after a write
// through this store: the next read goes to Redis.
func (r *RedisRuntime) forget(name string) {
	if r.cache != nil {
		r.cache.drop(name)
	}
}

func (r *RedisRuntime) publish(ch RuntimeChange) {
	if r.bus != nil {
		r.bus.Publish(ch)
	}
}

// subscribe forwards the changes other daemons publish, and Redis's expiry
// notifications, to the bus until ctx ends. It is also the store's watch on
// the connection: it logs when Redis goes away and when it is back, and
// resubscribes by itself.
func (r *RedisRuntime) subscribe(ctx context.Context) {
	defer r.watched.Done()
	expired := fmt.Sprintf("__keyevent@%d__:expired", r.db)
	pattern := globEscape(r.prefix+"events:") + "*"
	channels := []string{expired}
	if r.cache != nil {
		// Redis sends the invalidations there whether or not the
		// connection subscribed; subscribing names what it receives.
		channels = append(channels, redisInvalidate)
	}
	// With a cancelled context Subscribe and PSubscribe only record the
	// names, without dialing; Receive connects and subscribes to them.
	noDial, cancel := context.WithCancel(ctx)
	cancel()
	open := func() *redis.PubSub {
		ps := r.sub.Subscribe(noDial)
		_ = ps.Subscribe(noDial, channels...)
		_ = ps.PSubscribe(noDial, pattern)
		r.psMu.Lock()
		defer r.psMu.Unlock()
		if r.ps != nil {
			r.ps.Close()
		}
		r.ps = ps
		if ctx.Err() != nil {
			ps.Close() // Close has run, or is waiting for this
		}
		return ps
	}
	ps := open()

	backoff := 50 * time.Millisecond
	pinged := false
	for {
		msg, err := ps.ReceiveTimeout(ctx, r.health)
		if ctx.Err() != nil {
			return
		}
		if err != nil && r.cache != nil && strings.HasPrefix(err.Error(), "redis: unsupported pubsub message") {
			// go-redis does not read the nil message of a flush, and
			// reports it so, on a connection that is fine: drop all.
			r.cache.invalidated(nil)
			continue
		}
		if err != nil {
			var ne net.Error
			silent := errors.As(err, &ne) && ne.Timeout()
			if silent {
				if !pinged {
					// Quiet for a while: ask, so a dead peer shows.
					pinged = true
					if err := ps.Ping(ctx); err == nil {
						continue
					}
				}
				err = fmt.Errorf("no answer to a ping within %s", r.health)
			}
			pinged = false
			r.setUp(ctx, false, err)
			if silent {
				// The ping went unanswered: start over on a new connection.
				ps = open()
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, redisBackoffMax)
			continue
		}
		pinged = false
		backoff = 50 * time.Millisecond
		switch m := msg.(type) {
		case *redis.Subscription:
			// Up once the channels and the pattern are in.
			if m.Count >= len(channels)+1 {
				r.setUp(ctx, true, nil)
				if r.cache != nil && r.cache.enable() {
					r.logger.Debug("runtime redis: the cache is on", "addr", r.addr)
				}
			}
		case *redis.Message:
			switch {
			case m.Channel == redisInvalidate:
				if r.cache != nil {
					// A message published there by a client is not
					// Redis's: it drops all too.
					r.cache.invalidated(m.PayloadSlice)
				}
			case m.Channel == expired:
				r.expired(m.Payload)
			default:
				r.remote(m.Payload)
			}
		}
	}
}

// redisInvalidate is the channel of Redis's invalidation messages to a
// RESP2 connection with CLIENT TRACKING on.
const redisInvalidate = "__redis__:invalidate"

// track turns on CLIENT TRACKING for the store's keys on a new connection
// of the subscriber, before it subscribes: broadcast mode (every change of
// a key under <prefix>rt:, whoever reads it), with the messages sent to the
// connection itself. A Redis that refuses (before 6, or an ACL without
// CLIENT) leaves the cache off, and the subscriber works as without it.
func (r *RedisRuntime) track(ctx context.Context, cn *redis.Conn) error {
	id, err := cn.ClientID(ctx).Result()
	if err == nil {
		err = cn.Do(ctx, "client", "tracking", "on", "redirect", id, "bcast", "prefix", r.prefix+"rt:").Err()
	}
	r.cache.connected(err == nil)
	if redisRefused(err) {
		r.logger.Warn("runtime redis refused CLIENT TRACKING, so the cache is off and every read goes to Redis",
			"addr", r.addr, "err", err)
		return nil
	}
	return err
}

// setUp records what the subscriber saw of Redis and logs the changes: the
// first contact, Redis going away, Redis back. Coming up, it first makes
// sure Redis reports expiries (a restarted Redis forgets a CONFIG SET).
func (r *RedisRuntime) setUp(ctx context.Context, up bool, err error) {
	if !up && r.cache != nil {
		r.cache.disable()
	}
	r.upMu.Lock()
	was, known := r.up, r.known
	r.upMu.Unlock()
	if up && (!was || !known) {
		r.ensureNotifications(ctx)
	}
	r.upMu.Lock()
	r.up, r.known = up, true
	r.upMu.Unlock()
	switch {
	case up && !known:
		r.logger.Info("runtime values in redis", "addr", r.addr, "prefix", r.prefix, "cache", r.cache != nil)
	case up && !was:
		r.logger.Info("runtime redis is back: runtime calls work again and watchers resume", "addr", r.addr)
	case !up && (was || !known):
		r.logger.Warn("runtime redis is unreachable: runtime calls fail with UNAVAILABLE until it is back; everything else works",
			"addr", r.addr, "err", err)
	}
}

// ensureNotifications turns on the keyspace notifications of expired keys
// (notify-keyspace-events E and x) when they are off.
func (r *RedisRuntime) ensureNotifications(ctx context.Context) {
	cur, err := r.client.ConfigGet(ctx, "notify-keyspace-events").Result()
	if err != nil {
		r.logger.Warn("runtime redis: cannot read notify-keyspace-events, so watchers may not see expiries; set notify-keyspace-events Ex in redis.conf",
			"addr", r.addr, "err", err)
		return
	}
	flags := cur["notify-keyspace-events"]
	if strings.Contains(flags, "E") && strings.ContainsAny(flags, "xA") {
		return
	}
	if err := r.client.ConfigSet(ctx, "notify-keyspace-events", flags+"Ex").Err(); err != nil {
		r.logger.Warn("runtime redis refused CONFIG SET notify-keyspace-events, so watchers do not see expiries; set notify-keyspace-events Ex in redis.conf",
			"addr", r.addr, "err", err)
		return
	}
	r.logger.Info("runtime redis: turned on notify-keyspace-events Ex so that watchers see expiries", "addr", r.addr, "was", flags)
}

// remote publishes a change another daemon made. The cache forgets the key
// first: Redis sends the message before its invalidation, and a watcher
// that reads on the event must read this value or a newer one.
func (r *RedisRuntime) remote(payload string) {
	var c redisChange
	if err := json.Unmarshal([]byte(payload), &c); err != nil || c.Namespace == "" || c.Key == "" {
		r.logger.Debug("runtime redis: ignored a message that is not a change", "addr", r.addr, "err", err)
		return
	}
	if c.Origin == r.origin || (c.Change != RuntimeSet && c.Change != RuntimeDeleted) {
		return
	}
	r.forget(r.key(c.Namespace, c.Key))
	r.publish(RuntimeChange{Namespace: c.Namespace, Key: c.Key, Change: c.Change, Value: c.Value, Time: time.Unix(0, c.Time)})
}

// expired publishes the expiry Redis reported for the key named name, once
// the cache has forgotten it.
func (r *RedisRuntime) expired(name string) {
	ns, key, ok := r.parseKey(name)
	if !ok {
		return
	}
	r.forget(name)
	r.publish(RuntimeChange{Namespace: ns, Key: key, Change: RuntimeExpired, Time: time.Now()})
}
