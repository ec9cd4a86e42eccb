package mcp

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeAS is an OAuth 2.1 authorization server for the tests: metadata
// (RFC 8414), the authorization endpoint (PKCE S256 required; it redirects
// at once, as if the person approved), the token endpoint (authorization
// code, refresh token and client credentials grants; client_secret_basic
// and _post, private_key_jwt), and dynamic client registration. It checks
// what a correct client sends, and records it.
type fakeAS struct {
	t   *testing.T
	srv *httptest.Server
	mux *http.ServeMux

	// prefix is the path of its endpoints and issuer, whose metadata are
	// at the root (as the 2025-03-26 spec finds them); noMetadata serves
	// none (the 2025-03-26 fallback endpoints).
	prefix     string
	noMetadata bool

	// What it offers.
	scopesSupported []string
	authMethods     []string // token_endpoint_auth_methods_supported
	noDCR           bool
	cimd            bool
	expiresIn       int    // of access tokens, seconds (0: 3600)
	refresh         bool   // issues refresh tokens
	withhold        string // a scope it never grants
	// A pre-registered client, and the public key of a private_key_jwt one.
	clientID, clientSecret string
	jwtKey                 *ecdsa.PublicKey

	mu         sync.Mutex
	n          int
	authorizes []url.Values
	tokenReqs  []url.Values
	registers  int
	clients    map[string]string // registered client id → secret
	codes      map[string]url.Values
	access     map[string][]string // access token → scopes
	refreshes  map[string]url.Values
	problems   []string
}

func newFakeAS(t *testing.T, configure func(*fakeAS)) *fakeAS {
	as := &fakeAS{t: t, authMethods: []string{"client_secret_basic", "client_secret_post", "none"}, refresh: true,
		clients: map[string]string{}, codes: map[string]url.Values{}, access: map[string][]string{}, refreshes: map[string]url.Values{}}
	if configure != nil {
		configure(as)
	}
	as.mux = http.NewServeMux()
	if !as.noMetadata {
		as.mux.HandleFunc("GET /.well-known/oauth-authorization-server", as.metadata)
	}
	as.mux.HandleFunc("GET "+as.prefix+"/authorize", as.authorize)
	as.mux.HandleFunc("POST "+as.prefix+"/token", as.token)
	as.mux.HandleFunc("POST "+as.prefix+"/register", as.register)
	as.srv = httptest.NewServer(as.mux)
	t.Cleanup(as.srv.Close)
	t.Cleanup(func() {
		as.mu.Lock()
		defer as.mu.Unlock()
		for _, p := range as.problems {
			t.Errorf("authorization server: %s", p)
		}
	})
	return as
}

func (as *fakeAS) problem(format string, args ...any) {
	as.problems = append(as.problems, fmt.Sprintf(format, args...))
}

func (as *fakeAS) issuer() string { return as.srv.URL + as.prefix }

func (as *fakeAS) metadata(w http.ResponseWriter, r *http.Request) {
	iss := as.issuer()
	m := map[string]any{
		"issuer": iss, "authorization_endpoint": iss + "/authorize", "token_endpoint": iss + "/token",
		"response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token", "client_credentials"},
		"token_endpoint_auth_methods_supported": as.authMethods,
	}
	if !as.noDCR {
		m["registration_endpoint"] = iss + "/register"
	}
	if as.scopesSupported != nil {
		m["scopes_supported"] = as.scopesSupported
	}
	if as.cimd {
		m["client_id_metadata_document_supported"] = true
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(m)
}

func (as *fakeAS) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	as.mu.Lock()
	defer as.mu.Unlock()
	as.authorizes = append(as.authorizes, q)
	switch {
	case q.Get("response_type") != "code":
		as.problem("authorize: response_type %q", q.Get("response_type"))
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		as.problem("authorize: no PKCE S256 challenge: %v", q)
	case q.Get("resource") == "":
		as.problem("authorize: no resource parameter")
	case q.Get("state") == "":
		as.problem("authorize: no state")
	}
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Scheme != "http" || redirect.Hostname() != "127.0.0.1" || redirect.Path != "/callback" {
		as.problem("authorize: redirect_uri %q is not the loopback listener", q.Get("redirect_uri"))
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	as.n++
	code := fmt.Sprintf("code-%d", as.n)
	as.codes[code] = q
	back := redirect.Query()
	back.Set("code", code)
	back.Set("state", q.Get("state"))
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

// clientOf authenticates the client of a token request: its id, or "" with
// a problem recorded.
func (as *fakeAS) clientOf(r *http.Request) string {
	if id, secret, ok := r.BasicAuth(); ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
		if as.secretOK(id, secret) || secret == "" && strings.HasPrefix(id, "https://") {
			return id // a client ID metadata document's client is public
		}
		as.problem("token: bad basic credentials for %q", id)
		return ""
	}
	id := r.PostForm.Get("client_id")
	if a := r.PostForm.Get("client_assertion"); a != "" {
		if r.PostForm.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
			as.problem("token: client_assertion_type %q", r.PostForm.Get("client_assertion_type"))
			return ""
		}
		if err := as.verifyAssertion(a); err != nil {
			as.problem("token: client assertion: %v", err)
			return ""
		}
		return as.clientID
	}
	if s := r.PostForm.Get("client_secret"); s != "" {
		if as.secretOK(id, s) {
			return id
		}
		as.problem("token: bad client_secret for %q", id)
		return ""
	}
	if _, ok := as.clients[id]; ok || strings.HasPrefix(id, "https://") {
		return id // a public client
	}
	as.problem("token: unknown client %q without credentials", id)
	return ""
}

