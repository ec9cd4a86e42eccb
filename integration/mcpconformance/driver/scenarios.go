package main

import (
	"encoding/json"
	"fmt"
)

// serverName is the name of the suite's server in the workspace's .nexus/mcp.json.
const serverName = "conformance"

// Grants of the oauth block of a server entry.
const (
	authorizationCode = "authorization_code"
	clientCredentials = "client_credentials"
	enterprise        = "enterprise"
)

// The environment variables that carry the scenario's secrets into nexusd:
// the entry names them, never holds them.
const (
	secretEnv     = "NEXUS_CONFORMANCE_CLIENT_SECRET"
	privateKeyEnv = "NEXUS_CONFORMANCE_PRIVATE_KEY"
	idTokenEnv    = "NEXUS_CONFORMANCE_ID_TOKEN"
)

// clientMetadataURL is the client ID metadata document (CIMD) URL the
// suite's authorization servers accept as a client_id; the SDKs'
// conformance clients use it for every authorization-code scenario.
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

// maxLogins bounds the sign-ins of one scenario: step-up authorization
// needs a second one, and the suite counts more than 3 as an endless loop.
const maxLogins = 3

// A plan is what the driver does in a scenario, as the SDKs' own
// conformance clients do: connect (the hub does, once the server is
// approved), list the tools, call one.
type plan struct {
	// Tool is called once the server is ready, with Args (a JSON object);
	// "" only lists the tools.
	Tool, Args string
	// Grant is how the entry signs in: "" not at all; authorizationCode
	// runs "nexus mcp login" whenever the server needs it, at most
	// maxLogins times; clientCredentials and enterprise let the hub get a
	// token when it connects.
	Grant string
}

// authCode is the plan of the authorization-code scenarios: sign in, list
// the tools and call test-tool.
var authCode = plan{Tool: "test-tool", Grant: authorizationCode}

// plans has one entry for each client scenario of the suite (0.1.16).
var plans = map[string]plan{
	"initialize":                          {},
	"tools_call":                          {Tool: "add_numbers", Args: `{"a":5,"b":3}`},
	"elicitation-sep1034-client-defaults": {Tool: "test_client_elicitation_defaults"},
	"sse-retry":                           {Tool: "test_reconnection"},

	"auth/metadata-default":                     authCode,
	"auth/metadata-var1":                        authCode,
	"auth/metadata-var2":                        authCode,
	"auth/metadata-var3":                        authCode,
	"auth/basic-cimd":                           authCode,
	"auth/scope-from-www-authenticate":          authCode,
	"auth/scope-from-scopes-supported":          authCode,
	"auth/scope-omitted-when-undefined":         authCode,
	"auth/scope-step-up":                        authCode,
	"auth/scope-retry-limit":                    authCode,
	"auth/token-endpoint-auth-basic":            authCode,
	"auth/token-endpoint-auth-post":             authCode,
	"auth/token-endpoint-auth-none":             authCode,
	"auth/pre-registration":                     authCode, // with the client of the context
	"auth/2025-03-26-oauth-metadata-backcompat": authCode,
	"auth/2025-03-26-oauth-endpoint-fallback":   authCode,
	"auth/resource-mismatch":                    authCode, // nexus mcp login must refuse
	"auth/offline-access-scope":                 authCode,
	"auth/offline-access-not-supported":         authCode,
	// SEP-990: the context's ID token, exchanged at its IdP for an ID-JAG.
	"auth/cross-app-access-complete-flow": {Tool: "test-tool", Grant: enterprise},

	"auth/client-credentials-basic": {Grant: clientCredentials},
	"auth/client-credentials-jwt":   {Grant: clientCredentials},
}

// scenarioContext is MCP_CONFORMANCE_CONTEXT: what some scenarios give the
// client, such as a pre-registered client.
type scenarioContext struct {
	Name             string `json:"name"`
	ClientID         string `json:"client_id"`
	ClientSecret     string `json:"client_secret"`
	PrivateKeyPEM    string `json:"private_key_pem"`
	SigningAlgorithm string `json:"signing_algorithm"`
	// The enterprise IdP of SEP-990: the person's ID token, the client
	// registered there, and where it is.
	IdPClientID      string `json:"idp_client_id"`
	IdPIDToken       string `json:"idp_id_token"`
	IdPIssuer        string `json:"idp_issuer"`
	IdPTokenEndpoint string `json:"idp_token_endpoint"`
}

func parseContext(s string) (scenarioContext, error) {
	var c scenarioContext
	if s == "" {
		return c, nil
	}
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		return c, fmt.Errorf("MCP_CONFORMANCE_CONTEXT is not a JSON object: %w", err)
	}
	return c, nil
}

// mcpConfig is .nexus/mcp.json.
type mcpConfig struct {
	Servers map[string]serverEntry `json:"mcpServers"`
}

type serverEntry struct {
	Type  string       `json:"type"`
	URL   string       `json:"url"`
	OAuth *oauthConfig `json:"oauth,omitempty"`
}

// oauthConfig is the oauth block of a server entry. Secrets are the names
// of environment variables of nexusd.
type oauthConfig struct {
	Grant             string   `json:"grant"`
	ClientID          string   `json:"clientId,omitempty"`
	ClientSecretEnv   string   `json:"clientSecretEnv,omitempty"`
	Scopes            []string `json:"scopes,omitempty"`
	ClientMetadataURL string   `json:"clientMetadataUrl,omitempty"`
	// PrivateKeyEnv and SigningAlgorithm are for private_key_jwt client
	// authentication (auth/client-credentials-jwt): a PEM key in the
	// variable.
	PrivateKeyEnv    string     `json:"privateKeyEnv,omitempty"`
	SigningAlgorithm string     `json:"signingAlgorithm,omitempty"`
	IdP              *idpConfig `json:"idp,omitempty"`
}

// idpConfig is the idp block of the enterprise grant.
type idpConfig struct {
	Issuer     string `json:"issuer"`
	ClientID   string `json:"clientId"`
	IDTokenEnv string `json:"idTokenEnv"`
}

// workspaceConfig returns the .nexus/mcp.json that declares the suite's
// server at url for plan p, and the variables nexusd needs for the secrets
// it names.
func workspaceConfig(p plan, url string, c scenarioContext) (mcpConfig, map[string]string) {
	entry := serverEntry{Type: "http", URL: url}
	env := map[string]string{}
	if p.Grant != "" {
		o := &oauthConfig{Grant: p.Grant, ClientID: c.ClientID}
		if p.Grant == authorizationCode {
			o.ClientMetadataURL = clientMetadataURL
		}
		if c.ClientSecret != "" {
			o.ClientSecretEnv = secretEnv
			env[secretEnv] = c.ClientSecret
		}
		if c.PrivateKeyPEM != "" {
			o.PrivateKeyEnv = privateKeyEnv
			o.SigningAlgorithm = c.SigningAlgorithm
			env[privateKeyEnv] = c.PrivateKeyPEM
		}
		if p.Grant == enterprise {
			o.IdP = &idpConfig{Issuer: c.IdPIssuer, ClientID: c.IdPClientID, IDTokenEnv: idTokenEnv}
			env[idTokenEnv] = c.IdPIDToken
		}
		entry.OAuth = o
	}
	return mcpConfig{Servers: map[string]serverEntry{serverName: entry}}, env
}
