package state

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/nexuscocreate/nexus/events"
)

// Limits and defaults of the runtime store.
const (
	// MaxRuntimeNamespace is the longest namespace, in bytes.
	MaxRuntimeNamespace = 128
	// MaxRuntimeKey is the longest key, in bytes.
	MaxRuntimeKey = 1024
	// DefaultRuntimeMaxValueSize is the default of RuntimeOptions.MaxValueSize.
	DefaultRuntimeMaxValueSize = 1 << 20
	// DefaultRuntimePurgeInterval is the default of RuntimeOptions.PurgeInterval.
	DefaultRuntimePurgeInterval = time.Second

	// runtimeLockTimeout is how long OpenRuntime waits for the file lock
	// before it reports the database as locked by another process.
	runtimeLockTimeout = time.Second
	// purgeBatch bounds how many expired keys one purge transaction removes,
	// so a large backlog never holds the write lock for long.
	purgeBatch = 1000
)

// Changes reported in RuntimeChange.Change.
const (
	RuntimeSet     = "set"
	RuntimeDeleted = "deleted"
	RuntimeExpired = "expired"
)

// Layout of the database:
//
//	values/<namespace>/<key> = 8-byte big-endian expiry unix nanos (0: none) + value
//	expiry/<8-byte big-endian expiry unix nanos><namespace>\x00<key> = empty
//
// The expiry index lets Purge read only the entries that are due.
var (
	valuesBucket = []byte("values")
	expiryBucket = []byte("expiry")
)

// RuntimeOptions configure OpenRuntime. Zero values get defaults.
type RuntimeOptions struct {
	Bus           *events.Bus      // receives a RuntimeChange per change; may be nil
	MaxValueSize  int              // largest value in bytes; default 1 MiB
	PurgeInterval time.Duration    // how often expired keys are removed; default 1s
	Now           func() time.Time // the clock; default time.Now
	Logger        *slog.Logger     // default discards
}

// RuntimeValue is a stored value with its expiry.
type RuntimeValue struct {
	Value     string
	ExpiresAt time.Time // zero when the value has no TTL
}

// RuntimeChange is published on the bus for every set, delete and expiry,
// after the change is durable.
type RuntimeChange struct {
	Namespace string
	Key       string
	Change    string // RuntimeSet, RuntimeDeleted or RuntimeExpired
	Value     string // the new value, for RuntimeSet
	Time      time.Time
}

// Runtime is a store of runtime key/values, namespaced by app id, with
// optional TTL: [RuntimeStore] on one machine (bbolt), [RedisRuntime] for
// several daemons sharing one Redis. The daemon and its transports hold one
// and do not care which.
//
// Both check the same limits (namespace, key and value sizes; UTF-8 without
// NUL) and return the same errors: [ErrInvalid] and [ErrTooLarge] for bad
// input, [ErrClosed] after Close, and [ErrUnavailable] when the backend
// cannot be reached. Every set and delete that changes something is
// published as a [RuntimeChange] on the store's bus before the call returns;
// expiries are published when the backend removes the key.
type Runtime interface {
	// Get returns the value of key in namespace ns; ok is false when the
	// key is absent or expired.
	Get(ctx context.Context, ns, key string) (v RuntimeValue, ok bool, err error)
	// Set stores value under key in ns; a ttl of 0 never expires, and
	// setting a key again replaces its TTL.
	Set(ctx context.Context, ns, key, value string, ttl time.Duration) error
	// Delete removes key from ns and reports whether a live value was removed.
	Delete(ctx context.Context, ns, key string) (bool, error)
	// List returns the live keys of ns that start with prefix, sorted.
	List(ctx context.Context, ns, prefix string) ([]string, error)
	// Close releases the store; later calls return ErrClosed.
	Close() error
}

var _ Runtime = (*RuntimeStore)(nil)

