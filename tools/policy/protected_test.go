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

func pathArgs(p string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"path": p, "content": "x"})
	return b
}

// TestProtectedWritesAsk: a write to a protected path asks whatever the
// allow rules say; a deny still denies.
func TestProtectedWritesAsk(t *testing.T) {
	allowAll := Rules{Tools: map[string]Decision{"*": Allow}, Apps: map[string]AppRules{"a": {Allow: []string{"*"}}}}
	moveTool := tools.Definition{Name: "move_file", Kind: tools.KindMove, Risk: tools.RiskMedium}
	deleteTool := tools.Definition{Name: "delete_file", Kind: tools.KindDelete, Risk: tools.RiskMedium}
	tests := []struct {
		name  string
		rules Rules
		app   string
		tool  tools.Definition
		args  json.RawMessage
		want  Decision
		// protected is the path the verdict names, "" when none.
		protected string
	}{
		{name: "hook by the person", tool: def(t, "write_file"), args: pathArgs(".git/hooks/pre-commit"), want: Ask, protected: ".git/hooks/pre-commit"},
		{name: "hook by an app allowed everything", rules: allowAll, app: "a", tool: def(t, "write_file"), args: pathArgs(".git/hooks/pre-commit"), want: Ask, protected: ".git/hooks/pre-commit"},
		{name: "git config", rules: allowAll, tool: def(t, "edit_file"), args: pathArgs(".git/config"), want: Ask, protected: ".git/config"},
		{name: "git itself", tool: def(t, "write_file"), args: pathArgs(".git"), want: Ask, protected: ".git"},
		{name: "dot slash", rules: allowAll, tool: def(t, "write_file"), args: pathArgs("./.git//hooks/post-checkout"), want: Ask, protected: ".git/hooks/post-checkout"},
		{name: "dot segments", rules: allowAll, tool: def(t, "write_file"), args: pathArgs(".git/./hooks/./x"), want: Ask, protected: ".git/hooks/x"},
		{name: "down and up", rules: allowAll, tool: def(t, "write_file"), args: pathArgs("src/../.git/hooks/x"), want: Ask, protected: ".git/hooks/x"},
		{name: "trailing slash", rules: allowAll, tool: def(t, "write_file"), args: pathArgs(".vscode/tasks.json/"), want: Ask, protected: ".vscode/tasks.json"},
		{name: "upper case", rules: allowAll, tool: def(t, "write_file"), args: pathArgs(".VSCODE/Tasks.JSON"), want: Ask, protected: ".VSCODE/Tasks.JSON"},
		{name: "upper case git", rules: allowAll, tool: def(t, "write_file"), args: pathArgs(".GIT/HOOKS/pre-push"), want: Ask, protected: ".GIT/HOOKS/pre-push"},
		{name: "settings", rules: allowAll, tool: def(t, "write_file"), args: pathArgs(".vscode/settings.json"), want: Ask, protected: ".vscode/settings.json"},
		{name: "vscode mcp", rules: allowAll, tool: def(t, "write_file"), args: pathArgs(".vscode/mcp.json"), want: Ask, protected: ".vscode/mcp.json"},
		{name: "mcp json", rules: allowAll, app: "a", tool: def(t, "write_file"), args: pathArgs(".mcp.json"), want: Ask, protected: ".mcp.json"},
		{name: "nexus mcp json", rules: allowAll, tool: def(t, "edit_file"), args: pathArgs(".nexus/mcp.json"), want: Ask, protected: ".nexus/mcp.json"},
		{name: "absolute inside", rules: Rules{Workspace: "/ws"}, tool: def(t, "write_file"), args: pathArgs("/ws/.mcp.json"), want: Ask, protected: ".mcp.json"},
		{name: "directory of one", rules: allowAll, tool: moveTool, args: json.RawMessage(`{"path":"stuff","destinationPath":".vscode"}`), want: Ask, protected: ".vscode"},
		{name: "a nested repository's hook", rules: allowAll, app: "a", tool: def(t, "write_file"), args: pathArgs("vendor/lib/.git/hooks/pre-commit"), want: Ask, protected: "vendor/lib/.git/hooks/pre-commit"},
		{name: "a nested repository's config", rules: allowAll, tool: def(t, "edit_file"), args: pathArgs("sub/.Git/config"), want: Ask, protected: "sub/.Git/config"},
		{name: "delete", rules: allowAll, tool: deleteTool, args: pathArgs(".git/hooks/pre-commit"), want: Ask, protected: ".git/hooks/pre-commit"},
		{name: "app ask stays ask", app: "a", tool: def(t, "write_file"), args: pathArgs(".mcp.json"), want: Ask, protected: ".mcp.json"},

		// A deny still denies.
		{name: "tools deny", rules: Rules{Tools: map[string]Decision{"write_file": Deny}}, tool: def(t, "write_file"), args: pathArgs(".git/hooks/x"), want: Deny},
		{name: "app deny", rules: Rules{Apps: map[string]AppRules{"a": {Deny: []string{"write_file"}}}}, app: "a", tool: def(t, "write_file"), args: pathArgs(".mcp.json"), want: Deny},
		{name: "admin deny", rules: Rules{Admin: Deny}, tool: def(t, "write_file"), args: pathArgs(".mcp.json"), want: Deny},

		// Neither protected nor asked.
		{name: "ordinary file", rules: allowAll, tool: def(t, "write_file"), args: pathArgs("src/main.go"), want: Allow},
		{name: "gitignore", rules: allowAll, tool: def(t, "write_file"), args: pathArgs(".gitignore"), want: Allow},
		{name: "git-like name", rules: allowAll, tool: def(t, "write_file"), args: pathArgs(".github/workflows/ci.yml"), want: Allow},
		{name: "hooks elsewhere", rules: allowAll, tool: def(t, "write_file"), args: pathArgs("src/.git-hooks/x"), want: Allow},
		{name: "git file elsewhere", rules: allowAll, tool: def(t, "write_file"), args: pathArgs("src/x.git"), want: Allow},
		{name: "nested mcp json", rules: allowAll, tool: def(t, "write_file"), args: pathArgs("sub/.mcp.json"), want: Allow},
		{name: "launch json", rules: allowAll, tool: def(t, "write_file"), args: pathArgs(".vscode/launch.json"), want: Allow},
		{name: "read is not a write", rules: allowAll, tool: def(t, "read_file"), args: pathArgs(".git/hooks/pre-commit"), want: Allow},
		{name: "mcp tools are not inspected", rules: allowAll, tool: def(t, "github/create_issue"), args: pathArgs(".git/hooks/pre-commit"), want: Allow},
		{name: "outside the workspace", rules: allowAll, tool: def(t, "write_file"), args: pathArgs("../.git/hooks/x"), want: Allow},
		{name: "absolute without a workspace", rules: allowAll, tool: def(t, "write_file"), args: pathArgs("/.git/hooks/x"), want: Allow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := New(tc.rules, nil).Decide(Request{AppID: tc.app, Tool: tc.tool, Args: tc.args})
			if got.Decision != tc.want || got.Protected != tc.protected {
				t.Fatalf("Decide = %s, protected %q (%s); want %s, protected %q", got.Decision, got.Protected, got.Reason, tc.want, tc.protected)
			}
			if tc.protected != "" && !strings.Contains(got.Reason, "always asks") {
				t.Errorf("reason %q does not say the write always asks", got.Reason)
			}
		})
	}
}

