package mcp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The hub speaks to servers of every 2025 version, over both transports,
// without the draft's server/discover probe: initialize is the first thing
// a server gets, and the session speaks the server's version.
func TestProtocolVersions(t *testing.T) {
	for _, version := range []string{"2025-03-26", "2025-06-18", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			g := newGoServer(version)
			hs := serveHTTP(t, g)
			th := newTestHub(t, Options{})
			th.applyTrusted(map[string]ServerConfig{"web": httpEntry("web", hs.URL), "local": goStdio(t, "local", version)})
			for _, name := range []string{"web", "local"} {
				th.waitState(t, name, StateReady)
				if got := th.session(t, name).InitializeResult().ProtocolVersion; got != version {
					t.Errorf("%s: the session speaks %s, want %s", name, got, version)
				}
				wantCompleted(t, th.call(t, name, "echo", `{"text":"hi"}`), "echo: hi")
			}
			wantNoDiscover(t, g)
		})
	}
}

// Servers get the workspace as their one root, with its file:// URI, and
// are told the list never changes.
func TestRootsAreTheWorkspace(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "my project")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	wantURI := "file://" + strings.ReplaceAll(ws, " ", "%20")
	g := newGoServer("")
	hs := serveHTTP(t, g)
	th := newTestHub(t, Options{Workspace: ws})
	th.applyTrusted(map[string]ServerConfig{
		"web":        httpEntry("web", hs.URL),
		"everything": stdio("everything", serverBin(t, "mcp-server-everything")),
	})
	th.waitState(t, "web", StateReady)
	c := th.call(t, "web", "roots", `{}`)
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	json.Unmarshal(c.ResultJSON, &res)
	var roots []struct{ URI, Name string }
	if len(res.Content) != 1 || json.Unmarshal([]byte(res.Content[0].Text), &roots) != nil {
		t.Fatalf("roots: %s", c.ResultJSON)
	}
	if len(roots) != 1 || roots[0].URI != wantURI || roots[0].Name != "my project" {
		t.Fatalf("roots %+v, want one: %s named %q", roots, wantURI, "my project")
	}
	sessions := 0
	for ss := range g.Sessions() {
		sessions++
		//lint:ignore SA1019 roots are current in the versions the hub speaks
		if caps := ss.InitializeParams().Capabilities; caps == nil || caps.RootsV2 == nil || caps.RootsV2.ListChanged {
			t.Errorf("the roots capability: %+v", caps)
		}
	}
	if sessions == 0 {
		t.Error("the server has no session")
	}
	// A real server of another SDK sees the same.
	th.waitState(t, "everything", StateReady)
	wantCompleted(t, th.call(t, "everything", "get-roots-list", `{}`), wantURI)
}