// RuntimeStore holds runtime key/values, namespaced by app id, with optional
// TTL, in a bbolt database. It is safe for concurrent use.
type RuntimeStore struct {
	db      *bbolt.DB
	path    string
	bus     *events.Bus
	maxSize int
	now     func() time.Time
	logger  *slog.Logger

	stop   chan struct{} // closed by Close to stop the purger
	purged sync.WaitGroup

	// writeMu serialises write transactions with their publishing, so events
	// reach the bus in commit order.
	writeMu sync.Mutex

	// closeMu guards closed; every operation holds it for reading.
	closeMu sync.RWMutex
	closed  bool
}

// OpenRuntime opens or creates the runtime database at path and starts its
// background purger. It fails, rather than waits, when another process holds
// the database.
func OpenRuntime(path string, opts RuntimeOptions) (*RuntimeStore, error) {
	if opts.MaxValueSize <= 0 {
		opts.MaxValueSize = DefaultRuntimeMaxValueSize
	}
	if opts.PurgeInterval <= 0 {
		opts.PurgeInterval = DefaultRuntimePurgeInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}

	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: runtimeLockTimeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("runtime database %s is locked by another process", path)
	}
	if err != nil {
		return nil, fmt.Errorf("open runtime database %s: %w", path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, name := range [][]byte{valuesBucket, expiryBucket} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("initialise runtime database %s: %w", path, err)
	}

	r := &RuntimeStore{
		db:      db,
		path:    path,
		bus:     opts.Bus,
		maxSize: opts.MaxValueSize,
		now:     opts.Now,
		logger:  opts.Logger,
		stop:    make(chan struct{}),
	}
	r.purged.Add(1)
	go r.purgeLoop(opts.PurgeInterval)
	return r, nil
}

func (r *RuntimeStore) purgeLoop(interval time.Duration) {
	defer r.purged.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		n, err := r.Purge()
		switch {
		case errors.Is(err, ErrClosed):
			return
		case err != nil:
			r.logger.Warn("runtime purge failed", "db", r.path, "err", err)
		case n > 0:
			r.logger.Debug("runtime purge", "db", r.path, "expired", n)
		}
	}
}

// Close stops the purger and closes the database. Later calls, Close
// included, return ErrClosed.
func (r *RuntimeStore) Close() error {
	r.closeMu.Lock()
	if r.closed {
		r.closeMu.Unlock()
		return fmt.Errorf("runtime database %s: %w", r.path, ErrClosed)
	}
	r.closed = true
	r.closeMu.Unlock()

	// No operation is in flight now and none can start; the purger may be
	// about to call Purge, which returns ErrClosed.
	close(r.stop)
	r.purged.Wait()
	if err := r.db.Close(); err != nil {
		return fmt.Errorf("close runtime database %s: %w", r.path, err)
	}
	return nil
}

// acquire holds the store open for one operation; release with closeMu.RUnlock.
func (r *RuntimeStore) acquire() error {
	r.closeMu.RLock()
	if r.closed {
		r.closeMu.RUnlock()
		return fmt.Errorf("runtime database %s: %w", r.path, ErrClosed)
	}
	return nil
}

// Get returns the value of key in namespace ns; ok is false when the key is
// absent or expired.
func (r *RuntimeStore) Get(ctx context.Context, ns, key string) (v RuntimeValue, ok bool, err error) {
	if err := validNamespaceKey(ns, key); err != nil {
		return RuntimeValue{}, false, err
	}
	if err := ctx.Err(); err != nil {
		return RuntimeValue{}, false, err
	}
	if err := r.acquire(); err != nil {
		return RuntimeValue{}, false, err
	}
	defer r.closeMu.RUnlock()

	now := r.now().UnixNano()
	err = r.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(valuesBucket).Bucket([]byte(ns))
		if b == nil {
			return nil
		}
		raw := b.Get([]byte(key))
		if raw == nil {
			return nil
		}
		exp, val, err := decodeRuntimeValue(raw)
		if err != nil {
			return fmt.Errorf("runtime key %q in namespace %q: %w", key, ns, err)
		}
		if expired(exp, now) {
			return nil
		}
		v, ok = RuntimeValue{Value: string(val), ExpiresAt: expiryTime(exp)}, true
		return nil
	})
	if err != nil {
		return RuntimeValue{}, false, fmt.Errorf("get runtime key: %w", err)
	}
	return v, ok, nil
}

