package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/tools/mcp"
)

// suiteScenarios are the client scenarios of "conformance list --client" in
// @modelcontextprotocol/conformance 0.1.16, the version
// integration/mcpconformance/package.json pins.
var suiteScenarios = []string{
	"initialize",
	"tools_call",
	"elicitation-sep1034-client-defaults",
	"sse-retry",
	"auth/metadata-default",
	"auth/metadata-var1",
	"auth/metadata-var2",
	"auth/metadata-var3",
	"auth/basic-cimd",
	"auth/scope-from-www-authenticate",
	"auth/scope-from-scopes-supported",
	"auth/scope-omitted-when-undefined",
	"auth/scope-step-up",
	"auth/scope-retry-limit",
	"auth/token-endpoint-auth-basic",
	"auth/token-endpoint-auth-post",
	"auth/token-endpoint-auth-none",
	"auth/pre-registration",
	"auth/2025-03-26-oauth-metadata-backcompat",
	"auth/2025-03-26-oauth-endpoint-fallback",
	"auth/resource-mismatch",
	"auth/offline-access-scope",
	"auth/offline-access-not-supported",
	"auth/client-credentials-jwt",
	"auth/client-credentials-basic",
	"auth/cross-app-access-complete-flow",
}

func TestPlansCoverTheSuite(t *testing.T) {
	if got, want := slices.Sorted(maps.Keys(plans)), slices.Sorted(slices.Values(suiteScenarios)); !slices.Equal(got, want) {
		t.Errorf("plans are for %q\nthe suite's client scenarios are %q", got, want)
	}
	for name, p := range plans {
		if p.Args != "" && !json.Valid([]byte(p.Args)) {
			t.Errorf("%s: Args %q is not JSON", name, p.Args)
		}
		if p.Args != "" && p.Tool == "" {
			t.Errorf("%s: Args without a Tool", name)
		}
		if auth := strings.HasPrefix(name, "auth/"); auth != (p.Grant != "") {
			t.Errorf("%s: Grant %q: every auth/ scenario and only those sign in", name, p.Grant)
		}
	}
}

func TestWorkspaceConfig(t *testing.T) {
	const serverURL = "http://localhost:4321/mcp"
	tests := []struct {
		scenario, context string
		want              serverEntry
		wantEnv           map[string]string
	}{{
		scenario: "tools_call",
		want:     serverEntry{Type: "http", URL: serverURL},
	}, {
		scenario: "auth/metadata-default",
		want: serverEntry{Type: "http", URL: serverURL, OAuth: &oauthConfig{
			Grant: authorizationCode, ClientMetadataURL: clientMetadataURL}},
	}, {
		scenario: "auth/pre-registration",
		context:  `{"name":"auth/pre-registration","client_id":"pre-registered-client","client_secret":"pre-registered-secret"}`,
		want: serverEntry{Type: "http", URL: serverURL, OAuth: &oauthConfig{
			Grant: authorizationCode, ClientID: "pre-registered-client", ClientSecretEnv: secretEnv, ClientMetadataURL: clientMetadataURL}},
		wantEnv: map[string]string{secretEnv: "pre-registered-secret"},
	}, {
		scenario: "auth/client-credentials-basic",
		context:  `{"name":"auth/client-credentials-basic","client_id":"conformance-test-client","client_secret":"conformance-test-secret"}`,
		want: serverEntry{Type: "http", URL: serverURL, OAuth: &oauthConfig{
			Grant: clientCredentials, ClientID: "conformance-test-client", ClientSecretEnv: secretEnv}},
		wantEnv: map[string]string{secretEnv: "conformance-test-secret"},
	}, {
		scenario: "auth/client-credentials-jwt",
		context:  `{"name":"auth/client-credentials-jwt","client_id":"conformance-test-client","private_key_pem":"-----BEGIN PRIVATE KEY-----\nMIG\n-----END PRIVATE KEY-----\n","signing_algorithm":"ES256"}`,
		want: serverEntry{Type: "http", URL: serverURL, OAuth: &oauthConfig{
			Grant: clientCredentials, ClientID: "conformance-test-client", PrivateKeyEnv: privateKeyEnv, SigningAlgorithm: "ES256"}},
		wantEnv: map[string]string{privateKeyEnv: "-----BEGIN PRIVATE KEY-----\nMIG\n-----END PRIVATE KEY-----\n"},
	}}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			sc, err := parseContext(tt.context)
			if err != nil {
				t.Fatal(err)
			}
			cfg, env := workspaceConfig(plans[tt.scenario], serverURL, sc)
			got, _ := json.Marshal(cfg)
			want, _ := json.Marshal(mcpConfig{Servers: map[string]serverEntry{serverName: tt.want}})
			if string(got) != string(want) {
				t.Errorf("config\n got %s\nwant %s", got, want)
			}
			if !maps.Equal(env, tt.wantEnv) {
				t.Errorf("env %q, want %q", env, tt.wantEnv)
			}
			if strings.Contains(string(got), "secret\"") || strings.Contains(string(got), "PRIVATE KEY") {
				t.Errorf("the config holds a secret, not the name of its variable: %s", got)
			}

			// The daemon's own loader reads the file the driver writes.
			ws := t.TempDir()
			if err := writeWorkspace(ws, cfg); err != nil {
				t.Fatal(err)
			}
			// The variables the driver exports into nexusd's environment
			// (the table's private key is a placeholder: a real one here).
			servers, _, err := mcp.LoadConfig(ws, func(k string) (string, bool) {
				if k == privateKeyEnv {
					return testKeyPEM(t), true
				}
				v, ok := env[k]
				return v, ok
			})
			if err != nil {
				t.Fatal(err)
			}
			s, ok := servers[serverName]
			if !ok || s.Err != nil || s.Transport != "http" || s.URL != serverURL || s.Source != ".nexus/mcp.json" {
				t.Errorf("LoadConfig read %+v", servers)
			}
		})
	}
}

