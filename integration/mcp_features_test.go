package integration

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// lineReader has the lines of a process's output for a test to wait on.
type lineReader struct {
	lines chan string
}

func readLines(r io.Reader) *lineReader {
	lr := &lineReader{lines: make(chan string, 100)}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lr.lines <- sc.Text()
		}
		close(lr.lines)
	}()
	return lr
}

// next waits for a line that contains s.
func (lr *lineReader) next(t *testing.T, s string) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lr.lines:
			if !ok {
				t.Fatalf("the output ended before a line with %q", s)
			}
			if strings.Contains(l, s) {
				return l
			}
		case <-deadline:
			t.Fatalf("no line with %q", s)
		}
	}
}

// TestMCPResourcesLogsAndRootsThroughTheDaemon: a real server of the
// TypeScript SDK (server-everything, stdio) behind the real nexusd: its
// templates through the CLI, a subscription held by nexus mcp resources
// --subscribe that prints the server's updates and ends with Ctrl-C, the
// server's log messages at the daemon's level in the daemon log, and the
// workspace as its root.
func TestMCPResourcesLogsAndRootsThroughTheDaemon(t *testing.T) {
	ws := newWorkspace(t, "")
	writeMCP(t, ws, `"everything": {"command": `+quote(mcpBin(t, "mcp-server-everything"))+`}`)
	logFile := filepath.Join(t.TempDir(), "nexusd.log")
	d := startDaemon(t, ws, "--log-file", logFile, "--log-level", "info")
	d.trustMCP("everything")
	d.waitMCP("everything", "ready")

	out, errOut, code := nexus(t, ws, "", "mcp", "resources", "everything", "--templates")
	if code != 0 || !strings.Contains(out, "URI TEMPLATE") || !strings.Contains(out, "demo://resource/dynamic/") {
		t.Fatalf("--templates: %d %s %s", code, out, errOut)
	}
	// A subscription the daemon cannot make ends the command with why.
	if _, errOut, code := nexus(t, ws, "", "mcp", "resources", "nope", "--subscribe", "x://y"); code == 0 || !strings.Contains(errOut, "no MCP server of that name") {
		t.Errorf("--subscribe to an unknown server: %d %s", code, errOut)
	}
	if _, errOut, code := nexus(t, ws, "", "mcp", "resources", "--subscribe", "x://y"); code != 2 || !strings.Contains(errOut, "--subscribe needs the SERVER") {
		t.Errorf("--subscribe without a server: %d %s", code, errOut)
	}
	res, err := d.tools().ListMcpResources(as(d.admin), &nexusv1.ListMcpResourcesRequest{ServerName: "everything"})
	if err != nil || len(res.Resources) == 0 {
		t.Fatalf("resources: %v %v", res, err)
	}
	uri := res.Resources[0].Uri

	// nexus mcp resources --subscribe holds the subscription until Ctrl-C.
	cmd := exec.Command(filepath.Join(binDir, "nexus"), "--workspace", ws, "mcp", "resources", "everything", "--subscribe", uri)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines, errLines := readLines(stdout), readLines(stderr)
	errLines.next(t, "subscribed to "+uri+" of everything")
	// The server logs the subscription at info: the daemon asked it for
	// info, and the line is in the daemon log under its name.
	waitLog(t, logFile, `msg="MCP server log" server=everything mcpLevel=info logger="" data="Received Subscribe Resource request for URI: `+uri)
	// The server sends the updates of its subscribed resources.
	call, err := d.tools().ExecuteTool(as(d.admin), &nexusv1.ExecuteToolRequest{ServerName: "everything", ToolName: "toggle-subscriber-updates", ArgumentsJson: "{}"})
	if err != nil || !call.Success {
		t.Fatalf("toggle-subscriber-updates: %v %v", call, err)
	}
	lines.next(t, "everything "+uri+" updated")
	cmd.Process.Signal(syscall.SIGINT)
	for range lines.lines { // to the end of its output
	}
	for range errLines.lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("nexus mcp resources --subscribe after Ctrl-C: %v", err)
	}
	// Its subscription went with it.
	waitLog(t, logFile, "Received Unsubscribe Resource request: "+uri)

	// The workspace is the server's root.
	call, err = d.tools().ExecuteTool(as(d.admin), &nexusv1.ExecuteToolRequest{ServerName: "everything", ToolName: "get-roots-list", ArgumentsJson: "{}"})
	if err != nil || !call.Success || !strings.Contains(call.OutputJson, "file://"+ws) {
		t.Fatalf("get-roots-list: %v %v", call, err)
	}
}

