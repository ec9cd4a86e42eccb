package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// Enterprise-Managed Authorization (SEP-990, GrantEnterprise): the person's
// ID token, from the enterprise's identity provider, is exchanged at that
// IdP for an Identity Assertion JWT Authorization Grant (ID-JAG: RFC 8693
// token exchange, for the server's authorization server and resource),
// which the authorization server takes for an access token (RFC 7523's
// JWT bearer grant, the client authenticated as its metadata says). No one
// signs in to the server: the enterprise's policy at its IdP decides.
//
// The go-sdk's extauth.EnterpriseHandler does the same two steps, but it
// discovers again by itself and sends the client's secret in the form,
// where RFC 6749 says a server must take HTTP Basic (and the conformance
// suite's authorization server takes only that); this is written on the
// go-sdk's oauthex and golang.org/x/oauth2 like the other grants here.

const (
	grantTypeJWTBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	// idTokenCommandLimit bounds what an idTokenCommand may print.
	idTokenCommandLimit = 64 << 10
)

// enterprise gets a token by the enterprise grant, from discovery on, and
// makes it the hub's: its source gets a new one (a new ID token, a new
// exchange) when it expires.
func (a *serverAuth) enterprise(ctx context.Context, c *challenge) error {
	return a.machineGrant(ctx, c, "enterprise (ID-JAG from "+a.idpName()+")", func(d *discovered, scopes []string) oauth2.TokenSource {
		return &idJAGSource{a: a, asm: d.asm, resource: d.resource, scopes: scopes}
	})
}

// idpName names the IdP in logs and errors.
func (a *serverAuth) idpName() string {
	if p := a.cfg.IdP; p != nil && p.Issuer != "" {
		return p.Issuer
	} else if p != nil {
		return p.TokenEndpoint
	}
	return ""
}

// idJAGSource gets access tokens by the enterprise grant: each time, the
// person's ID token, its exchange for an ID-JAG at the IdP, and the JWT
// bearer grant at the server's authorization server.
type idJAGSource struct {
	a        *serverAuth
	asm      *oauthex.AuthServerMeta
	resource string
	scopes   []string
	// idpEndpoint is the IdP's token endpoint, once known.
	idpEndpoint string
}

func (s *idJAGSource) Token() (*oauth2.Token, error) {
	ctx, cancel := context.WithTimeout(context.Background(), oauthTimeout)
	defer cancel()
	a, p := s.a, s.a.cfg.IdP
	idToken, err := idToken(ctx, p)
	if err != nil {
		return nil, err
	}
	if s.idpEndpoint == "" { // discovered once: the source's calls are serialized (oauth2.ReuseTokenSource)
		s.idpEndpoint = p.TokenEndpoint
		if s.idpEndpoint == "" {
			if s.idpEndpoint, err = idpTokenEndpoint(ctx, a.client, p.Issuer); err != nil {
				return nil, err
			}
		}
	}
	endpoint := s.idpEndpoint
	creds := &oauthex.ClientCredentials{ClientID: p.ClientID}
	if p.ClientSecret != "" {
		creds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: p.ClientSecret}
	}
	// The audience is the authorization server that takes the grant, the
	// resource the server: the IdP's policy decides on both.
	jag, err := oauthex.ExchangeToken(ctx, endpoint, &oauthex.TokenExchangeRequest{
		RequestedTokenType: oauthex.TokenTypeIDJAG,
		Audience:           s.asm.Issuer,
		Resource:           s.resource,
		Scope:              s.scopes,
		SubjectToken:       idToken,
		SubjectTokenType:   oauthex.TokenTypeIDToken,
	}, creds, a.client)
	if err != nil {
		return nil, fmt.Errorf("the identity provider %s refused to exchange the person's ID token for an ID-JAG (%s): %w",
			a.idpName(), idTokenOrigin(p), err)
	}
	if got, _ := jag.Extra("issued_token_type").(string); got != oauthex.TokenTypeIDJAG {
		return nil, fmt.Errorf("the identity provider %s issued a %q, not an ID-JAG", a.idpName(), got)
	}
	o := a.cfg
	cfg := oauth2.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, Scopes: s.scopes,
		Endpoint: oauth2.Endpoint{TokenURL: s.asm.TokenEndpoint, AuthStyle: clientAuthStyle(s.asm.TokenEndpointAuthMethodsSupported, o.ClientSecret)}}
	opts := []oauth2.AuthCodeOption{
		oauth2.SetAuthURLParam("grant_type", grantTypeJWTBearer),
		oauth2.SetAuthURLParam("assertion", jag.AccessToken),
	}
	if len(s.scopes) > 0 {
		opts = append(opts, oauth2.SetAuthURLParam("scope", strings.Join(s.scopes, " ")))
	}
	// x/oauth2 has no JWT bearer grant: Exchange with its grant_type and
	// assertion replaced sends an empty code too, which RFC 6749 §3.2 says
	// a server treats as absent.
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, a.client), "", opts...)
	if err != nil {
		return nil, fmt.Errorf("the JWT bearer grant of the ID-JAG: %w", err)
	}
	return tok, nil
}