// Set stores value under key in namespace ns. A ttl of 0 never expires; a
// positive ttl makes the key invisible once it has passed.
func (r *RuntimeStore) Set(ctx context.Context, ns, key, value string, ttl time.Duration) error {
	if err := validRuntimeSet(ns, key, value, ttl, r.maxSize); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.acquire(); err != nil {
		return err
	}
	defer r.closeMu.RUnlock()

	now := r.now()
	var exp int64
	if ttl > 0 {
		n := now.UnixNano()
		exp = n + int64(ttl)
		if exp < n || exp <= 0 {
			return fmt.Errorf("runtime key %q in namespace %q: ttl %s puts the expiry out of range: %w", key, ns, ttl, ErrInvalid)
		}
	}

	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	err := r.db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.Bucket(valuesBucket).CreateBucketIfNotExists([]byte(ns))
		if err != nil {
			return err
		}
		idx := tx.Bucket(expiryBucket)
		if old := b.Get([]byte(key)); old != nil {
			oldExp, _, err := decodeRuntimeValue(old)
			if err != nil {
				return err
			}
			if oldExp != 0 {
				if err := idx.Delete(expiryIndexKey(oldExp, ns, key)); err != nil {
					return err
				}
			}
		}
		if exp != 0 {
			if err := idx.Put(expiryIndexKey(exp, ns, key), nil); err != nil {
				return err
			}
		}
		return b.Put([]byte(key), encodeRuntimeValue(exp, value))
	})
	if err != nil {
		return fmt.Errorf("set runtime key %q in namespace %q: %w", key, ns, err)
	}
	r.publish(RuntimeChange{Namespace: ns, Key: key, Change: RuntimeSet, Value: value, Time: now})
	return nil
}

// Delete removes key from namespace ns and reports whether a live value was
// removed. Deleting a key that had expired but was not yet purged removes it,
// reports false and publishes its expiry.
func (r *RuntimeStore) Delete(ctx context.Context, ns, key string) (bool, error) {
	if err := validNamespaceKey(ns, key); err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := r.acquire(); err != nil {
		return false, err
	}
	defer r.closeMu.RUnlock()

	now := r.now()
	var change string
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	err := r.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(valuesBucket).Bucket([]byte(ns))
		if b == nil {
			return nil
		}
		raw := b.Get([]byte(key))
		if raw == nil {
			return nil
		}
		exp, _, err := decodeRuntimeValue(raw)
		if err != nil {
			return err
		}
		if err := removeRuntimeKey(tx, b, exp, ns, key); err != nil {
			return err
		}
		change = RuntimeDeleted
		if expired(exp, now.UnixNano()) {
			change = RuntimeExpired
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("delete runtime key %q in namespace %q: %w", key, ns, err)
	}
	if change == "" {
		return false, nil
	}
	r.publish(RuntimeChange{Namespace: ns, Key: key, Change: change, Time: now})
	return change == RuntimeDeleted, nil
}

// List returns the live keys of namespace ns that start with prefix, sorted.
func (r *RuntimeStore) List(ctx context.Context, ns, prefix string) ([]string, error) {
	if err := validRuntimeList(ns, prefix); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := r.acquire(); err != nil {
		return nil, err
	}
	defer r.closeMu.RUnlock()

	now := r.now().UnixNano()
	keys := []string{}
	err := r.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(valuesBucket).Bucket([]byte(ns))
		if b == nil {
			return nil
		}
		p := []byte(prefix)
		c := b.Cursor()
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			exp, _, err := decodeRuntimeValue(v)
			if err != nil {
				return fmt.Errorf("runtime key %q: %w", k, err)
			}
			if !expired(exp, now) {
				keys = append(keys, string(k))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list runtime namespace %q: %w", ns, err)
	}
	return keys, nil
}

