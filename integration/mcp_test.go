package integration

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// mcpBin is an MCP server installed by scripts/mcp-servers.sh.
func mcpBin(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", ".cache", "mcp-servers", "node_modules", ".bin", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is not installed: run scripts/mcp-servers.sh (make test does): %v", name, err)
	}
	return p
}

// changingServer is the JSON of an entry that runs changing.mjs.
func changingServer(t *testing.T) string {
	script := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(mcpBin(t, "mcp-server-everything")))), "changing.mjs")
	return `{"command": "node", "args": [` + quote(script) + `]}`
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func writeMCP(t *testing.T, ws, servers string) {
	t.Helper()
	os.MkdirAll(filepath.Join(ws, ".nexus"), 0o755)
	if err := os.WriteFile(filepath.Join(ws, ".nexus", "mcp.json"), []byte(`{"mcpServers": {`+servers+`}}`), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (d *daemon) mcpServer(name string) *nexusv1.McpServer {
	d.t.Helper()
	resp, err := d.tools().ListMcpServers(as(d.admin), &nexusv1.ListMcpServersRequest{})
	if err != nil {
		d.t.Fatal(err)
	}
	for _, s := range resp.Servers {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func (d *daemon) waitMCP(name, state string) *nexusv1.McpServer {
	d.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if s := d.mcpServer(name); s != nil && s.State == state {
			return s
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("MCP server %s never became %s: %v", name, state, d.mcpServer(name))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// trustMCP approves a server waiting for approval, as the person does
// with nexus mcp trust, and returns its status.
func (d *daemon) trustMCP(name string) *nexusv1.McpServer {
	d.t.Helper()
	pending := d.waitMCP(name, "pending_approval")
	resp, err := d.tools().TrustMcpServer(as(d.admin), &nexusv1.TrustMcpServerRequest{Name: name, Pin: pending.Pin})
	if err != nil {
		d.t.Fatalf("trust %s: %v", name, err)
	}
	return resp.Server
}

func waitLog(t *testing.T, path, text string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, _ := os.ReadFile(path)
		if strings.Contains(string(data), text) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon log never said %q", text)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestMCPToolsThroughTheDaemon(t *testing.T) {
	ws := newWorkspace(t, "apps:\n  - id: planner\n")
	writeMCP(t, ws, `"changing": `+changingServer(t)+`, "everything": {"command": `+quote(mcpBin(t, "mcp-server-everything"))+`}`)
	logFile := filepath.Join(t.TempDir(), "nexusd.log")
	d := startDaemon(t, ws, "--log-file", logFile)
	admin, planner := as(d.admin), as(d.appToken("planner"))
	// Entries present at the first start wait for the person too; an app
	// sees that, without what they run, and may not approve them.
	d.waitMCP("changing", "pending_approval")
	apps, err := d.tools().ListMcpServers(planner, &nexusv1.ListMcpServersRequest{})
	if err != nil || len(apps.Servers) != 2 || apps.Servers[0].State != "pending_approval" || apps.Servers[0].Launch != nil || apps.Servers[0].Pin != "" {
		t.Fatalf("an app's list: %v %v", apps, err)
	}
	if _, err := d.tools().TrustMcpServer(planner, &nexusv1.TrustMcpServerRequest{Name: "changing"}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("an app approving a server: %v", err)
	}
	// The person approves what was shown, or nothing: a stale pin is
	// refused.
	if _, err := d.tools().TrustMcpServer(admin, &nexusv1.TrustMcpServerRequest{Name: "changing", Pin: "sha256:stale"}); status.Code(err) != codes.FailedPrecondition ||
		!strings.Contains(err.Error(), "changed since it was shown") {
		t.Fatalf("approving with a stale pin: %v", err)
	}
	if _, err := d.tools().TrustMcpServer(admin, &nexusv1.TrustMcpServerRequest{Name: "nope"}); status.Code(err) != codes.NotFound {
		t.Fatalf("approving an unknown server: %v", err)
	}
	d.trustMCP("changing")
	d.trustMCP("everything")
	d.waitMCP("changing", "ready")
	d.waitMCP("everything", "ready")

	// Listed beside the core tools, under their server; a tool named like a
	// core tool shadows nothing.
	list, err := d.tools().ListTools(admin, &nexusv1.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range list.Tools {
		names[tl.ServerName+"/"+tl.Name] = true
	}
	for _, want := range []string{"/read_file", "changing/read_file", "changing/greet", "everything/echo"} {
		if !names[want] {
			t.Errorf("%s is not listed", want)
		}
	}
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("core"), 0o644)
	r, err := d.tools().ExecuteTool(admin, &nexusv1.ExecuteToolRequest{ToolName: "read_file", ArgumentsJson: `{"path":"a.txt"}`})
	if err != nil || !r.Success || !strings.Contains(r.OutputJson, "core") {
		t.Fatalf("core read_file: %v %v", r, err)
	}
	r, err = d.tools().ExecuteTool(admin, &nexusv1.ExecuteToolRequest{ToolName: "read_file", ServerName: "changing", ArgumentsJson: `{}`})
	if err != nil || !r.Success || !strings.Contains(r.OutputJson, "read_file of the changing server") {
		t.Fatalf("changing/read_file: %v %v", r, err)
	}

	// Streamed and audited like core tools.
	watch, err := d.tools().WatchToolCalls(admin, &nexusv1.WatchToolCallsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Header(); err != nil {
		t.Fatal(err)
	}
	r, err = d.tools().ExecuteTool(admin, &nexusv1.ExecuteToolRequest{ToolName: "echo", ServerName: "everything", ArgumentsJson: `{"message":"streamed"}`})
	if err != nil || !r.Success {
		t.Fatalf("echo: %v %v", r, err)
	}
	var statuses []string
	for len(statuses) < 3 {
		c, err := watch.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if c.ToolCallId == r.ToolCallId {
			if c.ServerName != "everything" {
				t.Errorf("streamed call of server %q", c.ServerName)
			}
			statuses = append(statuses, c.Status)
		}
	}
	if strings.Join(statuses, ",") != "initiated,running,completed" {
		t.Errorf("statuses %v", statuses)
	}
	audit := filepath.Join(ws, ".nexus", "audit", "toolcalls.jsonl")
	waitLog(t, audit, `"toolCallId":"`+r.ToolCallId+`"`)

	// An app is asked about an MCP tool (medium risk); with no editor
	// attached, that is a denial that says so.
	check := func() *nexusv1.CheckPermissionResponse {
		t.Helper()
		resp, err := d.framework().CheckPermission(planner, &nexusv1.CheckPermissionRequest{Action: "changing/greet"})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if c := check(); c.Decision != "ask" {
		t.Fatalf("planner on changing/greet: %v", c)
	}
	r, err = d.tools().ExecuteTool(planner, &nexusv1.ExecuteToolRequest{ToolName: "greet", ServerName: "changing", ArgumentsJson: `{"name":"planner"}`})
	if err != nil || r.Success || r.ErrorCode != "permission_denied" || !strings.Contains(r.Message, "needs approval") {
		t.Fatalf("planner's call: %v %v", r, err)
	}

	// The person answered "always" for this definition of greet.
	def, err := d.tools().GetToolDefinition(admin, &nexusv1.GetToolDefinitionRequest{Name: "greet", ServerName: "changing"})
	if err != nil || !def.Found {
		t.Fatal(def, err)
	}
	hash := policy.DefinitionHash(tools.Definition{Name: def.Tool.Name, ServerName: def.Tool.ServerName, Description: def.Tool.Description,
		InputSchema: json.RawMessage(def.Tool.InputSchemaJson), OutputSchema: json.RawMessage(def.Tool.OutputSchemaJson)})
	d.stop()
	approvals, _ := json.Marshal(map[string]any{"version": 1, "approvals": []map[string]any{{
		"appId": "planner", "tool": "greet", "server": "changing", "definitionHash": hash, "allow": true, "time": time.Now().UTC()}}})
	if err := os.WriteFile(filepath.Join(ws, ".nexus", "approvals.json"), approvals, 0o600); err != nil {
		t.Fatal(err)
	}
	// The approvals hold across a restart.
	d = startDaemon(t, ws, "--log-file", logFile)
	d.waitMCP("changing", "ready")
	admin, planner = as(d.admin), as(d.appToken("planner"))
	if c := check(); c.Decision != "allow" || !strings.Contains(c.Reason, "remembered") {
		t.Fatalf("after the answer: %v", c)
	}
	r, err = d.tools().ExecuteTool(planner, &nexusv1.ExecuteToolRequest{ToolName: "greet", ServerName: "changing", ArgumentsJson: `{"name":"planner"}`})
	if err != nil || !r.Success || !strings.Contains(r.OutputJson, "hello planner") {
		t.Fatalf("planner's approved call: %v %v", r, err)
	}

	// The server changes greet's description: the answer was for the old
	// definition and no longer applies; the change is logged.
	if r, err := d.tools().ExecuteTool(admin, &nexusv1.ExecuteToolRequest{ToolName: "change", ServerName: "changing"}); err != nil || !r.Success {
		t.Fatalf("change: %v %v", r, err)
	}
	waitLog(t, logFile, "MCP tool definition changed: remembered answers for it no longer apply")
	if c := check(); c.Decision != "ask" {
		t.Fatalf("after the change: %v", c)
	}
}

func TestMCPServerKilledAndConfigEdited(t *testing.T) {
	ws := newWorkspace(t, "")
	writeMCP(t, ws, `"changing": `+changingServer(t))
	d := startDaemon(t, ws)
	admin := as(d.admin)
	d.trustMCP("changing")
	st := d.waitMCP("changing", "ready")

	stream, err := d.framework().ExecuteToolStream(admin, &nexusv1.ExecuteToolRequest{ToolName: "sleep", ServerName: "changing", ArgumentsJson: `{"ms":60000}`})
	if err != nil {
		t.Fatal(err)
	}
	for {
		c, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if c.Status == "running" {
			break
		}
	}
	time.Sleep(100 * time.Millisecond) // the request is at the server
	killed := time.Now()
	if p, err := os.FindProcess(int(st.Pid)); err == nil {
		p.Kill()
	}
	var last *nexusv1.ToolCall
	for {
		c, err := stream.Recv()
		if err != nil {
			break
		}
		last = c
	}
	t.Logf("the call ended %v after the kill", time.Since(killed).Round(time.Millisecond))
	if last == nil || last.Status != "error" || last.Error.GetCode() != "server_unavailable" {
		t.Fatalf("the call during the kill ended as %v", last)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := d.mcpServer("changing")
		if s.State == "ready" && s.Pid != st.Pid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not back: %v", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r, err := d.tools().ExecuteTool(admin, &nexusv1.ExecuteToolRequest{ToolName: "greet", ServerName: "changing", ArgumentsJson: `{"name":"after"}`})
	if err != nil || !r.Success {
		t.Fatalf("after the restart: %v %v", r, err)
	}

	// Edits to the file apply while the daemon runs: an added server
	// waits for the person and then starts, the unchanged one goes on, a
	// removed one stops.
	pid := d.mcpServer("changing").Pid
	memory := `"memory": {"command": ` + quote(mcpBin(t, "mcp-server-memory")) + `, "env": {"MEMORY_FILE_PATH": ` + quote(filepath.Join(t.TempDir(), "m.jsonl")) + `}}`
	writeMCP(t, ws, `"changing": `+changingServer(t)+`, `+memory)
	d.trustMCP("memory")
	d.waitMCP("memory", "ready")
	if d.mcpServer("changing").Pid != pid {
		t.Error("the unchanged server was restarted")
	}
	writeMCP(t, ws, memory)
	deadline = time.Now().Add(30 * time.Second)
	for d.mcpServer("changing") != nil {
		if time.Now().After(deadline) {
			t.Fatal("the removed server is still there")
		}
		time.Sleep(20 * time.Millisecond)
	}
	list, _ := d.tools().ListTools(admin, &nexusv1.ListToolsRequest{ServerName: "changing"})
	if len(list.GetTools()) != 0 {
		t.Fatalf("the removed server's tools are listed: %d", len(list.Tools))
	}
}

// TestMCPEntryWrittenByAToolCallWaits: a tool call that writes .mcp.json
// cannot make the daemon run a program. The write itself always asks the
// person, whatever the allow rules say; once the person let it through, the
// server it adds waits for approval and its program never runs (it would
// leave a marker) until nexus mcp trust.
func TestMCPEntryWrittenByAToolCallWaits(t *testing.T) {
	ws := newWorkspace(t, stdioConfig+"  policy:\n    write_file: allow\n")
	marker := filepath.Join(t.TempDir(), "ran")
	script := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(mcpBin(t, "mcp-server-everything")))), "changing.mjs")
	entry, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"intruder": map[string]any{
		"command": "sh", "args": []string{"-c", `echo ran > "$0"; exec node "$1"`, marker, script}}}})
	writeArgs, _ := json.Marshal(map[string]string{"path": ".mcp.json", "content": string(entry)})
	noMarker := func(when string) {
		t.Helper()
		if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: the server's program ran (%v)", when, err)
		}
	}

	// Headless, the person's own gRPC call is allowed by the rules, but a
	// write of .mcp.json or of a git hook asks, and nobody can answer.
	d := startDaemon(t, ws)
	for _, path := range []string{".mcp.json", "./.vscode//mcp.json", ".git/hooks/pre-commit"} {
		args, _ := json.Marshal(map[string]string{"path": path, "content": "x"})
		r, err := d.tools().ExecuteTool(as(d.admin), &nexusv1.ExecuteToolRequest{ToolName: "write_file", ArgumentsJson: string(args)})
		if err != nil || r.Success || r.ErrorCode != "permission_denied" || !strings.Contains(r.Message, "needs approval") || !strings.Contains(r.Message, "always asks") {
			t.Fatalf("write_file %s headless: %v %v", path, r, err)
		}
	}
	r, err := d.tools().ExecuteTool(as(d.admin), &nexusv1.ExecuteToolRequest{ToolName: "write_file", ArgumentsJson: `{"path":"notes.md","content":"x"}`})
	if err != nil || !r.Success {
		t.Fatalf("an ordinary write_file, allowed by the rules: %v %v", r, err)
	}
	if _, err := os.Stat(filepath.Join(ws, ".mcp.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf(".mcp.json was written without the person: %v", err)
	}
	d.stop()

	// With the editor attached, the person allows the write (once).
	e := startEditor(t, ws)
	e.initialize(os.Getpid())
	var out struct {
		Success   bool   `json:"success"`
		ErrorCode string `json:"errorCode"`
		Message   string `json:"message"`
	}
	e.mustCall("nexus/tools/execute", map[string]any{"toolName": "write_file", "argumentsJson": string(writeArgs)}, &out)
	if !out.Success {
		t.Fatalf("write_file .mcp.json, allowed by the person: %+v", out)
	}
	e.await("the permission request for the write", 30*time.Second, func() bool {
		for _, r := range e.requests {
			if r.method == "nexus/requestPermission" && strings.Contains(string(r.params), ".mcp.json") {
				return true
			}
		}
		return false
	})
	// The server it adds waits; the editor was asked about it and did not
	// approve it.
	e.await("intruder pending_approval, and the editor asked about it", 30*time.Second, func() bool {
		var pending, asked bool
		for _, n := range e.notes {
			pending = pending || n.method == "nexus/mcpServerStatus" && strings.Contains(string(n.params), `"name":"intruder"`) &&
				strings.Contains(string(n.params), `"state":"pending_approval"`)
		}
		for _, r := range e.requests {
			asked = asked || r.method == "nexus/requestMcpTrust" && strings.Contains(string(r.params), `"name":"intruder"`)
		}
		return pending && asked
	})
	e.mustCall("nexus/tools/execute", map[string]any{"toolName": "greet", "serverName": "intruder", "arguments": map[string]string{"name": "x"}}, &out)
	if out.Success || out.ErrorCode != "permission_denied" || !strings.Contains(out.Message, "nexus mcp trust intruder") {
		t.Fatalf("a call to the waiting server: %+v", out)
	}
	noMarker("before the person approved it")

	// The person looks at it and approves it: it starts.
	shown, errOut, code := nexus(t, ws, "", "mcp", "trust", "intruder")
	if code != 0 || !strings.Contains(shown, "  command:  sh -c") || !strings.Contains(shown, marker) || !strings.Contains(shown, "approved intruder") {
		t.Fatalf("nexus mcp trust intruder: exit %d\n%s%s", code, shown, errOut)
	}
	e.await("intruder ready", 60*time.Second, func() bool {
		for _, n := range e.notes {
			if n.method == "nexus/mcpServerStatus" && strings.Contains(string(n.params), `"name":"intruder"`) &&
				strings.Contains(string(n.params), `"state":"ready"`) {
				return true
			}
		}
		return false
	})
	e.mustCall("nexus/tools/execute", map[string]any{"toolName": "greet", "serverName": "intruder", "arguments": map[string]string{"name": "person"}}, &out)
	if !out.Success {
		t.Fatalf("a call to the approved server: %+v", out)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the approved server did not run: %v", err)
	}
}
