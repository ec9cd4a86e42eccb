package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/nexuscocreate/nexus/tools"
)

// OAuth: an http server may answer 401 with a WWW-Authenticate challenge
// (the MCP authorization spec, OAuth 2.1). The hub then finds the server's
// protected resource metadata (RFC 9728: the challenge's resource_metadata,
// else the well-known URLs) and its authorization server's metadata (RFC
// 8414 or OpenID Connect discovery, with the 2025-03-26 fallbacks), and:
//
//   - with the client_credentials grant, gets a token with the client's
//     own credentials (client_secret_basic or _post, or private_key_jwt) and
//     goes on: no person is involved;
//   - with the authorization_code grant, waits in state needs_auth until the
//     person signs in ([Hub.Login]: "nexus mcp login", or Sign in in the
//     editor), then connects at once. The tokens are kept in
//     .nexus/mcp-auth (see [AuthDir]) and refreshed as they expire.
//
// A 403 insufficient_scope asks for more scopes (step-up): the hub asks the
// person to sign in again (or, with client_credentials, gets a new token),
// at most maxStepUps times in a row for the same scopes, and never for
// scopes the token already has. Tokens go to the resource they were issued
// for (RFC 8707) and to no other URL.

// ErrNeedsAuth is the error of a request that needs the person to sign in
// to its server first.
var ErrNeedsAuth = errors.New("the MCP server needs you to sign in")

// errAuthRefused is the error of a server that keeps refusing the tokens
// it gets: signing in again or asking for the same scopes again would not
// help. The server is failed, not restarted.
var errAuthRefused = errors.New("the MCP server refuses the authorization the hub has")

// maxStepUps bounds the step-ups asked for in a row for the same scopes
// (the authorization server does not grant them, or the server wants
// something else).
const maxStepUps = 3

// oauthTimeout bounds each request to an authorization server.
const oauthTimeout = 30 * time.Second

// serverAuth authorizes the hub's requests to one http server: it is the
// [auth.OAuthHandler] of the server's transport. It lives as long as the
// server's supervisor, across its sessions.
type serverAuth struct {
	hub  *Hub
	name string
	url  string // the entry's url, the only one its tokens go to
	cfg  OAuthConfig
	// client talks to the authorization server: no entry headers.
	client *http.Client
	store  tokenStore

	// need tells the supervisor that a request of the session needs the
	// person to sign in; signedIn that they did.
	need     chan error
	signedIn chan struct{}

	mu sync.Mutex
	// signIn is the person's sign-in (authorization_code); loaded says the
	// token file was read.
	signIn *signIn
	loaded bool
	// refreshed is the access token a refresh forced by a 401 got: a 401 to
	// it again needs the person.
	refreshed string
	// cc is the token source of a grant without a person
	// (client_credentials, enterprise), ccScopes what it asks for.
	cc       oauth2.TokenSource
	ccScopes []string
	// challenge is the last refusal that needs the person to sign in: the
	// sign-in starts from it. needErr is its error while the session it
	// ends goes down.
	challenge *challenge
	needErr   *needsAuthError
	// stepUps counts the step-ups asked for in a row for the same scopes,
	// stepUpScopes.
	stepUps      int
	stepUpScopes string
	// cancelLogin ends the sign-in under way, if any, and loginGen counts
	// the sign-ins.
	cancelLogin func()
	loginGen    int
}

// challenge is a 401 or 403 answer of the server, with its WWW-Authenticate
// challenges.
type challenge struct {
	status int
	header http.Header
	// scopes and errCode are those of its Bearer challenge.
	scopes  []string
	errCode string
	parsed  []oauthex.Challenge
}

// newServerAuth returns the authorization of an http server's entry, nil
// for a stdio server and for an entry that sends its own Authorization
// header.
func newServerAuth(h *Hub, cfg ServerConfig) *serverAuth {
	if cfg.Transport != "http" {
		return nil
	}
	for k := range cfg.Headers {
		if strings.EqualFold(k, "Authorization") {
			return nil
		}
	}
	o := OAuthConfig{Grant: GrantAuthorizationCode}
	if cfg.OAuth != nil {
		o = *cfg.OAuth
	}
	return &serverAuth{
		hub: h, name: cfg.Name, url: cfg.URL, cfg: o,
		client: &http.Client{Timeout: oauthTimeout},
		store:  tokenStore{dir: h.opts.AuthDir},
		need:   make(chan error, 1), signedIn: make(chan struct{}, 1),
	}
}

