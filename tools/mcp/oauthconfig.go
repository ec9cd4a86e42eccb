package mcp

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// The grants of an oauth block.
const (
	// GrantAuthorizationCode is the default: a person signs in, in a
	// browser ("nexus mcp login", or Sign in in the editor).
	GrantAuthorizationCode = "authorization_code"
	// GrantClientCredentials is machine to machine: the hub gets its tokens
	// with the client's own credentials, and no person signs in.
	GrantClientCredentials = "client_credentials"
	// GrantEnterprise is Enterprise-Managed Authorization (SEP-990): the
	// person's ID token from the enterprise's identity provider is
	// exchanged there for an identity assertion grant (ID-JAG, RFC 8693),
	// which the server's authorization server takes for a token (the
	// JWT bearer grant, RFC 7523). The enterprise decides who gets which
	// server; no one signs in to the server itself.
	GrantEnterprise = "enterprise"
)

// OAuthConfig is the "oauth" block of an http server's entry: how the hub
// is authorized by the server's authorization server (the MCP
// authorization spec: OAuth 2.1). An http entry without the block signs in
// with the authorization code grant too, when its server asks, registering
// itself dynamically.
type OAuthConfig struct {
	// Grant is GrantAuthorizationCode, GrantClientCredentials or
	// GrantEnterprise.
	Grant string
	// ClientID is a client registered in advance with the authorization
	// server; "" registers one (Client ID Metadata Document or dynamic
	// registration).
	ClientID string
	// ClientSecretEnv names the daemon's environment variable that holds the
	// client's secret, and ClientSecret is its value: secrets are never
	// written in the entry. The value is not part of the pin, nor shown.
	ClientSecretEnv, ClientSecret string
	// PrivateKeyEnv names the variable that holds the client's private key
	// (PEM) for private_key_jwt client authentication (client_credentials),
	// signed with SigningAlgorithm, ES256 or RS256 ("" chooses by the key);
	// PrivateKey is its value, checked to be such a key.
	PrivateKeyEnv    string
	PrivateKey       string
	SigningAlgorithm string
	// Scopes are asked for besides those the server's challenge or metadata
	// name.
	Scopes []string
	// ClientMetadataURL is the client's Client ID Metadata Document (an
	// https URL), used as the client id by authorization servers that
	// support it.
	ClientMetadataURL string
	// RedirectPort fixes the port of the loopback redirect listener
	// (127.0.0.1); 0 is a random one.
	RedirectPort int
	// IdP is the enterprise identity provider of GrantEnterprise.
	IdP *IdPConfig
}

// IdPConfig is the "idp" block of the enterprise grant: the identity
// provider that vouches for the person, and where the person's ID token
// comes from.
type IdPConfig struct {
	// Issuer is the IdP's issuer URL: its token endpoint is found by
	// OpenID Connect discovery, unless TokenEndpoint names it.
	Issuer, TokenEndpoint string
	// ClientID is the hub's client at the IdP; ClientSecretEnv names the
	// variable of its secret, if it has one, and ClientSecret is its value.
	ClientID                      string
	ClientSecretEnv, ClientSecret string
	// IDTokenEnv names the variable that holds the person's ID token (IDToken
	// its value), or IDTokenCommand is a command (argv, run without a
	// shell) that prints one: the enterprise's single sign-on tool. The
	// command is run again each time a token is needed, so that an expired
	// ID token is replaced.
	IDTokenEnv, IDToken string
	IDTokenCommand      []string
}

// LaunchOAuth is the oauth block as the person approves it: everything but
// the secrets, which are named by their variables.
type LaunchOAuth struct {
	Grant             string     `json:"grant"`
	ClientID          string     `json:"clientId,omitempty"`
	ClientSecretEnv   string     `json:"clientSecretEnv,omitempty"`
	PrivateKeyEnv     string     `json:"privateKeyEnv,omitempty"`
	SigningAlgorithm  string     `json:"signingAlgorithm,omitempty"`
	Scopes            []string   `json:"scopes,omitempty"`
	ClientMetadataURL string     `json:"clientMetadataUrl,omitempty"`
	RedirectPort      int        `json:"redirectPort,omitempty"`
	IdP               *LaunchIdP `json:"idp,omitempty"`
}