func TestParseContextRejectsNonObjects(t *testing.T) {
	if _, err := parseContext(`["a"]`); err == nil {
		t.Error("parseContext accepted an array")
	}
	if c, err := parseContext(""); err != nil || c != (scenarioContext{}) {
		t.Errorf("parseContext(\"\") = %+v, %v", c, err)
	}
}

func TestBrowserScriptRunsTheDriver(t *testing.T) {
	d := &daemon{ws: t.TempDir(), bins: bins{self: "/opt/it's here/driver"}}
	path, err := d.browser()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "#!/bin/sh\nexec '/opt/it'\\''s here/driver' browse \"$@\"\n"; string(data) != want {
		t.Errorf("browser.sh is %q, want %q", data, want)
	}
	if fi, _ := os.Stat(path); fi.Mode()&0o100 == 0 || filepath.Dir(path) != d.ws {
		t.Errorf("browser.sh: mode %v in %s", fi.Mode(), filepath.Dir(path))
	}
}

// TestBrowseFollowsTheRedirect plays the suite's authorization server, which
// redirects at once to the client's loopback redirect URI with the code.
func TestBrowseFollowsTheRedirect(t *testing.T) {
	var got string
	callback := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.Query().Get("code")
		if r.URL.Query().Get("state") != "s1" {
			http.Error(w, "state mismatch", http.StatusBadRequest)
			return
		}
		io.WriteString(w, "signed in")
	}))
	defer callback.Close()
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		redirect := r.URL.Query().Get("redirect_uri") + "?code=test-auth-code&state=" + r.URL.Query().Get("state")
		http.Redirect(w, r, redirect, http.StatusFound)
	}))
	defer as.Close()

	authorize := as.URL + "/authorize?" + url.Values{"redirect_uri": {callback.URL + "/callback"}, "state": {"s1"}}.Encode()
	if err := browse(authorize); err != nil || got != "test-auth-code" {
		t.Errorf("browse: %v; the callback got code %q", err, got)
	}
	bad := as.URL + "/authorize?" + url.Values{"redirect_uri": {callback.URL + "/callback"}, "state": {"other"}}.Encode()
	if err := browse(bad); err == nil || !strings.Contains(err.Error(), "state mismatch") {
		t.Errorf("browse of a callback that answers 400: %v", err)
	}
}

// testKeyPEM is a fresh ES256 private key in PKCS#8 PEM, as the suite hands out.
func testKeyPEM(t *testing.T) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}
