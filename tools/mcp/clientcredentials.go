package mcp

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// The client_credentials grant (SEP-1046): machine to machine, no person.
// The go-sdk's extauth.ClientCredentialsHandler has neither the resource
// parameter nor private_key_jwt; this is written on x/oauth2.

// clientCredentials gets a token with the client's own credentials (the
// client_credentials grant, no person): discovery, then the token endpoint
// with the resource and the scopes, the client authenticated by its secret
// (client_secret_basic or _post, as the server supports) or by a JWT
// signed with its private key (private_key_jwt).
func (a *serverAuth) clientCredentials(ctx context.Context, c *challenge) error {
	return a.machineGrant(ctx, c, "client_credentials", func(d *discovered, scopes []string) oauth2.TokenSource {
		return &ccSource{a: a, asm: d.asm, resource: d.resource, scopes: scopes}
	})
}

// machineGrant gets a token by a grant without a person (grant names it in
// the log): discovery from the challenge, the scopes (those of the
// challenge, else the server's scopes_supported, with those granted before
// and the configured ones), the first token from the source that newSource
// makes, which gets the next ones as they expire.
func (a *serverAuth) machineGrant(ctx context.Context, c *challenge, grant string, newSource func(d *discovered, scopes []string) oauth2.TokenSource) error {
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
	src := newSource(d, scopes)
	tok, err := src.Token()
	if err != nil {
		return fmt.Errorf("MCP server %q: the %s grant at %s: %w", a.name, grant, d.asm.TokenEndpoint, err)
	}
	if got := tokenScopes(tok); got != nil {
		scopes = got
	}
	a.mu.Lock()
	a.cc, a.ccScopes = oauth2.ReuseTokenSource(tok, src), scopes
	a.mu.Unlock()
	a.hub.logger.Info("MCP server authorized the hub", "server", a.name, "grant", grant, "issuer", d.asm.Issuer)
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