// idpTokenEndpoint finds the token endpoint of the IdP issuer by OpenID
// Connect discovery, else RFC 8414's metadata. (The go-sdk's discovery
// wants PKCE, which an IdP needs for sign-ins, not for token exchange.)
func idpTokenEndpoint(ctx context.Context, client *http.Client, issuer string) (string, error) {
	base := strings.TrimSuffix(issuer, "/")
	for _, u := range []string{base + "/.well-known/openid-configuration", base + "/.well-known/oauth-authorization-server"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return "", err
		}
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return "", fmt.Errorf("the identity provider %s: its metadata %s: %w", issuer, u, err)
		}
		var m struct {
			Issuer        string `json:"issuer"`
			TokenEndpoint string `json:"token_endpoint"`
		}
		err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&m)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil {
			continue
		}
		if strings.TrimSuffix(m.Issuer, "/") != base {
			return "", fmt.Errorf("the identity provider %s: its metadata %s names another issuer, %q", issuer, u, m.Issuer)
		}
		if err := checkAuthServerURL(m.TokenEndpoint); err != nil {
			return "", fmt.Errorf("the identity provider %s: its token endpoint %q: %w", issuer, m.TokenEndpoint, err)
		}
		return m.TokenEndpoint, nil
	}
	return "", fmt.Errorf("the identity provider %s publishes no metadata (OpenID Connect discovery): set \"oauth.idp.tokenEndpoint\"", issuer)
}

// idToken is the person's ID token: the variable's value, or what the
// command prints (its first line, trimmed).
func idToken(ctx context.Context, p *IdPConfig) (string, error) {
	if len(p.IDTokenCommand) == 0 {
		return p.IDToken, nil
	}
	cmd := exec.CommandContext(ctx, p.IDTokenCommand[0], p.IDTokenCommand[1:]...)
	var out, errOut limitedBuffer
	out.limit, errOut.limit = idTokenCommandLimit, 4<<10
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil {
		// Its stderr may say why (sign in first); its stdout may hold a
		// token, and is never shown.
		msg := strings.TrimSpace(errOut.String())
		if msg != "" {
			msg = ": " + msg
		}
		return "", fmt.Errorf("oauth.idp.idTokenCommand %q: %w%s", p.IDTokenCommand[0], err, msg)
	}
	if out.over {
		return "", fmt.Errorf("oauth.idp.idTokenCommand %q printed more than %d KiB, which is no ID token", p.IDTokenCommand[0], idTokenCommandLimit>>10)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
	if line = strings.TrimSpace(line); line == "" {
		return "", fmt.Errorf("oauth.idp.idTokenCommand %q printed no ID token", p.IDTokenCommand[0])
	}
	return line, nil
}

// idTokenOrigin says where the ID token came from, for errors: an ID token
// that expired is mended there.
func idTokenOrigin(p *IdPConfig) string {
	if len(p.IDTokenCommand) > 0 {
		return "from oauth.idp.idTokenCommand " + p.IDTokenCommand[0]
	}
	return "from the variable " + p.IDTokenEnv + ": an expired ID token needs a new value and a restart of nexusd"
}

// limitedBuffer keeps the first limit bytes written to it, and drops the
// rest, saying so in over. (Not an embedded bytes.Buffer: io.Copy would
// use its ReadFrom, past the limit.)
type limitedBuffer struct {
	buf   bytes.Buffer
	limit int
	over  bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.buf.Len(); len(p) > room {
		b.buf.Write(p[:max(0, room)])
		b.over = true
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *limitedBuffer) String() string { return b.buf.String() }
