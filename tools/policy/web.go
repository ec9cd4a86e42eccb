package policy

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/nexuscocreate/nexus/internal/inert"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/workspace"
)

// The core tools that reach the network (tools/core WebTools).
const (
	webFetch  = "web_fetch"
	webSearch = "web_search"
)

// WebRules are the rules of the network calls of the core tools web_fetch
// and web_search: the hosts they reach without asking.
type WebRules struct {
	// AllowedDomains are web.allowedDomains: "go.dev", "*.python.org", an
	// IP address (see [workspace.DomainAllowed]).
	AllowedDomains []string
	// SearchHost is the host of web_search's endpoint (web.search.url).
	SearchHost string
}

// isWeb reports whether d is web_fetch or web_search, the core tools.
func isWeb(d tools.Definition) bool {
	return d.ServerName == "" && (d.Name == webFetch || d.Name == webSearch)
}

// webHost is the host a web call reaches: web_fetch's URL's, web_search's
// endpoint's; "" when the arguments name none (the handler then refuses
// the call).
func (p *Policy) webHost(req *Request) string {
	if req.Tool.Name == webSearch {
		return p.web.SearchHost
	}
	return fetchHost(req.Args)
}

// fetchHost is the host of web_fetch's url argument, in lower case
// without a trailing dot, and in its ASCII form (xn--…) when it has other
// letters, as it is dialled; "" when it is not an http or https URL.
func fetchHost(args json.RawMessage) string {
	u, ok := fetchURL(args)
	if !ok {
		return ""
	}
	h, _ := workspace.ASCIIHost(u.Hostname())
	return h
}

func fetchURL(args json.RawMessage) (*url.URL, bool) {
	var a struct {
		URL string `json:"url"`
	}
	if json.Unmarshal(args, &a) != nil {
		return nil, false
	}
	u, err := url.Parse(strings.TrimSpace(a.URL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return nil, false
	}
	return u, true
}

// webVerdict is level 3 for a web call: allow when web.allowedDomains
// lists its host.
func (p *Policy) webVerdict(req *Request) (Verdict, bool) {
	host := p.webHost(req)
	if host == "" {
		return Verdict{}, false
	}
	pat, ok := workspace.DomainAllowed(p.web.AllowedDomains, host)
	if !ok {
		return Verdict{}, false
	}
	reason := fmt.Sprintf("web.allowedDomains: %s", pat)
	if pat != host {
		reason += fmt.Sprintf(" (for %s)", host)
	}
	return Verdict{Decision: Allow, Reason: reason}, true
}

// renderWeb renders a web call for the person: the URL, or the query.
func renderWeb(req Request) (string, bool) {
	if req.Tool.Name == webSearch {
		var a struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(req.Args, &a) != nil || a.Query == "" {
			return "", false
		}
		return "web_search " + ShellWord(a.Query), true
	}
	u, ok := fetchURL(req.Args)
	if !ok {
		return "", false
	}
	// A name in other letters is shown as it is dialled: "gо.dev" with a
	// Cyrillic о must not pass for go.dev.
	if a, changed := workspace.ASCIIHost(u.Hostname()); changed && a != "" {
		shown := *u
		shown.Host = a
		if p := u.Port(); p != "" {
			shown.Host += ":" + p
		}
		u = &shown
	}
	return "web_fetch " + inert.Line(u.Redacted()), true
}

// webRisk is the risk of a web call: its scope, the host, and what the
// person should know of it.
func webRisk(req Request, r *RiskAssessment) {
	if req.Tool.Name == webSearch {
		r.Scope = "network: the search provider (web.search.url)"
		r.Details = append(r.Details, "sends the query to the search provider")
		return
	}
	host := fetchHost(req.Args)
	r.Scope = "network: " + cmp.Or(inert.Line(host), "(no host)")
	r.Details = append(r.Details, "the daemon fetches the URL (the command sandbox's network rules do not apply)",
		"the page's text goes to the model, which may follow instructions hidden in it")
	if u, ok := fetchURL(req.Args); ok {
		if _, changed := workspace.ASCIIHost(u.Hostname()); changed {
			r.Details = append(r.Details, fmt.Sprintf("the URL writes the host in letters outside ASCII (%s): shown here as it is reached, %s",
				strconv.QuoteToASCII(u.Hostname()), cmp.Or(host, "(no ASCII form: the fetch fails)")))
		}
		if u.RawQuery != "" {
			r.Details = append(r.Details, "the URL's query string goes to "+inert.Line(host)+": it can carry data out")
		}
	}
	if local := localHost(host); local != "" {
		r.Details = append(r.Details, local)
	}
}

// localHost says when a host is this machine or a private network's, as
// far as its name tells (the handler checks the addresses it dials).
func localHost(host string) string {
	switch {
	case host == "localhost" || strings.HasSuffix(host, ".localhost"):
		return "the host is this machine"
	}
	if a, err := netip.ParseAddr(host); err == nil {
		switch {
		case a.IsLoopback():
			return "the host is this machine"
		case a.IsPrivate():
			return "the host is on a private network"
		}
	}
	return ""
}
