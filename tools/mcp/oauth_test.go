package mcp

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/mcp/oauthtest"
)

// oauthHub is a hub whose log is kept, to check that no secret reaches it.
func oauthHub(t *testing.T, opts Options) (*testHub, *lockedBuffer) {
	t.Helper()
	logs := &lockedBuffer{}
	opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return newTestHub(t, opts), logs
}

func oauthEntry(name, url string, o *OAuthConfig) ServerConfig {
	return ServerConfig{Name: name, Source: "test", Transport: "http", URL: url, Enabled: true, OAuth: o}
}

// login signs in as the person does, their browser following the
// redirects.
func login(t *testing.T, th *testHub, name string) Status {
	t.Helper()
	opened := 0
	st, err := th.Login(t.Context(), name, func(u string) {
		opened++
		go oauthtest.Browse(t, u)
	})
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	if opened != 1 {
		t.Fatalf("the authorization URL was opened %d times", opened)
	}
	return st
}

// noSecrets fails when the log holds one of secrets.
func noSecrets(t *testing.T, logs *lockedBuffer, secrets ...string) {
	t.Helper()
	out := logs.String()
	for _, s := range secrets {
		if s != "" && strings.Contains(out, s) {
			t.Errorf("the log holds the secret %q:\n%s", s, out)
		}
	}
}

func TestOAuthSignInFlow(t *testing.T) {
	as := oauthtest.NewAuthServer(t, func(as *oauthtest.AuthServer) { as.ScopesSupported = []string{"mcp:read", "offline_access"} })
	rs := oauthtest.NewResourceServer(t, as, func(rs *oauthtest.ResourceServer) { rs.Scopes = []string{"mcp:read"} })
	th, logs := oauthHub(t, Options{})
	th.applyTrusted(map[string]ServerConfig{"remote": oauthEntry("remote", rs.URL, nil)})

	// It needs a person: no restarts, its tools unavailable, the error says how.
	st := th.waitState(t, "remote", StateNeedsAuth)
	if !strings.Contains(st.Error, "sign in with: nexus mcp login remote") || st.Restarts != 0 {
		t.Fatalf("status %+v", st)
	}
	wantError(t, th.call(t, "remote", "echo", `{"text":"x"}`), tools.CodeUnknownTool, "")
	if _, err := th.Resources(t.Context(), "remote"); err == nil || !strings.Contains(err.Error(), "nexus mcp login remote") {
		t.Fatalf("resources of a server that needs auth: %v", err)
	}

	st = login(t, th, "remote")
	if st.State != StateReady {
		t.Fatalf("after login: %+v", st)
	}
	wantCompleted(t, th.call(t, "remote", "echo", `{"text":"hi"}`), "echo: hi")

	// What the authorization server saw: dynamic registration, PKCE (it
	// checks the verifier), the resource, the scopes of the metadata with
	// offline_access (it is supported), a loopback redirect.
	q := as.LastAuthorize()
	if q.Get("resource") != rs.URL || !sameScopes(q.Get("scope"), "mcp:read offline_access") || !strings.HasPrefix(q.Get("client_id"), "dcr-client-") {
		t.Errorf("authorization request %v", q)
	}
	if _, _, regs := as.Counts(); regs != 1 {
		t.Errorf("%d registrations", regs)
	}

	// The tokens: .nexus/mcp-auth/remote.json, 0600 in a 0700 directory.
	file := filepath.Join(th.ws, ".nexus", "mcp-auth", "remote.json")
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	if di, err := os.Stat(filepath.Dir(file)); err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("token directory: %v %v", di, err)
	}
	var saved signIn
	data, _ := os.ReadFile(file)
	if err := json.Unmarshal(data, &saved); err != nil || saved.AccessToken == "" || saved.RefreshToken == "" ||
		saved.Resource != rs.URL || saved.ServerURL != rs.URL || saved.ClientSecret == "" {
		t.Fatalf("token file %s: %v", data, err)
	}

	// Another hub on the same workspace (the daemon restarted) uses them.
	th2, logs2 := oauthHub(t, Options{Workspace: th.ws})
	th2.applyTrusted(map[string]ServerConfig{"remote": oauthEntry("remote", rs.URL, nil)})
	th2.waitState(t, "remote", StateReady)
	wantCompleted(t, th2.call(t, "remote", "echo", `{"text":"again"}`), "echo: again")

	// An access token the server no longer takes is refreshed, with the
	// resource; the new tokens are kept.
	as.Revoke()
	wantCompleted(t, th2.call(t, "remote", "echo", `{"text":"refreshed"}`), "echo: refreshed")
	if f := as.LastToken(); f.Get("grant_type") != "refresh_token" || f.Get("resource") != rs.URL {
		t.Errorf("refresh request %v", f)
	}
	var after signIn
	data, _ = os.ReadFile(file)
	json.Unmarshal(data, &after)
	if after.AccessToken == saved.AccessToken || after.RefreshToken == saved.RefreshToken {
		t.Errorf("the refreshed tokens were not kept: %s", data)
	}

	for _, l := range []*lockedBuffer{logs, logs2} {
		noSecrets(t, l, saved.AccessToken, saved.RefreshToken, saved.ClientSecret, after.AccessToken, after.RefreshToken, "code-")
	}

	// Sign out: the tokens go, and the server asks again.
	st, had, err := th2.Logout("remote")
	if err != nil || !had {
		t.Fatalf("logout: %v %v", had, err)
	}
	if _, err := os.Stat(file); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("token file after logout: %v", err)
	}
	th2.waitState(t, "remote", StateNeedsAuth)
}

