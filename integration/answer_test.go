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

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// answering is a running `nexus calls --watch --answer`, its stdin a pipe
// the test writes the person's answers to.
type answering struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // stdout and stderr, a line at a time; closed when it exits
	read  []string
}

func startAnswering(t *testing.T, ws string, args ...string) *answering {
	t.Helper()
	a := &answering{t: t, lines: make(chan string, 64)}
	a.cmd = exec.Command(filepath.Join(binDir, "nexus"), append([]string{"--workspace", ws, "calls", "--watch", "--answer"}, args...)...)
	var err error
	if a.stdin, err = a.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	a.cmd.Stdout, a.cmd.Stderr = w, w
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	go func() {
		defer close(a.lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			a.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		a.cmd.Process.Signal(syscall.SIGTERM)
		a.cmd.Wait()
	})
	a.await("answering the person's permission questions here")
	return a
}

// await reads lines until one holds want, and returns it.
func (a *answering) await(want string) string {
	a.t.Helper()
	for l := range a.lines {
		a.read = append(a.read, l)
		if strings.Contains(l, want) {
			return l
		}
	}
	a.t.Fatalf("nexus calls --watch --answer ended before it printed %q:\n%s", want, strings.Join(a.read, "\n"))
	return ""
}

// answer writes a line to its stdin.
func (a *answering) answer(line string) {
	a.t.Helper()
	if _, err := io.WriteString(a.stdin, line+"\n"); err != nil {
		a.t.Fatal(err)
	}
}

