// Package events is the daemon's in-process event bus: every state change and
// every tool call is published here, and the editor stream and the gRPC watch
// streams subscribe to it. Start with [New] and [Bus.Subscribe].
package events

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// ErrOverflow is the error of a subscription that fell too far behind: its
// buffer filled up and the bus dropped it rather than block the publisher.
// A subscriber that sees it should resynchronise and subscribe again.
var ErrOverflow = errors.New("event subscriber fell behind and was dropped")

// ErrClosed is the error of a subscription ended by its owner or by the bus.
var ErrClosed = errors.New("event subscription closed")

// Bus fans events out to subscribers. Publishing never blocks: a subscriber
// whose buffer is full is dropped with [ErrOverflow].
type Bus struct {
	mu       sync.Mutex
	subs     map[*Subscription]struct{}
	attached map[*func(any)]struct{}
	n        atomic.Int32 // len(subs) + len(attached), read without mu by Listened
}

// New returns an empty bus.
func New() *Bus {
	return &Bus{subs: make(map[*Subscription]struct{}), attached: make(map[*func(any)]struct{})}
}

// Subscription receives the events that match its filter on C until it ends;
// then C is closed and Err says why.
type Subscription struct {
	C <-chan any

	bus    *Bus
	c      chan any
	filter func(any) bool

	mu  sync.Mutex
	err error
}

// DefaultBuffer is the buffer of a subscription when Subscribe is given 0.
const DefaultBuffer = 4096

// Subscribe returns a subscription to the events for which filter returns
// true (all events when filter is nil). buffer is how many events may wait.
func (b *Bus) Subscribe(filter func(any) bool, buffer int) *Subscription {
	if buffer <= 0 {
		buffer = DefaultBuffer
	}
	c := make(chan any, buffer)
	s := &Subscription{C: c, bus: b, c: c, filter: filter}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.n.Add(1)
	b.mu.Unlock()
	return s
}

// Listened reports whether anyone is subscribed, so that a publisher can
// skip building an event nobody would receive. A subscription made after
// it returns false misses the event, as if it had been made a moment later.
func (b *Bus) Listened() bool {
	return b.n.Load() > 0
}

// Attach calls fn with every event, inside Publish and in publishing order,
// until detach is called. fn must not block: it is for a subscriber that
// keeps its own bounded state (the editor's coalescing outbox), where a
// channel could overflow and lose an event.
func (b *Bus) Attach(fn func(any)) (detach func()) {
	p := &fn
	b.mu.Lock()
	b.attached[p] = struct{}{}
	b.n.Add(1)
	b.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.attached, p)
			b.n.Add(-1)
			b.mu.Unlock()
		})
	}
}

// Publish delivers ev to every matching subscriber without blocking.
func (b *Bus) Publish(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for fn := range b.attached {
		(*fn)(ev)
	}
	for s := range b.subs {
		if s.filter != nil && !s.filter(ev) {
			continue
		}
		select {
		case s.c <- ev:
		default:
			b.dropLocked(s, ErrOverflow)
		}
	}
}

// Close ends every subscription with [ErrClosed].
func (b *Bus) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		b.dropLocked(s, ErrClosed)
	}
}

func (b *Bus) dropLocked(s *Subscription, err error) {
	if _, ok := b.subs[s]; !ok {
		return
	}
	delete(b.subs, s)
	b.n.Add(-1)
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	close(s.c)
}

// Close ends the subscription; C is closed and Err returns [ErrClosed].
func (s *Subscription) Close() {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	s.bus.dropLocked(s, ErrClosed)
}

// Err returns why the subscription ended, or nil while it is live.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Log is an entry an app logged through LogMessage, published for the
// editor's log view.
type Log struct {
	// Source is who logged: "app" (LogMessage with an app token), "cli"
	// (the admin token) or "nexusd" (the daemon's own warnings).
	Source    string
	Level     string
	Message   string
	AppID     string
	TaskID    string
	RequestID string
	Context   map[string]string
	Time      time.Time
}
