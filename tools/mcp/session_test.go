package mcp

import (
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
