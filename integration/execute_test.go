package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

type execResult struct {
	ExitCode  int
	Signal    string
	Stdout    string
	Stderr    string
	Truncated bool
	TimedOut  bool
}

func execute(t *testing.T, d *daemon, ctx context.Context, args string) (*nexusv1.ExecuteToolResponse, execResult) {
	t.Helper()
	r, err := d.framework().ExecuteTool(ctx, &nexusv1.ExecuteToolRequest{ToolName: "execute_command", ArgumentsJson: args})
	if err != nil {
		t.Fatalf("execute %s: %v", args, err)
	}
	var res execResult
	if r.OutputJson != "" {
		if err := json.Unmarshal([]byte(r.OutputJson), &res); err != nil {
			t.Fatalf("output %q: %v", r.OutputJson, err)
		}
	}
	return r, res
}

// running reports whether a process whose command line contains marker is
// alive (zombies count as gone).
func running(t *testing.T, marker string) bool {
	out, _ := exec.Command("ps", "-eo", "stat=,args=").Output()
	for line := range strings.SplitSeq(string(out), "\n") {
		if strings.Contains(line, marker) && !strings.HasPrefix(strings.TrimSpace(line), "Z") && !strings.Contains(line, "ps -eo") {
			return true
		}
	}
	return false
}

const execConfig = `
tools:
  policy:
    "execute_command:echo hello": allow
apps:
  - id: planner
`

func TestExecuteCommand(t *testing.T) {
	ws := newWorkspace(t, execConfig)
	os.MkdirAll(filepath.Join(ws, "sub"), 0o755)
	t.Setenv("NEXUS_TEST_SECRET", "must-not-leak")
	d := startDaemon(t, ws)
	admin, planner := as(d.admin), as(d.appToken("planner"))

	r, res := execute(t, d, admin, `{"command":"echo hi; pwd; exit 3","cwd":"sub"}`)
	if !r.Success || res.ExitCode != 3 || res.Stdout != "hi\n"+filepath.Join(ws, "sub")+"\n" {
		t.Errorf("shell command: %v %+v", r, res)
	}
	r, res = execute(t, d, admin, `{"argv":["sh","-c","kill -9 $$"]}`)
	if !r.Success || res.Signal != "killed" {
		t.Errorf("killed by a signal: %+v", res)
	}
	// The environment is the allowlist plus what the call gives, nothing
	// of the daemon's own.
	_, res = execute(t, d, admin, `{"argv":["env"],"env":{"MINE":"1"}}`)
	if strings.Contains(res.Stdout, "NEXUS_TEST_SECRET") || !strings.Contains(res.Stdout, "MINE=1") || !strings.Contains(res.Stdout, "PATH=") {
		t.Errorf("env:\n%s", res.Stdout)
	}
	if r, _ := execute(t, d, admin, `{"command":"true","cwd":"../"}`); r.ErrorCode != "invalid_arguments" {
		t.Errorf("cwd outside: %v", r)
	}
	if r, _ := execute(t, d, admin, `{"command":"true","argv":["true"]}`); r.ErrorCode != "invalid_arguments" {
		t.Errorf("both command and argv: %v", r)
	}

	// Policy: an allowed command line is allowed as a whole command only.
	if r, res := execute(t, d, planner, `{"command":"echo hello"}`); !r.Success || res.Stdout != "hello\n" {
		t.Errorf("allowed command: %v", r)
	}
	for _, sneaky := range []string{"echo hello; touch pwned", "echo hello > pwned", "echo hello $(touch pwned)", "echo hello && touch pwned"} {
		args, _ := json.Marshal(map[string]string{"command": sneaky})
		if r, _ := execute(t, d, planner, string(args)); r.Success || r.ErrorCode != "permission_denied" {
			t.Errorf("%q: %v", sneaky, r)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "pwned")); err == nil {
		t.Error("a command hidden behind an allowed one ran")
	}

	// workspace-write (the default): no write outside the workspace.
	// (Not under /tmp or /var/tmp: those are the command's own.)
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(home, ".cache", "nexus"), 0o755)
	outside, err := os.MkdirTemp(filepath.Join(home, ".cache", "nexus"), "outside-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(outside)
	args, _ := json.Marshal(map[string]string{"command": "echo x > " + outside + "/f; echo in > inside.txt"})
	_, res = execute(t, d, admin, string(args))
	if !strings.Contains(res.Stderr, "Permission denied") {
		t.Errorf("write outside: %+v", res)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("a file was written outside the workspace: %v", entries)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "inside.txt")); string(data) != "in\n" {
		t.Errorf("write inside the workspace: %q", data)
	}
}