// TestProtectedThroughSymlinks: with the workspace known, a path that
// reaches a protected file through a symlink in the workspace asks too.
func TestProtectedThroughSymlinks(t *testing.T) {
	ws := t.TempDir()
	for _, d := range []string{".git/hooks", ".vscode", "src"} {
		os.MkdirAll(filepath.Join(ws, d), 0o755)
	}
	links := map[string]string{
		"h":         ".git/hooks",               // relative, to a protected directory
		"abs":       filepath.Join(ws, ".git"),  // absolute, inside the workspace
		"src/up":    "../.vscode",               // climbing back into the workspace
		"cfg":       ".mcp.json",                // to a protected file not yet there
		"chain":     "h",                        // a link to a link
		"outside":   "/etc",                     // outside: the core tools refuse it
		"loop":      "loop",                     // a loop
		"plain":     "src",                      // an ordinary directory
		"src/other": filepath.Join(ws, "plain"), // an absolute link to a link
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	p := New(Rules{Tools: map[string]Decision{"*": Allow}, Workspace: ws}, nil)
	for _, tc := range []struct {
		path string
		want Decision
	}{
		{"h/pre-commit", Ask},
		{"abs/hooks/pre-commit", Ask},
		{"abs/config", Ask},
		{"src/up/tasks.json", Ask},
		{"cfg", Ask},
		{"chain/post-merge", Ask},
		{"./h//pre-push", Ask},
		{"outside/passwd", Allow},
		{"loop/x", Allow},
		{"plain/main.go", Allow},
		{"src/other/x", Allow},
		{"h", Ask}, // the link itself resolves to .git/hooks
	} {
		v := p.Decide(Request{Tool: def(t, "write_file"), Args: pathArgs(tc.path)})
		if v.Decision != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.path, v.Decision, v.Reason, tc.want)
		}
		if tc.want == Ask && !strings.Contains(v.Protected, "through a symlink") {
			t.Errorf("%s: protected %q does not say it goes through a symlink", tc.path, v.Protected)
		}
	}
}