// noted reports whether the editor got a notification of method whose
// params contain every part; call under e.mu.
func (e *editor) noted(method string, parts ...string) bool {
	for _, n := range e.notes {
		if n.method != method {
			continue
		}
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(string(n.params), p)
		}
		if ok {
			return true
		}
	}
	return false
}

// TestStdioMCPResourcesAndLogs: the editor's side of the same server:
// templates, a subscription of its own with the server's updates as
// nexus/mcp/resourceUpdated, and the server's log messages as nexus/log
// (and in the daemon log).
func TestStdioMCPResourcesAndLogs(t *testing.T) {
	ws := newWorkspace(t, "")
	writeMCP(t, ws, `"everything": {"command": `+quote(mcpBin(t, "mcp-server-everything"))+`}`)
	e := startEditor(t, ws)
	e.initialize(os.Getpid())
	e.mustCall("nexus/mcp/trust", map[string]any{"name": "everything"}, nil)
	e.await("everything ready", 60*time.Second, func() bool {
		return e.noted("nexus/mcpServerStatus", `"name":"everything"`, `"state":"ready"`)
	})

	var ts struct {
		Templates []struct{ ServerName, URITemplate string } `json:"templates"`
	}
	e.mustCall("nexus/mcp/resources/templates", map[string]any{"serverName": "everything"}, &ts)
	if len(ts.Templates) == 0 || ts.Templates[0].ServerName != "everything" || ts.Templates[0].URITemplate == "" {
		t.Fatalf("templates %+v", ts)
	}
	var rs struct {
		Resources []struct{ URI string } `json:"resources"`
	}
	e.mustCall("nexus/mcp/resources/list", map[string]any{"serverName": "everything"}, &rs)
	if len(rs.Resources) == 0 {
		t.Fatal("no resources")
	}
	uri := rs.Resources[0].URI

	e.mustCall("nexus/mcp/resources/subscribe", map[string]any{"serverName": "everything", "uri": uri}, nil)
	// The server logs it at info, the daemon's level.
	e.await("the server's log message", 30*time.Second, func() bool {
		return e.noted("nexus/log", `"source":"mcp"`, `"server":"everything"`, `"level":"info"`, "Received Subscribe Resource request for URI: "+uri)
	})
	e.await("the log message in the daemon log", 30*time.Second, func() bool {
		return strings.Contains(e.log(), `msg="MCP server log" server=everything mcpLevel=info`)
	})
	var res struct{ Success bool }
	e.mustCall("nexus/tools/execute", map[string]any{"serverName": "everything", "toolName": "toggle-subscriber-updates", "arguments": map[string]any{}}, &res)
	if !res.Success {
		t.Fatal("toggle-subscriber-updates failed")
	}
	e.await("the update", 30*time.Second, func() bool {
		return e.noted("nexus/mcp/resourceUpdated", `"server":"everything"`, `"uri":"`+uri+`"`)
	})
	e.mustCall("nexus/mcp/resources/unsubscribe", map[string]any{"serverName": "everything", "uri": uri}, nil)
	e.await("the server's log of the unsubscribe", 30*time.Second, func() bool {
		return e.noted("nexus/log", `"server":"everything"`, "Received Unsubscribe Resource request: "+uri)
	})
}