func (as *fakeAS) secretOK(id, secret string) bool {
	if id == as.clientID && secret == as.clientSecret && secret != "" {
		return true
	}
	s, ok := as.clients[id]
	return ok && s == secret && s != ""
}

// verifyAssertion checks a private_key_jwt assertion: ES256 with jwtKey,
// iss = sub = the client, aud naming the issuer, not expired.
func (as *fakeAS) verifyAssertion(jwt string) error {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return fmt.Errorf("%d parts", len(parts))
	}
	var header struct{ Alg string }
	var claims struct {
		Iss, Sub, Jti string
		Aud           []string
		Exp, Iat      int64
	}
	for i, v := range []any{&header, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, v); err != nil {
			return err
		}
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 || header.Alg != "ES256" {
		return fmt.Errorf("alg %q, signature of %d bytes", header.Alg, len(sig))
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(as.jwtKey, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return fmt.Errorf("bad signature")
	}
	switch {
	case claims.Iss != as.clientID || claims.Sub != as.clientID:
		return fmt.Errorf("iss %q sub %q", claims.Iss, claims.Sub)
	case !slices.Contains(claims.Aud, as.issuer()):
		return fmt.Errorf("aud %v", claims.Aud)
	case claims.Exp < time.Now().Unix() || claims.Jti == "":
		return fmt.Errorf("exp %d jti %q", claims.Exp, claims.Jti)
	}
	return nil
}

