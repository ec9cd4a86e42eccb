package server

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/tools/mcp"
	"github.com/nexuscocreate/nexus/tools/mcp/oauthtest"
)

// TestMcpLogin: nexus/mcp/login asks the editor to open the authorization
// URL in the browser (window/showDocument, external) and answers once the
// person signed in; an editor that cannot open it is told the URL;
// nexus/mcp/logout deletes the tokens and the server waits for a sign-in
// again.
func TestMcpLogin(t *testing.T) {
	p := newParts(t)
	as := oauthtest.NewAuthServer(t, nil)
	rs := oauthtest.NewResourceServer(t, as, nil)
	hub := mcp.New(mcp.Options{Workspace: p.dir, Tools: p.tools, Bus: p.bus})
	t.Cleanup(hub.Close)
	hub.Apply(map[string]mcp.ServerConfig{"remote": {Name: "remote", Source: ".nexus/mcp.json", Transport: "http", URL: rs.URL, Enabled: true}})
	if _, err := hub.Trust(editor, "remote", ""); err != nil {
		t.Fatal(err)
	}
	opts := p.options()
	opts.MCP = hub
	c := connect(t, serve(t, opts))
	c.initialize(t)
	for deadline := time.Now().Add(20 * time.Second); statusOf(hub, "remote").State != mcp.StateNeedsAuth; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("remote never needed a sign-in: %+v", statusOf(hub, "remote"))
		}
	}
	var list mcpServersResult
	c.mustCall(t, "nexus/mcp/servers", nil, &list)
	if st := list.Servers[0]; st.State != mcp.StateNeedsAuth || !strings.Contains(st.Error, "sign in with: nexus mcp login remote") {
		t.Fatalf("servers: %+v", list)
	}

	var res mcpLoginResult
	if err := c.call(t, "nexus/mcp/login", map[string]any{}, &res); code(err) != -32602 {
		t.Errorf("no name: %v", err)
	}
	if err := c.call(t, "nexus/mcp/login", map[string]any{"name": "nope"}, &res); code(err) != CodeNotFound {
		t.Errorf("unknown server: %v", err)
	}

	c.mu.Lock()
	c.requests = map[string]func(json.RawMessage) (any, error){showDocument: func(params json.RawMessage) (any, error) {
		var p showDocumentParams
		if err := json.Unmarshal(params, &p); err != nil || !p.External || !strings.HasPrefix(p.URI, as.URL()+"/authorize?") {
			return nil, errors.New("not a sign-in page")
		}
		go oauthtest.Browse(t, p.URI)
		return map[string]bool{"success": true}, nil
	}}
	c.mu.Unlock()
	c.mustCall(t, "nexus/mcp/login", map[string]any{"name": "remote"}, &res)
	if res.Server.State != mcp.StateReady || res.Server.ToolCount != 1 {
		t.Fatalf("after the sign-in: %+v", res.Server)
	}

	var out mcpLogoutResult
	c.mustCall(t, "nexus/mcp/logout", map[string]any{"name": "remote"}, &out)
	if !out.SignedOut {
		t.Fatalf("logout: %+v", out)
	}
	c.await(t, "remote needs a sign-in again", func(ns []note) bool {
		return has(ns[len(ns)-1:], notifyMCPServerStatus, `"name":"remote"`, `"state":"needs_auth"`)
	})

	// An editor that does not open the page: it is told the URL.
	c.mu.Lock()
	c.requests = map[string]func(json.RawMessage) (any, error){showDocument: func(json.RawMessage) (any, error) {
		return map[string]bool{"success": false}, nil
	}}
	c.mu.Unlock()
	done := make(chan error)
	go func() { done <- c.call(t, "nexus/mcp/login", map[string]any{"name": "remote"}, &res) }()
	var page string
	c.await(t, "the URL in a message", func(ns []note) bool {
		for _, n := range ns {
			if n.method == "window/showMessage" {
				page = regexp.MustCompile(`open (\S+) in a browser`).FindStringSubmatch(string(n.params))[1]
				return true
			}
		}
		return false
	})
	var u string
	json.Unmarshal([]byte(`"`+page+`"`), &u) // the message is JSON: & is escaped
	oauthtest.Browse(t, u)
	if err := <-done; err != nil || res.Server.State != mcp.StateReady {
		t.Fatalf("the second sign-in: %v %+v", err, res.Server)
	}
}
