package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/command"
	"github.com/nexuscocreate/nexus/tools/policy"
	"github.com/nexuscocreate/nexus/workspace"
)

var person = access.Person("cli")

// plainRun runs a hook as a plain child: the sandbox is core's and the
// integration tests'.
func plainRun(ws string) Runner {
	return func(ctx context.Context, argv []string, stdin []byte, timeout time.Duration, limit int) (command.Result, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir, cmd.Stdin = ws, bytes.NewReader(stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		res := command.Result{Stdout: stdout.String(), Stderr: stderr.String(), TimedOut: ctx.Err() != nil,
			Truncated: stdout.Len()+stderr.Len() > limit}
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			res.ExitCode = ee.ExitCode()
		case err != nil:
			return res, err
		}
		return res, nil
	}
}

// setup writes script as ./hook.sh of a new workspace and returns hooks of cfg.
func setup(t *testing.T, script string, cfg workspace.HooksConfig) (*Hooks, string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("hooks here are shell scripts")
	}
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".nexus"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "hook.sh"), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	h, err := New(Options{Workspace: ws, Config: cfg, Run: plainRun(ws)})
	if err != nil {
		t.Fatal(err)
	}
	return h, ws
}

func pre(match string) workspace.HooksConfig {
	return workspace.HooksConfig{PreToolUse: []workspace.HookConfig{{Match: match, Command: []string{"./hook.sh"}, Timeout: workspace.Duration(time.Minute)}}}
}

func call(tool string) *tools.HookCall {
	return &tools.HookCall{Call: tools.Call{ID: "c1", ToolName: tool, Session: "s1", Turn: "t1"}, Party: person.Agent("s1"),
		Args: json.RawMessage(`{"path":"notes.txt"}`)}
}

func trustAll(t *testing.T, h *Hooks) {
	t.Helper()
	for _, st := range h.List() {
		if _, err := h.Trust(person, st.Name, st.Pin); err != nil {
			t.Fatal(err)
		}
	}
}

