package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cliServer is one server of "nexus mcp ls --json".
type cliServer struct {
	Name      string `json:"name"`
	State     string `json:"state"`
	ToolCount int    `json:"toolCount"`
	Restarts  int    `json:"restarts"`
	Error     string `json:"error"`
}

// mcpLs runs "nexus mcp ls --json" and returns the servers by name.
func mcpLs(t *testing.T, ws string) map[string]cliServer {
	t.Helper()
	out, errOut, code := nexus(t, ws, "", "--json", "mcp", "ls")
	if code != 0 {
		t.Fatalf("nexus --json mcp ls: exit %d: %s", code, errOut)
	}
	if strings.Count(out, "\n") != 1 {
		t.Errorf("nexus --json mcp ls printed %q, not one line", out)
	}
	var resp struct {
		Servers []cliServer `json:"servers"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatalf("nexus --json mcp ls: %v in %q", err, out)
	}
	servers := make(map[string]cliServer)
	for _, s := range resp.Servers {
		servers[s.Name] = s
	}
	return servers
}

// awaitMcpLs polls "nexus mcp ls" until done accepts its servers. The
// deadline only guards against a server that never starts.
func awaitMcpLs(t *testing.T, ws, what string, done func(map[string]cliServer) bool) map[string]cliServer {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		servers := mcpLs(t, ws)
		if done(servers) {
			return servers
		}
		if time.Now().After(deadline) {
			t.Fatalf("nexus mcp ls never showed %s: %+v", what, servers)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestMCPCommandLine(t *testing.T) {
	ws := newWorkspace(t, "mcp:\n  maxRestarts: 1\n")
	config, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]string{"command": mcpBin(t, "mcp-server-everything")},
		// Its argument poses as another command on a terminal.
		"ghost": map[string]any{"command": "/nonexistent/ghost", "args": []string{"\x1b[2K\rnpx server-filesystem"}},
	}})
	if err := os.MkdirAll(filepath.Join(ws, ".nexus"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".nexus", "mcp.json"), config, 0o644); err != nil {
		t.Fatal(err)
	}
	startDaemon(t, ws)
	run := func(args ...string) string {
		t.Helper()
		out, errOut, code := nexus(t, ws, "", args...)
		if code != 0 {
			t.Fatalf("nexus %s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
		return out
	}

	// Present at the first start: both wait for the person, who sees
	// what they run and approves them.
	awaitMcpLs(t, ws, "everything and ghost pending_approval", func(s map[string]cliServer) bool {
		return s["everything"].State == "pending_approval" && s["ghost"].State == "pending_approval"
	})
	var sawPending bool
	for line := range strings.Lines(run("mcp", "ls")) {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "ghost" && f[1] == "pending_approval" {
			sawPending = true
		}
	}
	if !sawPending {
		t.Error("nexus mcp ls does not show ghost pending_approval")
	}
	out, errOut, code := nexus(t, ws, "", "tools", "run", "echo", "--server", "everything", "--args", `{"message":"hi"}`)
	if code == 0 || !strings.Contains(out+errOut, "nexus mcp trust everything") {
		t.Errorf("a call to a server waiting for approval: exit %d, %q %q", code, out, errOut)
	}
	trusted := run("mcp", "trust", "--all")
	for _, want := range []string{
		"MCP server everything (.nexus/mcp.json, stdio)", "  command:  " + mcpBin(t, "mcp-server-everything") + "\n",
		"MCP server ghost (.nexus/mcp.json, stdio)", "  command:  /nonexistent/ghost $'\\x1b[2K\\rnpx server-filesystem'\n", "  cwd:      " + ws + "\n",
		"  pin:      sha256:", "approved everything (", "approved ghost (",
	} {
		if !strings.Contains(trusted, want) {
			t.Errorf("nexus mcp trust --all printed\n%s\nwithout %q", trusted, want)
		}
	}
	if out := run("mcp", "trust", "--all"); out != "no MCP server waits for approval\n" {
		t.Errorf("nexus mcp trust --all again printed %q", out)
	}
	if out := run("mcp", "trust", "ghost"); !strings.Contains(out, "ghost is already approved") {
		t.Errorf("nexus mcp trust ghost again printed %q", out)
	}
	if out, errOut, code := nexus(t, ws, "", "mcp", "trust", "nope"); code != 1 || out != "" || !strings.Contains(errOut, "(not_found)") {
		t.Errorf("nexus mcp trust nope: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	servers := awaitMcpLs(t, ws, "everything ready and ghost failed", func(s map[string]cliServer) bool {
		return s["everything"].State == "ready" && s["ghost"].State == "failed"
	})
	if n := servers["everything"].ToolCount; n == 0 {
		t.Errorf("everything is ready with no tools")
	}
	if e := servers["ghost"].Error; !strings.Contains(e, "/nonexistent/ghost") {
		t.Errorf("the error of ghost = %q; want it to name /nonexistent/ghost", e)
	}
	// The table: a row a server, the error of ghost indented under its row.
	lines := strings.Split(run("mcp", "ls"), "\n")
	if len(lines) < 4 || strings.Join(strings.Fields(lines[0]), " ") != "NAME STATE TOOLS TRANSPORT SOURCE RESTARTS" {
		t.Fatalf("nexus mcp ls:\n%s", strings.Join(lines, "\n"))
	}
	var sawEverything, sawGhostError bool
	for i, line := range lines {
		f := strings.Fields(line)
		if len(f) == 6 && f[0] == "everything" {
			sawEverything = f[1] == "ready" && f[2] != "0" && f[3] == "stdio" && f[4] == ".nexus/mcp.json"
		}
		if len(f) > 1 && f[0] == "ghost" && f[1] == "failed" && i+1 < len(lines) {
			next := lines[i+1]
			sawGhostError = strings.HasPrefix(next, "    ") && strings.Contains(next, "/nonexistent/ghost")
		}
	}
	if !sawEverything || !sawGhostError {
		t.Errorf("nexus mcp ls lacks everything ready (%v) or the error of ghost under it (%v):\n%s",
			sawEverything, sawGhostError, strings.Join(lines, "\n"))
	}

	// Its tools are tools of the daemon, named by their server.
	var sawEcho bool
	for line := range strings.Lines(run("tools", "ls")) {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "echo" && f[1] == "everything" {
			sawEcho = true
		}
	}
	if !sawEcho {
		t.Error("nexus tools ls lacks echo of server everything")
	}
	if out := run("tools", "run", "echo", "--server", "everything", "--args", `{"message":"hi"}`); !strings.Contains(out, "Echo: hi") {
		t.Errorf("nexus tools run echo printed %q", out)
	}

	// Restart.
	if out := run("mcp", "restart", "everything"); out != "restarting everything\n" {
		t.Errorf("nexus mcp restart everything printed %q", out)
	}
	awaitMcpLs(t, ws, "everything ready again after one restart", func(s map[string]cliServer) bool {
		return s["everything"].State == "ready" && s["everything"].Restarts == 1
	})
	out, errOut, code = nexus(t, ws, "", "mcp", "restart", "nope")
	if code != 1 || out != "" || !strings.Contains(errOut, `"nope"`) || !strings.Contains(errOut, "(not_found)") {
		t.Errorf("nexus mcp restart nope: exit %d, stdout %q, stderr %q; want exit 1 and not_found naming nope", code, out, errOut)
	}

	// Resources: the list, then the contents of the first.
	var uri string
	for line := range strings.Lines(run("mcp", "resources", "everything")) {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "everything" {
			uri = f[1]
			break
		}
	}
	if uri == "" {
		t.Fatal("nexus mcp resources everything lists no resource")
	}
	if out := run("mcp", "resources", "everything", "--read", uri); strings.TrimSpace(out) == "" {
		t.Errorf("nexus mcp resources everything --read %s printed nothing", uri)
	}
	var contents []struct{ URI, Text, Blob string }
	if out := run("--json", "mcp", "resources", "everything", "--read", uri); json.Unmarshal([]byte(out), &contents) != nil ||
		len(contents) == 0 || contents[0].URI != uri || contents[0].Text+contents[0].Blob == "" {
		t.Errorf("nexus --json mcp resources everything --read %s printed %q", uri, out)
	}

	// Prompts: the list, then one rendered.
	var sawPrompt bool
	for line := range strings.Lines(run("mcp", "prompts", "everything")) {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "everything" && f[1] == "simple-prompt" {
			sawPrompt = true
		}
	}
	if !sawPrompt {
		t.Error("nexus mcp prompts everything lacks simple-prompt")
	}
	if out := run("mcp", "prompts", "everything", "--get", "simple-prompt"); !strings.HasPrefix(out, "user: ") || len(out) < len("user: x\n") {
		t.Errorf("nexus mcp prompts everything --get simple-prompt printed %q", out)
	}
	var prompt struct{ Messages []struct{ Role string } }
	if out := run("--json", "mcp", "prompts", "everything", "--get", "simple-prompt"); json.Unmarshal([]byte(out), &prompt) != nil || len(prompt.Messages) == 0 {
		t.Errorf("nexus --json mcp prompts everything --get simple-prompt printed %q", out)
	}
}
