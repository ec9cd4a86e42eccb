package mcp

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// errLoginReplaced ends a sign-in when another one of the same server
// starts.
var errLoginReplaced = errors.New("another sign-in to this server started")

// Login signs the person in to the server name, with the authorization
// code grant and PKCE: it discovers the server's authorization server,
// registers the client if needed (Client ID Metadata Document,
// pre-registration or dynamic registration), listens on 127.0.0.1 for the
// redirect, calls open with the authorization URL for the person's
// browser, and exchanges the code it gets back for tokens, which are kept
// in [AuthDir]. A server waiting in state needs_auth then connects at once.
//
// It returns when the person signed in, or with an error: the sign-in was
// refused, did not come back within Options.LoginTimeout, ctx ended,
// another sign-in of the server started, or the server's metadata do not
// hold (a protected resource metadata document for another resource is
// refused). The status is the server's after signing in.
func (h *Hub) Login(ctx context.Context, name string, open func(authorizationURL string)) (Status, error) {
	s, err := h.server(name)
	if err != nil {
		return Status{}, err
	}
	if err := s.canSignIn(); err != nil {
		return s.statusNow(), err
	}
	loginCtx, done := s.auth.startLogin(ctx, s.life)
	defer done()
	loginCtx, cancel := context.WithTimeoutCause(loginCtx, h.opts.LoginTimeout,
		fmt.Errorf("no sign-in came back within %v: open the URL in a browser and sign in, then run the login again", h.opts.LoginTimeout))
	defer cancel()
	if err := s.auth.login(loginCtx, open); err != nil {
		if cause := context.Cause(loginCtx); loginCtx.Err() != nil && cause != nil && !errors.Is(err, cause) {
			err = fmt.Errorf("MCP server %q: sign-in ended: %w", name, cause)
		}
		h.logger.Warn("MCP server sign-in failed", "server", name, "error", err.Error())
		return s.statusNow(), err
	}
	if s.signedInNow() {
		s.waitSettled(ctx)
	}
	return s.statusNow(), nil
}

// canSignIn says why the person cannot sign in to s, nil when they can.
func (s *server) canSignIn() error {
	name := s.cfg.Name
	switch {
	case s.cfg.Err != nil:
		return fmt.Errorf("MCP server %q cannot run: its entry in %s is invalid: %v", name, s.cfg.Source, s.cfg.Err)
	case s.statusNow().State == StatePendingApproval:
		return errors.New(s.pendingMessage())
	case !s.cfg.Enabled:
		return fmt.Errorf("MCP server %q is disabled in %s", name, s.cfg.Source)
	case s.cfg.Transport != "http":
		return fmt.Errorf("MCP server %q is a stdio server: it gets its credentials from its env, there is nothing to sign in to", name)
	case s.auth == nil:
		return fmt.Errorf("MCP server %q sends its own Authorization header (headers in %s): remove it to sign in with OAuth", name, s.cfg.Source)
	case s.auth.cfg.Grant == GrantClientCredentials:
		return fmt.Errorf("MCP server %q is authorized with its client's credentials (oauth.grant client_credentials), without a person: `nexus mcp restart %s` gets a new token", name, name)
	case s.auth.cfg.Grant == GrantEnterprise:
		return fmt.Errorf("MCP server %q is authorized by your enterprise's identity provider (oauth.grant enterprise): there is nothing to sign in to here; `nexus mcp restart %s` gets a new token", name, name)
	}
	return nil
}

// signedInNow lets a server that waits for the person connect at once, and
// a failed one try again. It reports whether the server is starting.
func (s *server) signedInNow() bool {
	switch s.statusNow().State {
	case StateNeedsAuth:
		s.setStatus(func(st *Status) { st.State, st.Error = StateStarting, "" })
		select {
		case s.auth.signedIn <- struct{}{}:
		default:
		}
		return true
	case StateFailed:
		s.restart()
		return true
	}
	return false
}