func TestExecuteCommandKillsItsTree(t *testing.T) {
	ws := newWorkspace(t, "")
	d := startDaemon(t, ws)
	admin := as(d.admin)
	// A grandchild holds stdout, and a setsid child leaves the group.
	r, res := execute(t, d, admin, `{"command":"sleep 4241 & setsid sleep 4242 & sleep 4243","timeoutSeconds":0.5}`)
	if r.ErrorCode != "timeout" || !res.TimedOut {
		t.Errorf("timeout: %v %+v", r, res)
	}
	for _, m := range []string{"sleep 4241", "sleep 4242", "sleep 4243"} {
		if running(t, m) {
			t.Errorf("%s survived the timeout", m)
		}
	}
	// An output flood is capped, head and tail kept.
	r, res = execute(t, d, admin, `{"command":"yes | head -c 5000000; echo END","timeoutSeconds":30}`)
	if r.ErrorCode != "output_limit" || !res.Truncated || !strings.HasPrefix(res.Stdout, "y\ny\n") || !strings.HasSuffix(res.Stdout, "END\n") || len(res.Stdout) > 1<<20+100 {
		t.Errorf("flood: %s, truncated %v, %d bytes", r.ErrorCode, res.Truncated, len(res.Stdout))
	}
	// Cancel by id stops the process.
	ctx, cancel := context.WithCancel(admin)
	defer cancel()
	stream, err := d.framework().ExecuteToolStream(ctx, &nexusv1.ExecuteToolRequest{ToolName: "execute_command", ArgumentsJson: `{"command":"sleep 4244"}`})
	if err != nil {
		t.Fatal(err)
	}
	var last *nexusv1.ToolCall
	for {
		c, err := stream.Recv()
		if err != nil {
			break
		}
		last = c
		if c.Status == "running" {
			if _, err := d.tools().CancelToolCall(admin, &nexusv1.CancelToolCallRequest{ToolCallId: c.ToolCallId}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if last == nil || last.Status != "error" || last.Error.GetCode() != "cancelled" {
		t.Errorf("cancelled call ended as %v", last)
	}
	if running(t, "sleep 4244") {
		t.Error("the cancelled command is still running")
	}
}

func TestExecuteCommandForkLoopIsBounded(t *testing.T) {
	ws := newWorkspace(t, "")
	d := startDaemon(t, ws)
	// A fork bomb: the sandbox bounds its processes and the timeout ends it;
	// the daemon stays responsive and the next command runs. The bomb runs
	// in a subshell and the command's own shell then execs sleep, which
	// needs no fork: a shell whose fork fails exits, so a bomb that forks
	// from the command's shell could end the command before its timeout.
	r, res := execute(t, d, as(d.admin), `{"command":"(f(){ f | f & }; f); exec sleep 100","timeoutSeconds":2}`)
	if r.ErrorCode != "timeout" {
		t.Errorf("fork loop: %s %s (%d bytes of output)", r.ErrorCode, r.Message, len(r.OutputJson))
	}
	if !strings.Contains(res.Stderr, "fork") {
		t.Errorf("the fork loop never hit the process bound: stderr %.300q", res.Stderr)
	}
	if r, res := execute(t, d, as(d.admin), `{"argv":["echo","after"]}`); !r.Success || res.Stdout != "after\n" {
		t.Errorf("after the fork loop: %v", r)
	}
	out, _ := exec.Command("sh", "-c", "ps -e | wc -l").Output()
	t.Logf("processes on the machine after the fork loop: %s", strings.TrimSpace(string(out)))
	n := 0
	fmt.Sscan(strings.TrimSpace(string(out)), &n)
	if n > 2000 {
		t.Errorf("%d processes left", n)
	}
}