func TestOAuthExpiredTokenRefreshed(t *testing.T) {
	as := oauthtest.NewAuthServer(t, func(as *oauthtest.AuthServer) { as.ExpiresIn = 1 })
	rs := oauthtest.NewResourceServer(t, as, nil)
	th, _ := oauthHub(t, Options{})
	th.applyTrusted(map[string]ServerConfig{"remote": oauthEntry("remote", rs.URL, nil)})
	th.waitState(t, "remote", StateNeedsAuth)
	login(t, th, "remote")
	th.waitState(t, "remote", StateReady)
	_, before, _ := as.Counts()
	time.Sleep(1100 * time.Millisecond) // the token expires (oauth2 takes tokens 10s from expiry as expired anyway)
	wantCompleted(t, th.call(t, "remote", "echo", `{"text":"later"}`), "echo: later")
	_, now, _ := as.Counts()
	if now == before || as.LastToken().Get("grant_type") != "refresh_token" {
		t.Fatalf("no refresh: %d → %d token requests, last %v", before, now, as.LastToken())
	}
}

func TestOAuthPreRegisteredAndCIMD(t *testing.T) {
	t.Run("pre-registered", func(t *testing.T) {
		as := oauthtest.NewAuthServer(t, func(as *oauthtest.AuthServer) {
			as.NoDCR, as.ClientID, as.ClientSecret = true, "pre-client", "pre-secret-value"
			as.AuthMethods = []string{"client_secret_basic"}
		})
		rs := oauthtest.NewResourceServer(t, as, func(rs *oauthtest.ResourceServer) { rs.ChallengeScope = []string{"mcp:basic"} })
		th, logs := oauthHub(t, Options{})
		th.applyTrusted(map[string]ServerConfig{"remote": oauthEntry("remote", rs.URL,
			&OAuthConfig{Grant: GrantAuthorizationCode, ClientID: "pre-client", ClientSecretEnv: "S", ClientSecret: "pre-secret-value"})})
		th.waitState(t, "remote", StateNeedsAuth)
		login(t, th, "remote")
		if q := as.LastAuthorize(); q.Get("client_id") != "pre-client" || q.Get("scope") != "mcp:basic" {
			t.Errorf("authorization request %v", q)
		}
		data, _ := os.ReadFile(filepath.Join(th.ws, ".nexus", "mcp-auth", "remote.json"))
		if strings.Contains(string(data), "pre-secret-value") {
			t.Errorf("the configured client secret was written to the token file: %s", data)
		}
		noSecrets(t, logs, "pre-secret-value")
	})
	t.Run("client ID metadata document", func(t *testing.T) {
		as := oauthtest.NewAuthServer(t, func(as *oauthtest.AuthServer) { as.CIMD = true })
		rs := oauthtest.NewResourceServer(t, as, nil)
		th, _ := oauthHub(t, Options{})
		const doc = "https://nexus.example.com/client.json"
		th.applyTrusted(map[string]ServerConfig{"remote": oauthEntry("remote", rs.URL,
			&OAuthConfig{Grant: GrantAuthorizationCode, ClientMetadataURL: doc})})
		th.waitState(t, "remote", StateNeedsAuth)
		login(t, th, "remote")
		if q := as.LastAuthorize(); q.Get("client_id") != doc || q.Has("scope") {
			t.Errorf("authorization request %v", q)
		}
		if _, _, regs := as.Counts(); regs != 0 {
			t.Errorf("%d registrations with a client ID metadata document", regs)
		}
	})
}