// Logout deletes the tokens of the server name and disconnects it: it
// connects again without them (and, if the server asks, waits in state
// needs_auth). It reports whether there was a sign-in to forget.
func (h *Hub) Logout(name string) (Status, bool, error) {
	s, err := h.server(name)
	if err != nil {
		return Status{}, false, err
	}
	if s.auth == nil {
		return s.statusNow(), false, fmt.Errorf("MCP server %q has no sign-in: it is not an http server authorized with OAuth", name)
	}
	removed, err := s.auth.logout()
	if err != nil {
		return s.statusNow(), removed, err
	}
	if st := s.statusNow().State; st == StateReady || st == StateStarting {
		s.restart()
	}
	h.logger.Info("MCP server signed out: its tokens are deleted", "server", name, "hadTokens", removed)
	return s.statusNow(), removed, nil
}

// startLogin makes ctx the sign-in under way of the server, ending the
// one before, if any; the sign-in also ends with the server (life). done
// ends it.
func (a *serverAuth) startLogin(ctx, life context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(life, func() { cancel(errors.New("the server's entry changed or was removed")) })
	a.mu.Lock()
	if a.cancelLogin != nil {
		a.cancelLogin()
	}
	var once sync.Once
	mine := func() { once.Do(func() { cancel(errLoginReplaced) }) }
	a.cancelLogin = mine
	a.loginGen++
	gen := a.loginGen
	a.mu.Unlock()
	return ctx, func() {
		stop()
		cancel(nil)
		a.mu.Lock()
		if a.loginGen == gen {
			a.cancelLogin = nil
		}
		a.mu.Unlock()
	}
}

// login runs the authorization code flow with PKCE (RFC 7636, S256) from
// the server's last challenge (or a bare 401), and keeps the tokens.
//
// The flow is written here on golang.org/x/oauth2 and the go-sdk's oauthex
// rather than with the go-sdk's auth.AuthorizationCodeHandler: that handler
// discovers again by itself, goes on past metadata that name another
// resource, and refuses the 2025-03-26 metadata of a server whose issuer
// has a path; discover does it once, as this hub needs.
func (a *serverAuth) login(ctx context.Context, open func(string)) error {
	a.mu.Lock()
	a.loadLocked()
	c, prev := a.challenge, a.signIn
	a.mu.Unlock()
	if c == nil {
		c = &challenge{status: http.StatusUnauthorized, header: http.Header{}}
	}
	d, err := discover(ctx, a.client, a.url, c)
	if err != nil {
		return fmt.Errorf("MCP server %q: %w", a.name, err)
	}
	ln, err := listenLoopback(a.name, a.cfg.RedirectPort)
	if err != nil {
		return fmt.Errorf("MCP server %q: %w", a.name, err)
	}
	defer ln.close()
	a.hub.logger.Info("MCP server sign-in started", "server", a.name, "issuer", d.asm.Issuer, "redirect", ln.redirectURL)
	si, err := a.authorizationCode(ctx, d, c, prev, ln, open)
	if err == nil {
		err = a.store.save(si)
	}
	ln.finish(err)
	if err != nil {
		if cause := context.Cause(ctx); ctx.Err() != nil && cause != nil {
			return fmt.Errorf("MCP server %q: sign-in ended: %w", a.name, cause)
		}
		return fmt.Errorf("MCP server %q: signing in at %s: %w", a.name, d.asm.Issuer, err)
	}
	a.mu.Lock()
	a.signIn, a.loaded, a.challenge, a.needErr, a.refreshed = si, true, nil, nil, ""
	a.mu.Unlock()
	a.hub.logger.Info("MCP server signed in", "server", a.name, "issuer", d.asm.Issuer, "scopes", strings.Join(si.Scopes, " "),
		"refreshable", si.RefreshToken != "")
	return nil
}

