package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
	"github.com/nexuscocreate/nexus/tools/mcp/oauthtest"
)

// browserEnv makes this test binary the person's browser ($BROWSER): it
// GETs its argument following the redirects, which take the authorization
// code to nexusd's loopback listener.
const browserEnv = "NEXUS_TEST_BROWSER"

func browse(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "browser: want one URL, got", args)
		return 2
	}
	resp, err := http.Get(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(os.Stderr, "browser: %s: %s\n", resp.Status, body)
		return 1
	}
	return 0
}

// asBrowser makes this test binary the $BROWSER of the nexus commands the
// test runs.
func asBrowser(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("BROWSER", exe)
	t.Setenv(browserEnv, "1")
}

// TestMcpLoginCLI: an http server protected by OAuth waits in needs_auth;
// "nexus mcp login" prints the URL, runs $BROWSER and exits 0 once signed
// in; the server is ready at once, the tokens are in .nexus/mcp-auth (0600),
// never in the log, survive a restart of the daemon, and "nexus mcp logout"
// deletes them.
func TestMcpLoginCLI(t *testing.T) {
	authServer := oauthtest.NewAuthServer(t, func(as *oauthtest.AuthServer) { as.ScopesSupported = []string{"mcp:read", "offline_access"} })
	rs := oauthtest.NewResourceServer(t, authServer, func(rs *oauthtest.ResourceServer) { rs.Scopes = []string{"mcp:read"} })
	evil := oauthtest.NewResourceServer(t, authServer, func(rs *oauthtest.ResourceServer) { rs.PRMResource = "https://evil.example.com/mcp" })
	ws := newWorkspace(t, "apps:\n  - id: planner\n")
	cfg := fmt.Sprintf(`{"mcpServers": {
		"remote": {"type": "http", "url": %q, "oauth": {"scopes": ["extra"]}},
		"evil": {"url": %q}
	}}`, rs.URL, evil.URL)
	os.MkdirAll(filepath.Join(ws, ".nexus"), 0o755)
	if err := os.WriteFile(filepath.Join(ws, ".nexus", "mcp.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, ws)
	out, errOut, code := nexus(t, ws, "", "mcp", "trust", "--all")
	if code != 0 || !strings.Contains(out, "oauth:    grant=authorization_code scopes=extra") {
		t.Fatalf("nexus mcp trust --all: exit %d\n%s%s", code, out, errOut)
	}
	servers := awaitMcpLs(t, ws, "remote needing a sign-in", func(s map[string]cliServer) bool {
		return s["remote"].State == "needs_auth" && s["evil"].State == "needs_auth"
	})
	if !strings.Contains(servers["remote"].Error, "sign in with: nexus mcp login remote") {
		t.Fatalf("remote: %+v", servers["remote"])
	}

	asBrowser(t)
	out, errOut, code = nexus(t, ws, "", "mcp", "login", "remote")
	if code != 0 || !strings.Contains(out, "open: "+authServer.URL()+"/authorize?") || !strings.Contains(out, "signed in to remote (ready, 1 tools)") {
		t.Fatalf("nexus mcp login remote: exit %d\n%s%s", code, out, errOut)
	}
	if q := authServer.LastAuthorize(); q.Get("resource") != rs.URL || !strings.Contains(q.Get("scope"), "extra") {
		t.Errorf("authorization request %v", q)
	}
	out, errOut, code = nexus(t, ws, "", "tools", "run", "echo", "--server", "remote", "--args", `{"text":"signed in"}`)
	if code != 0 || !strings.Contains(out, "echo: signed in") {
		t.Fatalf("nexus tools run echo: exit %d\n%s%s", code, out, errOut)
	}

	// The tokens: 0600 in a 0700 directory, out of the log and out of
	// every tool call's reach.
	file := filepath.Join(ws, ".nexus", "mcp-auth", "remote.json")
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	if di, err := os.Stat(filepath.Dir(file)); err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("token directory: %v %v", di, err)
	}
	var saved struct{ AccessToken, RefreshToken, ClientSecret string }
	data, _ := os.ReadFile(file)
	if err := json.Unmarshal(data, &saved); err != nil || saved.AccessToken == "" || saved.RefreshToken == "" {
		t.Fatalf("token file %s: %v", data, err)
	}
	out, errOut, _ = nexus(t, ws, "", "tools", "run", "read_file", "--args", `{"path":".nexus/mcp-auth/remote.json"}`)
	if strings.Contains(out+errOut, saved.AccessToken) || !strings.Contains(out+errOut, "private state") {
		t.Errorf("read_file of the token file:\n%s%s", out, errOut)
	}

	// Only the person signs in and out: an app's token is refused.
	planner := as(d.appToken("planner"))
	stream, err := d.tools().LoginMcpServer(planner, &nexusv1.LoginMcpServerRequest{Name: "remote"})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("an app signing in: %v", err)
	}
	if _, err := d.tools().LogoutMcpServer(planner, &nexusv1.LogoutMcpServerRequest{Name: "remote"}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("an app signing out: %v", err)
	}

	// A sign-in the daemon refuses: the metadata are for another resource.
	out, errOut, code = nexus(t, ws, "", "mcp", "login", "evil")
	if code != 1 || strings.Contains(out, "open: ") || !strings.Contains(errOut, `"https://evil.example.com/mcp"`) {
		t.Errorf("nexus mcp login evil: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := nexus(t, ws, "", "mcp", "login", "nope"); code != 1 || !strings.Contains(errOut, "no MCP server") {
		t.Errorf("nexus mcp login nope: exit %d: %s", code, errOut)
	}

	// The daemon restarts: the tokens hold.
	d.stop()
	d = startDaemon(t, ws)
	awaitMcpLs(t, ws, "remote ready again", func(s map[string]cliServer) bool { return s["remote"].State == "ready" })

	out, errOut, code = nexus(t, ws, "", "mcp", "logout", "remote")
	if code != 0 || !strings.Contains(out, "signed out of remote") {
		t.Fatalf("nexus mcp logout: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("token file after logout: %v", err)
	}
	awaitMcpLs(t, ws, "remote needing a sign-in again", func(s map[string]cliServer) bool { return s["remote"].State == "needs_auth" })

	d.stop()
	for _, secret := range []string{saved.AccessToken, saved.RefreshToken, saved.ClientSecret} {
		if secret != "" && strings.Contains(d.stderr.String(), secret) {
			t.Errorf("the daemon's log holds a secret of the sign-in:\n%s", d.stderr.String())
		}
	}
}