func TestOAuthStepUp(t *testing.T) {
	as := oauthtest.NewAuthServer(t, nil)
	rs := oauthtest.NewResourceServer(t, as, func(rs *oauthtest.ResourceServer) {
		rs.ChallengeScope = []string{"mcp:basic"}
		rs.Need = map[string][]string{"tools/call": {"mcp:basic", "mcp:write"}}
	})
	th, _ := oauthHub(t, Options{})
	th.applyTrusted(map[string]ServerConfig{"remote": oauthEntry("remote", rs.URL, nil)})
	th.waitState(t, "remote", StateNeedsAuth)
	login(t, th, "remote")
	th.waitState(t, "remote", StateReady)

	// The call needs more: it fails saying how to sign in, and the server
	// waits for the person.
	wantError(t, th.call(t, "remote", "echo", `{"text":"x"}`), tools.CodeServerUnavailable, "nexus mcp login remote")
	st := th.waitState(t, "remote", StateNeedsAuth)
	if !strings.Contains(st.Error, `scope "mcp:basic mcp:write"`) {
		t.Fatalf("status %+v", st)
	}
	login(t, th, "remote")
	if q := as.LastAuthorize(); !sameScopes(q.Get("scope"), "mcp:basic mcp:write") {
		t.Errorf("step-up authorization request %v", q)
	}
	th.waitState(t, "remote", StateReady)
	wantCompleted(t, th.call(t, "remote", "echo", `{"text":"written"}`), "echo: written")
}

