package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hookWorkspace is a workspace whose agent talks to model, with the hooks
// section hooks and the executable files of scripts (path → text).
func hookWorkspace(t *testing.T, model *scriptedModel, hooks string, scripts map[string]string) string {
	t.Helper()
	ws := newWorkspace(t, agentTurnConfig(model)+hooks)
	for path, text := range scripts {
		p := filepath.Join(ws, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestHookDeniesACall is the end to end for preToolUse hooks: a
// hook that is not approved does not run (its marker file is absent) and
// the call it guards is denied, saying how to approve it; approved with
// nexus hooks trust, it runs, in the command sandbox, and denies the
// model's write_file with its message, which the model gets as the tool's
// error in its next request; once its file changes, it waits for approval
// again and does not run.
func TestHookDeniesACall(t *testing.T) {
	model := startScriptedModel(t)
	ws := hookWorkspace(t, model, `hooks:
  preToolUse:
    - match: write_file|edit_file
      command: [./hooks/guard.sh]
      timeout: 20s
`, map[string]string{"hooks/guard.sh": `#!/bin/sh
touch hooks/ran
case "$(cat)" in
*'"tool":"write_file"'*'"path":"notes.txt"'*) echo "notes.txt is the person's: write elsewhere" >&2; exit 2;;
esac
exit 1
`})
	startDaemon(t, ws)
	marker, notes := filepath.Join(ws, "hooks", "ran"), filepath.Join(ws, "notes.txt")
	write := func() string {
		t.Helper()
		model.then(scriptedCall{"write_file", `{"path":"notes.txt","content":"hello"}`})
		before := len(model.requestBodies())
		if out, errOut, code := nexus(t, ws, "", "chat", "-p", "Write the notes."); code != 0 {
			t.Fatalf("nexus chat -p: exit %d\n%s%s", code, out, errOut)
		}
		bodies := model.requestBodies()
		if len(bodies) != before+2 {
			t.Fatalf("the turn made %d model requests, want 2", len(bodies)-before)
		}
		if exists(notes) {
			t.Fatal("notes.txt was written: the hook did not deny the call")
		}
		return lastText(t, bodies[len(bodies)-1], "tool")
	}

	got := write()
	if exists(marker) {
		t.Fatal("a hook that is not approved ran")
	}
	if !strings.Contains(got, "preToolUse[0]") || !strings.Contains(got, "nexus hooks trust preToolUse[0]") {
		t.Fatalf("the model got %q, want the call denied for the hook that waits for approval", got)
	}

	out, errOut, code := nexus(t, ws, "", "hooks", "ls")
	if code != 0 || !strings.Contains(out, "preToolUse[0]") || !strings.Contains(out, "pending_approval") {
		t.Fatalf("nexus hooks ls: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = nexus(t, ws, "", "hooks", "trust", "preToolUse[0]")
	if code != 0 || !strings.Contains(out, "file:     hooks/guard.sh sha256:") || !strings.Contains(out, "approved preToolUse[0]") {
		t.Fatalf("nexus hooks trust: exit %d\n%s%s", code, out, errOut)
	}

	got = write()
	if !exists(marker) {
		t.Fatal("the approved hook did not run")
	}
	if !strings.Contains(got, "denied by the preToolUse hook preToolUse[0]: notes.txt is the person's: write elsewhere") {
		t.Fatalf("the model got %q, want the hook's message", got)
	}

	// A changed hook waits for approval again, and does not run.
	if err := os.WriteFile(filepath.Join(ws, "hooks", "guard.sh"), []byte("#!/bin/sh\ntouch hooks/ran\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	if out, _, _ := nexus(t, ws, "", "hooks", "ls"); !strings.Contains(out, "pending_approval") {
		t.Fatalf("a changed hook is listed as:\n%s", out)
	}
	got = write()
	if exists(marker) {
		t.Fatal("a changed hook ran before it was approved again")
	}
	if !strings.Contains(got, "changed since it was approved") {
		t.Fatalf("the model got %q, want the call denied for the changed hook", got)
	}
}

// TestHookAfterAndPrompt: a postToolUse hook sees the call's result and
// its note reaches the model with it; a userPromptSubmit hook adds context
// to a prompt, and blocks another, which never reaches the model. The
// hooks run in the command sandbox: .nexus/run is out of their reach.
func TestHookAfterAndPrompt(t *testing.T) {
	model := startScriptedModel(t)
	ws := hookWorkspace(t, model, `hooks:
  postToolUse:
    - match: write_file
      command: [./hooks/after.sh]
  userPromptSubmit:
    - command: [./hooks/prompt.sh]
`, map[string]string{
		"hooks/after.sh": `#!/bin/sh
case "$(cat)" in
*'"result":{'*'"bytesWritten":5'*) echo '{"additionalContext":"after.sh saw 5 bytes written"}';;
*) exit 1;;
esac
`,
		"hooks/prompt.sh": `#!/bin/sh
# In the command sandbox, the daemon's state is out of reach.
if cat .nexus/run/admin.token >/dev/null 2>&1 || ls .nexus/run >/dev/null 2>&1; then echo "the hook reads .nexus/run"; exit 0; fi
case "$(cat)" in
*forbidden*) echo "that word is not sent" >&2; exit 2;;
*) echo "The person's timezone is UTC.";;
esac
`,
	})
	startDaemon(t, ws)
	if out, errOut, code := nexus(t, ws, "", "hooks", "trust", "--all"); code != 0 || strings.Count(out, "approved ") != 2 {
		t.Fatalf("nexus hooks trust --all: exit %d\n%s%s", code, out, errOut)
	}

	model.then(scriptedCall{"write_file", `{"path":"notes.txt","content":"hello"}`})
	if out, errOut, code := nexus(t, ws, "", "chat", "-p", "Write the notes."); code != 0 {
		t.Fatalf("nexus chat -p: exit %d\n%s%s", code, out, errOut)
	}
	bodies := model.requestBodies()
	if len(bodies) != 2 {
		t.Fatalf("%d model requests, want 2", len(bodies))
	}
	if got := lastUserText(t, bodies[0]); got != "Write the notes.\n\nThe person's timezone is UTC." {
		t.Errorf("the prompt sent was %q, want the hook's context after it", got)
	}
	if got := lastText(t, bodies[1], "tool"); !strings.Contains(got, `"bytesWritten":5`) || !strings.Contains(got, "[a postToolUse hook says] after.sh saw 5 bytes written") {
		t.Errorf("the model got %q, want the result and the hook's note", got)
	}

	out, errOut, code := nexus(t, ws, "", "chat", "-p", "Say the forbidden word.")
	if code == 0 || !strings.Contains(errOut, "userPromptSubmit hook userPromptSubmit[0] blocked it: that word is not sent") {
		t.Errorf("a blocked prompt: exit %d\n%s%s", code, out, errOut)
	}
	if n := len(model.requestBodies()); n != 2 {
		t.Errorf("a blocked prompt reached the model (%d requests)", n)
	}
}

// TestHookEditorApproval: the editor is asked about a hook that waits for
// approval (nexus/requestHookTrust, with what it runs and its pin), lists
// it (nexus/hooks/list) and approves it (nexus/hooks/trust); approved, the
// hook guards the editor's own calls too: it denies a write_file with its
// message.
func TestHookEditorApproval(t *testing.T) {
	ws := newWorkspace(t, `hooks:
  preToolUse:
    - match: write_file
      command: [./hooks/guard.sh]
`)
	if err := os.MkdirAll(filepath.Join(ws, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "hooks", "guard.sh"), []byte("#!/bin/sh\necho 'the editor writes nothing today' >&2\nexit 2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := startEditor(t, ws)
	e.initialize(os.Getpid())
	type hookStatus struct {
		Name, Pin string
		Command   []string
		Files     []struct{ Path, SHA256 string }
		Trusted   bool
	}
	e.await("nexus/requestHookTrust of preToolUse[0]", 30*time.Second, func() bool {
		for _, r := range e.requests {
			var p struct{ Hook hookStatus }
			if r.method == "nexus/requestHookTrust" && json.Unmarshal(r.params, &p) == nil && p.Hook.Name == "preToolUse[0]" &&
				p.Hook.Pin != "" && len(p.Hook.Files) == 1 && p.Hook.Files[0].Path == "hooks/guard.sh" && !p.Hook.Trusted {
				return true
			}
		}
		return false
	})
	var list struct{ Hooks []hookStatus }
	e.mustCall("nexus/hooks/list", map[string]any{}, &list)
	if len(list.Hooks) != 1 || list.Hooks[0].Trusted || list.Hooks[0].Command[0] != "./hooks/guard.sh" {
		t.Fatalf("nexus/hooks/list = %+v", list)
	}
	var trusted struct{ Hook hookStatus }
	e.mustCall("nexus/hooks/trust", map[string]any{"name": "preToolUse[0]", "pin": list.Hooks[0].Pin}, &trusted)
	if !trusted.Hook.Trusted {
		t.Fatalf("nexus/hooks/trust = %+v", trusted)
	}
	var res struct {
		Success   bool
		Message   string
		ErrorCode string
	}
	e.mustCall("nexus/tools/execute", map[string]any{"toolName": "write_file", "arguments": map[string]any{"path": "notes.txt", "content": "hello"}}, &res)
	if res.Success || res.ErrorCode != "permission_denied" || !strings.Contains(res.Message, "the editor writes nothing today") {
		t.Fatalf("the editor's write_file: %+v", res)
	}
	if exists(filepath.Join(ws, "notes.txt")) {
		t.Fatal("notes.txt was written past the hook")
	}
}
