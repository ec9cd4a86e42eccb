// Package oauthtest has an OAuth 2.1 authorization server and an MCP
// server it protects, for the tests of the McpHub's sign-in (tools/mcp, the
// editor protocol, the integration tests): they check what a correct
// client sends. Start with [NewAuthServer] and [NewResourceServer].
package oauthtest

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

// AuthServer is an OAuth 2.1 authorization server for the tests: metadata
// (RFC 8414), the authorization endpoint (PKCE S256 required; it redirects
// at once, as if the person approved), the token endpoint (authorization
// code, refresh token and client credentials grants; client_secret_basic
// and _post, private_key_jwt), and dynamic client registration. It checks
// what a correct client sends, and records it.
type AuthServer struct {
	t   testing.TB
	srv *httptest.Server
	mux *http.ServeMux

	// Prefix is the path of its endpoints and issuer, whose metadata are
	// at the root (as the 2025-03-26 spec finds them); NoMetadata serves
	// none (the 2025-03-26 fallback endpoints).
	Prefix     string
	NoMetadata bool

	// What it offers.
	ScopesSupported []string
	AuthMethods     []string // token_endpoint_auth_methods_supported
	NoDCR           bool
	CIMD            bool
	ExpiresIn       int    // of access tokens, seconds (0: 3600)
	Refresh         bool   // issues refresh tokens (the default)
	Withhold        string // a scope it never grants
	// A pre-registered client, and the public key of a private_key_jwt one.
	ClientID, ClientSecret string
	JWTKey                 *ecdsa.PublicKey

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

func NewAuthServer(t testing.TB, configure func(*AuthServer)) *AuthServer {
	as := &AuthServer{t: t, AuthMethods: []string{"client_secret_basic", "client_secret_post", "none"}, Refresh: true,
		clients: map[string]string{}, codes: map[string]url.Values{}, access: map[string][]string{}, refreshes: map[string]url.Values{}}
	if configure != nil {
		configure(as)
	}
	as.mux = http.NewServeMux()
	if !as.NoMetadata {
		as.mux.HandleFunc("GET /.well-known/oauth-authorization-server", as.metadata)
	}
	as.mux.HandleFunc("GET "+as.Prefix+"/authorize", as.authorize)
	as.mux.HandleFunc("POST "+as.Prefix+"/token", as.token)
	as.mux.HandleFunc("POST "+as.Prefix+"/register", as.register)
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

func (as *AuthServer) problem(format string, args ...any) {
	as.problems = append(as.problems, fmt.Sprintf(format, args...))
}

func (as *AuthServer) Issuer() string { return as.srv.URL + as.Prefix }

func (as *AuthServer) metadata(w http.ResponseWriter, r *http.Request) {
	iss := as.Issuer()
	m := map[string]any{
		"issuer": iss, "authorization_endpoint": iss + "/authorize", "token_endpoint": iss + "/token",
		"response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token", "client_credentials"},
		"token_endpoint_auth_methods_supported": as.AuthMethods,
	}
	if !as.NoDCR {
		m["registration_endpoint"] = iss + "/register"
	}
	if as.ScopesSupported != nil {
		m["scopes_supported"] = as.ScopesSupported
	}
	if as.CIMD {
		m["client_id_metadata_document_supported"] = true
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(m)
}

func (as *AuthServer) authorize(w http.ResponseWriter, r *http.Request) {
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
func (as *AuthServer) clientOf(r *http.Request) string {
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
		return as.ClientID
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

func (as *AuthServer) secretOK(id, secret string) bool {
	if id == as.ClientID && secret == as.ClientSecret && secret != "" {
		return true
	}
	s, ok := as.clients[id]
	return ok && s == secret && s != ""
}

// verifyAssertion checks a private_key_jwt assertion: ES256 with jwtKey,
// iss = sub = the client, aud naming the issuer, not expired.
func (as *AuthServer) verifyAssertion(jwt string) error {
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
	if !ecdsa.Verify(as.JWTKey, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return fmt.Errorf("bad signature")
	}
	switch {
	case claims.Iss != as.ClientID || claims.Sub != as.ClientID:
		return fmt.Errorf("iss %q sub %q", claims.Iss, claims.Sub)
	case !slices.Contains(claims.Aud, as.Issuer()):
		return fmt.Errorf("aud %v", claims.Aud)
	case claims.Exp < time.Now().Unix() || claims.Jti == "":
		return fmt.Errorf("exp %d jti %q", claims.Exp, claims.Jti)
	}
	return nil
}

func (as *AuthServer) token(w http.ResponseWriter, r *http.Request) {
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
		scopes = slices.DeleteFunc(strings.Fields(code.Get("scope")), func(s string) bool { return s == as.Withhold })
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
	expires := as.ExpiresIn
	if expires == 0 {
		expires = 3600
	}
	resp := map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": expires, "scope": strings.Join(scopes, " ")}
	if as.Refresh && f.Get("grant_type") != "client_credentials" {
		rt := fmt.Sprintf("refresh-%d", as.n)
		as.refreshes[rt] = url.Values{"scope": {strings.Join(scopes, " ")}, "resource": {resource}}
		resp["refresh_token"] = rt
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

func (as *AuthServer) register(w http.ResponseWriter, r *http.Request) {
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
func (as *AuthServer) ScopesOf(token string) ([]string, bool) {
	as.mu.Lock()
	defer as.mu.Unlock()
	s, ok := as.access[token]
	return s, ok
}

// revoke forgets every access token: the resource server refuses them.
func (as *AuthServer) Revoke() {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.access = map[string][]string{}
}

func (as *AuthServer) Counts() (authorizes, tokens, registers int) {
	as.mu.Lock()
	defer as.mu.Unlock()
	return len(as.authorizes), len(as.tokenReqs), as.registers
}

func (as *AuthServer) LastToken() url.Values {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.tokenReqs[len(as.tokenReqs)-1]
}

func (as *AuthServer) LastAuthorize() url.Values {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.authorizes[len(as.authorizes)-1]
}

// ResourceServer is an MCP server protected by AuthServer: its protected resource
// metadata at the well-known URL of its path, 401 with a challenge without
// a valid token, and 403 insufficient_scope when a method needs scopes the
// token lacks.
type ResourceServer struct {
	as  *AuthServer
	srv *httptest.Server
	// URL is its MCP endpoint.
	URL string
	// PRMResource, when set, is the resource its metadata names (a lie).
	PRMResource string
	// MetadataURL, when set, is the resource_metadata its challenges name
	// instead of its own well-known URL.
	MetadataURL string
	// Scopes are those its metadata supports, ChallengeScope those its 401
	// names.
	Scopes, ChallengeScope []string
	// Need maps a JSON-RPC method to the scopes it needs; Refuse to those
	// it says it needs, and refuses whatever the token has.
	Need, Refuse map[string][]string
	// Legacy is a 2025-03-26 server: no protected resource metadata, its
	// origin (the authorization server's) its authorization server.
	Legacy bool
}

func NewResourceServer(t testing.TB, as *AuthServer, configure func(*ResourceServer)) *ResourceServer {
	rs := &ResourceServer{as: as, Need: map[string][]string{}}
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
	if rs.Legacy {
		mux = as.mux
	}
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		if rs.Legacy {
			http.NotFound(w, r)
			return
		}
		res := rs.URL
		if rs.PRMResource != "" {
			res = rs.PRMResource
		}
		m := map[string]any{"resource": res, "authorization_servers": []string{as.srv.URL}}
		if rs.Scopes != nil {
			m["scopes_supported"] = rs.Scopes
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(m)
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct{ Method string }
		json.Unmarshal(body, &msg)
		meta := strings.TrimSuffix(rs.URL, "/mcp") + "/.well-known/oauth-protected-resource/mcp"
		if rs.MetadataURL != "" {
			meta = rs.MetadataURL
		}
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		scopes, ok := as.ScopesOf(token)
		if !ok {
			c := fmt.Sprintf("Bearer resource_metadata=%q", meta)
			if rs.Legacy {
				c = `Bearer error="invalid_token"`
			}
			if rs.ChallengeScope != nil {
				c += fmt.Sprintf(", scope=%q", strings.Join(rs.ChallengeScope, " "))
			}
			w.Header().Set("WWW-Authenticate", c)
			http.Error(w, `{"error":"invalid_token"}`, http.StatusUnauthorized)
			return
		}
		if need, ok := rs.Refuse[msg.Method]; ok || !subset(rs.Need[msg.Method], scopes) {
			if !ok {
				need = rs.Need[msg.Method]
			}
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q`,
				strings.Join(need, " "), meta))
			http.Error(w, `{"error":"insufficient_scope"}`, http.StatusForbidden)
			return
		}
		handler.ServeHTTP(w, r)
	})
	if rs.Legacy {
		rs.srv = as.srv
	} else {
		rs.srv = httptest.NewServer(mux)
		t.Cleanup(rs.srv.Close)
	}
	rs.URL = rs.srv.URL + "/mcp"
	return rs
}

// browse is the person's browser: it GETs url and follows the redirects,
// which take the code to the hub's loopback listener.
func Browse(t testing.TB, u string) {
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

// subset reports whether every scope of a is in b.
func subset(a, b []string) bool {
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	return true
}

// URL is the issuer's origin.
func (as *AuthServer) URL() string { return as.srv.URL }

// ForgetProblems drops the problems recorded so far: for a test whose
// point is a client the server refuses.
func (as *AuthServer) ForgetProblems() {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.problems = nil
}