func TestOAuthStepUpLimit(t *testing.T) {
	// The server wants a scope the authorization server never grants.
	as := oauthtest.NewAuthServer(t, func(as *oauthtest.AuthServer) { as.Withhold = "never" })
	rs := oauthtest.NewResourceServer(t, as, func(rs *oauthtest.ResourceServer) {
		rs.ChallengeScope = []string{"mcp:admin"}
		rs.Need = map[string][]string{"tools/list": {"mcp:admin", "never"}}
	})
	th, _ := oauthHub(t, Options{})
	th.applyTrusted(map[string]ServerConfig{"remote": oauthEntry("remote", rs.URL, nil)})
	th.waitState(t, "remote", StateNeedsAuth)
	for range maxStepUps + 2 {
		if st := th.waitSettledState(t, "remote"); st.State != StateNeedsAuth {
			break
		}
		if _, err := th.Login(t.Context(), "remote", func(u string) { go oauthtest.Browse(t, u) }); err != nil {
			t.Fatal(err)
		}
	}
	st := th.waitState(t, "remote", StateFailed)
	if !strings.Contains(st.Error, "given up") || !strings.Contains(st.Error, "nexus mcp login remote") {
		t.Fatalf("status %+v", st)
	}
	if n, _, _ := as.Counts(); n != maxStepUps+1 {
		t.Fatalf("%d authorization requests, want the first and %d step-ups", n, maxStepUps)
	}

	// A server that refuses a scope the token was granted is not asked
	// for it again: signing in again would not help.
	as2 := oauthtest.NewAuthServer(t, nil)
	rs2 := oauthtest.NewResourceServer(t, as2, func(rs *oauthtest.ResourceServer) {
		rs.ChallengeScope = []string{"mcp:admin"}
		rs.Refuse = map[string][]string{"tools/list": {"mcp:admin"}}
	})
	th2, _ := oauthHub(t, Options{})
	th2.applyTrusted(map[string]ServerConfig{"remote": oauthEntry("remote", rs2.URL, nil)})
	th2.waitState(t, "remote", StateNeedsAuth)
	login(t, th2, "remote")
	st = th2.waitState(t, "remote", StateFailed)
	if !strings.Contains(st.Error, `lack of scope "mcp:admin", which it was granted`) || !strings.Contains(st.Error, "nexus mcp login remote") {
		t.Fatalf("status %+v", st)
	}
	if n, _, _ := as2.Counts(); n != 1 {
		t.Fatalf("%d authorization requests", n)
	}
}

func sameScopes(a, b string) bool {
	return slices.Equal(slices.Sorted(slices.Values(strings.Fields(a))), slices.Sorted(slices.Values(strings.Fields(b))))
}

