package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

const toolApps = `
apps:
  - id: planner
    grants:
      tools:
        allow: [write_file]
  - id: coder
    grants:
      tools:
        deny: [search_files]
`

func TestToolsOverGRPC(t *testing.T) {
	ws := newWorkspace(t, toolApps)
	d := startDaemon(t, ws)
	tm, cf := d.tools(), d.framework()
	admin, planner, coder := as(d.admin), as(d.appToken("planner")), as(d.appToken("coder"))

	list, err := tm.ListTools(admin, &nexusv1.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
		if !json.Valid([]byte(tl.InputSchemaJson)) || tl.Risk == "" || tl.Kind == "" {
			t.Errorf("tool %s: bad definition %v", tl.Name, tl)
		}
	}
	for _, want := range []string{"read_file", "write_file", "edit_file", "list_directory", "search_files", "get_current_time"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("ListTools lacks %s: %v", want, names)
		}
	}
	// An app does not see the tools it is denied.
	coderList, _ := tm.ListTools(coder, &nexusv1.ListToolsRequest{})
	for _, tl := range coderList.Tools {
		if tl.Name == "search_files" {
			t.Error("coder sees search_files, which it is denied")
		}
	}
	if got, err := tm.GetToolDefinition(planner, &nexusv1.GetToolDefinitionRequest{Name: "read_file"}); err != nil || !got.Found || got.Tool.Kind != "read" {
		t.Errorf("GetToolDefinition = %v, %v", got, err)
	}
	if got, _ := tm.GetToolDefinition(planner, &nexusv1.GetToolDefinitionRequest{Name: "nope"}); got.GetFound() {
		t.Error("found a tool that does not exist")
	}

	// A low-risk tool runs for an app.
	r, err := cf.ExecuteTool(planner, &nexusv1.ExecuteToolRequest{ToolName: "get_current_time", ArgumentsJson: `{"timezone":"UTC"}`, TaskId: "t1"})
	if err != nil || !r.Success || !strings.Contains(r.OutputJson, "iso8601") || r.ToolCallId == "" {
		t.Fatalf("get_current_time = %v, %v", r, err)
	}
	// write_file is allowed for planner by config: it lands in history
	// under the app when it writes a definition file.
	r, err = cf.ExecuteTool(planner, &nexusv1.ExecuteToolRequest{ToolName: "write_file",
		ArgumentsJson: `{"path":".nexus/definitions/planner/notes.md","content":"from a tool\n"}`})
	if err != nil || !r.Success {
		t.Fatalf("write_file = %v, %v", r, err)
	}
	if got := git(t, ws, "log", "-1", "--format=%an", "--", "planner/notes.md"); got != "app:planner\n" {
		t.Errorf("author of the tool's write = %q", got)
	}
	// coder has no rule for write_file (medium risk): ask, and no editor is
	// attached, so it is denied with a message that says approval was needed.
	r, err = cf.ExecuteTool(coder, &nexusv1.ExecuteToolRequest{ToolName: "write_file", ArgumentsJson: `{"path":"x.txt","content":"x"}`, Intent: "try"})
	if err != nil || r.Success || r.ErrorCode != "permission_denied" || !strings.Contains(r.Message, "no editor is attached") {
		t.Errorf("ask without an editor = %v, %v", r, err)
	}
	if _, err := os.Stat(filepath.Join(ws, "x.txt")); err == nil {
		t.Error("a denied write happened")
	}
	// The admin (the person at the terminal) is allowed.
	if r, err := cf.ExecuteTool(admin, &nexusv1.ExecuteToolRequest{ToolName: "write_file", ArgumentsJson: `{"path":"x.txt","content":"x"}`}); err != nil || !r.Success {
		t.Errorf("admin write_file = %v, %v", r, err)
	}
	for _, c := range []struct{ tool, args, code string }{
		{"nope", `{}`, "unknown_tool"},
		{"read_file", `{"path":1}`, "invalid_arguments"},
		{"read_file", `{"path":"../etc/passwd"}`, "invalid_arguments"},
		{"read_file", `{"path":"/etc/passwd"}`, "invalid_arguments"},
		{"read_file", `{"path":".nexus/run/admin.token"}`, "invalid_arguments"},
		{"search_files", `{"pattern":"x"}`, "permission_denied"},
	} {
		ctx := planner
		if c.tool == "search_files" {
			ctx = coder
		}
		r, err := cf.ExecuteTool(ctx, &nexusv1.ExecuteToolRequest{ToolName: c.tool, ArgumentsJson: c.args})
		if err != nil || r.Success || r.ErrorCode != c.code {
			t.Errorf("%s %s = %v, %v; want %s", c.tool, c.args, r, err, c.code)
		}
	}
	for _, c := range []struct{ app, action, want string }{
		{"planner", "write_file", "allow"}, {"coder", "write_file", "ask"}, {"coder", "search_files", "deny"}, {"", "write_file", "allow"},
	} {
		ctx := admin
		if c.app != "" {
			ctx = as(d.appToken(c.app))
		}
		got, err := cf.CheckPermission(ctx, &nexusv1.CheckPermissionRequest{AppId: c.app, Action: c.action})
		if err != nil || got.Decision != c.want || got.Reason == "" || got.Allowed != (c.want == "allow") {
			t.Errorf("CheckPermission(%s, %s) = %v, %v; want %s", c.app, c.action, got, err, c.want)
		}
	}
	// The recent calls: an app sees its own.
	calls, err := tm.ListToolCalls(planner, &nexusv1.ListToolCallsRequest{})
	if err != nil || len(calls.ToolCalls) == 0 {
		t.Fatalf("ListToolCalls = %v, %v", calls, err)
	}
	for _, c := range calls.ToolCalls {
		if c.AppId != "planner" {
			t.Errorf("planner sees a call of %q", c.AppId)
		}
	}
	if _, err := tm.CancelToolCall(coder, &nexusv1.CancelToolCallRequest{ToolCallId: calls.ToolCalls[0].ToolCallId}); code(err) != codes.PermissionDenied {
		t.Errorf("coder cancelling planner's call: %v", err)
	}
	// The audit log has one line per finished call, all written by the
	// time the daemon has stopped.
	all, _ := tm.ListToolCalls(admin, &nexusv1.ListToolCallsRequest{})
	n := len(all.ToolCalls)
	d.stop()
	audit, err := os.ReadFile(filepath.Join(ws, ".nexus/audit/toolcalls.jsonl"))
	if err != nil || strings.Count(string(audit), "\n") != n {
		t.Errorf("audit log: %d lines for %d calls, %v", strings.Count(string(audit), "\n"), n, err)
	}
}

