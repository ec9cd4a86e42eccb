package command

import (
	"fmt"
	"sync"
	"unicode/utf8"
)

// capture keeps the output of a command's streams (stdout, stderr) within
// a limit shared by both: the first half of the limit is a head that the
// streams fill first come, first served; beyond it each stream keeps a
// ring of its last bytes, and at the end the tails are cut so that heads
// and tails together fit the limit. Memory is bounded by 1.5 × the limit
// whatever the command writes.
type capture struct {
	limit int

	mu       sync.Mutex
	headLeft int
	streams  [2]stream
}

type stream struct {
	n    int64 // bytes written to the stream
	head []byte
	tail ring
}

func newCapture(limit int) *capture {
	c := &capture{limit: limit, headLeft: limit / 2}
	for i := range c.streams {
		c.streams[i].tail.max = limit - limit/2
	}
	return c
}

func (c *capture) write(i int, p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &c.streams[i]
	s.n += int64(len(p))
	h := min(c.headLeft, len(p))
	s.head = append(s.head, p[:h]...)
	c.headLeft -= h
	s.tail.write(p[h:])
}

// result returns the kept output of both streams and whether any was
// omitted.
func (c *capture) result() (stdout, stderr string, truncated bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	budget := c.limit - c.limit/2
	// Bytes each stream has beyond its head; its ring holds the last of
	// them, up to the whole budget.
	over0 := min(c.streams[0].n-int64(len(c.streams[0].head)), int64(budget))
	over1 := min(c.streams[1].n-int64(len(c.streams[1].head)), int64(budget))
	keep0, keep1 := splitTail(int(over0), int(over1), budget)
	out0, t0 := c.streams[0].kept(keep0)
	out1, t1 := c.streams[1].kept(keep1)
	return out0, out1, t0 || t1
}

// splitTail shares budget between two tails that want a and b bytes
// (each ≤ budget): each gets what it wants if both fit, else a fair half
// with the unused part of one half going to the other.
func splitTail(a, b, budget int) (int, int) {
	if a+b <= budget {
		return a, b
	}
	half := budget / 2
	switch {
	case a <= half:
		return a, budget - a
	case b <= budget-half:
		return budget - b, b
	}
	return half, budget - half
}

// kept returns the head and the last keep bytes of the tail, with the
// marker between them when bytes were omitted. A rune cut by the head or
// the tail boundary is dropped whole.
func (s *stream) kept(keep int) (string, bool) {
	tail := s.tail.last(keep)
	omitted := s.n - int64(len(s.head)) - int64(len(tail))
	if omitted == 0 {
		return string(s.head) + string(tail), false
	}
	head := trimRuneEnd(s.head)
	tail = trimRuneStart(tail)
	omitted = s.n - int64(len(head)) - int64(len(tail))
	return fmt.Sprintf("%s\n…[%d bytes omitted]…\n%s", head, omitted, tail), true
}

// trimRuneEnd drops an incomplete UTF-8 sequence at the end of b.
func trimRuneEnd(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

// trimRuneStart drops the continuation bytes of a rune cut at the start
// of b.
func trimRuneStart(b []byte) []byte {
	for i := 0; i < len(b) && i < utf8.UTFMax-1; i++ {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	return b[min(len(b), utf8.UTFMax-1):]
}

// ring keeps the last max bytes written to it. It grows up to max and
// then wraps.
type ring struct {
	max  int
	buf  []byte
	next int // where the next byte goes once buf is full
}

func (r *ring) write(p []byte) {
	if r.max == 0 || len(p) == 0 {
		return
	}
	if len(p) >= r.max {
		p = p[len(p)-r.max:]
	}
	if room := r.max - len(r.buf); room > 0 {
		n := min(room, len(p))
		r.buf = append(r.buf, p[:n]...)
		p = p[n:]
		if len(p) == 0 {
			return
		}
	}
	// Full: overwrite from next, wrapping once at most.
	n := copy(r.buf[r.next:], p)
	copy(r.buf, p[n:])
	r.next = (r.next + len(p)) % r.max
}

// last returns the last n bytes written (n ≤ the bytes held).
func (r *ring) last(n int) []byte {
	n = min(n, len(r.buf))
	if len(r.buf) < r.max {
		return r.buf[len(r.buf)-n:]
	}
	// Oldest byte at next; the last n end just before next.
	out := make([]byte, 0, n)
	start := (r.next - n + r.max) % r.max
	if start+n <= r.max {
		return append(out, r.buf[start:start+n]...)
	}
	out = append(out, r.buf[start:]...)
	return append(out, r.buf[:n-(r.max-start)]...)
}