// waitSettledState waits for a state other than starting.
func (th *testHub) waitSettledState(t *testing.T, name string) Status {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, st := range th.Servers() {
			if st.Name == name && st.State != StateStarting {
				return st
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("server %s never settled: %+v", name, th.Servers())
	return Status{}
}

func TestOAuthClientCredentials(t *testing.T) {
	for _, method := range []string{"client_secret_basic", "client_secret_post"} {
		t.Run(method, func(t *testing.T) {
			as := oauthtest.NewAuthServer(t, func(as *oauthtest.AuthServer) {
				as.ClientID, as.ClientSecret, as.AuthMethods = "machine", "machine-secret-value", []string{method}
			})
			rs := oauthtest.NewResourceServer(t, as, func(rs *oauthtest.ResourceServer) { rs.Scopes = []string{"mcp:read"} })
			th, logs := oauthHub(t, Options{})
			th.applyTrusted(map[string]ServerConfig{"m2m": oauthEntry("m2m", rs.URL, &OAuthConfig{Grant: GrantClientCredentials,
				ClientID: "machine", ClientSecretEnv: "M", ClientSecret: "machine-secret-value", Scopes: []string{"extra"}})})
			th.waitState(t, "m2m", StateReady)
			wantCompleted(t, th.call(t, "m2m", "echo", `{"text":"m2m"}`), "echo: m2m")
			f := as.LastToken()
			if f.Get("grant_type") != "client_credentials" || f.Get("resource") != rs.URL || f.Get("scope") != "mcp:read extra" {
				t.Errorf("token request %v", f)
			}
			if post := f.Get("client_secret") != ""; post != (method == "client_secret_post") {
				t.Errorf("%s: client_secret in the form: %v", method, post)
			}
			if n, _, _ := as.Counts(); n != 0 {
				t.Errorf("%d authorization requests without a person", n)
			}
			if _, err := th.Login(t.Context(), "m2m", func(string) {}); err == nil || !strings.Contains(err.Error(), "client_credentials") {
				t.Errorf("login to a client_credentials server: %v", err)
			}
			noSecrets(t, logs, "machine-secret-value", "access-")
			if _, err := os.Stat(filepath.Join(th.ws, ".nexus", "mcp-auth")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("client_credentials tokens were written: %v", err)
			}
		})
	}
	t.Run("private_key_jwt", func(t *testing.T) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, _ := x509.MarshalPKCS8PrivateKey(key)
		keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
		as := oauthtest.NewAuthServer(t, func(as *oauthtest.AuthServer) {
			as.ClientID, as.JWTKey, as.AuthMethods = "signer", &key.PublicKey, []string{"private_key_jwt"}
		})
		rs := oauthtest.NewResourceServer(t, as, nil)
		th, logs := oauthHub(t, Options{})
		th.applyTrusted(map[string]ServerConfig{"m2m": oauthEntry("m2m", rs.URL, &OAuthConfig{Grant: GrantClientCredentials,
			ClientID: "signer", PrivateKeyEnv: "K", PrivateKey: keyPEM})})
		th.waitState(t, "m2m", StateReady)
		wantCompleted(t, th.call(t, "m2m", "echo", `{"text":"signed"}`), "echo: signed")
		noSecrets(t, logs, "PRIVATE KEY", as.LastToken().Get("client_assertion"))
	})
	t.Run("refused", func(t *testing.T) {
		as := oauthtest.NewAuthServer(t, func(as *oauthtest.AuthServer) { as.ClientID, as.ClientSecret = "machine", "right" })
		rs := oauthtest.NewResourceServer(t, as, nil)
		th, _ := oauthHub(t, Options{MaxRestarts: 1})
		th.applyTrusted(map[string]ServerConfig{"m2m": oauthEntry("m2m", rs.URL, &OAuthConfig{Grant: GrantClientCredentials,
			ClientID: "machine", ClientSecretEnv: "M", ClientSecret: "wrong"})})
		st := th.waitState(t, "m2m", StateFailed)
		if !strings.Contains(st.Error, "invalid_client") {
			t.Fatalf("status %+v", st)
		}
		as.ForgetProblems() // the bad secret was the point
	})
}

func TestOAuthResourceMismatchRefused(t *testing.T) {
	as := oauthtest.NewAuthServer(t, nil)
	rs := oauthtest.NewResourceServer(t, as, func(rs *oauthtest.ResourceServer) { rs.PRMResource = "https://evil.example.com/mcp" })
	th, _ := oauthHub(t, Options{})
	th.applyTrusted(map[string]ServerConfig{"remote": oauthEntry("remote", rs.URL, nil)})
	th.waitState(t, "remote", StateNeedsAuth)
	_, err := th.Login(t.Context(), "remote", func(u string) { t.Errorf("the browser was sent to %s", u) })
	if err == nil || !strings.Contains(err.Error(), `"https://evil.example.com/mcp"`) || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("login: %v", err)
	}
	if n, tok, reg := as.Counts(); n+tok+reg != 0 {
		t.Fatalf("the authorization server was used: %d %d %d", n, tok, reg)
	}
}

// TestOAuthMetadataURLs: the resource_metadata URL a server's challenge
// names is fetched on the server's own origin, or over https from a host
// that is not this machine; never over plain http elsewhere, never from
// another port of this machine.
func TestOAuthMetadataURLs(t *testing.T) {
	const server = "http://127.0.0.1:8080/mcp"
	for _, c := range []struct {
		server, meta string
		ok           bool
	}{
		{server, "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp", true},
		{server, "HTTP://127.0.0.1:8080/elsewhere/on/the/server", true},
		{"https://mcp.example.com/mcp", "https://mcp.example.com:443/.well-known/oauth-protected-resource", true},
		{server, "https://auth.example.com/prm", true},
		{server, "http://127.0.0.1:9090/admin?delete=all", false},
		{server, "http://localhost:8080/.well-known/oauth-protected-resource", false},
		{server, "https://127.0.0.1:9090/prm", false},
		{server, "https://localhost/prm", false},
		{server, "https://x.localhost/prm", false},
		{server, "https://[::1]:8443/prm", false},
		{server, "https://[::ffff:127.0.0.1]/prm", false},
		{server, "https://0.0.0.0/prm", false},
		{"https://mcp.example.com/mcp", "http://mcp.example.com/prm", false},
		{"https://mcp.example.com/mcp", "http://other.example.com/prm", false},
		{server, "file:///etc/passwd", false},
		{server, "/relative", false},
		{server, "https:///no-host", false},
	} {
		err := checkMetadataURL(c.meta, c.server)
		if (err == nil) != c.ok {
			t.Errorf("checkMetadataURL(%q) of %s: %v, want ok=%v", c.meta, c.server, err, c.ok)
		}
	}
}