func TestToolCallStreams(t *testing.T) {
	ws := newWorkspace(t, toolApps)
	d := startDaemon(t, ws)
	tm, cf := d.tools(), d.framework()
	planner := as(d.appToken("planner"))
	ctx, cancel := context.WithCancel(as(d.admin))
	defer cancel()
	watch, err := tm.WatchToolCalls(ctx, &nexusv1.WatchToolCallsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Header(); err != nil {
		t.Fatal(err)
	}
	stream, err := cf.ExecuteToolStream(planner, &nexusv1.ExecuteToolRequest{ToolName: "list_directory", ArgumentsJson: `{"path":"."}`})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		c, err := stream.Recv()
		if err != nil {
			break
		}
		got = append(got, c.Status)
	}
	if strings.Join(got, " ") != "initiated running completed" {
		t.Errorf("ExecuteToolStream statuses = %v", got)
	}
	var watched []string
	for len(watched) < 3 {
		c, err := watch.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if c.AppId != "planner" || c.ToolName != "list_directory" {
			t.Errorf("watched %v", c)
		}
		watched = append(watched, c.Status)
	}
	if strings.Join(watched, " ") != "initiated running completed" {
		t.Errorf("WatchToolCalls statuses = %v", watched)
	}
}

func TestHundredConcurrentToolCalls(t *testing.T) {
	ws := newWorkspace(t, toolApps)
	os.WriteFile(filepath.Join(ws, "data.txt"), []byte(strings.Repeat("line\n", 1000)), 0o644)
	d := startDaemon(t, ws)
	cf := d.framework()
	planner := as(d.appToken("planner"))
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			tool, args := "read_file", `{"path":"data.txt","startLine":1,"endLine":10}`
			if i%2 == 0 {
				tool, args = "search_files", `{"pattern":"line","glob":"*.txt"}`
			}
			r, err := cf.ExecuteTool(planner, &nexusv1.ExecuteToolRequest{ToolName: tool, ArgumentsJson: args, RequestId: fmt.Sprint(i)})
			if err != nil || !r.Success {
				t.Errorf("call %d: %v %v", i, r, err)
			}
		})
	}
	// The daemon answers other requests meanwhile.
	if _, err := healthpb.NewHealthClient(d.conn).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Errorf("health during the calls: %v", err)
	}
	if _, err := cf.GetRuntimeValue(planner, &nexusv1.GetRuntimeValueRequest{Key: "k"}); err != nil {
		t.Errorf("runtime during the calls: %v", err)
	}
	wg.Wait()
}

