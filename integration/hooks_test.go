package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
// to a prompt, and blocks another, which never reaches the model.
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