func (as *fakeAS) token(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	as.mu.Lock()
	defer as.mu.Unlock()
	f := r.PostForm
	as.tokenReqs = append(as.tokenReqs, f)
	fail := func(code string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": code})
	}
	client := as.clientOf(r)
	if client == "" {
		fail("invalid_client")
		return
	}
	var scopes []string
	resource := f.Get("resource")
	switch f.Get("grant_type") {
	case "authorization_code":
		code, ok := as.codes[f.Get("code")]
		delete(as.codes, f.Get("code"))
		if !ok {
			as.problem("token: unknown or reused code")
			fail("invalid_grant")
			return
		}
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if base64.RawURLEncoding.EncodeToString(sum[:]) != code.Get("code_challenge") {
			as.problem("token: code_verifier does not match the challenge")
			fail("invalid_grant")
			return
		}
		if resource != code.Get("resource") || f.Get("redirect_uri") != code.Get("redirect_uri") {
			as.problem("token: resource %q / redirect_uri %q differ from the authorization's", resource, f.Get("redirect_uri"))
		}
		scopes = slices.DeleteFunc(strings.Fields(code.Get("scope")), func(s string) bool { return s == as.withhold })
	case "refresh_token":
		g, ok := as.refreshes[f.Get("refresh_token")]
		if !ok {
			fail("invalid_grant")
			return
		}
		delete(as.refreshes, f.Get("refresh_token")) // rotated
		if resource != g.Get("resource") {
			as.problem("token: refresh with resource %q, issued for %q", resource, g.Get("resource"))
		}
		scopes = strings.Fields(g.Get("scope"))
	case "client_credentials":
		if resource == "" {
			as.problem("token: client_credentials without resource")
		}
		scopes = strings.Fields(f.Get("scope"))
	default:
		fail("unsupported_grant_type")
		return
	}
	as.n++
	access := fmt.Sprintf("access-%d-%s", as.n, strings.Repeat("x", 8))
	as.access[access] = scopes
	expires := as.expiresIn
	if expires == 0 {
		expires = 3600
	}
	resp := map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": expires, "scope": strings.Join(scopes, " ")}
	if as.refresh && f.Get("grant_type") != "client_credentials" {
		rt := fmt.Sprintf("refresh-%d", as.n)
		as.refreshes[rt] = url.Values{"scope": {strings.Join(scopes, " ")}, "resource": {resource}}
		resp["refresh_token"] = rt
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

func (as *fakeAS) register(w http.ResponseWriter, r *http.Request) {
	var meta struct {
		RedirectURIs []string `json:"redirect_uris"`
		GrantTypes   []string `json:"grant_types"`
	}
	json.NewDecoder(r.Body).Decode(&meta)
	as.mu.Lock()
	defer as.mu.Unlock()
	as.registers++
	if len(meta.RedirectURIs) == 0 || !slices.Contains(meta.GrantTypes, "refresh_token") {
		as.problem("register: redirect_uris %v grant_types %v", meta.RedirectURIs, meta.GrantTypes)
	}
	as.n++
	id, secret := fmt.Sprintf("dcr-client-%d", as.n), fmt.Sprintf("dcr-secret-%d", as.n)
	as.clients[id] = secret
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(map[string]any{"client_id": id, "client_secret": secret, "redirect_uris": meta.RedirectURIs,
		"token_endpoint_auth_method": "client_secret_basic"})
}

// scopesOf returns the scopes of an access token, and whether it is one.
func (as *fakeAS) scopesOf(token string) ([]string, bool) {
	as.mu.Lock()
	defer as.mu.Unlock()
	s, ok := as.access[token]
	return s, ok
}

// revoke forgets every access token: the resource server refuses them.
func (as *fakeAS) revoke() {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.access = map[string][]string{}
}

func (as *fakeAS) counts() (authorizes, tokens, registers int) {
	as.mu.Lock()
	defer as.mu.Unlock()
	return len(as.authorizes), len(as.tokenReqs), as.registers
}

func (as *fakeAS) lastToken() url.Values {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.tokenReqs[len(as.tokenReqs)-1]
}

func (as *fakeAS) lastAuthorize() url.Values {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.authorizes[len(as.authorizes)-1]
}

// fakeRS is an MCP server protected by fakeAS: its protected resource
// metadata at the well-known URL of its path, 401 with a challenge without
// a valid token, and 403 insufficient_scope when a method needs scopes the
// token lacks.
type fakeRS struct {
	as  *fakeAS
	srv *httptest.Server
	url string
	// prmResource, when set, is the resource its metadata names (a lie).
	prmResource string
	// scopes are those its metadata supports, challengeScope those its 401
	// names.
	scopes, challengeScope []string
	// need maps a JSON-RPC method to the scopes it needs; refuse to those
	// it says it needs, and refuses whatever the token has.
	need, refuse map[string][]string
	// legacy is a 2025-03-26 server: no protected resource metadata, its
	// origin (the authorization server's) its authorization server.
	legacy bool
}

func newFakeRS(t *testing.T, as *fakeAS, configure func(*fakeRS)) *fakeRS {
	rs := &fakeRS{as: as, need: map[string][]string{}}
	if configure != nil {
		configure(rs)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "echoes"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + a.Text}}}, nil, nil
	})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	mux := http.NewServeMux()
	if rs.legacy {
		mux = as.mux
	}
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		if rs.legacy {
			http.NotFound(w, r)
			return
		}
		res := rs.url
		if rs.prmResource != "" {
			res = rs.prmResource
		}
		m := map[string]any{"resource": res, "authorization_servers": []string{as.srv.URL}}
		if rs.scopes != nil {
			m["scopes_supported"] = rs.scopes
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(m)
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct{ Method string }
		json.Unmarshal(body, &msg)
		meta := strings.TrimSuffix(rs.url, "/mcp") + "/.well-known/oauth-protected-resource/mcp"
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		scopes, ok := as.scopesOf(token)
		if !ok {
			c := fmt.Sprintf("Bearer resource_metadata=%q", meta)
			if rs.legacy {
				c = `Bearer error="invalid_token"`
			}
			if rs.challengeScope != nil {
				c += fmt.Sprintf(", scope=%q", strings.Join(rs.challengeScope, " "))
			}
			w.Header().Set("WWW-Authenticate", c)
			http.Error(w, `{"error":"invalid_token"}`, http.StatusUnauthorized)
			return
		}
		if need, ok := rs.refuse[msg.Method]; ok || !subset(rs.need[msg.Method], scopes) {
			if !ok {
				need = rs.need[msg.Method]
			}
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q`,
				strings.Join(need, " "), meta))
			http.Error(w, `{"error":"insufficient_scope"}`, http.StatusForbidden)
			return
		}
		handler.ServeHTTP(w, r)
	})
	if rs.legacy {
		rs.srv = as.srv
	} else {
		rs.srv = httptest.NewServer(mux)
		t.Cleanup(rs.srv.Close)
	}
	rs.url = rs.srv.URL + "/mcp"
	return rs
}

// browse is the person's browser: it GETs url and follows the redirects,
// which take the code to the hub's loopback listener.
func browse(t *testing.T, u string) {
	resp, err := http.Get(u)
	if err != nil {
		t.Errorf("browser: %v", err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Signed in") {
		t.Errorf("browser: %s: %s", resp.Status, body)
	}
}

// lockedBuffer collects a hub's log.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