// Purge removes the keys that have expired and reports how many. The
// background purger calls it every PurgeInterval.
func (r *RuntimeStore) Purge() (int, error) {
	if err := r.acquire(); err != nil {
		return 0, err
	}
	defer r.closeMu.RUnlock()

	total := 0
	for {
		n, more, err := r.purgeBatch()
		total += n
		if err != nil || !more {
			return total, err
		}
	}
}

// purgeBatch removes up to purgeBatch due entries in one transaction and
// publishes their expiry; more reports that due entries may remain.
func (r *RuntimeStore) purgeBatch() (n int, more bool, err error) {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()

	now := r.now()
	var gone []RuntimeChange
	err = r.db.Update(func(tx *bbolt.Tx) error {
		idx := tx.Bucket(expiryBucket)
		var due [][]byte
		c := idx.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if len(due) == purgeBatch {
				more = true
				break
			}
			if len(k) < 8 || !expired(int64(binary.BigEndian.Uint64(k)), now.UnixNano()) {
				break
			}
			due = append(due, bytes.Clone(k))
		}
		values := tx.Bucket(valuesBucket)
		for _, k := range due {
			// Remove the index entry first: it is due whatever it points to.
			if err := idx.Delete(k); err != nil {
				return err
			}
			exp := int64(binary.BigEndian.Uint64(k))
			ns, key, ok := bytes.Cut(k[8:], []byte{0})
			if !ok {
				continue
			}
			b := values.Bucket(ns)
			if b == nil {
				continue
			}
			raw := b.Get(key)
			if raw == nil {
				continue
			}
			cur, _, err := decodeRuntimeValue(raw)
			if err != nil {
				return fmt.Errorf("runtime key %q in namespace %q: %w", key, ns, err)
			}
			if cur != exp {
				// Re-set since this entry was written; its own entry rules.
				continue
			}
			if err := removeRuntimeKey(tx, b, 0, string(ns), string(key)); err != nil {
				return err
			}
			gone = append(gone, RuntimeChange{Namespace: string(ns), Key: string(key), Change: RuntimeExpired, Time: now})
		}
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("purge runtime database %s: %w", r.path, err)
	}
	for _, ch := range gone {
		r.publish(ch)
	}
	return len(gone), more, nil
}

// removeRuntimeKey deletes key from namespace bucket b, its expiry index
// entry when exp is not 0, and the namespace bucket once it is empty.
func removeRuntimeKey(tx *bbolt.Tx, b *bbolt.Bucket, exp int64, ns, key string) error {
	if exp != 0 {
		if err := tx.Bucket(expiryBucket).Delete(expiryIndexKey(exp, ns, key)); err != nil {
			return err
		}
	}
	if err := b.Delete([]byte(key)); err != nil {
		return err
	}
	if k, _ := b.Cursor().First(); k == nil {
		return tx.Bucket(valuesBucket).DeleteBucket([]byte(ns))
	}
	return nil
}

func (r *RuntimeStore) publish(ch RuntimeChange) {
	if r.bus != nil {
		r.bus.Publish(ch)
	}
}

// validRuntimeSet checks the arguments of a Set, for every backend alike.
func validRuntimeSet(ns, key, value string, ttl time.Duration, maxSize int) error {
	if err := validNamespaceKey(ns, key); err != nil {
		return err
	}
	if len(value) > maxSize {
		return fmt.Errorf("runtime value of key %q in namespace %q is %d bytes, over the limit of %d bytes: %w",
			key, ns, len(value), maxSize, ErrTooLarge)
	}
	if !utf8.ValidString(value) {
		return fmt.Errorf("runtime value of key %q in namespace %q is not valid UTF-8: %w", key, ns, ErrInvalid)
	}
	if ttl < 0 {
		return fmt.Errorf("runtime key %q in namespace %q: negative ttl %s: %w", key, ns, ttl, ErrInvalid)
	}
	if ttl > MaxTTL {
		return fmt.Errorf("runtime key %q in namespace %q: ttl %s is over 100 years: %w", key, ns, ttl, ErrInvalid)
	}
	return nil
}

