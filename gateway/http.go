package gateway

import (
	"context"
	"fmt"
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
