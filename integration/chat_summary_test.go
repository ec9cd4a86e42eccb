package integration

import (
	"context"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
)

// TestToolCallSummaries: a tool call's title is the call in words, the
// same in every door: "Write notes.txt" while it runs and "Wrote
// notes.txt, 6 bytes" once done in an ACP editor's tool_call and
// tool_call_update, and the line of nexus chat -p; a failed call says why.
func TestToolCallSummaries(t *testing.T) {
	model := startScriptedModel(t)
	ws := newWorkspace(t, agentTurnConfig(model))
	startDaemon(t, ws)

	model.then(scriptedCall{"write_file", `{"path":"notes.txt","content":"hello\n"}`}, scriptedCall{"read_file", `{"path":"gone.txt"}`})
	_, errOut, code := nexus(t, ws, "", "chat", "-p", "Write notes.txt, then read gone.txt.")
	if code != 0 || !strings.Contains(errOut, "  [completed] Wrote notes.txt, 6 bytes\n") ||
		!strings.Contains(errOut, "  [failed] Read gone.txt: failed (") {
		t.Errorf("nexus chat -p: exit %d\n%s", code, errOut)
	}

	rec := &acpRecorder{notify: make(chan struct{}, 1)}
	conn, sessionID, stderr := acpEditor(t, ws, rec)
	model.then(scriptedCall{"write_file", `{"path":"notes.txt","content":"hello\n"}`})
	if _, err := conn.Prompt(context.Background(), acpsdk.PromptRequest{SessionId: sessionID, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("Write notes.txt.")}}); err != nil {
		t.Fatalf("prompt: %v\n%s", err, stderr.String())
	}
	// The updates come as notifications, maybe after the answer.
	var started, ended string
	done := false
	seen := func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for _, u := range rec.updates {
			if u.ToolCall != nil {
				started = u.ToolCall.Title
			}
			if up := u.ToolCallUpdate; up != nil && up.Status != nil && *up.Status == acpsdk.ToolCallStatusCompleted {
				done = true
				if up.Title != nil {
					ended = *up.Title
				}
			}
		}
		return done
	}
	for !seen() {
		<-rec.notify
	}
	if started != "Write notes.txt" || ended != "Wrote notes.txt, 6 bytes" {
		t.Errorf("ACP titles: tool_call %q, completed tool_call_update %q", started, ended)
	}
}
