package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

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
		if cand.challenge {
			if err := checkMetadataURL(cand.url, serverURL); err != nil {
				return nil, fmt.Errorf("its challenge names the protected resource metadata %s: %w: refusing to fetch it", cand.url, err)
			}
		}
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

// prmCandidate is a URL of a server's protected resource metadata and the
// resource it must name; challenge is set for the URL the server's
// challenge named (resource_metadata), which checkMetadataURL vets.
type prmCandidate struct {
	url, resource string
	challenge     bool
}

// prmCandidates are the URLs of a server's protected resource metadata, in
// the order the MCP spec gives, each with the resource it must name.
func prmCandidates(c *challenge, serverURL string) []prmCandidate {
	var out []prmCandidate
	if c != nil {
		for _, ch := range c.parsed {
			if u := ch.Params["resource_metadata"]; u != "" {
				out = append(out, prmCandidate{u, serverURL, true})
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
		out = append(out, prmCandidate{m.String(), serverURL, false})
	}
	m.Path = "/.well-known/oauth-protected-resource"
	root := *u
	root.Path, root.RawPath, root.RawQuery, root.Fragment = "", "", "", ""
	return append(out, prmCandidate{m.String(), root.String(), false})
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

// checkMetadataURL is the rule for the resource_metadata URL a server's
// challenge names, which the sign-in would GET: a URL on the MCP server's
// own origin (scheme, host and port), or an https URL of a host that is
// not this machine. Never plain http to another origin, never another
// port of this machine: a server's challenge must not point the daemon's
// request at a local service, or send it in clear across the network.
func checkMetadataURL(raw, serverURL string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	s, err := url.Parse(serverURL)
	if err != nil {
		return err
	}
	switch {
	case u.Host != "" && origin(u) == origin(s):
		return nil
	case u.Scheme != "https" || u.Host == "":
		return errors.New("not on the MCP server's own origin, and not an https URL")
	case thisMachine(u.Hostname()):
		return errors.New("on this machine, but not on the MCP server's own origin")
	}
	return nil
}

// origin is a URL's scheme, host and port, the port written out.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// thisMachine reports whether host names this machine: localhost (and
// names under .localhost), a loopback address, or the unspecified one.
func thisMachine(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	return ip.IsLoopback() || ip.IsUnspecified()
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
