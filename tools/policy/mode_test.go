package policy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/tools"
)

// TestModes runs the gate on calls of an agent session acting for the
// person in each mode, with no approver attached: an ask then ends with
// "needs approval (REASON)", a deny with "denied by policy: REASON".
func TestModes(t *testing.T) {
	ws := t.TempDir()
	allowWrite := Rules{Tools: map[string]Decision{"write_file": Allow}, Workspace: ws}
	tests := []struct {
		name   string
		mode   Mode
		rules  Rules
		tool   string
		args   string
		person bool // the person's own call (admin default), not an agent's
		want   Decision
		reason string // a substring of the reason, for ask and deny
	}{
		{name: "default reads", mode: ModeDefault, tool: "read_file", want: Allow},
		{name: "default asks for a write", mode: ModeDefault, tool: "write_file", want: Ask, reason: "default for medium-risk"},
		{name: "no mode is default", mode: "", tool: "write_file", want: Ask, reason: "default for medium-risk"},

		{name: "ask: a read runs", mode: ModeAsk, tool: "read_file", want: Allow},
		{name: "ask: a search runs", mode: ModeAsk, tool: "search_files", want: Allow},
		{name: "ask: an MCP read runs", mode: ModeAsk, tool: "github/list_issues", want: Allow},
		{name: "ask: an allowed write is asked", mode: ModeAsk, rules: allowWrite, tool: "write_file", want: Ask,
			reason: "the session's mode ask asks before every call that does more than read (policy: config tools.policy: write_file = allow)"},
		{name: "ask: the person's own command is asked", mode: ModeAsk, person: true, tool: "execute_command", args: "ls", want: Ask, reason: "the session's mode ask"},
		{name: "ask: a low-risk other is asked", mode: ModeAsk, tool: "get_current_time", want: Ask, reason: "the session's mode ask"},
		{name: "ask: deny stays deny", mode: ModeAsk, rules: Rules{Tools: map[string]Decision{"write_file": Deny}}, tool: "write_file", want: Deny, reason: "config tools.policy: write_file = deny"},
		{name: "ask: an ask stays the policy's", mode: ModeAsk, tool: "write_file", want: Ask, reason: "default for medium-risk"},

		{name: "auto-edit: write_file runs", mode: ModeAutoEdit, tool: "write_file", args: `{"path":"a.md"}`, want: Allow},
		{name: "auto-edit: edit_file runs", mode: ModeAutoEdit, tool: "edit_file", args: `{"path":"src/a.go"}`, want: Allow},
		{name: "auto-edit: a protected file is asked", mode: ModeAutoEdit, rules: Rules{Workspace: ws}, tool: "write_file", args: `{"path":".vscode/tasks.json"}`, want: Ask, reason: "a write to .vscode/tasks.json always asks"},
		{name: "auto-edit: a hook is asked", mode: ModeAutoEdit, rules: Rules{Workspace: ws}, tool: "edit_file", args: `{"path":".git/hooks/pre-commit"}`, want: Ask, reason: "a write to .git/hooks/pre-commit always asks"},
		{name: "auto-edit: deny stays deny", mode: ModeAutoEdit, rules: Rules{Tools: map[string]Decision{"edit_file": Deny}}, tool: "edit_file", args: `{"path":"a"}`, want: Deny, reason: "edit_file = deny"},
		{name: "auto-edit: an MCP edit is asked", mode: ModeAutoEdit, tool: "github/create_issue", want: Ask, reason: "default for medium-risk"},
		{name: "auto-edit: a command is asked", mode: ModeAutoEdit, tool: "execute_command", args: "ls", want: Ask, reason: "default for high-risk"},

		{name: "read-only: a read runs", mode: ModeReadOnly, tool: "read_file", want: Allow},
		{name: "read-only: a search runs", mode: ModeReadOnly, tool: "search_files", want: Allow},
		{name: "read-only: an MCP read runs", mode: ModeReadOnly, tool: "github/list_issues", want: Allow},
		{name: "read-only: an allowed write is denied", mode: ModeReadOnly, rules: allowWrite, tool: "write_file", want: Deny,
			reason: "the session's mode read-only runs only calls that read, and write_file is of kind edit (policy: config tools.policy: write_file = allow)"},
		{name: "read-only: the person's command is denied", mode: ModeReadOnly, person: true, tool: "execute_command", args: "ls", want: Deny, reason: "the session's mode read-only"},
		{name: "read-only: an MCP delete is denied", mode: ModeReadOnly, tool: "github/delete_repo", want: Deny, reason: "github/delete_repo is of kind delete"},
		{name: "read-only: a read the policy asks about is asked", mode: ModeReadOnly, rules: Rules{Tools: map[string]Decision{"read_file": Ask}}, tool: "read_file", want: Ask, reason: "read_file = ask"},
		{name: "read-only: a read the policy denies is denied", mode: ModeReadOnly, rules: Rules{Tools: map[string]Decision{"read_file": Deny}}, tool: "read_file", want: Deny, reason: "read_file = deny"},

		{name: "an unknown mode denies", mode: "yolo", tool: "read_file", want: Deny, reason: `the session's mode "yolo" is not one of`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gate := New(tt.rules, nil).Gate(&Approvers{}, time.Minute, nil)
			args := json.RawMessage(`{}`)
			switch {
			case tt.tool == "execute_command":
				args = cmdArgs(tt.args)
			case tt.args != "":
				args = json.RawMessage(tt.args)
			}
			gr := &tools.GateRequest{Tool: def(t, tt.tool), Args: args, Agent: !tt.person}
			err := gate(WithMode(context.Background(), tt.mode), gr, func(tools.ICERC) {})
			var got Decision
			msg := ""
			switch {
			case err == nil:
				got = Allow
			case strings.Contains(err.Error(), "needs approval"):
				got, msg = Ask, err.Error()
			case strings.Contains(err.Error(), "denied by policy"):
				got, msg = Deny, err.Error()
			default:
				t.Fatalf("gate: %v", err)
			}
			if got != tt.want || !strings.Contains(msg, tt.reason) {
				t.Errorf("%s, %q; want %s with %q", got, msg, tt.want, tt.reason)
			}
		})
	}
}