// TestOAuthChallengeMetadataElsewhereRefused: a server whose challenge
// points the sign-in at another port of this machine gets no request
// there: the sign-in is refused, saying why, before anything is fetched.
func TestOAuthChallengeMetadataElsewhereRefused(t *testing.T) {
	var hits sync.Mutex
	hit := 0
	bystander := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Lock()
		hit++
		hits.Unlock()
		http.NotFound(w, r)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go bystander.Serve(ln)
	t.Cleanup(func() { bystander.Close() })
	target := "http://" + ln.Addr().String() + "/admin/delete?all=1"

	as := oauthtest.NewAuthServer(t, nil)
	rs := oauthtest.NewResourceServer(t, as, func(rs *oauthtest.ResourceServer) { rs.MetadataURL = target })
	th, _ := oauthHub(t, Options{})
	th.applyTrusted(map[string]ServerConfig{"remote": oauthEntry("remote", rs.URL, nil)})
	th.waitState(t, "remote", StateNeedsAuth)
	_, err = th.Login(t.Context(), "remote", func(u string) { t.Errorf("the browser was sent to %s", u) })
	if err == nil || !strings.Contains(err.Error(), target) || !strings.Contains(err.Error(), "refusing to fetch it") {
		t.Fatalf("login: %v", err)
	}
	hits.Lock()
	defer hits.Unlock()
	if hit != 0 {
		t.Fatalf("the sign-in sent %d requests to %s", hit, target)
	}
	if n, tok, reg := as.Counts(); n+tok+reg != 0 {
		t.Fatalf("the authorization server was used: %d %d %d", n, tok, reg)
	}
}

func TestOAuthLoopbackListener(t *testing.T) {
	as := oauthtest.NewAuthServer(t, nil)
	rs := oauthtest.NewResourceServer(t, as, nil)
	th, _ := oauthHub(t, Options{LoginTimeout: 2 * time.Second})
	th.applyTrusted(map[string]ServerConfig{"remote": oauthEntry("remote", rs.URL, nil)})
	th.waitState(t, "remote", StateNeedsAuth)

	// A redirect with another state is refused and the sign-in goes on
	// waiting; none comes, and it times out with a clear error.
	var callback string
	_, err := th.Login(t.Context(), "remote", func(u string) {
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(u)
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
		callback = resp.Header.Get("Location")
		bad := strings.Replace(callback, "state=", "state=forged", 1)
		if r, err := http.Get(bad); err != nil || r.StatusCode != http.StatusBadRequest {
			t.Errorf("a forged state: %v %v", r, err)
		}
	})
	if err == nil || !strings.Contains(err.Error(), "no sign-in came back within 2s") {
		t.Fatalf("login: %v", err)
	}
	if _, err := http.Get(callback); err == nil {
		t.Errorf("the listener still listens after the sign-in")
	}

	// A cancelled sign-in ends at once; a second sign-in ends the first.
	ctx, cancel := context.WithCancel(t.Context())
	opened := make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := th.Login(ctx, "remote", func(string) { close(opened) })
		done <- err
	}()
	<-opened
	second := make(chan error)
	go func() {
		_, err := th.Login(t.Context(), "remote", func(u string) { go oauthtest.Browse(t, u) })
		second <- err
	}()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "another sign-in") {
		t.Fatalf("the first sign-in: %v", err)
	}
	cancel()
	if err := <-second; err != nil {
		t.Fatalf("the second sign-in: %v", err)
	}
	th.waitState(t, "remote", StateReady)

	// A fixed redirect port.
	port := freePort(t)
	th2, _ := oauthHub(t, Options{})
	th2.applyTrusted(map[string]ServerConfig{"remote": oauthEntry("remote", rs.URL, &OAuthConfig{Grant: GrantAuthorizationCode, RedirectPort: port})})
	th2.waitState(t, "remote", StateNeedsAuth)
	login(t, th2, "remote")
	if q := as.LastAuthorize(); !strings.HasPrefix(q.Get("redirect_uri"), "http://127.0.0.1:"+itoa(port)+"/") {
		t.Errorf("redirect_uri %q, want port %d", q.Get("redirect_uri"), port)
	}
}