// attach makes t authorize its requests through a.
func (a *serverAuth) attach(t *mcp.StreamableClientTransport) {
	if a == nil {
		return
	}
	select { // a need of the last session is not one of this one
	case <-a.need:
	default:
	}
	a.mu.Lock()
	a.needErr = nil
	a.mu.Unlock()
	t.OAuthHandler = a
}

// needed is the channel on which a session hears that the person must sign
// in; nil (never ready) without authorization.
func (a *serverAuth) needed() <-chan error {
	if a == nil {
		return nil
	}
	return a.need
}

// TokenSource implements [auth.OAuthHandler]: the tokens of the
// client_credentials grant, or of the person's sign-in; nil before either.
func (a *serverAuth) TokenSource(context.Context) (oauth2.TokenSource, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cfg.Grant != GrantAuthorizationCode {
		return a.cc, nil
	}
	a.loadLocked()
	if a.signIn == nil {
		return nil, nil
	}
	return signInSource{a}, nil
}

// loadLocked reads the token file once. Tokens of another URL than the
// entry's are not used.
func (a *serverAuth) loadLocked() {
	if a.loaded {
		return
	}
	a.loaded = true
	s, err := a.store.load(a.name)
	switch {
	case err != nil:
		a.hub.logger.Warn("MCP server's tokens cannot be read; signing in again replaces them", "server", a.name, "error", err.Error())
	case s != nil && s.ServerURL != a.url:
		a.hub.logger.Info("MCP server's tokens are for another URL: sign in again", "server", a.name)
	default:
		a.signIn = s
	}
}

// signInSource is the token source of the person's sign-in: it refreshes
// an expired access token when there is a refresh token, and keeps the new
// tokens.
type signInSource struct{ a *serverAuth }

func (s signInSource) Token() (*oauth2.Token, error) {
	a := s.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.signIn == nil { // signed out meanwhile: the server asks again
		return nil, &oauth2.RetrieveError{ErrorCode: "invalid_grant", ErrorDescription: "signed out"}
	}
	tok := a.signIn.token()
	if tok.Valid() || tok.RefreshToken == "" {
		return tok, nil // an expired one without a refresh token: the server says 401
	}
	if _, err := a.refreshLocked(); err != nil {
		return nil, err
	}
	return a.signIn.token(), nil
}

// refreshLocked gets new tokens with the refresh token, sending the
// resource again (RFC 8707), and keeps them. A refresh token the server no
// longer takes (invalid_grant) is forgotten: the person signs in again.
func (a *serverAuth) refreshLocked() (*oauth2.Token, error) {
	si := a.signIn
	cfg := oauth2.Config{ClientID: si.ClientID, ClientSecret: a.clientSecret(si),
		Endpoint: oauth2.Endpoint{TokenURL: si.TokenURL, AuthStyle: si.AuthStyle}}
	client := &http.Client{Timeout: oauthTimeout, Transport: resourceParam{resource: si.Resource, next: http.DefaultTransport}}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, client)
	tok, err := cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: si.RefreshToken}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
			a.hub.logger.Info("MCP server's refresh token was refused: the person signs in again", "server", a.name)
			next := *si
			next.RefreshToken = ""
			a.signIn = &next
			if err := a.store.save(&next); err != nil {
				a.hub.logger.Warn("MCP server's tokens could not be saved", "server", a.name, "error", err.Error())
			}
		}
		return nil, fmt.Errorf("MCP server %q: refreshing its token: %w", a.name, err)
	}
	next := *si
	next.AccessToken, next.TokenType, next.Expiry = tok.AccessToken, tok.TokenType, tok.Expiry
	if tok.RefreshToken != "" { // rotated
		next.RefreshToken = tok.RefreshToken
	}
	if granted := tokenScopes(tok); granted != nil {
		next.Scopes = granted
	}
	a.signIn = &next
	if err := a.store.save(&next); err != nil {
		a.hub.logger.Warn("MCP server's refreshed tokens could not be saved; they hold until the daemon stops", "server", a.name, "error", err.Error())
	}
	a.hub.logger.Info("MCP server's token refreshed", "server", a.name, "expires", next.Expiry.Format(time.RFC3339))
	return tok, nil
}