// TestModeAskRemembers: an "always" answer given when ask mode asks is
// remembered as any other: the default mode uses it, while ask mode goes
// on asking.
func TestModeAskRemembers(t *testing.T) {
	var approvers Approvers
	m := gateManager(t, &approvers, time.Minute)
	var asked atomic.Int32
	approvers.Set(editor(func(context.Context, tools.Call, ICERC) (Answer, error) {
		asked.Add(1)
		return AllowAlways, nil
	}))
	ask := WithMode(context.Background(), ModeAsk)
	call := func(ctx context.Context) tools.Call {
		return m.Execute(ctx, tools.ExecuteRequest{ToolName: "write_file", AppID: "planner", Arguments: json.RawMessage(`{"path":"a.md"}`)})
	}
	for i := range 2 {
		if c := call(ask); c.Status != tools.StatusCompleted || asked.Load() != int32(i+1) {
			t.Fatalf("ask mode, call %d: asked %d times, %+v", i+1, asked.Load(), c.Error)
		}
	}
	if c := call(context.Background()); c.Status != tools.StatusCompleted || asked.Load() != 2 {
		t.Fatalf("default mode after allow_always: asked %d times, %+v", asked.Load(), c.Error)
	}
}

// TestModeAutoEditThroughSymlink: a write auto-edit would allow is asked
// when its path leads to a protected file through a symlink.
func TestModeAutoEditThroughSymlink(t *testing.T) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".git/hooks", filepath.Join(ws, "hooks")); err != nil {
		t.Fatal(err)
	}
	gate := New(Rules{Workspace: ws}, nil).Gate(&Approvers{}, time.Minute, nil)
	gr := &tools.GateRequest{Tool: def(t, "write_file"), Args: json.RawMessage(`{"path":"hooks/pre-commit"}`), Agent: true}
	err := gate(WithMode(context.Background(), ModeAutoEdit), gr, func(tools.ICERC) {})
	if err == nil || !strings.Contains(err.Error(), "needs approval") {
		t.Fatalf("auto-edit through a symlink to .git/hooks: %v", err)
	}
}

func TestModeValues(t *testing.T) {
	for _, m := range []Mode{ModeDefault, ModeAsk, ModeAutoEdit, ModeReadOnly} {
		if !m.Valid() {
			t.Errorf("%q is not valid", m)
		}
		if got := ModeFrom(WithMode(context.Background(), m)); got != m {
			t.Errorf("ModeFrom(WithMode(%q)) = %q", m, got)
		}
	}
	for _, m := range []Mode{"", "Ask", "yolo"} {
		if m.Valid() {
			t.Errorf("%q is valid", m)
		}
	}
	ctx := context.Background()
	if WithMode(ctx, ModeDefault) != ctx || ModeFrom(ctx) != ModeDefault {
		t.Error("the default mode is not the absence of a mode")
	}
}

// TestGateAllowedAllocatesNothing: an allowed call's gate, with a mode or
// without, allocates nothing (the gate runs for every tool call).
func TestGateAllowedAllocatesNothing(t *testing.T) {
	gate := New(Rules{}, nil).Gate(&Approvers{}, time.Minute, nil)
	gr := &tools.GateRequest{Tool: def(t, "read_file"), Args: json.RawMessage(`{"path":"a"}`), Agent: true}
	for _, ctx := range []context.Context{context.Background(), WithMode(context.Background(), ModeAsk)} {
		if n := testing.AllocsPerRun(100, func() { gate(ctx, gr, nil) }); n != 0 {
			t.Errorf("mode %s: %v allocations", ModeFrom(ctx), n)
		}
	}
}