// LaunchIdP is the idp block as the person approves it: the command that
// prints the ID token is part of it, the secrets are named by their
// variables.
type LaunchIdP struct {
	Issuer          string   `json:"issuer,omitempty"`
	TokenEndpoint   string   `json:"tokenEndpoint,omitempty"`
	ClientID        string   `json:"clientId"`
	ClientSecretEnv string   `json:"clientSecretEnv,omitempty"`
	IDTokenEnv      string   `json:"idTokenEnv,omitempty"`
	IDTokenCommand  []string `json:"idTokenCommand,omitempty"`
}

// launch returns what the person approves of o: nil for no block.
func (o *OAuthConfig) launch() *LaunchOAuth {
	if o == nil {
		return nil
	}
	l := &LaunchOAuth{Grant: o.Grant, ClientID: o.ClientID, ClientSecretEnv: o.ClientSecretEnv,
		PrivateKeyEnv: o.PrivateKeyEnv, SigningAlgorithm: o.SigningAlgorithm, Scopes: o.Scopes,
		ClientMetadataURL: o.ClientMetadataURL, RedirectPort: o.RedirectPort}
	if p := o.IdP; p != nil {
		l.IdP = &LaunchIdP{Issuer: p.Issuer, TokenEndpoint: p.TokenEndpoint, ClientID: p.ClientID,
			ClientSecretEnv: p.ClientSecretEnv, IDTokenEnv: p.IDTokenEnv, IDTokenCommand: p.IDTokenCommand}
	}
	return l
}

