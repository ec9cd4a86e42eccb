package integration

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// TestCompletedCallDiffs: a write the policy allows without asking shows
// the diff it made: under its line in nexus chat -p, and in the editor's
// completed nexus/agent/update (changes, as a question's icerc.changes),
// also when the session is loaded again; a read shows none.
func TestCompletedCallDiffs(t *testing.T) {
	model := startScriptedModel(t)
	ws := newWorkspace(t, agentTurnConfig(model))
	writeFiles(t, ws, map[string]string{"notes.txt": "old\n"})
	startDaemon(t, ws)
	model.then(scriptedCall{"write_file", `{"path":"notes.txt","content":"hello\n"}`}, scriptedCall{"read_file", `{"path":"notes.txt"}`})
	_, errOut, code := nexus(t, ws, "", "chat", "-p", "Write notes.txt, then read it.")
	want := "  [completed] Wrote notes.txt, 6 bytes\n      change:   modified notes.txt\n      --- a/notes.txt\n      +++ b/notes.txt\n" +
		"      @@ -1 +1 @@\n      -old\n      +hello\n  [pending] Read notes.txt\n  [in_progress] Read notes.txt\n  [completed] Read notes.txt, 1 line\n"
	if code != 0 || !strings.Contains(errOut, want) {
		t.Errorf("nexus chat -p: exit %d\n%s\nwant in it:\n%s", code, errOut, want)
	}

	ws = newWorkspace(t, agentTurnConfig(model))
	writeFiles(t, ws, map[string]string{"notes.txt": "old\n"})
	e := startEditor(t, ws)
	e.initialize(os.Getpid())
	session := newSession(t, e)
	model.then(scriptedCall{"write_file", `{"path":"notes.txt","content":"hello\n"}`}, scriptedCall{"read_file", `{"path":"notes.txt"}`})
	var pr promptResult
	e.mustCall("nexus/agent/prompt", map[string]any{"sessionId": session, "prompt": "Write notes.txt, then read it."}, &pr)
	type change struct {
		Path   string `json:"path"`
		Action string `json:"action"`
		Diff   string `json:"diff"`
	}
	type update struct {
		SessionUpdate string   `json:"sessionUpdate"`
		ToolCallID    string   `json:"toolCallId"`
		Status        string   `json:"status"`
		Title         string   `json:"title"`
		Changes       []change `json:"changes"`
	}
	completed := map[string]update{} // by title
	e.await("the read's completed update", 30*time.Second, func() bool {
		for _, n := range e.notes {
			var u struct {
				SessionID string `json:"sessionId"`
				Update    update `json:"update"`
			}
			if n.method == "nexus/agent/update" && json.Unmarshal(n.params, &u) == nil && u.SessionID == session && u.Update.Status == "completed" {
				completed[u.Update.Title] = u.Update
			}
		}
		return len(completed) == 2
	})
	w := completed["Wrote notes.txt, 6 bytes"]
	if len(w.Changes) != 1 || w.Changes[0].Path != "notes.txt" || w.Changes[0].Action != "modified" || !strings.Contains(w.Changes[0].Diff, "@@ -1 +1 @@\n-old\n+hello\n") {
		t.Errorf("the write's completed update: %+v (all: %+v)", w, completed)
	}
	if r := completed["Read notes.txt, 1 line"]; r.ToolCallID == "" || r.Changes != nil {
		t.Errorf("the read's completed update: %+v", r)
	}
	var loaded struct {
		Updates []update `json:"updates"`
	}
	e.mustCall("nexus/agent/sessions/load", map[string]any{"sessionId": session}, &loaded)
	found := false
	for _, u := range loaded.Updates {
		if u.ToolCallID == w.ToolCallID {
			found = len(u.Changes) == 1 && u.Changes[0].Diff == w.Changes[0].Diff
		}
	}
	if !found {
		t.Errorf("the loaded session's write shows no diff: %+v", loaded.Updates)
	}
}

// TestCompletedCommandDiffs: a command that changed files shows what it
// changed under its line in nexus chat -p, found by the checkpoint's scan
// (its arguments name no file).
func TestCompletedCommandDiffs(t *testing.T) {
	if !commandSandbox() {
		t.Skip("execute_command's sandbox runs on Linux only")
	}
	model := startScriptedModel(t)
	ws := newWorkspace(t, agentTurnConfig(model))
	writeFiles(t, ws, map[string]string{"cmd.txt": "one\n", "gone.txt": "bye\n"})
	startDaemon(t, ws)
	model.then(scriptedCall{"execute_command", `{"command":"echo two >> cmd.txt && rm gone.txt"}`})
	_, errOut, code := nexus(t, ws, "", "chat", "-p", "Change the files.")
	for _, want := range []string{"      change:   modified cmd.txt\n", "       one\n      +two\n", "      change:   deleted gone.txt\n", "      -bye\n"} {
		if code != 0 || !strings.Contains(errOut, want) {
			t.Errorf("nexus chat -p: exit %d, no %q in\n%s", code, want, errOut)
		}
	}
}
