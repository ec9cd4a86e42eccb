package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Streams of a Streamable HTTP server end for two reasons that look alike
// to the go-sdk's client:
//
//   - the server closed one on purpose (SEP-1699: a long call's stream is
//     closed, polling, a proxy's time limit), with an event id and perhaps
//     a retry delay: the client comes back after that delay with a GET
//     carrying Last-Event-ID and the call goes on;
//   - the server is gone (its process died, nothing listens any more):
//     the client would come back too, up to 5 times over some 15 seconds,
//     while the hub shows the server ready and its calls hang.
//
// The hub used to turn resumption off (MaxRetries -1) to see a dead server
// at once. Now the go-sdk resumes, and [liveness] tells the hub when the
// endpoint itself is gone: a request that cannot connect is proof, and a
// stream that breaks (not a clean end) makes it dial the server's address
// at once; a refused dial is proof too. The hub then ends the session:
// running calls fail with server_unavailable and the server restarts, as
// for a stdio server whose process exits.

// probeTimeout bounds the dial that checks whether the endpoint is still
// there.
const probeTimeout = 3 * time.Second

// liveness is the HTTP transport of one connection to a server: it passes
// requests on and watches them for proof that the endpoint is gone.
type liveness struct {
	next http.RoundTripper
	// addr is the host:port dialled when a stream breaks; "" when a proxy
	// stands between (its refusals come back as failed requests anyway).
	addr string

	dead     chan struct{} // closed once the endpoint is known to be gone
	deadOnce sync.Once
	err      error // why, set before dead is closed
	probing  atomic.Bool
}

func newLiveness(endpoint string, next http.RoundTripper) *liveness {
	l := &liveness{next: next, dead: make(chan struct{})}
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		req := &http.Request{URL: u}
		if proxy, err := http.ProxyFromEnvironment(req); err == nil && proxy == nil && port != "" {
			l.addr = net.JoinHostPort(u.Hostname(), port)
		}
	}
	return l
}

func (l *liveness) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(r)
	if err != nil {
		if r.Context().Err() == nil {
			l.failed(err)
		}
		return nil, err
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = &streamBody{ReadCloser: resp.Body, l: l, ctx: r.Context()}
	}
	return resp, nil
}

// failed judges a request that got no response: one that could not
// connect proves the endpoint gone; for any other failure (a connection
// reset mid-request) the endpoint is dialled.
func (l *liveness) failed(err error) {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		l.markDead(err)
		return
	}
	l.probe()
}

// probe dials the endpoint's address, once at a time, and marks it dead
// when nothing answers.
func (l *liveness) probe() {
	if l.addr == "" || !l.probing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer l.probing.Store(false)
		c, err := net.DialTimeout("tcp", l.addr, probeTimeout)
		if err != nil {
			l.markDead(err)
			return
		}
		c.Close()
	}()
}

func (l *liveness) markDead(err error) {
	l.deadOnce.Do(func() {
		l.err = err
		close(l.dead)
	})
}

// until returns a channel closed when done is, or when the endpoint is
// found gone.
func (l *liveness) until(done <-chan struct{}) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-l.dead:
		}
		close(ch)
	}()
	return ch
}

// endError says why the connection to an HTTP server ended.
func (l *liveness) endError() error {
	if l != nil {
		select {
		case <-l.dead:
			return fmt.Errorf("the server cannot be reached any more: %v", l.err)
		default:
		}
	}
	return errors.New("the connection to the server closed")
}

// streamBody is the body of an SSE response: a read that fails, other
// than at the stream's clean end or because the client stopped reading,
// makes its liveness probe the endpoint.
type streamBody struct {
	io.ReadCloser
	l      *liveness
	ctx    context.Context
	closed atomic.Bool
}

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && b.ctx.Err() == nil && !b.closed.Load() {
		b.l.probe()
	}
	return n, err
}

func (b *streamBody) Close() error {
	b.closed.Store(true)
	return b.ReadCloser.Close()
}
