package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// The checkpoints of tool calls, undone and redone through every door,
// against the real nexusd (the store: package checkpoints).

// cpList is `nexus --json checkpoints ls`.
type cpList struct {
	Checkpoints []cpEntry `json:"checkpoints"`
}

type cpEntry struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	ToolName string `json:"toolName"`
	Author   string `json:"author"`
	AppID    string `json:"appId"`
	Session  string `json:"session"`
	Turn     string `json:"turn"`
	UndoneBy string `json:"undoneBy"`
	Files    []struct {
		Path   string `json:"path"`
		Action string `json:"action"`
	} `json:"files"`
}

// checkpointsLs runs `nexus --json checkpoints ls` with args.
func checkpointsLs(t *testing.T, ws string, args ...string) cpList {
	t.Helper()
	out, errOut, code := nexus(t, ws, "", append([]string{"--json", "checkpoints", "ls"}, args...)...)
	if code != 0 {
		t.Fatalf("nexus checkpoints ls %v: exit %d\n%s", args, code, errOut)
	}
	var l cpList
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("checkpoints ls: %v\n%s", err, out)
	}
	return l
}

// files reads the workspace's files, "<absent>" for a missing one.
func files(t *testing.T, ws string, names ...string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(ws, n))
		switch {
		case os.IsNotExist(err):
			m[n] = "<absent>"
		case err != nil:
			t.Fatal(err)
		default:
			m[n] = string(b)
		}
	}
	return m
}

func sameFiles(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s holds %q, want %q", what, k, got[k], v)
		}
	}
}