// clientSecret is the secret of the client of a sign-in: the one the hub
// registered, or the configured one for the configured client.
func (a *serverAuth) clientSecret(si *signIn) string {
	if si.ClientSecret == "" && si.ClientID == a.cfg.ClientID {
		return a.cfg.ClientSecret
	}
	return si.ClientSecret
}

// resourceParam adds the resource parameter to refresh requests, which
// golang.org/x/oauth2 does not send.
type resourceParam struct {
	resource string
	next     http.RoundTripper
}

func (t resourceParam) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.resource == "" || r.Method != http.MethodPost || r.Body == nil {
		return t.next.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	if form, err := url.ParseQuery(string(body)); err == nil && form.Get("grant_type") == "refresh_token" && !form.Has("resource") {
		form.Set("resource", t.resource)
		body = []byte(form.Encode())
	}
	r = r.Clone(r.Context())
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return t.next.RoundTrip(r)
}

// Authorize implements [auth.OAuthHandler]: the transport calls it on a
// 401 or 403 answer, and sends the request again when it returns nil.
func (a *serverAuth) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	defer io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	c := newChallenge(resp)
	if resp.StatusCode == http.StatusForbidden && c.errCode != "insufficient_scope" {
		return nil // a refusal that no token mends: the request fails with it
	}
	switch a.cfg.Grant {
	case GrantClientCredentials:
		return a.clientCredentials(ctx, c)
	case GrantEnterprise:
		return a.enterprise(ctx, c)
	}
	if resp.StatusCode == http.StatusUnauthorized && a.refreshAfter401(req) {
		return nil
	}
	return a.needPerson(c)
}

func newChallenge(resp *http.Response) *challenge {
	c := &challenge{status: resp.StatusCode, header: http.Header{}}
	if v := resp.Header.Values("WWW-Authenticate"); len(v) > 0 {
		c.header["Www-Authenticate"] = slices.Clone(v)
	}
	c.parsed, _ = oauthex.ParseWWWAuthenticate(c.header.Values("WWW-Authenticate"))
	for _, ch := range c.parsed {
		if ch.Scheme == "bearer" {
			c.scopes, c.errCode = strings.Fields(ch.Params["scope"]), ch.Params["error"]
			break
		}
	}
	return c
}

// refreshAfter401 refreshes the token the server refused, once: the server
// may have revoked an access token whose refresh token still holds. It
// reports whether there is a new token to try.
func (a *serverAuth) refreshAfter401(req *http.Request) bool {
	sent, _ := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	a.mu.Lock()
	defer a.mu.Unlock()
	si := a.signIn
	switch {
	case si == nil || sent == "":
		return false
	case sent != si.AccessToken:
		return true // refreshed meanwhile: try the new one
	case si.RefreshToken == "" || sent == a.refreshed:
		return false
	}
	tok, err := a.refreshLocked()
	if err != nil {
		return false
	}
	a.refreshed = tok.AccessToken
	return true
}

// needPerson records a refusal that needs the person to sign in, tells the
// supervisor, and returns the error of the request. A step-up for scopes
// the token has, or one too many in a row, is errAuthRefused instead.
func (a *serverAuth) needPerson(c *challenge) error {
	a.mu.Lock()
	if err := a.stepUpLocked(c, a.grantedLocked()); err != nil {
		a.mu.Unlock()
		return err
	}
	err := &needsAuthError{server: a.name, stepUp: c.status == http.StatusForbidden, scopes: c.scopes}
	a.challenge, a.needErr = c, err
	a.mu.Unlock()
	select {
	case a.need <- err:
	default:
	}
	return err
}

// grantedLocked are the scopes the hub's current token has.
func (a *serverAuth) grantedLocked() []string {
	if a.cfg.Grant != GrantAuthorizationCode {
		return a.ccScopes
	}
	if a.signIn == nil {
		return nil
	}
	return a.signIn.Scopes
}