// oauth reads the "oauth" block of the entry of an http server (transport
// and headers are those of cfg). Problems are in e.errs, each naming its
// key.
func (e *entryParser) oauth(raw json.RawMessage, cfg *ServerConfig) *OAuthConfig {
	if raw == nil || string(raw) == "null" {
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		e.errorf(`"oauth" must be an object`)
		return nil
	}
	if cfg.Transport != "http" {
		e.errorf(`"oauth" is for http servers ("url"); a stdio server gets its credentials from its "env"`)
	}
	for k := range cfg.Headers {
		if strings.EqualFold(k, "Authorization") {
			e.errorf(`"oauth" and "headers.%s" are both set; the hub sends the token oauth gets, so remove the header`, k)
		}
	}
	o := &OAuthConfig{}
	for _, key := range slices.Sorted(maps.Keys(fields)) {
		v, name := fields[key], "oauth."+key
		switch key {
		case "grant":
			e.decode(name, v, &o.Grant, "a string")
		case "clientId":
			e.decode(name, v, &o.ClientID, "a string")
			o.ClientID = e.expand(name, o.ClientID)
		case "clientSecretEnv":
			e.decode(name, v, &o.ClientSecretEnv, "a string (the name of an environment variable)")
		case "privateKeyEnv":
			e.decode(name, v, &o.PrivateKeyEnv, "a string (the name of an environment variable)")
		case "signingAlgorithm":
			e.decode(name, v, &o.SigningAlgorithm, `"ES256" or "RS256"`)
		case "scopes":
			e.decode(name, v, &o.Scopes, "an array of strings")
			for i, s := range o.Scopes {
				o.Scopes[i] = e.expand(fmt.Sprintf("%s[%d]", name, i), s)
				if o.Scopes[i] == "" || strings.ContainsAny(o.Scopes[i], " \t\r\n\"\\") {
					e.errorf("%q: %q is not a scope (no spaces, quotes or backslashes)", name, s)
				}
			}
		case "clientMetadataUrl":
			e.decode(name, v, &o.ClientMetadataURL, "a string")
			o.ClientMetadataURL = e.expand(name, o.ClientMetadataURL)
		case "redirectPort":
			e.decode(name, v, &o.RedirectPort, "a port number")
		case "idp":
			o.IdP = e.idp(v)
		default:
			e.warnf("unknown key %q ignored", name)
		}
	}

	switch o.Grant {
	case "":
		o.Grant = GrantAuthorizationCode
	case GrantAuthorizationCode, GrantClientCredentials, GrantEnterprise:
	default:
		e.errorf(`"oauth.grant" %q is not %q, %q or %q`, o.Grant, GrantAuthorizationCode, GrantClientCredentials, GrantEnterprise)
	}
	o.ClientSecret = e.secret("oauth.clientSecretEnv", o.ClientSecretEnv)
	if pemKey := e.secret("oauth.privateKeyEnv", o.PrivateKeyEnv); pemKey != "" {
		if _, _, err := parsePrivateKey(pemKey, o.SigningAlgorithm); err != nil {
			// The message names the variable, never its value.
			e.errorf(`"oauth.privateKeyEnv": the variable %s does not hold a usable private key: %v`, o.PrivateKeyEnv, err)
		}
		o.PrivateKey = pemKey
	} else if o.SigningAlgorithm != "" && o.SigningAlgorithm != "ES256" && o.SigningAlgorithm != "RS256" {
		e.errorf(`"oauth.signingAlgorithm" %q is not "ES256" or "RS256"`, o.SigningAlgorithm)
	}
	if o.ClientMetadataURL != "" {
		if u, err := url.Parse(o.ClientMetadataURL); err != nil || u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") == "" {
			e.errorf(`"oauth.clientMetadataUrl" %q is not an https URL with a path (a Client ID Metadata Document)`, o.ClientMetadataURL)
		}
	}
	if o.RedirectPort < 0 || o.RedirectPort > 65535 {
		e.errorf(`"oauth.redirectPort" %d is not a port (1-65535, or 0 for a random one)`, o.RedirectPort)
	}
	switch {
	case o.ClientSecretEnv != "" && o.PrivateKeyEnv != "":
		e.errorf(`"oauth.clientSecretEnv" and "oauth.privateKeyEnv" are both set; the client authenticates with one of them`)
	case o.ClientSecretEnv != "" && o.ClientID == "":
		e.errorf(`"oauth.clientSecretEnv" needs "oauth.clientId", the client the secret is for`)
	}
	if o.Grant == GrantEnterprise {
		switch {
		case o.ClientID == "":
			e.errorf(`"oauth.clientId" is required for the enterprise grant (the client registered at the server's authorization server)`)
		case o.IdP == nil:
			e.errorf(`the enterprise grant needs "oauth.idp": the identity provider and where the person's ID token comes from`)
		}
	} else if o.IdP != nil {
		e.errorf(`"oauth.idp" is for the enterprise grant ("grant": %q)`, GrantEnterprise)
	}
	if o.Grant != GrantAuthorizationCode {
		for _, k := range []string{"clientMetadataUrl", "redirectPort"} {
			if _, ok := fields[k]; ok {
				e.errorf(`"oauth.%s" is for the authorization_code grant, where a person signs in`, k)
			}
		}
	}
	if o.Grant == GrantClientCredentials {
		switch {
		case o.ClientID == "":
			e.errorf(`"oauth.clientId" is required for the client_credentials grant`)
		case o.ClientSecretEnv == "" && o.PrivateKeyEnv == "":
			e.errorf(`the client_credentials grant needs "oauth.clientSecretEnv" or "oauth.privateKeyEnv" to authenticate the client`)
		}
	} else if o.PrivateKeyEnv != "" || o.SigningAlgorithm != "" {
		e.errorf(`"oauth.privateKeyEnv" and "oauth.signingAlgorithm" are for the client_credentials grant (private_key_jwt)`)
	}
	return o
}

