package mcp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/internal/proctree"
)

// TestSessionServers: the servers a session brings wait for approval and
// run beside the files' servers; a reload of the files keeps them; a name
// of the files or of another session is refused, changing nothing; and
// SetSessionServers(key, nil) stops them and unregisters their tools.
func TestSessionServers(t *testing.T) {
	ws := t.TempDir()
	th := newTestHub(t, Options{Workspace: ws})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	writeFiles := func(names ...string) {
		t.Helper()
		servers := map[string]any{}
		for _, n := range names {
			servers[n] = map[string]any{"command": exe, "env": map[string]string{stdioServerEnv: ProtocolVersion}}
		}
		data, _ := json.Marshal(map[string]any{"mcpServers": servers})
		os.MkdirAll(filepath.Join(ws, ".nexus"), 0o755)
		if err := os.WriteFile(filepath.Join(ws, ".nexus", "mcp.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	trust := func(name string) Status {
		t.Helper()
		th.waitState(t, name, StatePendingApproval)
		if _, err := th.Trust(thePerson, name, ""); err != nil {
			t.Fatal(err)
		}
		return th.waitState(t, name, StateReady)
	}
	writeFiles("files")
	th.Reload(nil)
	trust("files")

	// A session's server: pending, then approved, then its tools are there.
	sess := goStdio(t, "", ProtocolVersion)
	sess.Source = "ACP client (session s1)"
	sess.Cwd = ""
	if err := th.SetSessionServers("s1", map[string]ServerConfig{"sess": sess}); err != nil {
		t.Fatal(err)
	}
	if st := th.waitState(t, "sess", StatePendingApproval); st.Session != "s1" || st.Source != "ACP client (session s1)" {
		t.Fatalf("the session's server waits as %+v", st)
	}
	st := trust("sess")
	if st.Session != "s1" || th.statusOf("files").Session != "" {
		t.Fatalf("sessions: sess %q, files %q", st.Session, th.statusOf("files").Session)
	}
	wantCompleted(t, th.call(t, "sess", "echo", `{"text":"from the session"}`), "from the session")
	if got, want := th.OwnerOf("sess"), "s1"; got != want {
		t.Errorf("OwnerOf(sess) = %q, want %q", got, want)
	}
	if got := th.OwnerOf("files") + th.OwnerOf("nope"); got != "" {
		t.Errorf("OwnerOf(files), OwnerOf(nope) = %q", got)
	}
	pid := st.PID

	// Names already used, and entries that cannot run: an error naming
	// the server, and nothing changes.
	for _, tt := range []struct {
		key, name string
		cfg       ServerConfig
		msg       string
	}{
		{"s2", "files", sess, `"files": the name is already used by the entry in .nexus/mcp.json`},
		{"s2", "sess", sess, `"sess": the name is already used by another session's server`},
		{"s2", "a/b", sess, `"a/b": the name must not contain "/"`},
		{"s2", "x", ServerConfig{Transport: "stdio"}, `"x": a stdio server needs a command`},
		{"s2", "x", ServerConfig{Transport: "sse", URL: "http://127.0.0.1:9"}, `"x": transport "sse"`},
		{"", "x", sess, "session key is empty"},
	} {
		if err := th.SetSessionServers(tt.key, map[string]ServerConfig{tt.name: tt.cfg, "other": sess}); err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("SetSessionServers(%q, %q): %v; want an error with %q", tt.key, tt.name, err, tt.msg)
		}
	}
	if th.statusOf("other").Name != "" || th.OwnerOf("other") != "" || th.OwnerOf("sess") != "s1" {
		t.Fatalf("a refused SetSessionServers changed something: %+v", th.Servers())
	}

	// A reload of the files keeps the session's server running, even when
	// the files now have an entry of its name: that one is ignored.
	writeFiles("files", "sess", "more")
	th.Reload(nil)
	trust("more")
	if st := th.statusOf("sess"); st.State != StateReady || st.PID != pid || st.Session != "s1" {
		t.Fatalf("the session's server after a reload: %+v (pid was %d)", st, pid)
	}
	// The session may set its servers again, keeping that name.
	if err := th.SetSessionServers("s1", map[string]ServerConfig{"sess": sess}); err != nil {
		t.Fatal(err)
	}
	if st := th.statusOf("sess"); st.PID != pid {
		t.Fatalf("the session's unchanged server was restarted: %+v", st)
	}

	// Its session gone: stopped, its tools unregistered, when
	// SetSessionServers returns. The file entry of its name then runs.
	if err := th.SetSessionServers("s1", nil); err != nil {
		t.Fatal(err)
	}
	if proctree.Exists(pid) {
		t.Errorf("the session's server process %d is still there", pid)
	}
	if th.OwnerOf("sess") != "" {
		t.Error("OwnerOf(sess) after the session removed its servers")
	}
	if st := th.waitState(t, "sess", StateReady); st.Session != "" || st.Source != ".nexus/mcp.json" || st.PID == pid {
		t.Fatalf("the file's entry after the session's server went: %+v", st)
	}
	writeFiles("files")
	th.Reload(nil)
	if defs := th.m.List("sess"); len(defs) != 0 {
		t.Fatalf("tools of a removed server are still registered: %d", len(defs))
	}
	if th.statusOf("files").State != StateReady || th.statusOf("sess").Name != "" {
		t.Fatalf("servers %+v", th.Servers())
	}
	// Removing what a session does not have is nothing.
	if err := th.SetSessionServers("s9", map[string]ServerConfig{}); err != nil {
		t.Fatal(err)
	}
}

// TestSessionServersOfTwoSessions: a session's servers go when it
// says so, and only its own; another session's stay.
func TestSessionServersOfTwoSessions(t *testing.T) {
	th := newTestHub(t, Options{})
	a, b := goStdio(t, "", ProtocolVersion), goStdio(t, "", ProtocolVersion)
	a.Source, b.Source = "ACP client (session a)", "ACP client (session b)"
	if err := th.SetSessionServers("a", map[string]ServerConfig{"sa": a}); err != nil {
		t.Fatal(err)
	}
	if err := th.SetSessionServers("b", map[string]ServerConfig{"sb": b}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"sa", "sb"} {
		th.waitState(t, n, StatePendingApproval)
		if _, err := th.Trust(thePerson, n, ""); err != nil {
			t.Fatal(err)
		}
		th.waitState(t, n, StateReady)
	}
	// A session that changes its set: the server it dropped goes, the
	// other session's stays.
	if err := th.SetSessionServers("a", map[string]ServerConfig{}); err != nil {
		t.Fatal(err)
	}
	if th.statusOf("sa").Name != "" || len(th.m.List("sa")) != 0 {
		t.Fatalf("session a's server is still there: %+v", th.statusOf("sa"))
	}
	if st := th.statusOf("sb"); st.State != StateReady || st.Session != "b" {
		t.Fatalf("session b's server: %+v", st)
	}
	// The name is free again for another session.
	if err := th.SetSessionServers("b", map[string]ServerConfig{"sb": b, "sa": a}); err != nil {
		t.Fatal(err)
	}
	if th.OwnerOf("sa") != "b" {
		t.Fatalf("OwnerOf(sa) = %q", th.OwnerOf("sa"))
	}
}