// TestProtectedRemembered: a remembered allow_always does not allow a
// protected write; a remembered reject_always denies it.
func TestProtectedRemembered(t *testing.T) {
	store, err := OpenApprovals(filepath.Join(t.TempDir(), "approvals.json"))
	if err != nil {
		t.Fatal(err)
	}
	wf := def(t, "write_file")
	// An answer for the whole workspace covers the hook's path too.
	everywhere := Approval{AppID: "a", Tool: wf.Name, Scope: Scope{Directory: "."}, DefinitionHash: DefinitionHash(wf), Allow: true, Time: time.Now()}
	if err := store.Remember(everywhere); err != nil {
		t.Fatal(err)
	}
	p := New(Rules{}, store)
	if v := p.Decide(Request{AppID: "a", Tool: wf, Args: pathArgs("notes.md")}); v.Decision != Allow || !v.Remembered {
		t.Fatalf("control: an ordinary write after allow_always: %+v", v)
	}
	if v := p.Decide(Request{AppID: "a", Tool: wf, Args: pathArgs(".git/hooks/pre-commit")}); v.Decision != Ask || v.Remembered {
		t.Fatalf("a hook after allow_always: %+v", v)
	}
	everywhere.Allow = false
	if err := store.Remember(everywhere); err != nil {
		t.Fatal(err)
	}
	if v := p.Decide(Request{AppID: "a", Tool: wf, Args: pathArgs(".git/hooks/pre-commit")}); v.Decision != Deny || !v.Remembered {
		t.Fatalf("a hook after reject_always: %+v", v)
	}
}

