package mcp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"reflect"
	"strings"
	"testing"
)

func pemKey(t *testing.T, key any) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

func TestLoadConfigOAuth(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecPEM := pemKey(t, ec)
	env := fakeEnv(map[string]string{"SECRET": "s3cret", "KEY": ecPEM, "NOT_A_KEY": "hello", "CLIENT": "from-env", "EMPTY": ""})
	const url = `"url": "https://mcp.example.com/mcp"`
	for _, tc := range []struct {
		name, entry string
		want        *OAuthConfig
		wantErr     []string // parts of Err
		warning     string
	}{
		{
			name:  "no block",
			entry: `{` + url + `}`,
		},
		{
			name:  "empty block: authorization code, dynamic registration",
			entry: `{` + url + `, "oauth": {}}`,
			want:  &OAuthConfig{Grant: GrantAuthorizationCode},
		},
		{
			name: "pre-registered client",
			entry: `{` + url + `, "oauth": {"clientId": "${CLIENT}", "clientSecretEnv": "SECRET", "scopes": ["read", "write"],
				"clientMetadataUrl": "https://nexus.example.com/client.json", "redirectPort": 8765}}`,
			want: &OAuthConfig{Grant: GrantAuthorizationCode, ClientID: "from-env", ClientSecretEnv: "SECRET", ClientSecret: "s3cret",
				Scopes: []string{"read", "write"}, ClientMetadataURL: "https://nexus.example.com/client.json", RedirectPort: 8765},
		},
		{
			name:  "client credentials with a secret",
			entry: `{` + url + `, "oauth": {"grant": "client_credentials", "clientId": "m2m", "clientSecretEnv": "SECRET"}}`,
			want:  &OAuthConfig{Grant: GrantClientCredentials, ClientID: "m2m", ClientSecretEnv: "SECRET", ClientSecret: "s3cret"},
		},
		{
			name:  "client credentials with a key",
			entry: `{` + url + `, "oauth": {"grant": "client_credentials", "clientId": "m2m", "privateKeyEnv": "KEY", "signingAlgorithm": "ES256"}}`,
			want:  &OAuthConfig{Grant: GrantClientCredentials, ClientID: "m2m", PrivateKeyEnv: "KEY", PrivateKey: ecPEM, SigningAlgorithm: "ES256"},
		},
		{
			name:    "unknown key",
			entry:   `{` + url + `, "oauth": {"clientSecret": "inline"}}`,
			want:    &OAuthConfig{Grant: GrantAuthorizationCode},
			warning: `unknown key "oauth.clientSecret" ignored`,
		},
		{name: "not an object", entry: `{` + url + `, "oauth": true}`, wantErr: []string{`"oauth" must be an object`}},
		{name: "stdio", entry: `{"command": "srv", "oauth": {}}`, wantErr: []string{`"oauth" is for http servers`}},
		{
			name:    "authorization header too",
			entry:   `{` + url + `, "headers": {"authorization": "Bearer x"}, "oauth": {}}`,
			wantErr: []string{`"oauth" and "headers.authorization" are both set`},
		},
		{name: "bad grant", entry: `{` + url + `, "oauth": {"grant": "password"}}`, wantErr: []string{`"oauth.grant" "password" is not`}},
		{
			name:    "secret variable not set",
			entry:   `{` + url + `, "oauth": {"clientId": "c", "clientSecretEnv": "MISSING"}}`,
			wantErr: []string{`"oauth.clientSecretEnv": the environment variable MISSING is not set in nexusd's environment`},
		},
		{
			name:    "secret variable empty",
			entry:   `{` + url + `, "oauth": {"clientId": "c", "clientSecretEnv": "EMPTY"}}`,
			wantErr: []string{`the environment variable EMPTY is not set`},
		},
		{
			name:    "secret written as a reference",
			entry:   `{` + url + `, "oauth": {"clientId": "c", "clientSecretEnv": "${SECRET}"}}`,
			wantErr: []string{`"oauth.clientSecretEnv": "${SECRET}" is not an environment variable name`},
		},
		{
			name:    "secret without client",
			entry:   `{` + url + `, "oauth": {"clientSecretEnv": "SECRET"}}`,
			wantErr: []string{`"oauth.clientSecretEnv" needs "oauth.clientId"`},
		},
		{
			name:    "client credentials without client",
			entry:   `{` + url + `, "oauth": {"grant": "client_credentials", "clientSecretEnv": "SECRET"}}`,
			wantErr: []string{`"oauth.clientId" is required for the client_credentials grant`},
		},
		{
			name:    "client credentials without credentials",
			entry:   `{` + url + `, "oauth": {"grant": "client_credentials", "clientId": "m2m", "redirectPort": 1234}}`,
			wantErr: []string{`needs "oauth.clientSecretEnv" or "oauth.privateKeyEnv"`, `"oauth.redirectPort" is for the authorization_code grant`},
		},
		{
			name:    "both secret and key",
			entry:   `{` + url + `, "oauth": {"grant": "client_credentials", "clientId": "m2m", "clientSecretEnv": "SECRET", "privateKeyEnv": "KEY"}}`,
			wantErr: []string{`are both set`},
		},
		{
			name:    "not a key, and the value is not shown",
			entry:   `{` + url + `, "oauth": {"grant": "client_credentials", "clientId": "m2m", "privateKeyEnv": "NOT_A_KEY"}}`,
			wantErr: []string{`"oauth.privateKeyEnv": the variable NOT_A_KEY does not hold a usable private key: no PEM block`},
		},
		{
			name:    "key of another algorithm",
			entry:   `{` + url + `, "oauth": {"grant": "client_credentials", "clientId": "m2m", "privateKeyEnv": "KEY", "signingAlgorithm": "RS256"}}`,
			wantErr: []string{`an EC P-256 key signs ES256, not "RS256"`},
		},
		{
			name:    "key with the authorization code grant",
			entry:   `{` + url + `, "oauth": {"privateKeyEnv": "KEY"}}`,
			wantErr: []string{`are for the client_credentials grant`},
		},
		{
			name:    "metadata document not https",
			entry:   `{` + url + `, "oauth": {"clientMetadataUrl": "http://example.com/client.json"}}`,
			wantErr: []string{`"oauth.clientMetadataUrl" "http://example.com/client.json" is not an https URL with a path`},
		},
		{
			name: "enterprise: an ID token from a variable",
			entry: `{` + url + `, "oauth": {"grant": "enterprise", "clientId": "mcp-client", "clientSecretEnv": "SECRET",
				"idp": {"issuer": "https://acme.okta.example", "clientId": "idp-client", "idTokenEnv": "SECRET"}}}`,
			want: &OAuthConfig{Grant: GrantEnterprise, ClientID: "mcp-client", ClientSecretEnv: "SECRET", ClientSecret: "s3cret",
				IdP: &IdPConfig{Issuer: "https://acme.okta.example", ClientID: "idp-client", IDTokenEnv: "SECRET", IDToken: "s3cret"}},
		},
		{
			name: "enterprise: an ID token from a command",
			entry: `{` + url + `, "oauth": {"grant": "enterprise", "clientId": "mcp-client",
				"idp": {"tokenEndpoint": "https://idp.example/token", "clientId": "${CLIENT}", "idTokenCommand": ["sso", "id-token", "--for", "${CLIENT}"]}}}`,
			want: &OAuthConfig{Grant: GrantEnterprise, ClientID: "mcp-client",
				IdP: &IdPConfig{TokenEndpoint: "https://idp.example/token", ClientID: "from-env", IDTokenCommand: []string{"sso", "id-token", "--for", "from-env"}}},
		},
		{
			name:    "enterprise without idp",
			entry:   `{` + url + `, "oauth": {"grant": "enterprise", "clientId": "c", "redirectPort": 1234}}`,
			wantErr: []string{`the enterprise grant needs "oauth.idp"`, `"oauth.redirectPort" is for the authorization_code grant`},
		},
		{
			name:    "enterprise idp incomplete",
			entry:   `{` + url + `, "oauth": {"grant": "enterprise", "clientId": "c", "idp": {"issuer": "http://idp.example"}}}`,
			wantErr: []string{`"oauth.idp.issuer" "http://idp.example": not an https URL`, `"oauth.idp.clientId" is required`, `needs "idTokenEnv" or "idTokenCommand"`},
		},
		{
			name: "enterprise idp with two sources of the ID token",
			entry: `{` + url + `, "oauth": {"grant": "enterprise", "clientId": "c",
				"idp": {"issuer": "https://idp.example", "clientId": "i", "idTokenEnv": "SECRET", "idTokenCommand": ["sso"]}}}`,
			wantErr: []string{`"oauth.idp.idTokenEnv" and "oauth.idp.idTokenCommand" are both set`},
		},
		{
			name:    "idp without the enterprise grant",
			entry:   `{` + url + `, "oauth": {"idp": {"issuer": "https://idp.example", "clientId": "i", "idTokenEnv": "SECRET"}}}`,
			wantErr: []string{`"oauth.idp" is for the enterprise grant`},
		},
		{name: "bad port", entry: `{` + url + `, "oauth": {"redirectPort": 70000}}`, wantErr: []string{`"oauth.redirectPort" 70000 is not a port`}},
		{name: "bad scope", entry: `{` + url + `, "oauth": {"scopes": ["a b"]}}`, wantErr: []string{`"oauth.scopes": "a b" is not a scope`}},
		{name: "scopes not strings", entry: `{` + url + `, "oauth": {"scopes": "a"}}`, wantErr: []string{`"oauth.scopes" must be an array of strings`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := writeWorkspace(t, map[string]string{".nexus/mcp.json": `{"mcpServers": {"x": ` + tc.entry + `}}`})
			servers, warnings, err := LoadConfig(ws, env)
			if err != nil {
				t.Fatal(err)
			}
			cfg := servers["x"]
			if len(tc.wantErr) > 0 {
				if cfg.Err == nil {
					t.Fatalf("no error; config %+v", cfg)
				}
				for _, part := range tc.wantErr {
					if !strings.Contains(cfg.Err.Error(), part) {
						t.Errorf("error %q does not say %q", cfg.Err, part)
					}
				}
				for _, secret := range []string{"s3cret", "hello", "BEGIN"} {
					if strings.Contains(cfg.Err.Error(), secret) {
						t.Errorf("error %q shows a secret", cfg.Err)
					}
				}
				return
			}
			if cfg.Err != nil {
				t.Fatal(cfg.Err)
			}
			if !reflect.DeepEqual(cfg.OAuth, tc.want) {
				t.Errorf("oauth %+v, want %+v", cfg.OAuth, tc.want)
			}
			if tc.warning != "" && !strings.Contains(strings.Join(warnings, "\n"), tc.warning) {
				t.Errorf("warnings %q, want %q", warnings, tc.warning)
			}
		})
	}
}

