package integration

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
)

// TestCheckpointsACP: an ACP editor is offered /undo and /rewind among the
// session's commands, and /undo takes back the session's last turn.
func TestCheckpointsACP(t *testing.T) {
	model := startScriptedModel(t)
	ws := newWorkspace(t, agentTurnConfig(model))
	writeFiles(t, ws, map[string]string{"a.txt": "a0\n"})
	startDaemon(t, ws)

	rec := &acpRecorder{}
	conn, sessionID, stderr := acpEditor(t, ws, rec)
	ctx := context.Background()
	prompt := func(text string) {
		t.Helper()
		if _, err := conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: sessionID, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(text)}}); err != nil {
			t.Fatalf("prompt %q: %v\n%s", text, err, stderr.String())
		}
	}
	model.then(scriptedCall{"write_file", `{"path":"a.txt","content":"a1\n"}`})
	prompt("Write a.")
	sameFiles(t, "after the turn", files(t, ws, "a.txt"), map[string]string{"a.txt": "a1\n"})
	prompt("/undo")
	sameFiles(t, "after /undo", files(t, ws, "a.txt"), map[string]string{"a.txt": "a0\n"})

	// The updates come as notifications, maybe after the answers.
	var offered []string
	said := ""
	seen := func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		offered, said = nil, ""
		for _, u := range rec.updates {
			if u.AvailableCommandsUpdate != nil {
				for _, c := range u.AvailableCommandsUpdate.AvailableCommands {
					offered = append(offered, c.Name)
				}
			}
			if u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil {
				said += u.AgentMessageChunk.Content.Text.Text
			}
		}
		return slices.Contains(offered, "undo") && slices.Contains(offered, "rewind") &&
			strings.Contains(said, "Restored 1 file(s)") && strings.Contains(said, "a.txt")
	}
	for deadline := time.Now().Add(30 * time.Second); !seen(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("commands offered %v; /undo said %q", offered, said)
		}
	}
}
