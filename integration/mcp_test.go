package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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
	d.waitMCP("changing", "ready")
	d.waitMCP("everything", "ready")
	admin, planner := as(d.admin), as(d.appToken("planner"))

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
	syscall.Kill(int(st.Pid), syscall.SIGKILL)
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
	// starts, the unchanged one goes on, a removed one stops.
	pid := d.mcpServer("changing").Pid
	writeMCP(t, ws, `"changing": `+changingServer(t)+`, "memory": {"command": `+quote(mcpBin(t, "mcp-server-memory"))+`, "env": {"MEMORY_FILE_PATH": `+quote(filepath.Join(t.TempDir(), "m.jsonl"))+`}}`)
	d.waitMCP("memory", "ready")
	if d.mcpServer("changing").Pid != pid {
		t.Error("the unchanged server was restarted")
	}
	writeMCP(t, ws, `"memory": {"command": `+quote(mcpBin(t, "mcp-server-memory"))+`, "env": {"MEMORY_FILE_PATH": `+quote(filepath.Join(t.TempDir(), "m.jsonl"))+`}}`)
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
