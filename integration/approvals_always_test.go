package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// TestAlwaysCoversWhatWasShown is issue 24's break 5 through the real
// nexusd: "always" to `ls` must not let `rm -rf src` run without a
// question, for the same party (an app's gRPC ExecuteTool; the person's
// MCP gateway client) nor for another one, and the question says who asks
// and what "always" would remember.
func TestAlwaysCoversWhatWasShown(t *testing.T) {
	ws := newWorkspace(t, "apps:\n  - id: alpha\n  - id: beta\nmcp:\n  http: {address: \"127.0.0.1:0\"}\n")
	for _, d := range []string{"src", "lib"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, d, "keep.txt"), []byte("keep\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := startEditor(t, ws)
	res := e.initialize(os.Getpid())
	conn, _ := grpcAdmin(t, res)
	tm := nexusv1.NewToolManagerClient(conn)
	token := func(app string) string {
		b, err := os.ReadFile(filepath.Join(ws, ".nexus", "run", "apps", app+".token"))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	setAnswer := func(ans string) {
		e.mu.Lock()
		e.permission = ans
		e.mu.Unlock()
	}
	type question struct {
		ToolCall struct{ ToolName, Author string }
		Icerc    struct{ Command, Asker, Always string }
	}
	questions := func() []question {
		e.mu.Lock()
		defer e.mu.Unlock()
		var out []question
		for _, r := range e.requests {
			if r.method == "nexus/requestPermission" {
				var q question
				json.Unmarshal(r.params, &q)
				out = append(out, q)
			}
		}
		return out
	}
	// ask runs one command and reports whether the editor was asked about
	// it, and the question.
	ask := func(who string, run func() (ok bool, msg string)) (asked bool, q question, ok bool, msg string) {
		t.Helper()
		n := len(questions())
		ok, msg = run()
		qs := questions()
		if len(qs) > n {
			return true, qs[len(qs)-1], ok, msg
		}
		return false, question{}, ok, msg
	}
	byApp := func(app, line string) func() (bool, string) {
		return func() (bool, string) {
			args, _ := json.Marshal(map[string]string{"command": line})
			r, err := tm.ExecuteTool(as(token(app)), &nexusv1.ExecuteToolRequest{ToolName: "execute_command", ArgumentsJson: string(args), RequestingAppId: app})
			if err != nil {
				t.Fatalf("ExecuteTool %q by %s: %v", line, app, err)
			}
			return r.GetSuccess(), r.GetErrorCode() + ": " + r.GetMessage()
		}
	}
	kept := func(dir string) bool {
		_, err := os.Stat(filepath.Join(ws, dir, "keep.txt"))
		return err == nil
	}

	// The app alpha's "always" to ls.
	setAnswer("allow_always")
	asked, q, _, _ := ask("alpha", byApp("alpha", "ls"))
	if !asked {
		t.Fatal("alpha's ls was not asked about")
	}
	if q.Icerc.Asker != `app "alpha"` || !strings.Contains(q.Icerc.Always, `execute_command "ls"`) || !strings.Contains(q.Icerc.Always, `app "alpha"`) {
		t.Errorf("the question says asker %q, always %q", q.Icerc.Asker, q.Icerc.Always)
	}
	setAnswer("reject_once")
	if asked, _, ok, msg := ask("alpha", byApp("alpha", "rm -rf src")); !asked || ok || !kept("src") {
		t.Fatalf("after alpha's \"always\" to ls, alpha's rm -rf src: asked %v, ran %v (%s), src kept %v", asked, ok, msg, kept("src"))
	}
	if asked, _, ok, msg := ask("beta", byApp("beta", "rm -rf src")); !asked || ok || !kept("src") {
		t.Fatalf("after alpha's \"always\" to ls, beta's rm -rf src: asked %v, ran %v (%s)", asked, ok, msg)
	}
	if asked, _, _, _ := ask("beta", byApp("beta", "ls")); !asked {
		t.Error("beta's ls was not asked about after alpha's \"always\"")
	}
	if asked, _, _, msg := ask("alpha", byApp("alpha", "ls")); asked {
		t.Errorf("alpha's ls was asked about again (%s)", msg)
	}

	// The person's MCP gateway client (an agent acting for the person).
	url := (&daemon{t: t, ws: ws}).mcpURL() // the editor's daemon: daemon.json names its gateway
	person := connectMCP(t, httpMCP(url, readAdmin(t, res)))
	deadline := time.Now().Add(30 * time.Second)
	for !toolNames(t, person)["execute_command"] {
		if time.Now().After(deadline) {
			t.Fatal("the gateway lists no execute_command")
		}
		time.Sleep(20 * time.Millisecond)
	}
	byPerson := func(line string) func() (bool, string) {
		return func() (bool, string) {
			text, isErr := callText(t, person.ClientSession, "execute_command", map[string]any{"command": line})
			return !isErr, text
		}
	}
	if asked, _, _, _ := ask("the person", byPerson("rm -rf lib")); !asked || !kept("lib") {
		t.Fatalf("alpha's \"always\" to ls covers the person's rm -rf lib: asked %v, lib kept %v", asked, kept("lib"))
	}
	setAnswer("allow_always")
	asked, q, _, _ = ask("the person", byPerson("ls"))
	if !asked || !strings.Contains(q.Icerc.Asker, "acting for the person") || !strings.Contains(q.Icerc.Always, `execute_command "ls"`) ||
		!strings.Contains(q.Icerc.Always, "every agent session acting for the person") {
		t.Fatalf("the person's ls: asked %v, %+v", asked, q.Icerc)
	}
	setAnswer("reject_once")
	if asked, _, ok, msg := ask("the person", byPerson("rm -rf lib")); !asked || ok || !kept("lib") {
		t.Fatalf("after the person's \"always\" to ls, rm -rf lib: asked %v, ran %v (%s), lib kept %v", asked, ok, msg, kept("lib"))
	}
	if asked, _, ok, msg := ask("the person", byPerson("ls")); asked || !ok {
		t.Errorf("the person's ls after \"always\": asked %v, ran %v (%s)", asked, ok, msg)
	}

	// The listings name what each answer covers.
	var list struct {
		Approvals []struct {
			AppID, ToolName, Tool, Scope, Covers string
			Broad                                bool
		}
	}
	e.mustCall("nexus/approvals/list", map[string]any{}, &list)
	var got []string
	for _, a := range list.Approvals {
		got = append(got, a.AppID+" "+a.ToolName+" "+a.Scope)
	}
	if want := []string{" execute_command:ls command", "alpha execute_command:ls command"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("nexus/approvals/list = %q, want %q", got, want)
	}
	out, errOut, code := nexus(t, ws, "", "approvals")
	if code != 0 || !strings.Contains(out, "execute_command:ls") || strings.Contains(out, "BROAD") {
		t.Errorf("nexus approvals: %d\n%s%s", code, out, errOut)
	}
}

// TestBroadApprovalsListed: an approvals file of version 1, from before
// answers had scopes, keeps working, and every listing marks its
// execute_command and file tool answers broad.
func TestBroadApprovalsListed(t *testing.T) {
	ws := newWorkspace(t, "apps:\n  - id: alpha\n")
	e := startEditor(t, ws)
	res := e.initialize(os.Getpid())
	conn, _ := grpcAdmin(t, res)
	tm := nexusv1.NewToolManagerClient(conn)
	tok, err := os.ReadFile(filepath.Join(ws, ".nexus", "run", "apps", "alpha.token"))
	if err != nil {
		t.Fatal(err)
	}
	alpha := as(strings.TrimSpace(string(tok)))
	// The definition hash of execute_command, from an answer given now.
	e.permission = "allow_always"
	if r, err := tm.ExecuteTool(alpha, &nexusv1.ExecuteToolRequest{ToolName: "execute_command", ArgumentsJson: `{"command":"true"}`, RequestingAppId: "alpha"}); err != nil {
		t.Fatalf("ExecuteTool: %v %v", r, err)
	}
	l, err := tm.ListApprovals(as(readAdmin(t, res)), &nexusv1.ListApprovalsRequest{})
	if err != nil || len(l.GetApprovals()) != 1 {
		t.Fatalf("ListApprovals = %v, %v", l, err)
	}
	hash := l.GetApprovals()[0].GetDefinitionHash()
	e.stdin.Close()
	<-e.exited

	v1 := `{"version":1,"approvals":[{"appId":"alpha","tool":"execute_command","definitionHash":"` + hash + `","allow":true,"time":"2026-01-01T00:00:00Z"}]}`
	if err := os.WriteFile(filepath.Join(ws, ".nexus", "approvals.json"), []byte(v1), 0o600); err != nil {
		t.Fatal(err)
	}
	e = startEditor(t, ws)
	res = e.initialize(os.Getpid())
	conn, _ = grpcAdmin(t, res)
	tm = nexusv1.NewToolManagerClient(conn)
	e.permission = "reject_once"
	// The broad answer still covers any command of alpha's.
	r, err := tm.ExecuteTool(alpha, &nexusv1.ExecuteToolRequest{ToolName: "execute_command", ArgumentsJson: `{"command":"echo broad | cat"}`, RequestingAppId: "alpha"})
	if err != nil || r.GetErrorCode() == "permission_denied" {
		t.Errorf("a command under the broad answer: %v %v", r, err)
	}
	var list struct {
		Approvals []struct {
			ToolName, Scope, Covers string
			Broad                   bool
		}
	}
	e.mustCall("nexus/approvals/list", map[string]any{}, &list)
	if len(list.Approvals) != 1 || !list.Approvals[0].Broad || list.Approvals[0].Scope != "broad" || list.Approvals[0].ToolName != "execute_command:**" ||
		!strings.Contains(list.Approvals[0].Covers, "broad") {
		t.Errorf("nexus/approvals/list = %+v", list)
	}
	for _, args := range [][]string{{"approvals"}, {"perm", "ls"}} {
		out, errOut, code := nexus(t, ws, "", args...)
		if code != 0 || !strings.Contains(out, "BROAD") || !strings.Contains(out, "execute_command:**") {
			t.Errorf("nexus %s: %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		out, errOut, code = nexus(t, ws, "", append(args, "--json")...)
		if code != 0 || !strings.Contains(out, `"broad":true`) || !strings.Contains(out, `"scope":"broad"`) {
			t.Errorf("nexus %s --json: %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	out, errOut, code := nexus(t, ws, "", "approvals", "revoke", "execute_command:**", "--app", "alpha")
	if code != 0 || !strings.Contains(out, "revoked") {
		t.Errorf("revoke the broad answer: %d\n%s%s", code, out, errOut)
	}
}

func readAdmin(t *testing.T, res initResult) string {
	t.Helper()
	b, err := os.ReadFile(res.Nexus.AdminTokenFile)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