// authorizationCode registers the client if it must, has the person
// authorize it in the browser, and exchanges the code for tokens, sending
// the resource (RFC 8707) both times. The scopes are those of the
// challenge, else the server's scopes_supported, with the configured ones,
// those granted before (a step-up keeps them), and offline_access when the
// authorization server supports it (for a refresh token).
func (a *serverAuth) authorizationCode(ctx context.Context, d *discovered, c *challenge, prev *signIn, ln *loopback, open func(string)) (*signIn, error) {
	reg, err := a.register(ctx, d.asm, ln.redirectURL)
	if err != nil {
		return nil, err
	}
	scopes := c.scopes
	if len(scopes) == 0 {
		scopes = d.prm.ScopesSupported
	}
	var granted []string
	if prev != nil && prev.Resource == d.resource {
		granted = prev.Scopes
	}
	scopes = union(scopes, a.cfg.Scopes, granted)
	if slices.Contains(d.asm.ScopesSupported, "offline_access") {
		scopes = union(scopes, []string{"offline_access"})
	}
	cfg := &oauth2.Config{ClientID: reg.id, ClientSecret: reg.secret, RedirectURL: ln.redirectURL, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: d.asm.AuthorizationEndpoint, TokenURL: d.asm.TokenEndpoint, AuthStyle: reg.style}}
	verifier, state := oauth2.GenerateVerifier(), rand.Text()
	resource := oauth2.SetAuthURLParam("resource", d.resource)
	res, err := ln.await(ctx, cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), resource), state, open)
	if err != nil {
		return nil, err
	}
	// RFC 9207: the response names the issuer it came from.
	switch {
	case res.Iss == "" && d.asm.AuthorizationResponseIssParameterSupported:
		return nil, errors.New("the authorization response has no iss, which its server promises (RFC 9207)")
	case res.Iss != "" && strings.TrimSuffix(res.Iss, "/") != strings.TrimSuffix(d.asm.Issuer, "/"):
		return nil, fmt.Errorf("the authorization response comes from the issuer %q, not %q (RFC 9207)", res.Iss, d.asm.Issuer)
	}
	xctx, cancel := context.WithTimeout(context.WithValue(ctx, oauth2.HTTPClient, a.client), oauthTimeout)
	defer cancel()
	tok, err := cfg.Exchange(xctx, res.Code, oauth2.VerifierOption(verifier), resource)
	if err != nil {
		return nil, fmt.Errorf("exchanging the code at %s: %w", d.asm.TokenEndpoint, err)
	}
	si := &signIn{Server: a.name, ServerURL: a.url, Resource: d.resource, Issuer: d.asm.Issuer, TokenURL: d.asm.TokenEndpoint,
		ClientID: reg.id, AuthStyle: reg.style, Scopes: tokenScopes(tok), AccessToken: tok.AccessToken, TokenType: tok.TokenType,
		RefreshToken: tok.RefreshToken, Expiry: tok.Expiry, SignedIn: time.Now().UTC().Round(0)}
	if si.Scopes == nil {
		si.Scopes = scopes // RFC 6749 §5.1: those asked for
	}
	if reg.registered {
		si.ClientSecret = reg.secret // a configured client's stays in its variable
	}
	return si, nil
}

// registration is the client a sign-in uses.
type registration struct {
	id, secret string
	style      oauth2.AuthStyle
	// registered is a client registered for this sign-in.
	registered bool
}

// register picks the client, in the MCP spec's order: the Client ID
// Metadata Document when the authorization server supports them, the
// configured client, else one registered now (RFC 7591).
func (a *serverAuth) register(ctx context.Context, asm *oauthex.AuthServerMeta, redirectURL string) (registration, error) {
	switch {
	case a.cfg.ClientMetadataURL != "" && asm.ClientIDMetadataDocumentSupported:
		return registration{id: a.cfg.ClientMetadataURL, style: oauth2.AuthStyleInParams}, nil
	case a.cfg.ClientID != "":
		return registration{id: a.cfg.ClientID, secret: a.cfg.ClientSecret,
			style: clientAuthStyle(asm.TokenEndpointAuthMethodsSupported, a.cfg.ClientSecret)}, nil
	case asm.RegistrationEndpoint == "":
		return registration{}, fmt.Errorf("the authorization server %s registers no clients (no registration_endpoint) and takes no client ID metadata document: "+
			`give the entry a client registered with it ("oauth": {"clientId", "clientSecretEnv"})`, asm.Issuer)
	}
	meta := &oauthex.ClientRegistrationMetadata{RedirectURIs: []string{redirectURL}, ClientName: "Nexus (nexusd)",
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"}, ApplicationType: "native"}
	resp, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, meta, a.client)
	if err != nil {
		return registration{}, fmt.Errorf("registering the client at %s: %w", asm.RegistrationEndpoint, err)
	}
	method := resp.TokenEndpointAuthMethod
	if method == "" && resp.ClientSecret != "" {
		method = "client_secret_basic" // RFC 7591's default
	}
	return registration{id: resp.ClientID, secret: resp.ClientSecret, registered: true,
		style: clientAuthStyle([]string{method}, resp.ClientSecret)}, nil
}

