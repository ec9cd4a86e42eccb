package mcp

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

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
	// cc is the token source of the client_credentials grant, ccScopes
	// what it asks for.
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
	if a.cfg.Grant == GrantClientCredentials {
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
	if a.cfg.Grant == GrantClientCredentials {
		return a.clientCredentials(ctx, c)
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
	if a.cfg.Grant == GrantClientCredentials {
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

// clientCredentials gets a token with the client's own credentials (the
// client_credentials grant, no person): discovery, then the token endpoint
// with the resource and the scopes, the client authenticated by its secret
// (client_secret_basic or _post, as the server supports) or by a JWT
// signed with its private key (private_key_jwt).
func (a *serverAuth) clientCredentials(ctx context.Context, c *challenge) error {
	a.mu.Lock()
	err := a.stepUpLocked(c, a.ccScopes)
	granted := a.ccScopes
	a.mu.Unlock()
	if err != nil {
		return err
	}
	d, err := discover(ctx, a.client, a.url, c)
	if err != nil {
		return fmt.Errorf("MCP server %q: %w", a.name, err)
	}
	scopes := c.scopes
	if len(scopes) == 0 {
		scopes = d.prm.ScopesSupported
	}
	scopes = union(granted, scopes, a.cfg.Scopes)
	src := &ccSource{a: a, asm: d.asm, resource: d.resource, scopes: scopes}
	tok, err := src.Token()
	if err != nil {
		return fmt.Errorf("MCP server %q: the client_credentials grant at %s: %w", a.name, d.asm.TokenEndpoint, err)
	}
	if got := tokenScopes(tok); got != nil {
		scopes = got
	}
	a.mu.Lock()
	a.cc, a.ccScopes = oauth2.ReuseTokenSource(tok, src), scopes
	a.mu.Unlock()
	a.hub.logger.Info("MCP server authorized the hub (client_credentials)", "server", a.name, "issuer", d.asm.Issuer)
	return nil
}

// ccSource gets tokens with the client_credentials grant; each request
// with a fresh client assertion when the client signs one.
type ccSource struct {
	a        *serverAuth
	asm      *oauthex.AuthServerMeta
	resource string
	scopes   []string
}

func (s *ccSource) Token() (*oauth2.Token, error) {
	o := s.a.cfg
	cfg := clientcredentials.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, TokenURL: s.asm.TokenEndpoint,
		Scopes: s.scopes, EndpointParams: url.Values{}, AuthStyle: clientAuthStyle(s.asm.TokenEndpointAuthMethodsSupported, o.ClientSecret)}
	if s.resource != "" {
		cfg.EndpointParams.Set("resource", s.resource)
	}
	if o.PrivateKey != "" {
		assertion, err := clientAssertion(o, s.asm)
		if err != nil {
			return nil, err
		}
		cfg.ClientSecret, cfg.AuthStyle = "", oauth2.AuthStyleInParams
		cfg.EndpointParams.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
		cfg.EndpointParams.Set("client_assertion", assertion)
	}
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), oauth2.HTTPClient, s.a.client), oauthTimeout)
	defer cancel()
	return cfg.Token(ctx)
}

// clientAuthStyle is how a client authenticates to a token endpoint that
// supports the methods named: without a secret (a public client) its id
// goes in the form; a secret goes in HTTP Basic (RFC 6749's default and
// its MUST), or in the form when the server takes only that.
func clientAuthStyle(methods []string, secret string) oauth2.AuthStyle {
	if secret == "" || !slices.Contains(methods, "client_secret_basic") && slices.Contains(methods, "client_secret_post") {
		return oauth2.AuthStyleInParams
	}
	return oauth2.AuthStyleInHeader
}

// clientAssertion is a JWT that authenticates the client (RFC 7523,
// private_key_jwt): issued by and about the client, for the authorization
// server (its issuer and its token endpoint), valid 5 minutes, used once.
func clientAssertion(o OAuthConfig, asm *oauthex.AuthServerMeta) (string, error) {
	key, alg, err := parsePrivateKey(o.PrivateKey, o.SigningAlgorithm)
	if err != nil {
		return "", fmt.Errorf("oauth.privateKeyEnv %s: %w", o.PrivateKeyEnv, err)
	}
	now := time.Now()
	aud := []string{asm.Issuer}
	if asm.TokenEndpoint != asm.Issuer {
		aud = append(aud, asm.TokenEndpoint)
	}
	header, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{"iss": o.ClientID, "sub": o.ClientID, "aud": aud,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "jti": rand.Text()})
	b64 := base64.RawURLEncoding
	signing := b64.EncodeToString(header) + "." + b64.EncodeToString(claims)
	sig, err := signJWS(key, signing)
	if err != nil {
		return "", err
	}
	return signing + "." + b64.EncodeToString(sig), nil
}

// signJWS signs a JWS signing input with ES256 (r‖s, 32 bytes each) or
// RS256 (PKCS #1 v1.5), per RFC 7518.
func signJWS(key crypto.Signer, signing string) ([]byte, error) {
	sum := sha256.Sum256([]byte(signing))
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rand.Reader, k, sum[:])
		if err != nil {
			return nil, err
		}
		out := make([]byte, 64)
		r.FillBytes(out[:32])
		s.FillBytes(out[32:])
		return out, nil
	case *rsa.PrivateKey:
		return rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:])
	}
	return nil, fmt.Errorf("cannot sign with a %T", key)
}

