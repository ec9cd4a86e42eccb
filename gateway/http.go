package gateway

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/access"
)

// Authenticate maps a bearer token to the party that acts with it.
type Authenticate func(token string) (access.Party, bool)

// HTTPOptions configure [Gateway.HTTPHandler].
type HTTPOptions struct {
	Authenticate Authenticate
	// AllowedOrigins are origins ("https://app.example") a browser page
	// may call from, besides loopback ones; AllowedHosts are Host names
	// besides loopback ones (a name that resolves to this machine).
	AllowedOrigins []string
	AllowedHosts   []string
	// MaxRequestBytes bounds one request's body.
	MaxRequestBytes int64
	// SessionIdleTimeout closes a session that sent no request for that
	// long (mcp.http.sessionIdleTimeout; default DefaultSessionIdleTimeout).
	SessionIdleTimeout time.Duration
	// MaxSessionsPerToken bounds the sessions that one token (one party)
	// holds open at once (mcp.http.maxSessionsPerToken; default
	// DefaultMaxSessionsPerToken): a new one closes the token's least
	// recently used session.
	MaxSessionsPerToken int
}

// The defaults of HTTPOptions, as of mcp.http.
const (
	DefaultSessionIdleTimeout  = 30 * time.Minute
	DefaultMaxSessionsPerToken = 16
)

// HTTPHandler serves the gateway over Streamable HTTP. Against DNS
// rebinding, a request whose Host or Origin is not loopback (or allowed)
// is refused with 403 before its token is looked at; a request without a
// known bearer token gets 401. A session belongs to the party that opened
// it: a request of another token for it gets 403. A session that sends no
// request for SessionIdleTimeout is closed (its next request gets 404, and
// the client starts a new session); a token that holds
// MaxSessionsPerToken sessions open and opens one more loses its least
// recently used one (404 next, as an expired one).
func (g *Gateway) HTTPHandler(opts HTTPOptions) http.Handler {
	if opts.SessionIdleTimeout <= 0 {
		opts.SessionIdleTimeout = DefaultSessionIdleTimeout
	}
	if opts.MaxSessionsPerToken <= 0 {
		opts.MaxSessionsPerToken = DefaultMaxSessionsPerToken
	}
	streamable := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		party, ok := partyOf(r)
		if !ok {
			return nil
		}
		return g.Server(party)
	}, &sdk.StreamableHTTPOptions{Logger: g.logger, MaxRequestBodyBytes: opts.MaxRequestBytes, SessionTimeout: opts.SessionIdleTimeout})
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		party, ok := opts.Authenticate(token)
		if !ok {
			return nil, fmt.Errorf("%w: unknown token", auth.ErrInvalidToken)
		}
		return &auth.TokenInfo{UserID: party.String(), Expiration: time.Now().Add(24 * time.Hour), Extra: map[string]any{"party": party}}, nil
	}
	authed := auth.RequireBearerToken(verify, nil)(g.capSessions(streamable, opts))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAllowed(r.Host, opts.AllowedHosts) {
			http.Error(w, fmt.Sprintf("Forbidden: Host %q is not loopback (mcp.http.allowedHosts)", r.Host), http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !originAllowed(o, opts.AllowedOrigins) {
			http.Error(w, fmt.Sprintf("Forbidden: Origin %q is not loopback (mcp.http.allowedOrigins)", o), http.StatusForbidden)
			return
		}
		authed.ServeHTTP(w, r)
	})
}

// partyOf is the party of an authenticated request.
func partyOf(r *http.Request) (access.Party, bool) {
	ti := auth.TokenInfoFromContext(r.Context())
	if ti == nil {
		return access.Party{}, false
	}
	party, ok := ti.Extra["party"].(access.Party)
	return party, ok
}