// TestTerminalAnswersAppsQuestions: with no answerer attached an app's
// call that the policy asks about is denied; an app's token cannot attach
// as the answerer; a real `nexus calls --watch --answer` is asked the
// question, shown as every door shows it with the diff of the write, and its "y" runs the call, its
// "n" rejects the next; once its stdin ends it answers no more, and the
// question is denied again.
func TestTerminalAnswersAppsQuestions(t *testing.T) {
	ws := newWorkspace(t, "apps:\n  - id: planner\n")
	d := startDaemon(t, ws)
	planner := as(d.appToken("planner"))
	write := func(path string) *nexusv1.ExecuteToolResponse {
		t.Helper()
		r, err := d.framework().ExecuteTool(planner, &nexusv1.ExecuteToolRequest{ToolName: "write_file",
			ArgumentsJson: `{"path":"` + path + `","content":"steps: 3\n"}`, Intent: "save the plan", ExpectedOutcome: "plan.yaml holds the plan"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	if r := write("alone.yaml"); r.Success || r.ErrorCode != "permission_denied" || !strings.Contains(r.Message, "nexus calls --watch --answer") {
		t.Fatalf("no answerer: %v", r)
	}
	stream, err := d.tools().AnswerPermissions(planner)
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "only the person answers") {
		t.Fatalf("an app's token attached as the answerer: %v", err)
	}

	a := startAnswering(t, ws)
	done := make(chan *nexusv1.ExecuteToolResponse, 1)
	go func() { done <- write("plan.yaml") }()
	a.await("Permission needed: write_file (call ")
	for _, want := range []string{`  asked by: app "planner"`, "  in the app's words, not checked by Nexus:", "    intent:   save the plan",
		"    expected: plan.yaml holds the plan", "  command:  write_file plan.yaml (9 bytes)", "  always:   ",
		// The change as Nexus computed it, under the record: a pipe is no terminal, so no colour.
		"  change:   added plan.yaml", "  --- /dev/null", "  +++ b/plan.yaml", "  @@ -0,0 +1 @@", "  +steps: 3"} {
		if l := a.await(strings.TrimSpace(want)); !strings.HasPrefix(l, want) {
			t.Errorf("prompt line %q, want %q", l, want)
		}
	}
	a.answer("y")
	if r := <-done; !r.Success {
		t.Fatalf("approved call: %v", r)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "plan.yaml")); err != nil || string(b) != "steps: 3\n" {
		t.Errorf("plan.yaml after the approved call: %q %v", b, err)
	}
	a.await("planner write_file completed")

	go func() { done <- write("other.yaml") }()
	a.await("  always:   ")
	a.answer("n")
	if r := <-done; r.Success || !strings.Contains(r.Message, "rejected by the person (reject_once)") {
		t.Fatalf("rejected call: %v", r)
	}
	if _, err := os.Stat(filepath.Join(ws, "other.yaml")); !os.IsNotExist(err) {
		t.Errorf("other.yaml after a rejected call: %v", err)
	}

	a.stdin.Close()
	a.await("(stdin ended: this terminal no longer answers")
	if r := write("late.yaml"); r.Success || r.ErrorCode != "permission_denied" {
		t.Fatalf("after stdin ended: %v", r)
	}
	a.await("planner write_file error permission_denied")
}

// TestDemo runs scripts/demo.sh, as make demo does, on the binaries under
// test: the example app's definitions and its four tool calls streaming in
// order (allowed, asked and approved from nexus calls --watch --answer,
// denied), the approved write in the history, and where to go on.
func TestDemo(t *testing.T) {
	cmd := exec.Command("bash", "../scripts/demo.sh")
	cmd.Env = append(os.Environ(), "NEXUS_BIN="+binDir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo.sh: %v\n%s", err, out)
	}
	text := string(out)
	// Each in this order, each after the one before it.
	inOrder := []string{
		"planner: read brief.md at ",
		"planner: wrote plans/today.md: commit ",
		"planner: runtime current-step = 3",
		"planner: call get_current_time\nplanner:   initiated\nplanner:   running\nplanner:   completed: ",
		"planner: call read_file\nplanner:   initiated\nplanner:   running\nplanner:   completed: ",
		"planner: call write_file\nplanner:   initiated\nplanner:   initiated: waiting for the person's answer\nplanner:   running\nplanner:   completed: ",
		"planner: call execute_command\nplanner:   initiated\nplanner:   error: permission_denied: ",
		"== meanwhile, at the person's terminal",
		" planner write_file initiated (asks the person)\nPermission needed: write_file",
		"  asked by: app \"planner\"",
		"Allow? [y]es once / [a]lways / [n]o / [N]ever: y\n",
		" planner write_file completed\n",
		" planner execute_command error permission_denied",
		"$ nexus def log planner/plans/today.md\n",
		"app:planner  modified  write_file .nexus/definitions/planner/plans/today.md\n",
		"app:planner  added     planner: today's plan\n",
		"4. Date it.\n",
		"docs/agent.md",
		"docs/vscode.md",
	}
	rest := text
	for _, want := range inOrder {
		i := strings.Index(rest, want)
		if i < 0 {
			t.Fatalf("demo output lacks %q after what came before it:\n%s", want, text)
		}
		rest = rest[i+len(want):]
	}
}

// TestTerminalBeforeEditor: with the editor attached, a terminal that
// attaches to answer is asked an app's question instead of it; the
// editor's own call still asks the editor; once the terminal stops
// answering, the editor is asked again.
func TestTerminalBeforeEditor(t *testing.T) {
	ws := newWorkspace(t, "apps:\n  - id: planner\n")
	e := startEditor(t, ws)
	e.permission = "reject_once"
	res := e.initialize(os.Getpid())
	conn, _ := grpcAdmin(t, res)
	tok, err := os.ReadFile(filepath.Join(ws, ".nexus", "run", "apps", "planner.token"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(path string) *nexusv1.ExecuteToolResponse {
		t.Helper()
		r, err := nexusv1.NewCoreFrameworkClient(conn).ExecuteTool(as(strings.TrimSpace(string(tok))), &nexusv1.ExecuteToolRequest{
			ToolName: "write_file", ArgumentsJson: `{"path":"` + path + `","content":"hi"}`})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := write("a.txt"); r.Success || !strings.Contains(r.Message, "rejected by the person") || e.permissionsAsked() != 1 {
		t.Fatalf("the editor alone: %v (asked %d)", r, e.permissionsAsked())
	}

	a := startAnswering(t, ws)
	done := make(chan *nexusv1.ExecuteToolResponse, 1)
	go func() { done <- write("b.txt") }()
	a.await("  always:   ")
	a.answer("y")
	if r := <-done; !r.Success || e.permissionsAsked() != 1 {
		t.Fatalf("with a terminal attached: %v (the editor asked %d times)", r, e.permissionsAsked())
	}
	var own struct {
		Success bool   `json:"success"`
		Message string `json:"message"`
	}
	e.mustCall("nexus/tools/execute", map[string]any{"toolName": "write_file", "arguments": map[string]any{"path": ".vscode/settings.json", "content": "{}"}}, &own)
	if own.Success || !strings.Contains(own.Message, "rejected by the person") || e.permissionsAsked() != 2 {
		t.Fatalf("the editor's own call of a protected path: %+v (the editor asked %d times)", own, e.permissionsAsked())
	}

	a.stdin.Close()
	a.await("(stdin ended: this terminal no longer answers")
	a.cmd.Process.Signal(syscall.SIGTERM)
	a.cmd.Wait() // gone: the daemon has detached it once the stream ends
	r := write("c.txt")
	for r.Success || !strings.Contains(r.Message, "rejected by the person") {
		// The stream's end may reach the daemon after the call asked the
		// terminal (denied: it no longer answers); the next asks the editor.
		if !strings.Contains(r.Message, "stopped answering") {
			t.Fatalf("after the terminal detached: %v", r)
		}
		r = write("c.txt")
	}
	if e.permissionsAsked() != 3 {
		t.Errorf("the editor was asked %d times, want 3", e.permissionsAsked())
	}
}