// TestProtectedGate: through the gate, a protected write (and one that
// makes a file executable) is asked about every time, an "always" answer
// is not remembered, and with no approver
// the call is denied with a message saying approval was needed.
func TestProtectedGate(t *testing.T) {
	var approvers Approvers
	store, err := OpenApprovals(filepath.Join(t.TempDir(), "approvals.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := New(Rules{Apps: map[string]AppRules{"planner": {Allow: []string{"write_file"}}}}, store)
	m, err := tools.NewManager(tools.Options{Gate: p.Gate(&approvers, time.Minute, nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if err := m.Register(writeTool); err != nil {
		t.Fatal(err)
	}
	write := func(path string) tools.Call {
		return m.Execute(context.Background(), tools.ExecuteRequest{ToolName: "write_file", AppID: "planner", Arguments: pathArgs(path)})
	}
	c := write(".git/hooks/pre-commit")
	if c.Error == nil || c.Error.Code != tools.CodePermissionDenied || !strings.Contains(c.Error.Message, "needs approval") {
		t.Fatalf("no approver: %+v", c.Error)
	}
	if c.ICERC == nil || c.ICERC.Risk.Level != tools.RiskHigh || !strings.Contains(strings.Join(c.ICERC.Risk.Details, " "), "always asked") {
		t.Fatalf("the record shown: %+v", c.ICERC)
	}
	var asked atomic.Int32
	approvers.Set(editor(func(context.Context, tools.Call, ICERC) (Answer, error) {
		asked.Add(1)
		return AllowAlways, nil
	}))
	for i := 1; i <= 2; i++ {
		if c := write(".vscode/tasks.json"); c.Status != tools.StatusCompleted || asked.Load() != int32(i) {
			t.Fatalf("write %d: asked %d times, %+v", i, asked.Load(), c.Error)
		}
	}
	// So is a write that makes a file executable.
	for i := 3; i <= 4; i++ {
		c := m.Execute(context.Background(), tools.ExecuteRequest{ToolName: "write_file", AppID: "planner",
			Arguments: json.RawMessage(`{"path":"run.sh","content":"#!/bin/sh\n","executable":true}`)})
		if c.Status != tools.StatusCompleted || asked.Load() != int32(i) {
			t.Fatalf("executable write %d: asked %d times, %+v", i, asked.Load(), c.Error)
		}
	}
	if len(store.List()) != 0 {
		t.Fatalf("an always answer to a protected write was remembered: %+v", store.List())
	}
	// The allow rule still allows ordinary writes without asking.
	if c := write("notes.md"); c.Status != tools.StatusCompleted || asked.Load() != 4 {
		t.Fatalf("an ordinary write: asked %d times, %+v", asked.Load(), c.Error)
	}
}

func TestCheckProtectedResource(t *testing.T) {
	p := New(Rules{Tools: map[string]Decision{"write_file": Allow}}, nil)
	lookup := func(name string) (tools.Definition, bool) { return def(t, name), true }
	if v := p.Check("a", "write_file", ".git/hooks/pre-commit", lookup); v.Decision != Ask {
		t.Errorf("write_file of a hook: %+v", v)
	}
	if v := p.Check("a", "write_file", "notes.md", lookup); v.Decision != Allow {
		t.Errorf("write_file of notes.md: %+v", v)
	}
}

// TestProtectedGitHooks: the hooks directory that the repository's git
// config names (core.hooksPath), and .husky, are asked about like .git,
// and the list follows the config as it changes.
func TestProtectedGitHooks(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, ".gitconfig"))
	t.Setenv("GIT_CONFIG_SYSTEM", filepath.Join(home, "system-gitconfig"))
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	setHooksPath := func(hp string) {
		t.Helper()
		cfg := "[core]\n\tbare = false\n"
		if hp != "" {
			cfg += "\thooksPath = " + hp + "\n"
		}
		if err := os.WriteFile(filepath.Join(ws, ".git", "config"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := New(Rules{Tools: map[string]Decision{"*": Allow}, Workspace: ws}, nil)
	decide := func(path string) Verdict {
		return p.Decide(Request{AppID: "a", Tool: def(t, "write_file"), Args: pathArgs(path)})
	}
	setHooksPath(".githooks")
	for _, tc := range []struct {
		path string
		want Decision
	}{
		{".githooks/pre-commit", Ask},
		{"./.githooks//post-merge", Ask},
		{".GitHooks/pre-push", Ask},
		{".githooks", Ask},
		{".husky/pre-commit", Ask},
		{".husky/_/h", Ask},
		{"githooks/pre-commit", Allow},
		{"src/.githooks/pre-commit", Allow},
	} {
		if v := decide(tc.path); v.Decision != tc.want {
			t.Errorf("hooksPath .githooks: %s: %s (%s), want %s", tc.path, v.Decision, v.Reason, tc.want)
		}
	}

	setHooksPath("scripts/hooks/")
	if v := decide(".githooks/pre-commit"); v.Decision != Allow {
		t.Errorf("after the config changed, the old hooks directory: %+v", v)
	}
	if v := decide("scripts/hooks/pre-commit"); v.Decision != Ask || v.Protected != "scripts/hooks/pre-commit" {
		t.Errorf("after the config changed, the new hooks directory: %+v", v)
	}
	// A directory that holds the hooks directory: a move there puts one in place.
	if v := p.Decide(Request{Tool: tools.Definition{Name: "move_file", Kind: tools.KindMove}, Args: json.RawMessage(`{"path":"x","destinationPath":"scripts"}`)}); v.Decision != Ask {
		t.Errorf("a move onto the directory holding the hooks: %+v", v)
	}
	// Through a symlink in the workspace.
	if err := os.Symlink("scripts/hooks", filepath.Join(ws, "h")); err != nil {
		t.Fatal(err)
	}
	if v := decide("h/pre-commit"); v.Decision != Ask || !strings.Contains(v.Protected, "through a symlink") {
		t.Errorf("through a symlink: %+v", v)
	}

	// Without the workspace, git's config is not read.
	if v := New(Rules{Tools: map[string]Decision{"*": Allow}}, nil).Decide(Request{Tool: def(t, "write_file"), Args: pathArgs("scripts/hooks/pre-commit")}); v.Decision != Allow {
		t.Errorf("without a workspace: %+v", v)
	}
}

// TestProtectedExecutable: a core tool's write with "executable": true is
// asked whatever the rules allow, a deny still denies, and false or absent
// changes nothing.
func TestProtectedExecutable(t *testing.T) {
	allowAll := Rules{Tools: map[string]Decision{"*": Allow}}
	args := func(path string, exec any) json.RawMessage {
		m := map[string]any{"path": path, "content": "#!/bin/sh\n"}
		if exec != nil {
			m["executable"] = exec
		}
		b, _ := json.Marshal(m)
		return b
	}
	for _, tc := range []struct {
		name      string
		rules     Rules
		tool      tools.Definition
		args      json.RawMessage
		want      Decision
		protected string
	}{
		{"executable", allowAll, def(t, "write_file"), args("run.sh", true), Ask, "run.sh (made executable)"},
		{"executable and a hook", allowAll, def(t, "write_file"), args(".git/hooks/pre-commit", true), Ask, ".git/hooks/pre-commit (made executable)"},
		{"not executable", allowAll, def(t, "write_file"), args("run.sh", false), Allow, ""},
		{"no executable argument", allowAll, def(t, "write_file"), args("run.sh", nil), Allow, ""},
		{"not a boolean", allowAll, def(t, "write_file"), args("run.sh", "yes"), Allow, ""},
		{"denied", Rules{Tools: map[string]Decision{"write_file": Deny}}, def(t, "write_file"), args("run.sh", true), Deny, ""},
		{"an MCP tool's argument means nothing", allowAll, def(t, "github/create_issue"), args("run.sh", true), Allow, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := New(tc.rules, nil).Decide(Request{AppID: "a", Tool: tc.tool, Args: tc.args})
			if v.Decision != tc.want || v.Protected != tc.protected {
				t.Fatalf("Decide = %s, protected %q (%s); want %s, protected %q", v.Decision, v.Protected, v.Reason, tc.want, tc.protected)
			}
		})
	}
}