// idp reads the "idp" block of the enterprise grant. Problems are in
// e.errs, each naming its key.
func (e *entryParser) idp(raw json.RawMessage) *IdPConfig {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		e.errorf(`"oauth.idp" must be an object`)
		return nil
	}
	p := &IdPConfig{}
	for _, key := range slices.Sorted(maps.Keys(fields)) {
		v, name := fields[key], "oauth.idp."+key
		switch key {
		case "issuer":
			e.decode(name, v, &p.Issuer, "a string")
			p.Issuer = e.expand(name, p.Issuer)
		case "tokenEndpoint":
			e.decode(name, v, &p.TokenEndpoint, "a string")
			p.TokenEndpoint = e.expand(name, p.TokenEndpoint)
		case "clientId":
			e.decode(name, v, &p.ClientID, "a string")
			p.ClientID = e.expand(name, p.ClientID)
		case "clientSecretEnv":
			e.decode(name, v, &p.ClientSecretEnv, "a string (the name of an environment variable)")
		case "idTokenEnv":
			e.decode(name, v, &p.IDTokenEnv, "a string (the name of an environment variable)")
		case "idTokenCommand":
			e.decode(name, v, &p.IDTokenCommand, "an array of strings (a command and its arguments)")
			for i, a := range p.IDTokenCommand {
				p.IDTokenCommand[i] = e.expand(fmt.Sprintf("%s[%d]", name, i), a)
			}
		default:
			e.warnf("unknown key %q ignored", name)
		}
	}
	for _, u := range []struct{ key, v string }{{"issuer", p.Issuer}, {"tokenEndpoint", p.TokenEndpoint}} {
		if u.v == "" {
			continue
		}
		if err := checkAuthServerURL(u.v); err != nil {
			e.errorf(`"oauth.idp.%s" %q: %v`, u.key, u.v, err)
		}
	}
	switch {
	case p.Issuer == "" && p.TokenEndpoint == "":
		e.errorf(`"oauth.idp" needs "issuer" (or "tokenEndpoint"): the identity provider that exchanges the person's ID token`)
	case p.ClientID == "":
		e.errorf(`"oauth.idp.clientId" is required: the client registered at the identity provider`)
	}
	switch {
	case p.IDTokenEnv != "" && len(p.IDTokenCommand) > 0:
		e.errorf(`"oauth.idp.idTokenEnv" and "oauth.idp.idTokenCommand" are both set; the ID token comes from one of them`)
	case p.IDTokenEnv == "" && len(p.IDTokenCommand) == 0:
		e.errorf(`"oauth.idp" needs "idTokenEnv" or "idTokenCommand": where the person's ID token comes from`)
	case len(p.IDTokenCommand) > 0 && p.IDTokenCommand[0] == "":
		e.errorf(`"oauth.idp.idTokenCommand" must start with the command to run`)
	}
	p.ClientSecret = e.secret("oauth.idp.clientSecretEnv", p.ClientSecretEnv)
	p.IDToken = e.secret("oauth.idp.idTokenEnv", p.IDTokenEnv)
	return p
}

// secret returns the value of the environment variable that the key names;
// "" for no name, with an error when it is not a variable name or is not
// set.
func (e *entryParser) secret(key, name string) string {
	if name == "" {
		return ""
	}
	if strings.ContainsAny(name, "=$ {}") {
		e.errorf("%q: %q is not an environment variable name (name the variable that holds the secret, without $)", key, name)
		return ""
	}
	v, ok := e.getenv(name)
	if !ok || v == "" {
		e.errorf("%q: the environment variable %s is not set in nexusd's environment", key, name)
		return ""
	}
	return v
}

// parsePrivateKey reads a PEM private key (PKCS #8, SEC 1 or PKCS #1) for
// signing client assertions with alg ("" chooses by the key: ES256 for a
// P-256 key, RS256 for RSA), and returns the key and the algorithm.
func parsePrivateKey(pemText, alg string) (crypto.Signer, string, error) {
	block, _ := pem.Decode([]byte(pemText))
	if block == nil {
		return nil, "", errors.New("no PEM block")
	}
	var key any
	var err error
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", block.Type, err)
	}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return nil, "", errors.New("an EC key must be on P-256 for ES256")
		}
		if alg != "" && alg != "ES256" {
			return nil, "", fmt.Errorf("an EC P-256 key signs ES256, not %q", alg)
		}
		return k, "ES256", nil
	case *rsa.PrivateKey:
		if alg != "" && alg != "RS256" {
			return nil, "", fmt.Errorf("an RSA key signs RS256, not %q", alg)
		}
		if k.N.BitLen() < 2048 {
			return nil, "", fmt.Errorf("an RSA key of %d bits is too short (2048 at least)", k.N.BitLen())
		}
		return k, "RS256", nil
	}
	return nil, "", fmt.Errorf("a %T is neither an EC P-256 nor an RSA key", key)
}