// validRuntimeList checks the arguments of a List, for every backend alike.
func validRuntimeList(ns, prefix string) error {
	if err := validNamespace(ns); err != nil {
		return err
	}
	if len(prefix) > MaxRuntimeKey || !utf8.ValidString(prefix) || containsNUL(prefix) {
		return fmt.Errorf("runtime key prefix %q in namespace %q: must be valid UTF-8 without NUL, at most %d bytes: %w",
			prefix, ns, MaxRuntimeKey, ErrInvalid)
	}
	return nil
}

func validNamespaceKey(ns, key string) error {
	if err := validNamespace(ns); err != nil {
		return err
	}
	switch {
	case key == "":
		return fmt.Errorf("runtime key in namespace %q is empty: %w", ns, ErrInvalid)
	case len(key) > MaxRuntimeKey:
		return fmt.Errorf("runtime key in namespace %q is %d bytes, over the limit of %d bytes: %w",
			ns, len(key), MaxRuntimeKey, ErrInvalid)
	case !utf8.ValidString(key):
		return fmt.Errorf("runtime key %q in namespace %q is not valid UTF-8: %w", key, ns, ErrInvalid)
	case containsNUL(key):
		return fmt.Errorf("runtime key %q in namespace %q contains a NUL byte: %w", key, ns, ErrInvalid)
	}
	return nil
}

func validNamespace(ns string) error {
	switch {
	case ns == "":
		return fmt.Errorf("runtime namespace is empty: %w", ErrInvalid)
	case len(ns) > MaxRuntimeNamespace:
		return fmt.Errorf("runtime namespace is %d bytes, over the limit of %d bytes: %w",
			len(ns), MaxRuntimeNamespace, ErrInvalid)
	case !utf8.ValidString(ns):
		return fmt.Errorf("runtime namespace %q is not valid UTF-8: %w", ns, ErrInvalid)
	case containsNUL(ns):
		return fmt.Errorf("runtime namespace %q contains a NUL byte: %w", ns, ErrInvalid)
	}
	return nil
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

// expired reports whether expiry exp (unix nanos, 0 for none) has passed at now.
func expired(exp, now int64) bool {
	return exp != 0 && exp <= now
}

func expiryTime(exp int64) time.Time {
	if exp == 0 {
		return time.Time{}
	}
	return time.Unix(0, exp)
}

func encodeRuntimeValue(exp int64, value string) []byte {
	buf := make([]byte, 8+len(value))
	binary.BigEndian.PutUint64(buf, uint64(exp))
	copy(buf[8:], value)
	return buf
}

// decodeRuntimeValue splits a stored value; val aliases raw.
func decodeRuntimeValue(raw []byte) (exp int64, val []byte, err error) {
	if len(raw) < 8 {
		return 0, nil, fmt.Errorf("stored value is %d bytes, shorter than its header", len(raw))
	}
	return int64(binary.BigEndian.Uint64(raw)), raw[8:], nil
}

func expiryIndexKey(exp int64, ns, key string) []byte {
	k := make([]byte, 0, 8+len(ns)+1+len(key))
	k = binary.BigEndian.AppendUint64(k, uint64(exp))
	k = append(k, ns...)
	k = append(k, 0)
	return append(k, key...)
}

// MaxTTL is the longest time to live a runtime value may be given.
const MaxTTL = 100 * 365 * 24 * time.Hour

// TTLSeconds turns a time to live in whole seconds, as requests carry it,
// into a duration (0 is no expiry). It refuses negative values and ones
// over [MaxTTL] with [ErrInvalid], before they could overflow a duration.
func TTLSeconds(sec int64) (time.Duration, error) {
	switch {
	case sec < 0:
		return 0, fmt.Errorf("ttlSeconds %d is negative: %w", sec, ErrInvalid)
	case sec > int64(MaxTTL/time.Second):
		return 0, fmt.Errorf("ttlSeconds %d is over 100 years: %w", sec, ErrInvalid)
	}
	return time.Duration(sec) * time.Second, nil
}