func writeFiles(t *testing.T, ws string, m map[string]string) {
	t.Helper()
	for name, content := range m {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// agentTurnConfig lets the scripted model's session write, edit and run.
func agentTurnConfig(m *scriptedModel) string {
	return strings.Replace(m.config(), "maxSteps: 3", "maxSteps: 10", 1) + `tools:
  policy:
    write_file: allow
    edit_file: allow
    execute_command: allow
`
}

// TestCheckpointsAgentTurn is the end to end: an agent session's
// turn writes one file, edits another and runs a command that changes a
// third and deletes a fourth; nexus checkpoints ls lists them, nexus undo
// --turn restores all four, nexus redo brings the changes back; a file the
// person edited in between is a conflict, left alone with the rest, until
// --force.
func TestCheckpointsAgentTurn(t *testing.T) {
	if !commandSandbox() {
		t.Skip("execute_command's sandbox runs on Linux only")
	}
	model := startScriptedModel(t)
	ws := newWorkspace(t, agentTurnConfig(model))
	names := []string{"new.txt", "edit.txt", "cmd.txt", "gone.txt"}
	before := map[string]string{"new.txt": "<absent>", "edit.txt": "hello world\n", "cmd.txt": "one\n", "gone.txt": "bye\n"}
	writeFiles(t, ws, map[string]string{"edit.txt": "hello world\n", "cmd.txt": "one\n", "gone.txt": "bye\n"})
	startDaemon(t, ws)

	model.then(
		scriptedCall{"write_file", `{"path":"new.txt","content":"brand new\n"}`},
		scriptedCall{"edit_file", `{"path":"edit.txt","oldText":"hello","newText":"howdy"}`},
		scriptedCall{"execute_command", `{"command":"echo two >> cmd.txt && rm gone.txt"}`},
	)
	_, errOut, code := nexus(t, ws, "", "chat", "-p", "Change the files.")
	if code != 0 {
		t.Fatalf("nexus chat -p: exit %d\n%s", code, errOut)
	}
	m := resumeHint.FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("no session id on stderr: %q", errOut)
	}
	session := m[1]
	after := map[string]string{"new.txt": "brand new\n", "edit.txt": "howdy world\n", "cmd.txt": "one\ntwo\n", "gone.txt": "<absent>"}
	sameFiles(t, "after the turn", files(t, ws, names...), after)

	// Three calls, four files, all of turn 1 of the session.
	l := checkpointsLs(t, ws, "--session", session)
	changed := map[string]string{}
	for _, c := range l.Checkpoints {
		if c.Kind != "call" || c.Turn != "1" || c.Author != "agent:"+session {
			t.Errorf("checkpoint %+v: want a call of turn 1 by agent:%s", c, session)
		}
		for _, f := range c.Files {
			changed[f.Path] = f.Action
		}
	}
	want := map[string]string{"new.txt": "added", "edit.txt": "modified", "cmd.txt": "modified", "gone.txt": "deleted"}
	if len(l.Checkpoints) != 3 || len(changed) != 4 {
		t.Errorf("checkpoints %+v: want 3 calls changing %v", l.Checkpoints, want)
	}
	for p, a := range want {
		if changed[p] != a {
			t.Errorf("%s: %q, want %q", p, changed[p], a)
		}
	}
	// The table and a diff, as people read them.
	out, _, code := nexus(t, ws, "", "checkpoints", "ls")
	if code != 0 || !strings.Contains(out, "execute_command") || !strings.Contains(out, "+0 ~1 -1") || !strings.Contains(out, "agent:"+session) {
		t.Errorf("checkpoints ls: exit %d\n%s", code, out)
	}
	var edit string
	for _, c := range l.Checkpoints {
		if c.ToolName == "edit_file" {
			edit = c.ID
		}
	}
	out, _, code = nexus(t, ws, "", "checkpoints", "diff", edit[:18])
	if code != 0 || !strings.Contains(out, "-hello world") || !strings.Contains(out, "+howdy world") || strings.Contains(out, "\x1b") {
		t.Errorf("checkpoints diff: exit %d\n%s", code, out)
	}

	// Undo the turn: all four back.
	out, errOut, code = nexus(t, ws, "", "undo", "--turn")
	if code != 0 || !strings.Contains(out, "restored 4 file(s)") {
		t.Fatalf("undo --turn: exit %d\n%s%s", code, out, errOut)
	}
	sameFiles(t, "after undo --turn", files(t, ws, names...), before)
	for _, c := range checkpointsLs(t, ws, "--session", session).Checkpoints {
		if c.Kind == "call" && c.UndoneBy == "" {
			t.Errorf("call %s (%s) is not marked undone", c.ID, c.ToolName)
		}
	}
	// Redo: the turn's changes again.
	out, errOut, code = nexus(t, ws, "", "redo")
	if code != 0 || !strings.Contains(out, "restored 4 file(s)") {
		t.Fatalf("redo: exit %d\n%s%s", code, out, errOut)
	}
	sameFiles(t, "after redo", files(t, ws, names...), after)

	// The person edits cmd.txt: undo reports it and changes nothing.
	writeFiles(t, ws, map[string]string{"cmd.txt": "the person's\n"})
	edited := map[string]string{"new.txt": "brand new\n", "edit.txt": "howdy world\n", "cmd.txt": "the person's\n", "gone.txt": "<absent>"}
	out, errOut, code = nexus(t, ws, "", "undo", "--turn")
	if code != 1 || !strings.Contains(out, "cmd.txt") || !strings.Contains(errOut, "nothing was changed; --force restores anyway") {
		t.Errorf("undo over the person's edit: exit %d\n%s%s", code, out, errOut)
	}
	sameFiles(t, "after a refused undo", files(t, ws, names...), edited)
	// --force restores it too.
	out, errOut, code = nexus(t, ws, "", "undo", "--turn", "--force")
	if code != 0 || !strings.Contains(out, "restored 4 file(s)") {
		t.Fatalf("undo --turn --force: exit %d\n%s%s", code, out, errOut)
	}
	sameFiles(t, "after undo --force", files(t, ws, names...), before)
}

// commandSandbox reports whether execute_command runs here (its sandbox
// is Linux's).
func commandSandbox() bool { return runtime.GOOS == "linux" }

// TestCheckpointsChatCommands: /undo and /rewind in nexus chat -p act on
// the session's own turns, as the person.
func TestCheckpointsChatCommands(t *testing.T) {
	model := startScriptedModel(t)
	ws := newWorkspace(t, agentTurnConfig(model))
	writeFiles(t, ws, map[string]string{"a.txt": "a0\n"})
	startDaemon(t, ws)

	model.then(scriptedCall{"write_file", `{"path":"a.txt","content":"a1\n"}`})
	_, errOut, code := nexus(t, ws, "", "chat", "-p", "First.")
	m := resumeHint.FindStringSubmatch(errOut)
	if code != 0 || m == nil {
		t.Fatalf("nexus chat -p: exit %d\n%s", code, errOut)
	}
	session := m[1]
	model.then(scriptedCall{"write_file", `{"path":"b.txt","content":"b\n"}`})
	if _, errOut, code := nexus(t, ws, "", "chat", "-p", "Second.", "--resume", session); code != 0 {
		t.Fatalf("second turn: exit %d\n%s", code, errOut)
	}
	out, errOut, code := nexus(t, ws, "", "chat", "-p", "/rewind", "--resume", session)
	if code != 0 || !strings.Contains(out, "turn 1:") || !strings.Contains(out, "turn 2:") || !strings.Contains(out, "+ b.txt") {
		t.Errorf("/rewind: exit %d\n%s%s", code, out, errOut)
	}
	// /undo: the last turn (b.txt goes), then the one before it.
	out, errOut, code = nexus(t, ws, "", "chat", "-p", "/undo", "--resume", session)
	if code != 0 || !strings.Contains(out, "Turn 2:") || !strings.Contains(out, "b.txt") {
		t.Errorf("/undo: exit %d\n%s%s", code, out, errOut)
	}
	sameFiles(t, "after /undo", files(t, ws, "a.txt", "b.txt"), map[string]string{"a.txt": "a1\n", "b.txt": "<absent>"})
	out, errOut, code = nexus(t, ws, "", "chat", "-p", "/rewind 1", "--resume", session)
	if code != 0 || !strings.Contains(out, "Turn 1:") {
		t.Errorf("/rewind 1: exit %d\n%s%s", code, out, errOut)
	}
	sameFiles(t, "after /rewind 1", files(t, ws, "a.txt", "b.txt"), map[string]string{"a.txt": "a0\n", "b.txt": "<absent>"})
	if out, _, _ := nexus(t, ws, "", "chat", "-p", "/undo", "--resume", session); !strings.Contains(out, "Nothing to undo") {
		t.Errorf("/undo with nothing left: %s", out)
	}
	// No model can undo: there is no such tool.
	out, _, _ = nexus(t, ws, "", "tools", "ls")
	if strings.Contains(out, "undo") || strings.Contains(out, "rewind") {
		t.Errorf("a tool that undoes:\n%s", out)
	}
}

const checkpointAppsConfig = `apps:
  - id: planner
    grants:
      tools: {allow: [write_file]}
  - id: reviewer
    grants:
      tools: {allow: [write_file]}
`

// TestCheckpointsApps: an app's change is undone the same way; an app
// sees and undoes only its own checkpoints, and may not collect them.
func TestCheckpointsApps(t *testing.T) {
	ws := newWorkspace(t, checkpointAppsConfig)
	writeFiles(t, ws, map[string]string{"plan.md": "v1\n"})
	d := startDaemon(t, ws)
	planner, reviewer := as(d.appToken("planner")), as(d.appToken("reviewer"))
	r, err := d.framework().ExecuteTool(planner, &nexusv1.ExecuteToolRequest{ToolName: "write_file", TaskId: "task-7",
		ArgumentsJson: `{"path":"plan.md","content":"v2\n"}`})
	if err != nil || !r.Success {
		t.Fatalf("planner's write_file: %v %v", r, err)
	}
	sameFiles(t, "after the app's write", files(t, ws, "plan.md"), map[string]string{"plan.md": "v2\n"})

	l := checkpointsLs(t, ws, "--session", "app:planner")
	if len(l.Checkpoints) != 1 || l.Checkpoints[0].ID != r.ToolCallId || l.Checkpoints[0].Turn != "task-7" || l.Checkpoints[0].AppID != "planner" {
		t.Fatalf("the app's checkpoints: %+v", l.Checkpoints)
	}
	// Its own: the planner sees it, the reviewer does not, nor can it
	// undo it or collect.
	own, err := d.tools().ListCheckpoints(planner, &nexusv1.ListCheckpointsRequest{})
	if err != nil || len(own.Checkpoints) != 1 || own.Usage != nil {
		t.Errorf("the planner's list: %v %v", own, err)
	}
	other, err := d.tools().ListCheckpoints(reviewer, &nexusv1.ListCheckpointsRequest{})
	if err != nil || len(other.Checkpoints) != 0 {
		t.Errorf("the reviewer sees %v %v", other, err)
	}
	if _, err := d.tools().UndoCheckpoints(reviewer, &nexusv1.UndoCheckpointsRequest{Call: r.ToolCallId}); status.Code(err) != codes.NotFound {
		t.Errorf("the reviewer undoes the planner's call: %v", err)
	}
	if _, err := d.tools().GetCheckpointDiff(reviewer, &nexusv1.GetCheckpointDiffRequest{Id: r.ToolCallId}); status.Code(err) != codes.NotFound {
		t.Errorf("the reviewer reads the planner's diff: %v", err)
	}
	if _, err := d.tools().CollectCheckpoints(planner, &nexusv1.CollectCheckpointsRequest{}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("an app collects: %v", err)
	}
	sameFiles(t, "after the reviewer's tries", files(t, ws, "plan.md"), map[string]string{"plan.md": "v2\n"})
	// The app undoes its own.
	res, err := d.tools().UndoCheckpoints(planner, &nexusv1.UndoCheckpointsRequest{Session: "app:planner"})
	if err != nil || len(res.Restored) != 1 || len(res.Conflicts) != 0 {
		t.Fatalf("the planner's undo: %v %v", res, err)
	}
	sameFiles(t, "after the app's undo", files(t, ws, "plan.md"), map[string]string{"plan.md": "v1\n"})
	// The person redoes it with the CLI, and collects.
	if out, errOut, code := nexus(t, ws, "", "redo"); code != 0 {
		t.Fatalf("redo: exit %d\n%s%s", code, out, errOut)
	}
	sameFiles(t, "after redo", files(t, ws, "plan.md"), map[string]string{"plan.md": "v2\n"})
	if out, errOut, code := nexus(t, ws, "", "checkpoints", "gc"); code != 0 || !strings.Contains(out, "pruned 0 checkpoints") {
		t.Errorf("checkpoints gc: exit %d\n%s%s", code, out, errOut)
	}
}

// TestCheckpointsGatewayClient: an MCP gateway client's change is in its
// MCP session, undone with nexus undo --session.
func TestCheckpointsGatewayClient(t *testing.T) {
	ws := newWorkspace(t, "tools:\n  policy:\n    write_file: allow\nmcp:\n  http: {address: \"127.0.0.1:0\"}\n")
	writeFiles(t, ws, map[string]string{"g.txt": "before\n"})
	d := startDaemon(t, ws)
	c := connectMCP(t, httpMCP(d.mcpURL(), d.admin))
	if text, isErr := callText(t, c.ClientSession, "write_file", map[string]any{"path": "g.txt", "content": "after\n"}); isErr {
		t.Fatalf("write_file: %s", text)
	}
	sameFiles(t, "after the client's write", files(t, ws, "g.txt"), map[string]string{"g.txt": "after\n"})
	l := checkpointsLs(t, ws)
	if len(l.Checkpoints) != 1 || l.Checkpoints[0].Session != "mcp:"+c.ID() || l.Checkpoints[0].Turn != "" {
		t.Fatalf("the client's checkpoints %+v, want one in session mcp:%s", l.Checkpoints, c.ID())
	}
	out, errOut, code := nexus(t, ws, "", "undo", "--session", l.Checkpoints[0].Session)
	if code != 0 || !strings.Contains(out, "g.txt") {
		t.Fatalf("undo --session: exit %d\n%s%s", code, out, errOut)
	}
	sameFiles(t, "after undo --session", files(t, ws, "g.txt"), map[string]string{"g.txt": "before\n"})
	if !slices.ContainsFunc(checkpointsLs(t, ws).Checkpoints, func(c cpEntry) bool { return c.Kind == "undo" }) {
		t.Errorf("the undo is not recorded")
	}
}
