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

type prmCandidate struct{ url, resource string }

// prmCandidates are the URLs of a server's protected resource metadata, in
// the order the MCP spec gives, each with the resource it must name.
func prmCandidates(c *challenge, serverURL string) []prmCandidate {
	var out []prmCandidate
	if c != nil {
		for _, ch := range c.parsed {
			if u := ch.Params["resource_metadata"]; u != "" {
				out = append(out, prmCandidate{u, serverURL})
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
		out = append(out, prmCandidate{m.String(), serverURL})
	}
	m.Path = "/.well-known/oauth-protected-resource"
	root := *u
	root.Path, root.RawPath, root.RawQuery, root.Fragment = "", "", "", ""
	return append(out, prmCandidate{m.String(), root.String()})
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