// stepUpLocked counts a 403 insufficient_scope: an error when asking again
// would not help.
func (a *serverAuth) stepUpLocked(c *challenge, granted []string) error {
	if c.status != http.StatusForbidden {
		return nil
	}
	if len(c.scopes) > 0 && len(granted) > 0 && subset(c.scopes, granted) {
		return fmt.Errorf("%w: MCP server %q refuses the token for lack of scope %q, which it was granted (insufficient_scope): asking again would not help",
			errAuthRefused, a.name, strings.Join(c.scopes, " "))
	}
	key := strings.Join(slices.Sorted(slices.Values(c.scopes)), " ")
	if key != a.stepUpScopes {
		a.stepUps, a.stepUpScopes = 0, key
	}
	if a.stepUps++; a.stepUps > maxStepUps {
		return fmt.Errorf("%w: MCP server %q asked for more scopes %d times in a row (insufficient_scope, now %q): given up",
			errAuthRefused, a.name, a.stepUps, strings.Join(c.scopes, " "))
	}
	return nil
}

// needsAuthError is the error of a request whose server needs the person
// to sign in.
type needsAuthError struct {
	server string
	stepUp bool
	scopes []string
}

func (e *needsAuthError) Error() string {
	return e.message()
}

func (e *needsAuthError) Unwrap() error { return ErrNeedsAuth }

// message says why, and how to sign in.
func (e *needsAuthError) message() string {
	why := "needs you to sign in"
	if e.stepUp {
		why = "needs you to sign in again to grant more access"
		if len(e.scopes) > 0 {
			why += fmt.Sprintf(" (scope %q)", strings.Join(e.scopes, " "))
		}
	}
	return fmt.Sprintf("MCP server %q %s: sign in with: nexus mcp login %s (or Sign in in the editor)", e.server, why, e.server)
}

// authFailure reports whether err, the end of a session, is for the person
// to mend by signing in: the supervisor then waits ([server.awaitSignIn])
// instead of restarting the server.
func (a *serverAuth) authFailure(err error) bool {
	return a != nil && a.cfg.Grant == GrantAuthorizationCode && (errors.Is(err, ErrNeedsAuth) || errors.Is(err, errAuthRefused))
}

// awaitSignIn puts the server in state needs_auth (failed after
// errAuthRefused), its tools unregistered, until the person signs in or
// restarts it. It returns false when the server is closed meanwhile.
func (s *server) awaitSignIn(ctx context.Context, err error) bool {
	s.unregisterAll()
	state, msg := StateNeedsAuth, ""
	var na *needsAuthError
	switch {
	case errors.As(err, &na):
		msg = na.message()
	case errors.Is(err, errAuthRefused):
		state = StateFailed
		msg = refusedMessage(err) + fmt.Sprintf("; sign in again with: nexus mcp login %s", s.cfg.Name)
	default:
		msg = (&needsAuthError{server: s.cfg.Name}).message()
	}
	s.setStatus(func(st *Status) { st.State, st.Error, st.PID = state, msg, 0 })
	select {
	case <-ctx.Done():
		return false
	case <-s.auth.signedIn:
	case <-s.restartCh:
	}
	s.setStatus(func(st *Status) { st.State, st.Error = StateStarting, "" })
	return true
}

// refusedMessage is the text of an errAuthRefused in err's chain, without
// what wraps it.
func refusedMessage(err error) string {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if strings.HasPrefix(e.Error(), errAuthRefused.Error()) {
			return e.Error()
		}
	}
	return err.Error()
}

// callError turns the error of a tool call that the server refused for
// want of authorization, or that ended with the session such a refusal
// ends, into the call's error, saying how to sign in; nil for other
// errors.
func (a *serverAuth) callError(err error) *tools.Error {
	if a == nil {
		return nil
	}
	var na *needsAuthError
	if !errors.As(err, &na) {
		a.mu.Lock()
		na = a.needErr
		a.mu.Unlock()
	}
	switch {
	case na != nil:
		return tools.Errorf(tools.CodeServerUnavailable, "%s", na.message())
	case errors.Is(err, errAuthRefused):
		return tools.Errorf(tools.CodePermissionDenied, "%s", refusedMessage(err))
	}
	return nil
}

// tokenScopes are the scopes a token response granted, nil when it does
// not say (RFC 6749: then those asked for).
func tokenScopes(tok *oauth2.Token) []string {
	s, ok := tok.Extra("scope").(string)
	if !ok {
		return nil
	}
	return strings.Fields(s)
}

// union is the scopes of all lists, in order of first appearance.
func union(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		for _, s := range l {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// subset reports whether every scope of a is in b.
func subset(a, b []string) bool {
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	return true
}