func TestOAuthNotForEveryServer(t *testing.T) {
	th, _ := oauthHub(t, Options{})
	th.applyTrusted(map[string]ServerConfig{
		"header": {Name: "header", Source: "test", Transport: "http", URL: "http://127.0.0.1:9/mcp", Enabled: true,
			Headers: map[string]string{"Authorization": "Bearer fixed"}},
		"local": stdio("local", "true"),
	})
	for name, want := range map[string]string{"header": "own Authorization header", "local": "stdio server", "nope": "no MCP server"} {
		if _, err := th.Login(t.Context(), name, func(string) {}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("login %s: %v, want %q", name, err, want)
		}
	}
	th.applyTrusted(nil)
	pending := oauthEntry("pending", "http://127.0.0.1:9/mcp", nil)
	th.Apply(map[string]ServerConfig{"pending": pending})
	if _, err := th.Login(t.Context(), "pending", func(string) {}); err == nil || !strings.Contains(err.Error(), "nexus mcp trust pending") {
		t.Errorf("login to a pending server: %v", err)
	}
}

func TestTokenStorePaths(t *testing.T) {
	ts := tokenStore{dir: t.TempDir()}
	for _, name := range []string{"..", "a/b", "x%y", "名前"} {
		p := ts.path(name)
		if filepath.Dir(p) != ts.dir || !strings.HasSuffix(p, ".json") {
			t.Errorf("%q → %s", name, p)
		}
		if err := ts.save(&signIn{Server: name, AccessToken: "t"}); err != nil {
			t.Fatal(err)
		}
		got, err := ts.load(name)
		if err != nil || got == nil || got.Server != name {
			t.Errorf("load %q: %+v %v", name, got, err)
		}
	}
	entries, _ := os.ReadDir(ts.dir)
	if len(entries) != 4 || slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.IsDir() }) {
		t.Errorf("entries %v", entries)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestOAuth2025_03_26 covers servers of the 2025-03-26 spec: no protected
// resource metadata, the server's origin is its authorization server —
// with metadata at the root (naming an issuer with a path), or none at all
// (the fallback endpoints /authorize, /token, /register).
func TestOAuth2025_03_26(t *testing.T) {
	for _, tc := range []struct {
		name       string
		prefix     string
		noMetadata bool
	}{
		{name: "metadata at the root", prefix: "/oauth"},
		{name: "no metadata", noMetadata: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := oauthtest.NewAuthServer(t, func(as *oauthtest.AuthServer) { as.Prefix, as.NoMetadata = tc.prefix, tc.noMetadata })
			rs := oauthtest.NewResourceServer(t, as, func(rs *oauthtest.ResourceServer) { rs.Legacy = true })
			th, _ := oauthHub(t, Options{})
			th.applyTrusted(map[string]ServerConfig{"old": oauthEntry("old", rs.URL, nil)})
			th.waitState(t, "old", StateNeedsAuth)
			login(t, th, "old")
			th.waitState(t, "old", StateReady)
			wantCompleted(t, th.call(t, "old", "echo", `{"text":"2025"}`), "echo: 2025")
			if q := as.LastAuthorize(); q.Get("resource") != rs.URL {
				t.Errorf("authorization request %v", q)
			}
		})
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
