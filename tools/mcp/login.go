package mcp

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
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

// login runs the authorization code flow with the go-sdk's
// [auth.AuthorizationCodeHandler], from the server's last challenge (or a
// bare 401), and keeps the tokens.
func (a *serverAuth) login(ctx context.Context, open func(string)) error {
	a.mu.Lock()
	a.loadLocked()
	c, prev := a.challenge, a.signIn
	a.mu.Unlock()
	if c == nil {
		c = &challenge{status: http.StatusUnauthorized, header: http.Header{}}
	}
	// The sdk discovers too, but goes on past metadata for another resource;
	// this refuses it, and says why.
	d, err := discover(ctx, a.client, a.url, c)
	if err != nil {
		return fmt.Errorf("MCP server %q: %w", a.name, err)
	}
	ln, err := listenLoopback(a.name, a.cfg.RedirectPort)
	if err != nil {
		return fmt.Errorf("MCP server %q: %w", a.name, err)
	}
	defer ln.close()

	var prevScopes []string
	if prev != nil {
		prevScopes = prev.Scopes
	}
	var got struct {
		cfg *oauth2.Config
		tok *oauth2.Token
	}
	hc := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: ln.redirectURL,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			return ln.await(ctx, args.URL, open)
		},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{ln.redirectURL}, ClientName: "Nexus (nexusd)",
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		}},
		// The scopes of the challenge (or the server's scopes_supported),
		// those configured, and those granted before: a step-up keeps them.
		ScopeFilter:         func(found []string) []string { return union(found, a.cfg.Scopes, prevScopes) },
		RequestRefreshToken: true,
		Client:              a.client,
		NewTokenSource: func(_ context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			got.cfg, got.tok = cfg, tok
			return oauth2.StaticTokenSource(tok), nil
		},
	}
	if a.cfg.ClientMetadataURL != "" {
		hc.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: a.cfg.ClientMetadataURL}
	}
	if a.cfg.ClientID != "" {
		hc.PreregisteredClient = &oauthex.ClientCredentials{ClientID: a.cfg.ClientID}
		if a.cfg.ClientSecret != "" {
			hc.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: a.cfg.ClientSecret}
		}
	}
	handler, err := auth.NewAuthorizationCodeHandler(hc)
	if err != nil {
		return fmt.Errorf("MCP server %q: %w", a.name, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url, nil)
	if err != nil {
		return err
	}
	status := c.status
	if status != http.StatusForbidden || c.errCode != "insufficient_scope" {
		status = http.StatusUnauthorized
	}
	resp := &http.Response{StatusCode: status, Header: c.header.Clone(), Body: http.NoBody, Request: req}
	a.hub.logger.Info("MCP server sign-in started", "server", a.name, "issuer", d.asm.Issuer, "redirect", ln.redirectURL)
	err = handler.Authorize(ctx, req, resp)
	if err == nil && got.tok == nil {
		err = errors.New("the authorization server gave no token")
	}
	if err != nil {
		ln.finish(err)
		if cause := context.Cause(ctx); ctx.Err() != nil && cause != nil {
			return fmt.Errorf("MCP server %q: sign-in ended: %w", a.name, cause)
		}
		return fmt.Errorf("MCP server %q: signing in at %s: %w", a.name, d.asm.Issuer, err)
	}
	si := &signIn{Server: a.name, ServerURL: a.url, Resource: ln.resource(), Issuer: d.asm.Issuer,
		TokenURL: got.cfg.Endpoint.TokenURL, ClientID: got.cfg.ClientID, AuthStyle: got.cfg.Endpoint.AuthStyle,
		Scopes: tokenScopes(got.tok), AccessToken: got.tok.AccessToken, TokenType: got.tok.TokenType,
		RefreshToken: got.tok.RefreshToken, Expiry: got.tok.Expiry, SignedIn: time.Now().UTC().Round(0)}
	if si.Scopes == nil {
		si.Scopes = got.cfg.Scopes
	}
	if got.cfg.ClientSecret != "" && (got.cfg.ClientID != a.cfg.ClientID || got.cfg.ClientSecret != a.cfg.ClientSecret) {
		si.ClientSecret = got.cfg.ClientSecret // of the client registered for this sign-in
	}
	if err := a.store.save(si); err != nil {
		ln.finish(err)
		return err
	}
	a.mu.Lock()
	a.signIn, a.loaded, a.challenge, a.needErr, a.refreshed = si, true, nil, nil, ""
	a.mu.Unlock()
	ln.finish(nil)
	a.hub.logger.Info("MCP server signed in", "server", a.name, "issuer", d.asm.Issuer, "scopes", strings.Join(si.Scopes, " "),
		"refreshable", si.RefreshToken != "")
	return nil
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
	res   string // the resource parameter of the authorization URL
	taken bool
}

type callbackResult struct {
	res *auth.AuthorizationResult
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
func (l *loopback) await(ctx context.Context, authURL string, open func(string)) (*auth.AuthorizationResult, error) {
	u, err := url.Parse(authURL)
	if err != nil || u.Query().Get("state") == "" {
		return nil, errors.New("the authorization URL has no state")
	}
	l.mu.Lock()
	l.state, l.res = u.Query().Get("state"), u.Query().Get("resource")
	l.mu.Unlock()
	open(authURL)
	select {
	case r := <-l.results:
		return r.res, r.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func (l *loopback) resource() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.res
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
		res.res = &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
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