// discovered is where a server's authorization comes from.
type discovered struct {
	prm *oauthex.ProtectedResourceMetadata
	asm *oauthex.AuthServerMeta
	// resource is the resource indicator (RFC 8707) of the server.
	resource string
}

// discover finds the protected resource metadata of the server at
// serverURL (RFC 9728: the challenge's resource_metadata, then the
// well-known URL at the server's path, then at its root) and its
// authorization server's metadata (RFC 8414 and OpenID Connect discovery).
// Metadata whose resource is not the server refuses the sign-in. Without
// metadata it falls back as the 2025-03-26 spec says: the server's root is
// the authorization server, at /authorize, /token and /register.
func discover(ctx context.Context, client *http.Client, serverURL string, c *challenge) (*discovered, error) {
	d := &discovered{}
	for _, cand := range prmCandidates(c, serverURL) {
		prm, err := fetchPRM(ctx, client, cand.url)
		if err != nil {
			return nil, err
		}
		if prm == nil {
			continue
		}
		if prm.Resource != cand.resource {
			return nil, fmt.Errorf("its protected resource metadata (%s) is for the resource %q, not for %q: refusing to sign in (RFC 9728 §3.3)",
				cand.url, prm.Resource, cand.resource)
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("its protected resource metadata (%s) names no authorization server", cand.url)
		}
		for _, as := range prm.AuthorizationServers {
			if err := checkAuthServerURL(as); err != nil {
				return nil, fmt.Errorf("its protected resource metadata (%s): authorization server %q: %w", cand.url, as, err)
			}
		}
		d.prm, d.resource = prm, prm.Resource
		break
	}
	legacy := d.prm == nil
	if legacy {
		u, err := url.Parse(serverURL)
		if err != nil {
			return nil, err
		}
		u.Path, u.RawPath, u.RawQuery, u.Fragment = "", "", "", ""
		d.prm = &oauthex.ProtectedResourceMetadata{Resource: serverURL, AuthorizationServers: []string{u.String()}}
		d.resource = serverURL
	}
	issuer := d.prm.AuthorizationServers[0]
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, client)
	if err != nil && legacy {
		// 2025-03-26: the metadata at the server's root may name an issuer
		// with a path (its endpoints live there). The server's own origin
		// is its authorization server in that spec: take the issuer it
		// names there, and check the rest as usual.
		metaURL := strings.TrimSuffix(issuer, "/") + "/.well-known/oauth-authorization-server"
		if claimed := claimedIssuer(ctx, client, metaURL); claimed != "" && sameOrigin(claimed, serverURL) {
			asm, err = oauthex.GetAuthServerMeta(ctx, metaURL, claimed, client)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the metadata of its authorization server %s: %w", issuer, err)
	}
	if asm == nil {
		base := strings.TrimSuffix(issuer, "/")
		asm = &oauthex.AuthServerMeta{Issuer: issuer, AuthorizationEndpoint: base + "/authorize",
			TokenEndpoint: base + "/token", RegistrationEndpoint: base + "/register"}
	}
	d.asm = asm
	return d, nil
}

// claimedIssuer is the issuer that the authorization server metadata at u
// names, "" when there is none.
func claimedIssuer(ctx context.Context, client *http.Client, u string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return ""
	}
	resp, err := client.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var m struct {
		Issuer string `json:"issuer"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&m) != nil {
		return ""
	}
	return m.Issuer
}

// sameOrigin reports whether two URLs have the same scheme, host and port.
func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && strings.EqualFold(ua.Host, ub.Host)
}

type prmCandidate struct{ url, resource string }

// prmCandidates are the URLs of a server's protected resource metadata, in
// the order the MCP spec gives, each with the resource it must name.
func prmCandidates(c *challenge, serverURL string) []prmCandidate {
	var out []prmCandidate
	if c != nil {
		for _, ch := range c.parsed {
			if u := ch.Params["resource_metadata"]; u != "" {
				out = append(out, prmCandidate{u, serverURL})
				break
			}
		}
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return out
	}
	m := *u
	m.RawQuery, m.Fragment, m.RawPath = "", "", ""
	if p := strings.Trim(u.Path, "/"); p != "" {
		m.Path = "/.well-known/oauth-protected-resource/" + p
		out = append(out, prmCandidate{m.String(), serverURL})
	}
	m.Path = "/.well-known/oauth-protected-resource"
	root := *u
	root.Path, root.RawPath, root.RawQuery, root.Fragment = "", "", "", ""
	return append(out, prmCandidate{m.String(), root.String()})
}

// fetchPRM gets a protected resource metadata document; nil when there is
// none at u (a 4xx answer, or not JSON).
func fetchPRM(ctx context.Context, client *http.Client, u string) (*oauthex.ProtectedResourceMetadata, error) {
	if err := checkAuthServerURL(u); err != nil {
		return nil, fmt.Errorf("protected resource metadata %s: %w", u, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("protected resource metadata %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil
	}
	var prm oauthex.ProtectedResourceMetadata
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&prm); err != nil {
		return nil, nil
	}
	return &prm, nil
}

// checkAuthServerURL accepts https URLs, and http ones on a loopback host
// (for development, as the go-sdk does).
func checkAuthServerURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	switch {
	case u.Scheme == "https" && u.Host != "":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	}
	return errors.New("not an https URL (http only on a loopback host)")
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
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