// logout forgets the server's tokens, in memory and on disk, and ends a
// sign-in under way.
func (a *serverAuth) logout() (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cancelLogin != nil {
		a.cancelLogin()
	}
	had := a.signIn != nil || a.cc != nil
	removed, err := a.store.remove(a.name)
	a.signIn, a.loaded, a.refreshed = nil, true, ""
	a.cc, a.ccScopes, a.challenge, a.stepUps, a.stepUpScopes = nil, nil, nil, 0, ""
	return had || removed, err
}

// loopback is the redirect listener of one sign-in, on 127.0.0.1: it
// accepts exactly one redirect, the one with the sign-in's state, then the
// sign-in closes it.
type loopback struct {
	server      string
	srv         *http.Server
	redirectURL string
	results     chan callbackResult
	outcome     chan error // the sign-in's end, shown in the browser

	mu    sync.Mutex
	state string
	taken bool
}

// authResult is what the redirect brings back.
type authResult struct {
	Code, State, Iss string
}

type callbackResult struct {
	res *authResult
	err error
}

func listenLoopback(server string, port int) (*loopback, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("listening for the sign-in's redirect on 127.0.0.1:%d: %w", port, err)
	}
	l := &loopback{server: server, results: make(chan callbackResult, 1), outcome: make(chan error, 1),
		redirectURL: fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port)}
	l.srv = &http.Server{Handler: http.HandlerFunc(l.serve), ReadHeaderTimeout: 10 * time.Second}
	go l.srv.Serve(ln)
	return l, nil
}

// close stops listening, and lets the browser's request finish.
func (l *loopback) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if l.srv.Shutdown(ctx) != nil {
		l.srv.Close()
	}
}

// await has the person open authURL and waits for the redirect that
// carries its state.
func (l *loopback) await(ctx context.Context, authURL, state string, open func(string)) (*authResult, error) {
	l.mu.Lock()
	l.state = state
	l.mu.Unlock()
	open(authURL)
	select {
	case r := <-l.results:
		return r.res, r.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// finish tells the browser waiting on the redirect how the sign-in ended.
func (l *loopback) finish(err error) {
	select {
	case l.outcome <- err:
	default:
	}
}

func (l *loopback) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/callback" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	l.mu.Lock()
	ok := !l.taken && l.state != "" && q.Get("state") == l.state
	if ok {
		l.taken = true
	}
	l.mu.Unlock()
	if !ok {
		http.Error(w, "This is not the sign-in that nexusd is waiting for.", http.StatusBadRequest)
		return
	}
	var res callbackResult
	switch {
	case q.Get("error") != "":
		msg := q.Get("error")
		if d := q.Get("error_description"); d != "" {
			msg += ": " + d
		}
		res.err = fmt.Errorf("the authorization server refused the sign-in (%s)", msg)
	case q.Get("code") == "":
		res.err = errors.New("the redirect carried no authorization code")
	default:
		res.res = &authResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
	}
	l.results <- res
	outcome := res.err
	if outcome == nil {
		select {
		case outcome = <-l.outcome:
		case <-time.After(oauthTimeout):
			outcome = errors.New("the sign-in is taking long; see nexus mcp ls")
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	title, text := "Signed in", fmt.Sprintf("Nexus is signed in to the MCP server %s. You can close this tab.", l.server)
	if outcome != nil {
		w.WriteHeader(http.StatusBadRequest)
		title, text = "Sign-in failed", fmt.Sprintf("Nexus could not sign in to the MCP server %s: %v", l.server, outcome)
	}
	fmt.Fprintf(w, "<!doctype html><meta charset=utf-8><title>%s</title><h1>%s</h1><p>%s</p>\n",
		html.EscapeString(title), html.EscapeString(title), html.EscapeString(text))
}
