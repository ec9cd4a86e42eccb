package policy

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/tools"
)

var (
	webFetchDef  = tools.Definition{Name: "web_fetch", Kind: tools.KindFetch, Risk: tools.RiskMedium, Description: "Fetch a URL."}
	webSearchDef = tools.Definition{Name: "web_search", Kind: tools.KindFetch, Risk: tools.RiskMedium, Description: "Search."}
)

func urlArgs(u string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"url": u})
	return b
}

func TestDecideWeb(t *testing.T) {
	web := WebRules{AllowedDomains: []string{"go.dev", "*.python.org", "127.0.0.1"}, SearchHost: "searx.example"}
	for _, tc := range []struct {
		name   string
		rules  Rules
		app    string
		tool   tools.Definition
		args   json.RawMessage
		want   Decision
		reason string
	}{
		{"unlisted host asks", Rules{Web: web}, "", webFetchDef, urlArgs("https://example.org/"), Ask, "default for medium-risk tools: ask"},
		{"listed host allows", Rules{Web: web}, "", webFetchDef, urlArgs("https://go.dev/doc"), Allow, "web.allowedDomains: go.dev"},
		{"host in upper case", Rules{Web: web}, "", webFetchDef, urlArgs("https://GO.DEV./doc"), Allow, "web.allowedDomains: go.dev"},
		{"wildcard", Rules{Web: web}, "", webFetchDef, urlArgs("https://docs.python.org/3/"), Allow, "web.allowedDomains: *.python.org (for docs.python.org)"},
		{"wildcard is not the domain itself", Rules{Web: web}, "", webFetchDef, urlArgs("https://python.org/"), Ask, "medium-risk"},
		{"a suffix is not a subdomain", Rules{Web: web}, "", webFetchDef, urlArgs("https://notgo.dev/"), Ask, "medium-risk"},
		{"userinfo does not fool the host", Rules{Web: web}, "", webFetchDef, urlArgs("https://go.dev@evil.example/"), Ask, "medium-risk"},
		{"address and port", Rules{Web: web}, "", webFetchDef, urlArgs("http://127.0.0.1:8080/x"), Allow, "web.allowedDomains: 127.0.0.1"},
		{"not a URL", Rules{Web: web}, "", webFetchDef, urlArgs("go.dev"), Ask, "medium-risk"},
		{"tools.policy deny wins", Rules{Web: web, Tools: map[string]Decision{"web_fetch": Deny}}, "", webFetchDef, urlArgs("https://go.dev/"), Deny, "tools.policy"},
		{"an app's deny wins", Rules{Web: web, Apps: map[string]AppRules{"a": {Deny: []string{"web_fetch"}}}}, "a", webFetchDef, urlArgs("https://go.dev/"), Deny, `app "a" denies`},
		{"an app on a listed host", Rules{Web: web}, "a", webFetchDef, urlArgs("https://go.dev/"), Allow, "web.allowedDomains"},
		{"search at a listed provider", Rules{Web: WebRules{AllowedDomains: []string{"searx.example"}, SearchHost: "searx.example"}}, "", webSearchDef, json.RawMessage(`{"query":"q"}`), Allow, "web.allowedDomains: searx.example"},
		{"search elsewhere asks", Rules{Web: web}, "", webSearchDef, json.RawMessage(`{"query":"q"}`), Ask, "medium-risk"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.rules.Validate(); err != nil {
				t.Fatal(err)
			}
			v := New(tc.rules, nil).Decide(Request{AppID: tc.app, Agent: true, Tool: tc.tool, Args: tc.args})
			if v.Decision != tc.want || !strings.Contains(v.Reason, tc.reason) {
				t.Errorf("got %s (%s), want %s (%s)", v.Decision, v.Reason, tc.want, tc.reason)
			}
		})
	}
	if err := (Rules{Web: WebRules{AllowedDomains: []string{"https://go.dev"}}}).Validate(); err == nil || !strings.Contains(err.Error(), "web.allowedDomains[0]") {
		t.Errorf("a bad pattern: %v", err)
	}
}