func TestNotApprovedDeniesAndDoesNotRun(t *testing.T) {
	h, ws := setup(t, "touch ran\n", pre(""))
	_, deny := h.Before(context.Background(), call("write_file"))
	if deny == nil || deny.Code != tools.CodePermissionDenied || !strings.Contains(deny.Message, "nexus hooks trust preToolUse[0]") {
		t.Fatalf("an unapproved hook: %+v, want a denial naming how to approve it", deny)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Fatal("an unapproved hook ran")
	}
	trustAll(t, h)
	if _, deny := h.Before(context.Background(), call("write_file")); deny != nil {
		t.Fatalf("an approved hook that exits 0: %+v", deny)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err != nil {
		t.Fatal("the approved hook did not run")
	}
	// A change of its file makes it wait again.
	if err := os.WriteFile(filepath.Join(ws, "hook.sh"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if st := h.List()[0]; st.Trusted {
		t.Fatalf("a changed hook is still approved: %+v", st)
	}
	if _, deny := h.Before(context.Background(), call("write_file")); deny == nil || !strings.Contains(deny.Message, "changed since it was approved") {
		t.Fatalf("a changed hook: %+v", deny)
	}
}

func TestTrustOnlyByThePerson(t *testing.T) {
	h, _ := setup(t, "exit 0\n", pre(""))
	st := h.List()[0]
	if _, err := h.Trust(access.ForApp(&access.App{ID: "planner"}), st.Name, st.Pin); !errors.Is(err, policy.ErrNotThePerson) {
		t.Fatalf("an app approved a hook: %v", err)
	}
	if _, err := h.Trust(person, st.Name, "sha256:00"); !errors.Is(err, ErrPinMismatch) {
		t.Fatalf("approving another pin: %v", err)
	}
	if _, err := h.Trust(person, "preToolUse[9]", ""); !errors.Is(err, ErrUnknownHook) {
		t.Fatalf("approving no hook: %v", err)
	}
	if len(st.Files) != 1 || st.Files[0].Path != "hook.sh" {
		t.Fatalf("pinned files %+v, want hook.sh", st.Files)
	}
}

func TestPreToolUseAnswers(t *testing.T) {
	for _, tc := range []struct {
		name, script     string
		wantAsk, wantErr string
	}{
		{"exit 2 denies with stderr", "echo 'no writes to notes' >&2; exit 2\n", "", "denied by the preToolUse hook preToolUse[0]: no writes to notes"},
		{"a JSON deny", `echo '{"decision":"deny","reason":"not today"}'` + "\n", "", "denied by the preToolUse hook preToolUse[0]: not today"},
		{"Claude Code's form", `echo '{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"nope"}}'` + "\n", "", "nope"},
		{"ask", `echo '{"decision":"ask","reason":"a person should look"}'` + "\n", "a person should look", ""},
		{"allow goes on", `echo '{"decision":"allow"}'` + "\n", "", ""},
		{"plain text goes on", "echo looked at it\n", "", ""},
		{"another exit code fails closed", "echo broken >&2; exit 1\n", "", "failed, and a call its hook cannot check is denied: it exited with 1: broken"},
		{"a bad decision fails closed", `echo '{"decision":"maybe"}'` + "\n", "", `its decision "maybe" is none of`},
		{"bad JSON fails closed", "echo '{oops'\n", "", "its stdout is not a JSON object"},
		{"reads the call", `in=$(cat); case "$in" in *'"tool":"write_file"'*'"arguments":{"path":"notes.txt"}'*) ;; *) echo "$in" >&2; exit 1;; esac` + "\n", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := setup(t, tc.script, pre("write_file|edit_file"))
			trustAll(t, h)
			ask, deny := h.Before(context.Background(), call("write_file"))
			if ask != tc.wantAsk {
				t.Errorf("ask %q, want %q", ask, tc.wantAsk)
			}
			switch {
			case tc.wantErr == "" && deny != nil:
				t.Errorf("denied: %v", deny)
			case tc.wantErr != "" && (deny == nil || !strings.Contains(deny.Message, tc.wantErr)):
				t.Errorf("denial %v, want %q", deny, tc.wantErr)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	h, ws := setup(t, "touch ran\nexit 2\n", pre("write_file|github/.*"))
	trustAll(t, h)
	if _, deny := h.Before(context.Background(), call("read_file")); deny != nil {
		t.Fatalf("a hook that does not match ran: %v", deny)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Fatal("a hook ran for a tool it does not match")
	}
	mcp := call("create_issue")
	mcp.Call.ServerName = "github"
	if _, deny := h.Before(context.Background(), mcp); deny == nil {
		t.Fatal("a hook for github/.* did not see github/create_issue")
	}
	if _, deny := h.Before(context.Background(), call("write_file_x")); deny != nil {
		t.Fatal("the match is not held to the whole name")
	}
}

func TestPostToolUseNotes(t *testing.T) {
	cfg := workspace.HooksConfig{PostToolUse: []workspace.HookConfig{
		{Command: []string{"./hook.sh", "json"}, Timeout: workspace.Duration(time.Minute)},
		{Command: []string{"./hook.sh", "two"}, Timeout: workspace.Duration(time.Minute)},
		{Command: []string{"./hook.sh", "plain"}, Timeout: workspace.Duration(time.Minute)},
		{Command: []string{"./hook.sh", "fail"}, Timeout: workspace.Duration(time.Minute)},
	}}
	h, _ := setup(t, `in=$(cat)
case "$1" in
json) case "$in" in *'"result":{"bytesWritten":5}'*) echo '{"additionalContext":"saw 5 bytes"}';; esac;;
two) echo "lint: 1 warning" >&2; exit 2;;
plain) echo "only for the log";;
fail) exit 1;;
esac
`, cfg)
	trustAll(t, h)
	c := call("write_file")
	c.Result = json.RawMessage(`{"bytesWritten":5}`)
	notes := h.After(context.Background(), c)
	if strings.Join(notes, "|") != "saw 5 bytes|lint: 1 warning" {
		t.Fatalf("notes %q", notes)
	}
}

func TestPromptHooks(t *testing.T) {
	cfg := workspace.HooksConfig{UserPromptSubmit: []workspace.PromptHookConfig{{Command: []string{"./hook.sh"}, Timeout: workspace.Duration(time.Minute)}}}
	h, _ := setup(t, `in=$(cat)
case "$in" in
*secret*) echo "prompts must not carry secrets" >&2; exit 2;;
*) echo "Today is a holiday.";;
esac
`, cfg)
	if _, err := h.Prompt(context.Background(), "s1", "t1", "agent", "hello"); err == nil || !strings.Contains(err.Error(), "waits for the person's approval") {
		t.Fatalf("an unapproved prompt hook: %v", err)
	}
	trustAll(t, h)
	added, err := h.Prompt(context.Background(), "s1", "t1", "agent", "hello")
	if err != nil || added != "Today is a holiday." {
		t.Fatalf("Prompt = %q, %v", added, err)
	}
	var blocked *PromptBlockedError
	if _, err := h.Prompt(context.Background(), "s1", "t1", "agent", "my secret"); !errors.As(err, &blocked) || blocked.Reason != "blocked it: prompts must not carry secrets" {
		t.Fatalf("a blocked prompt: %v", err)
	}
}

// TestAskerApproves: the editor's asker is asked about a waiting hook at
// once, its "yes" approves it, and it is not asked twice about one pin;
// an app's asker is never attached.
func TestAskerApproves(t *testing.T) {
	h, _ := setup(t, "exit 0\n", pre(""))
	h.SetAsker(access.ForApp(&access.App{ID: "planner"}), func(context.Context, Status) (bool, error) {
		t.Error("an app was asked to approve a hook")
		return true, nil
	})
	asked := make(chan Status, 4)
	h.SetAsker(access.Person("editor"), func(_ context.Context, st Status) (bool, error) {
		asked <- st
		return true, nil
	})
	if st := <-asked; st.Name != "preToolUse[0]" || st.Trusted {
		t.Fatalf("asked about %+v", st)
	}
	deadline := time.Now().Add(30 * time.Second) // guards a hang only
	for !h.List()[0].Trusted {
		if time.Now().After(deadline) {
			t.Fatal("the editor's yes did not approve the hook")
		}
		runtime.Gosched()
	}
	h.ask(h.List()[0])
	select {
	case st := <-asked:
		t.Fatalf("asked again about %+v", st)
	default:
	}
	h.SetAsker(access.Person("editor"), nil)
}

// TestTimeoutDenies: a preToolUse hook that does not finish in its timeout
// denies the call; a postToolUse one is ignored.
func TestTimeoutDenies(t *testing.T) {
	cfg := workspace.HooksConfig{
		PreToolUse:  []workspace.HookConfig{{Command: []string{"./hook.sh"}, Timeout: workspace.Duration(50 * time.Millisecond)}},
		PostToolUse: []workspace.HookConfig{{Command: []string{"./hook.sh"}, Timeout: workspace.Duration(50 * time.Millisecond)}},
	}
	h, _ := setup(t, "exec sleep 600\n", cfg)
	trustAll(t, h)
	if _, deny := h.Before(context.Background(), call("read_file")); deny == nil || !strings.Contains(deny.Message, "did not finish in 50ms") {
		t.Fatalf("a hook that timed out: %v", deny)
	}
	if notes := h.After(context.Background(), call("read_file")); len(notes) != 0 {
		t.Fatalf("a postToolUse hook that timed out gave notes %q", notes)
	}
}