// capSessions keeps a party at opts.MaxSessionsPerToken sessions: a
// request that would open one more (a POST without Mcp-Session-Id) first
// closes the party's least recently used session, whose next request then
// gets 404, and its client starts a new session, as the protocol says. A
// party can only close its own sessions this way. Sessions being opened
// count too: when they alone fill the cap, the request is refused with 429.
func (g *Gateway) capSessions(next http.Handler, opts HTTPOptions) http.Handler {
	var mu sync.Mutex
	opening := map[string]int{}                  // by party key
	lastUse := map[string]map[string]time.Time{} // by party key, then session id
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		party, ok := partyOf(r)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		key := party.String()
		if id := r.Header.Get("Mcp-Session-Id"); id != "" {
			mu.Lock()
			if uses := lastUse[key]; uses != nil {
				if _, known := uses[id]; known {
					uses[id] = time.Now()
				}
			}
			mu.Unlock()
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		live := g.httpSessions(key)
		uses := map[string]time.Time{}
		for _, s := range live {
			uses[s.ID()] = lastUse[key][s.ID()] // unknown: the zero time, the oldest
		}
		lastUse[key] = uses
		if opening[key] >= opts.MaxSessionsPerToken {
			n := opening[key]
			mu.Unlock()
			http.Error(w, fmt.Sprintf("Too Many Requests: this token is opening %d MCP sessions at once, the most it may hold (mcp.http.maxSessionsPerToken = %d)",
				n, opts.MaxSessionsPerToken), http.StatusTooManyRequests)
			return
		}
		var evict []*sdk.ServerSession
		for len(live)-len(evict)+opening[key] >= opts.MaxSessionsPerToken {
			oldest := -1
			for i, s := range live {
				if !slices.Contains(evict, s) && (oldest < 0 || uses[s.ID()].Before(uses[live[oldest].ID()])) {
					oldest = i
				}
			}
			evict = append(evict, live[oldest])
			delete(uses, live[oldest].ID())
		}
		opening[key]++
		mu.Unlock()
		for _, s := range evict {
			g.logger.Info("MCP gateway: closed the least recently used HTTP session to make room", "party", key, "session", s.ID(),
				"limit", "mcp.http.maxSessionsPerToken", "max", opts.MaxSessionsPerToken)
			s.Close()
		}
		// The request stops counting as opening when its answer starts,
		// not when the handler returns: its client may open the next
		// session before then, and the session would count twice (once
		// live, once opening), closing a live one below the cap.
		var once sync.Once
		opened := func() {
			once.Do(func() {
				mu.Lock()
				if opening[key]--; opening[key] == 0 {
					delete(opening, key)
				}
				if id := w.Header().Get("Mcp-Session-Id"); id != "" && lastUse[key] != nil {
					lastUse[key][id] = time.Now()
				}
				mu.Unlock()
			})
		}
		next.ServeHTTP(&answerStart{ResponseWriter: w, start: opened}, r)
		opened()
	})
}

// answerStart calls start once, just before the first byte of the answer
// (its header) is written.
type answerStart struct {
	http.ResponseWriter
	start func()
}

func (a *answerStart) WriteHeader(code int) {
	a.start()
	a.ResponseWriter.WriteHeader(code)
}

func (a *answerStart) Write(b []byte) (int, error) {
	a.start()
	return a.ResponseWriter.Write(b)
}

func (a *answerStart) Flush() {
	a.start()
	if f, ok := a.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (a *answerStart) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// httpSessions are the open Streamable HTTP sessions of the party of key:
// those of its server that have a session id (a stdio session has none).
func (g *Gateway) httpSessions(key string) []*sdk.ServerSession {
	g.mu.Lock()
	ps, ok := g.servers[key]
	g.mu.Unlock()
	if !ok {
		return nil
	}
	var live []*sdk.ServerSession
	for s := range ps.server.Sessions() {
		if s.ID() != "" {
			live = append(live, s)
		}
	}
	return live
}

// loopbackHost reports whether host (no port) names this machine's
// loopback: localhost, 127.0.0.0/8, ::1.
func loopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func hostAllowed(hostport string, allowed []string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return loopbackHost(host) || slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(a, host) || strings.EqualFold(a, hostport) })
}

func originAllowed(origin string, allowed []string) bool {
	if slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(strings.TrimSuffix(a, "/"), origin) }) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return loopbackHost(u.Hostname())
}