// An "always" answer to web_fetch is for the host of the URL the person
// was shown, and no other.
func TestRememberWebHost(t *testing.T) {
	store, err := OpenApprovals(filepath.Join(t.TempDir(), "approvals.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := New(Rules{}, store)
	req := Request{Agent: true, Tool: webFetchDef, Args: urlArgs("https://Docs.Example.org/a?x=1")}
	if got, want := AlwaysText(req), `web_fetch of any URL on the host "docs.example.org", for the person and every agent session acting for the person`; got != want {
		t.Errorf("AlwaysText = %q, want %q", got, want)
	}
	if err := p.Record(req, AllowAlways, time.Now()); err != nil {
		t.Fatal(err)
	}
	for u, want := range map[string]Decision{
		"https://docs.example.org/b":      Allow,
		"http://docs.example.org:8080/":   Allow,
		"https://example.org/":            Ask,
		"https://evil.docs.example.org/":  Ask,
		"https://docs.example.org.evil/":  Ask,
		"https://docs.example.org@evil/x": Ask,
	} {
		if v := p.Decide(Request{Agent: true, Tool: webFetchDef, Args: urlArgs(u)}); v.Decision != want {
			t.Errorf("%s: %s (%s), want %s", u, v.Decision, v.Reason, want)
		}
	}
	list := store.List()
	if len(list) != 1 || list[0].Name() != "web_fetch:docs.example.org" || list[0].Kind() != "domain" ||
		list[0].Covers() != `web_fetch of any URL on the host "docs.example.org"` {
		t.Fatalf("stored %+v", list)
	}
	tool, s, err := ParseName("web_fetch:docs.example.org", "")
	if err != nil || tool != "web_fetch" || s.Domain != "docs.example.org" {
		t.Errorf("ParseName = %s %+v %v", tool, s, err)
	}
	if _, _, err := ParseName("web_fetch:*.example.org", ""); err == nil {
		t.Error("ParseName took a pattern for a web_fetch answer")
	}
	// The file is read back as it was written.
	again, err := OpenApprovals(store.Path())
	if err != nil || len(again.List()) != 1 {
		t.Fatalf("reopened: %v %v", again.List(), err)
	}
	if n, err := store.Revoke("", "web_fetch:docs.example.org", ""); n != 1 || err != nil {
		t.Errorf("revoke: %d %v", n, err)
	}
}

func TestWebICERC(t *testing.T) {
	r := BuildICERC(Request{Agent: true, Author: "agent:s1", Tool: webFetchDef, Args: urlArgs("http://127.0.0.1:9/p?token=abc")}, "", "")
	if r.Command != "web_fetch http://127.0.0.1:9/p?token=abc" || r.Risk.Scope != "network: 127.0.0.1" || r.ExpectedOutcome != "fetches data from the network" {
		t.Errorf("record %+v", r)
	}
	details := strings.Join(r.Risk.Details, "; ")
	for _, want := range []string{"the daemon fetches the URL", "may follow instructions", "query string goes to 127.0.0.1", "the host is this machine", "reaches the network"} {
		if !strings.Contains(details, want) {
			t.Errorf("details %q lack %q", details, want)
		}
	}
	// A host in Cyrillic letters is shown as it is reached, not as go.dev.
	r = BuildICERC(Request{Agent: true, Tool: webFetchDef, Args: urlArgs("https://g\u043e.dev:8443/dl")}, "", "")
	if r.Command != "web_fetch https://xn--g-1tb.dev:8443/dl" || r.Risk.Scope != "network: xn--g-1tb.dev" ||
		!strings.Contains(strings.Join(r.Risk.Details, "; "), `letters outside ASCII ("g\u043e.dev")`) ||
		r.Always != `web_fetch of any URL on the host "xn--g-1tb.dev", for the person and every agent session acting for the person` {
		t.Errorf("record of a Cyrillic host %+v", r)
	}
	if v := New(Rules{Web: WebRules{AllowedDomains: []string{"go.dev"}}}, nil).Decide(Request{Agent: true, Tool: webFetchDef, Args: urlArgs("https://g\u043e.dev/")}); v.Decision != Ask {
		t.Errorf("a Cyrillic go.dev: %s (%s)", v.Decision, v.Reason)
	}
	r = BuildICERC(Request{Agent: true, Tool: webSearchDef, Args: json.RawMessage(`{"query":"go\u202e generics"}`)}, "", "")
	if r.Command != `web_search $'go\u202e generics'` || r.Always != `"web_search", any arguments, for the person and every agent session acting for the person` {
		t.Errorf("search record %+v", r)
	}
}
