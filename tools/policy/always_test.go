package policy

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/tools"
)

// TestAlwaysRemembersWhatWasShown: through the gate, an "always" answer
// covers the command or path the prompt showed, for the party whose call
// it was, and the prompt said so (ICERC.Always); issue 24, break 5.
func TestAlwaysRemembersWhatWasShown(t *testing.T) {
	store, err := OpenApprovals(filepath.Join(t.TempDir(), "approvals.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := New(Rules{}, store)
	var approvers Approvers
	m, err := tools.NewManager(tools.Options{Gate: p.Gate(&approvers, time.Minute, nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	ok := func(context.Context, *tools.Invocation, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{}`), nil
	}
	for _, d := range []tools.Definition{def(t, "execute_command"), def(t, "write_file"), def(t, "github/create_issue")} {
		d.InputSchema = json.RawMessage(`{"type":"object"}`)
		if err := m.Register(tools.Tool{Definition: d, Handler: ok}); err != nil {
			t.Fatal(err)
		}
	}

	var (
		mu    sync.Mutex
		asked []ICERC
		ans   = AllowAlways
	)
	approvers.Set(editor(func(_ context.Context, _ tools.Call, rec ICERC) (Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, rec)
		return ans, nil
	}))
	type call struct {
		app, author string
		tool        string
		server      string
		args        string
	}
	exec := func(c call) (ran bool, rec *ICERC) {
		t.Helper()
		mu.Lock()
		n := len(asked)
		mu.Unlock()
		req := tools.ExecuteRequest{ToolName: c.tool, ServerName: c.server, AppID: c.app, Author: c.author, Arguments: json.RawMessage(c.args)}
		if session, ok := strings.CutPrefix(c.author, "agent:"); ok {
			req.Party = access.Person("editor").Agent(session)
		}
		r := m.Execute(context.Background(), req)
		mu.Lock()
		defer mu.Unlock()
		if len(asked) > n {
			rec = &asked[len(asked)-1]
		}
		return r.Status == tools.StatusCompleted, rec
	}

	// An app's "always" to ls.
	ran, rec := exec(call{app: "alpha", author: "app:alpha", tool: "execute_command", args: `{"command":"ls"}`})
	if !ran || rec == nil {
		t.Fatalf("ls: ran %v, asked %v", ran, rec)
	}
	if rec.Asker != `app "alpha"` || rec.Always != `execute_command "ls", exactly this command, for app "alpha" and its agent sessions` {
		t.Errorf("ICERC asker %q, always %q", rec.Asker, rec.Always)
	}
	ans = RejectOnce
	for _, c := range []call{
		{app: "alpha", author: "app:alpha", tool: "execute_command", args: `{"command":"rm -rf src"}`},
		{app: "alpha", author: "app:alpha", tool: "execute_command", args: `{"command":"ls; rm -rf src"}`},
		{app: "alpha", author: "app:alpha", tool: "execute_command", args: `{"command":"ls","env":{"LD_PRELOAD":"/tmp/x.so"}}`},
		{app: "beta", author: "app:beta", tool: "execute_command", args: `{"command":"ls"}`},
		{author: "agent:0192", tool: "execute_command", args: `{"command":"ls"}`},
	} {
		if ran, rec := exec(c); ran || rec == nil {
			t.Errorf("%+v ran without a question after alpha's \"always\" to ls", c)
		}
	}
	if ran, rec := exec(call{app: "alpha", author: "app:alpha", tool: "execute_command", args: `{"argv":["ls"]}`}); !ran || rec != nil {
		t.Errorf("alpha's ls again: ran %v, asked %+v", ran, rec)
	}

	// A command that is not one plain command: its "always" counts once.
	ans = AllowAlways
	pipe := call{app: "alpha", author: "app:alpha", tool: "execute_command", args: `{"command":"ls | wc -l"}`}
	if ran, rec := exec(pipe); !ran || rec == nil || rec.Always != "" {
		t.Errorf("a pipe: ran %v, asked %+v (want Always empty)", ran, rec)
	}
	if _, rec := exec(pipe); rec == nil {
		t.Error("a pipe's \"always\" was remembered")
	}

	// The person's agent sessions share the person's answer, and the
	// prompt says so.
	ran, rec = exec(call{author: "agent:0192", tool: "write_file", args: `{"path":"notes/a.md"}`})
	if !ran || rec == nil || rec.Asker != "agent session 0192 acting for the person" ||
		rec.Always != `write_file "notes/a.md" for the person and every agent session acting for the person` {
		t.Fatalf("the agent's write: ran %v, asked %+v", ran, rec)
	}
	ans = RejectOnce
	if ran, rec := exec(call{author: "agent:0193", tool: "write_file", args: `{"path":"./notes/a.md"}`}); !ran || rec != nil {
		t.Errorf("another session of the person, same path: ran %v, asked %+v", ran, rec)
	}
	if ran, rec := exec(call{author: "agent:0193", tool: "write_file", args: `{"path":"notes/b.md"}`}); ran || rec == nil {
		t.Errorf("another path: ran %v, asked %+v", ran, rec)
	}
	if ran, rec := exec(call{app: "alpha", author: "app:alpha", tool: "write_file", args: `{"path":"notes/a.md"}`}); ran || rec == nil {
		t.Errorf("an app, the person's path: ran %v, asked %+v", ran, rec)
	}

	// A protected path: the prompt says the answer counts once.
	ans = AllowAlways
	if ran, rec := exec(call{app: "alpha", author: "app:alpha", tool: "write_file", args: `{"path":".vscode/tasks.json"}`}); !ran || rec == nil || rec.Always != "" {
		t.Errorf("a protected path: ran %v, asked %+v (want Always empty)", ran, rec)
	}
	// An MCP tool: the tool, as before.
	if ran, rec := exec(call{app: "alpha", author: "app:alpha", tool: "create_issue", server: "github", args: `{"title":"a"}`}); !ran || rec == nil ||
		rec.Always != `"github/create_issue", any arguments, for app "alpha" and its agent sessions` {
		t.Errorf("an MCP tool: ran %v, asked %+v", ran, rec)
	}
	ans = RejectOnce
	if ran, rec := exec(call{app: "alpha", author: "app:alpha", tool: "create_issue", server: "github", args: `{"title":"b"}`}); !ran || rec != nil {
		t.Errorf("the MCP tool again: ran %v, asked %+v", ran, rec)
	}
}

// TestAlwaysUnderDirectory: the person may widen a file tool's "always"
// to a directory that holds the path (AlwaysUnder, the editor's
// {"directory": ...}); a directory that does not hold it fails the
// question, and nothing is remembered.
func TestAlwaysUnderDirectory(t *testing.T) {
	store, err := OpenApprovals(filepath.Join(t.TempDir(), "approvals.json"))
	if err != nil {
		t.Fatal(err)
	}
	var approvers Approvers
	m, err := tools.NewManager(tools.Options{Gate: New(Rules{}, store).Gate(&approvers, time.Minute, nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if err := m.Register(writeTool); err != nil {
		t.Fatal(err)
	}
	dir, asked := "", 0
	approvers.Set(editor(func(ctx context.Context, _ tools.Call, _ ICERC) (Answer, error) {
		asked++
		if dir != "" {
			if err := AlwaysUnder(ctx, dir); err != nil {
				return "", err
			}
		}
		return AllowAlways, nil
	}))
	write := func(p string) tools.Call {
		return m.Execute(context.Background(), tools.ExecuteRequest{ToolName: "write_file", AppID: "planner",
			Arguments: json.RawMessage(`{"path":"` + p + `"}`)})
	}
	dir = "lib"
	if c := write("src/a/b.go"); c.Error == nil || !strings.Contains(c.Error.Message, `"lib" does not hold "src/a/b.go"`) {
		t.Errorf("a directory that does not hold the path: %+v", c.Error)
	}
	if l := store.List(); len(l) != 0 {
		t.Errorf("remembered %+v", l)
	}
	dir = "src/"
	if c := write("src/a/b.go"); c.Status != tools.StatusCompleted {
		t.Fatalf("src/: %+v", c.Error)
	}
	n := asked
	for _, p := range []string{"src/c.go", "src", "src/x/y/z"} {
		if c := write(p); c.Status != tools.StatusCompleted || asked != n {
			t.Errorf("%s after src/**: %+v, asked %d→%d", p, c.Error, n, asked)
		}
	}
	dir = ""
	for _, p := range []string{"srcx/a.go", "lib/a.go", "a.go"} {
		if write(p); asked == n {
			t.Errorf("%s was not asked about after src/**", p)
		}
		n = asked
	}
	want := []string{"write_file:a.go", "write_file:lib/a.go", "write_file:src/**", "write_file:srcx/a.go"}
	var got []string
	for _, ap := range store.List() {
		got = append(got, ap.Name())
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("remembered %q, want %q", got, want)
	}
	if err := AlwaysUnder(context.Background(), "src"); err == nil {
		t.Error("AlwaysUnder outside a question: no error")
	}
}

// TestApprovalsVersion1: a version 1 file is read as it was meant (each
// answer covers the whole tool), its execute_command and file tool answers
// marked broad; it is written as version 2 at the first change, and a more
// specific answer wins over a broad one.
func TestApprovalsVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "approvals.json")
	v1 := `{"version":1,"approvals":[
		{"appId":"","tool":"execute_command","definitionHash":"h","allow":true,"time":"2026-01-01T00:00:00Z"},
		{"appId":"a","tool":"read_file","definitionHash":"h","allow":true,"time":"2026-01-01T00:00:00Z"},
		{"appId":"a","tool":"create_issue","server":"github","definitionHash":"h","allow":false,"time":"2026-01-01T00:00:00Z"}]}`
	if err := os.WriteFile(path, []byte(v1), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := OpenApprovals(path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ap := range a.List() {
		names = append(names, ap.Name()+" broad="+map[bool]string{true: "yes", false: "no"}[ap.Broad])
	}
	if want := []string{"execute_command:** broad=yes", "read_file:** broad=yes", "create_issue broad=no"}; !reflect.DeepEqual(names, want) {
		t.Errorf("read %q, want %q", names, want)
	}
	for _, c := range []struct {
		app, tool string
		call      Scope
		ok        bool
	}{
		{"", "execute_command", Scope{Command: []string{"rm", "-rf", "src"}}, true},
		{"", "execute_command", Scope{}, false}, // not one plain command
		{"a", "read_file", Scope{Path: "x/y"}, true},
	} {
		if ap, found := a.Lookup(c.app, c.tool, "", "h", c.call, c.ok); !found || !ap.Broad || !ap.Allow {
			t.Errorf("%s %+v: %+v %v, want the broad allow", c.tool, c.call, ap, found)
		}
	}
	if _, found := a.Lookup("", "read_file", "", "h", Scope{Path: "x"}, true); found {
		t.Error("an app's broad answer covers the person")
	}
	// A specific reject wins over the broad allow.
	if err := a.Remember(Approval{Tool: "execute_command", Scope: Scope{Command: []string{"rm", "-rf", "src"}}, DefinitionHash: "h", Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if ap, _ := a.Lookup("", "execute_command", "", "h", Scope{Command: []string{"rm", "-rf", "src"}}, true); ap.Allow || ap.Broad {
		t.Errorf("the specific reject lost to the broad allow: %+v", ap)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Version   int
		Approvals []map[string]any
	}
	if err := json.Unmarshal(data, &f); err != nil || f.Version != 2 || f.Approvals[0]["broad"] != true {
		t.Errorf("written as %s (%v)", data, err)
	}
	b, err := OpenApprovals(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(b.List(), a.List()) {
		t.Errorf("reread %+v\nwant %+v", b.List(), a.List())
	}
	// Revoking by the tool's name forgets every scope; by an answer's name
	// only that answer.
	if n, err := b.Revoke("", "execute_command:**", ""); err != nil || n != 1 {
		t.Errorf("revoke the broad answer: %d, %v", n, err)
	}
	if n, err := b.Revoke("a", "read_file", ""); err != nil || n != 1 {
		t.Errorf("revoke read_file: %d, %v", n, err)
	}
	if n, err := b.Revoke("", "execute_command", ""); err != nil || n != 1 {
		t.Errorf("revoke execute_command: %d, %v", n, err)
	}
}

func TestAsker(t *testing.T) {
	for _, c := range []struct {
		req  Request
		want string
	}{
		{Request{AppID: "alpha", Author: "app:alpha"}, `app "alpha"`},
		{Request{AppID: "alpha"}, `app "alpha"`},
		{Request{Agent: true, Author: "agent:0192abcd-1234"}, "agent session 0192abcd-1234 acting for the person"},
		{Request{AppID: "alpha", Agent: true, Author: "agent:0192"}, `agent session 0192 acting for app "alpha"`},
		{Request{Agent: true, Author: "agent:mcp"}, "the MCP gateway's client (nexusd mcp) acting for the person"},
		{Request{Agent: true, Author: "mcp:github"}, `MCP server "github" (sampling, during a call by the person)`},
		{Request{AppID: "alpha", Agent: true, Author: "mcp:git\x1b[2Khub"}, `MCP server "git\x1b[2Khub" (sampling, during a call by app "alpha")`},
		{Request{Agent: true, Author: "agent:x\u202ey"}, `agent session "x\u202ey" acting for the person`},
		{Request{Author: "cli"}, "the person (terminal)"},
		{Request{Author: "editor"}, "the person (editor)"},
		{Request{}, "the person"},
	} {
		if got := Asker(c.req); got != c.want {
			t.Errorf("Asker(%+v) = %q, want %q", c.req, got, c.want)
		}
	}
}

func TestAlwaysText(t *testing.T) {
	sampling := tools.Definition{Name: SamplingTool, ServerName: "github"}
	for _, c := range []struct {
		req  Request
		want string
	}{
		{Request{AppID: "alpha", Tool: def(t, "execute_command"), Args: cmdArgs("git status")}, `execute_command "git status", exactly this command, for app "alpha" and its agent sessions`},
		{Request{Tool: def(t, "execute_command"), Args: json.RawMessage(`{"argv":["echo","a b"]}`)}, `execute_command "echo 'a b'", exactly this command, for the person and every agent session acting for the person`},
		{Request{Tool: def(t, "execute_command"), Args: cmdArgs("ls > out")}, ""},
		{Request{Tool: def(t, "execute_command"), Args: cmdArgs("echo $HOME")}, ""},
		{Request{Tool: def(t, "execute_command"), Args: cmdArgs("ls 'oops")}, ""},
		{Request{Tool: def(t, "read_file"), Args: pathArgs("src//a.go")}, `read_file "src/a.go" for the person and every agent session acting for the person`},
		{Request{Tool: def(t, "search_files"), Args: json.RawMessage(`{"pattern":"x"}`)}, ""},
		{Request{Tool: def(t, "search_files"), Args: json.RawMessage(`{"path":"","pattern":"x"}`)}, `search_files "." for the person and every agent session acting for the person`},
		{Request{Tool: def(t, "read_file"), Args: pathArgs("../etc/passwd")}, ""},
		{Request{Tool: def(t, "read_file"), Args: pathArgs("/etc/passwd")}, ""},
		{Request{AppID: "a", Tool: def(t, "github/create_issue")}, `"github/create_issue", any arguments, for app "a" and its agent sessions`},
		{Request{Tool: sampling, Author: "mcp:github"}, `sampling requests of MCP server "github", any messages, during calls by the person and every agent session acting for the person`},
	} {
		if got := AlwaysText(c.req); got != c.want {
			t.Errorf("AlwaysText(%s %s) = %q, want %q", c.req.Tool.Name, c.req.Args, got, c.want)
		}
	}
}

func TestRecordUnder(t *testing.T) {
	store, err := OpenApprovals(filepath.Join(t.TempDir(), "approvals.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := New(Rules{}, store)
	req := Request{AppID: "a", Tool: def(t, "write_file"), Args: pathArgs("src/a.go")}
	for _, dir := range []string{"lib", "src/a.go/x", "../src", "sr", "/src"} {
		if err := p.record(&req, AllowAlways, dir, time.Now()); !errors.Is(err, ErrNotUnder) {
			t.Errorf("directory %q: %v", dir, err)
		}
	}
	cmd := Request{AppID: "a", Tool: def(t, "execute_command"), Args: cmdArgs("ls")}
	if err := p.record(&cmd, AllowAlways, ".", time.Now()); !errors.Is(err, ErrNotUnder) {
		t.Errorf("a command under a directory: %v", err)
	}
	if l := store.List(); len(l) != 0 {
		t.Errorf("remembered %+v", l)
	}
	if err := p.record(&req, AllowAlways, ".", time.Now()); err != nil {
		t.Fatal(err)
	}
	if l := store.List(); len(l) != 1 || l[0].Name() != "write_file:./**" || l[0].Covers() != "write_file anywhere in the workspace" {
		t.Errorf("remembered %+v", l)
	}
}

func TestParseName(t *testing.T) {
	for _, a := range []Approval{
		{Tool: "execute_command", Scope: Scope{Command: []string{"ls"}}},
		{Tool: "execute_command", Scope: Scope{Command: []string{"echo", "a b", "it's", "$HOME", "*"}}},
		{Tool: "execute_command", Scope: Scope{Broad: true}},
		{Tool: "read_file", Scope: Scope{Path: "src/a.go"}},
		{Tool: "read_file", Scope: Scope{Path: "."}},
		{Tool: "write_file", Scope: Scope{Directory: "src"}},
		{Tool: "write_file", Scope: Scope{Directory: "."}},
		{Tool: "get_current_time"},
		{Tool: "create_issue", Server: "github"},
	} {
		tool, s, err := ParseName(a.Name(), a.Server)
		if err != nil || tool != a.Tool || !reflect.DeepEqual(s, a.Scope) {
			t.Errorf("ParseName(%q) = %q, %+v, %v; want %q, %+v", a.Name(), tool, s, err, a.Tool, a.Scope)
		}
	}
	for _, bad := range []string{"", ":ls", "execute_command:ls | sh", "execute_command:", "read_file:../x", "read_file:./x", "read_file:/x", "x:y"} {
		if _, _, err := ParseName(bad, ""); err == nil {
			t.Errorf("ParseName(%q): no error", bad)
		}
	}
	if _, _, err := ParseName("create_issue:x", "github"); err == nil {
		t.Error("an MCP tool with a scope: no error")
	}
}
