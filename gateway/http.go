package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
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
}

// HTTPHandler serves the gateway over Streamable HTTP. Against DNS
// rebinding, a request whose Host or Origin is not loopback (or allowed)
// is refused with 403 before its token is looked at; a request without a
// known bearer token gets 401. A session belongs to the party that opened
// it: a request of another token for it gets 403.
func (g *Gateway) HTTPHandler(opts HTTPOptions) http.Handler {
	streamable := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		ti := auth.TokenInfoFromContext(r.Context())
		if ti == nil {
			return nil
		}
		party, ok := ti.Extra["party"].(access.Party)
		if !ok {
			return nil
		}
		return g.Server(party)
	}, &sdk.StreamableHTTPOptions{Logger: g.logger, MaxRequestBodyBytes: opts.MaxRequestBytes})
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		party, ok := opts.Authenticate(token)
		if !ok {
			return nil, fmt.Errorf("%w: unknown token", auth.ErrInvalidToken)
		}
		return &auth.TokenInfo{UserID: party.String(), Expiration: time.Now().Add(24 * time.Hour), Extra: map[string]any{"party": party}}, nil
	}
	authed := auth.RequireBearerToken(verify, nil)(streamable)
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

// The daemon's MCP socket (nexusd mcp's way in when a daemon runs): a
// unix socket of the daemon's user. A connection starts with one line,
// "Bearer TOKEN"; the daemon answers "ok" or "error: WHY" and, after ok,
// the connection is an MCP session in newline-delimited JSON, as on
// stdio.

// maxHandshake bounds the handshake line.
const maxHandshake = 4 << 10

// ServeConn serves one connection of the MCP socket until it ends or ctx
// is cancelled.
func (g *Gateway) ServeConn(ctx context.Context, conn net.Conn, authenticate Authenticate) error {
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReaderSize(conn, maxHandshake)
	line, err := r.ReadSlice('\n')
	if err != nil {
		return fmt.Errorf("MCP socket handshake: %w", err)
	}
	conn.SetReadDeadline(time.Time{})
	token, ok := strings.CutPrefix(strings.TrimRight(string(line), "\r\n"), "Bearer ")
	var party access.Party
	known := false
	if ok {
		party, known = authenticate(token)
	}
	if !known {
		io.WriteString(conn, "error: unknown token\n")
		return errors.New("MCP socket: unknown token")
	}
	if _, err := io.WriteString(conn, "ok\n"); err != nil {
		return err
	}
	in, out := GuardLines(r, conn)
	t := &sdk.IOTransport{Reader: readCloser{in, conn}, Writer: writeCloser{out, conn}}
	session, err := g.Server(party).Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { session.Close() })
	defer stop()
	return session.Wait()
}

type readCloser struct {
	io.Reader
	io.Closer
}

type writeCloser struct {
	io.Writer
	io.Closer
}

// Handshake is the client's side of the MCP socket's handshake: it sends
// the token and reads the answer.
func Handshake(conn net.Conn, token string) (*bufio.Reader, error) {
	if _, err := io.WriteString(conn, "Bearer "+token+"\n"); err != nil {
		return nil, err
	}
	r := bufio.NewReader(conn)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := r.ReadString('\n')
	conn.SetReadDeadline(time.Time{})
	if err != nil {
		return nil, fmt.Errorf("the daemon's MCP socket: %w", err)
	}
	if line = strings.TrimRight(line, "\r\n"); line != "ok" {
		return nil, fmt.Errorf("the daemon's MCP socket: %s", strings.TrimPrefix(line, "error: "))
	}
	return r, nil
}