func TestParsePrivateKey(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ec384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	sec1, _ := x509.MarshalECPrivateKey(ec)
	pkcs1 := x509.MarshalPKCS1PrivateKey(rsaKey)
	for _, tc := range []struct {
		name, pem, alg, wantAlg, wantErr string
	}{
		{name: "pkcs8 ec", pem: pemKey(t, ec), wantAlg: "ES256"},
		{name: "sec1 ec", pem: string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1})), alg: "ES256", wantAlg: "ES256"},
		{name: "pkcs8 rsa", pem: pemKey(t, rsaKey), wantAlg: "RS256"},
		{name: "pkcs1 rsa", pem: string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: pkcs1})), alg: "RS256", wantAlg: "RS256"},
		{name: "p384", pem: pemKey(t, ec384), wantErr: "P-256"},
		{name: "rsa as es256", pem: pemKey(t, rsaKey), alg: "ES256", wantErr: "signs RS256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, alg, err := parsePrivateKey(tc.pem, tc.alg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || alg != tc.wantAlg {
				t.Fatalf("alg %q, error %v", alg, err)
			}
			if _, err := signJWS(key, "a.b"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestPinCoversOAuth(t *testing.T) {
	base := ServerConfig{Name: "w", Transport: "http", URL: "https://example.com/mcp"}
	bare := base.Launch().Pin()
	withBlock := base
	withBlock.OAuth = &OAuthConfig{Grant: GrantAuthorizationCode, ClientID: "c", ClientSecretEnv: "S", ClientSecret: "one"}
	pin := withBlock.Launch().Pin()
	if pin == bare {
		t.Fatal("adding an oauth block did not change the pin")
	}
	for what, change := range map[string]func(o *OAuthConfig){
		"grant":          func(o *OAuthConfig) { o.Grant = GrantClientCredentials },
		"client":         func(o *OAuthConfig) { o.ClientID = "other" },
		"secret's name":  func(o *OAuthConfig) { o.ClientSecretEnv = "OTHER" },
		"scopes":         func(o *OAuthConfig) { o.Scopes = []string{"admin"} },
		"metadata URL":   func(o *OAuthConfig) { o.ClientMetadataURL = "https://evil.example/client.json" },
		"redirect port":  func(o *OAuthConfig) { o.RedirectPort = 9999 },
		"key's name":     func(o *OAuthConfig) { o.PrivateKeyEnv = "K" },
		"algorithm":      func(o *OAuthConfig) { o.SigningAlgorithm = "RS256" },
		"key (no block)": func(o *OAuthConfig) { *o = OAuthConfig{} },
	} {
		c := withBlock
		o := *withBlock.OAuth
		change(&o)
		c.OAuth = &o
		if c.Launch().Pin() == pin {
			t.Errorf("oauth %s changed: the pin did not", what)
		}
	}
	// The secret's value comes from the daemon's environment, which no tool
	// call writes: it is not pinned, nor shown.
	c := withBlock
	o := *withBlock.OAuth
	o.ClientSecret, o.PrivateKey = "two", "key"
	c.OAuth = &o
	if c.Launch().Pin() != pin {
		t.Error("the secret's value changed the pin")
	}
	if l := c.Launch(); strings.Contains(l.Pin()+string(mustJSON(t, l)), "two") {
		t.Error("the launch values show the secret")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestIDTokenCommand(t *testing.T) {
	ctx := t.Context()
	tok, err := idToken(ctx, &IdPConfig{IDTokenCommand: []string{"sh", "-c", "printf '  eyJ.id.token  \\nsecond line\\n'"}})
	if err != nil || tok != "eyJ.id.token" {
		t.Fatalf("idToken = %q, %v; want the first line, trimmed", tok, err)
	}
	// A failure says what the command said on stderr, never its stdout.
	_, err = idToken(ctx, &IdPConfig{IDTokenCommand: []string{"sh", "-c", "echo partial-token; echo 'not signed in: run sso login' >&2; exit 3"}})
	if err == nil || !strings.Contains(err.Error(), "not signed in: run sso login") || !strings.Contains(err.Error(), "exit status 3") || strings.Contains(err.Error(), "partial-token") {
		t.Fatalf("error %v", err)
	}
	if _, err = idToken(ctx, &IdPConfig{IDTokenCommand: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "printed no ID token") {
		t.Fatalf("error %v", err)
	}
	if _, err = idToken(ctx, &IdPConfig{IDTokenCommand: []string{"head", "-c", "100000", "/dev/zero"}}); err == nil || !strings.Contains(err.Error(), "more than 64 KiB") {
		t.Fatalf("error %v", err)
	}
	if _, err = idToken(ctx, &IdPConfig{IDTokenCommand: []string{"/nonexistent/sso"}}); err == nil || !strings.Contains(err.Error(), "/nonexistent/sso") {
		t.Fatalf("error %v", err)
	}
	if tok, err = idToken(ctx, &IdPConfig{IDTokenEnv: "X", IDToken: "from-env"}); tok != "from-env" || err != nil {
		t.Fatalf("idToken = %q, %v", tok, err)
	}
}