func TestToolsCLI(t *testing.T) {
	ws := newWorkspace(t, toolApps)
	startDaemon(t, ws)
	out, errOut, code := nexus(t, ws, "", "tools", "ls")
	if code != 0 || !strings.Contains(out, "read_file") || !strings.Contains(out, "core") {
		t.Errorf("tools ls: %d %s %s", code, out, errOut)
	}
	// Each core tool's MCP hints, in words and in --json.
	hints := map[string]string{"read_file": "read-only", "write_file": "destructive, idempotent", "edit_file": "destructive"}
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		if w, ok := hints[f[0]]; ok {
			delete(hints, f[0])
			if !strings.Contains(line, "  "+w+"  ") { // a column of its own
				t.Errorf("tools ls: %s has not the hints %q:\n%s", f[0], w, line)
			}
		}
	}
	if len(hints) > 0 {
		t.Errorf("tools ls lacks %v:\n%s", hints, out)
	}
	out, errOut, code = nexus(t, ws, "", "tools", "ls", "--json")
	var listed struct {
		Tools []struct {
			Name        string          `json:"name"`
			Annotations map[string]bool `json:"annotations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &listed); code != 0 || err != nil {
		t.Fatalf("tools ls --json: %d %v %s %s", code, err, out, errOut)
	}
	for _, tl := range listed.Tools {
		a := tl.Annotations
		if tl.Name == "read_file" && (!a["readOnly"] || a["destructive"] || a["openWorld"]) {
			t.Errorf("tools ls --json: read_file annotations %v", a)
		}
		if tl.Name == "write_file" && (a["readOnly"] || !a["destructive"] || !a["idempotent"] || a["openWorld"]) {
			t.Errorf("tools ls --json: write_file annotations %v", a)
		}
	}
	out, errOut, code = nexus(t, ws, "", "tools", "run", "get_current_time", "--args", `{"timezone":"UTC"}`)
	if code != 0 || !strings.Contains(out, "iso8601") || !strings.Contains(errOut, "running") || !strings.Contains(errOut, "completed") {
		t.Errorf("tools run: %d\n%s\n%s", code, out, errOut)
	}
	_, errOut, code = nexus(t, ws, "", "tools", "run", "read_file", "--args", `{"path":"../x"}`)
	if code != 1 || !strings.Contains(errOut, "invalid_arguments") {
		t.Errorf("tools run with bad args: %d %s", code, errOut)
	}
	out, _, code = nexus(t, ws, "", "calls")
	if code != 0 || !strings.Contains(out, "get_current_time") || !strings.Contains(out, "completed") || !strings.Contains(out, "invalid_arguments") {
		t.Errorf("calls: %d\n%s", code, out)
	}
	out, _, code = nexus(t, ws, "", "perm", "check", "write_file", "--app", "coder")
	if code != 0 || !strings.HasPrefix(out, "ask: ") {
		t.Errorf("perm check: %d %s", code, out)
	}
	out, _, code = nexus(t, ws, "", "perm", "ls")
	if code != 0 || !strings.Contains(out, "APP") {
		t.Errorf("perm ls: %d %s", code, out)
	}
}
