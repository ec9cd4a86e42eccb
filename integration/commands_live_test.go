package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
)

// commandsRecorder is an ACP client that hands each list of available
// commands to a channel as it comes, besides recording every update.
type commandsRecorder struct {
	*acpRecorder
	lists chan []string
}

func (r *commandsRecorder) SessionUpdate(ctx context.Context, n acpsdk.SessionNotification) error {
	if u := n.Update.AvailableCommandsUpdate; u != nil {
		var names []string
		for _, c := range u.AvailableCommands {
			names = append(names, c.Name)
		}
		r.lists <- names
	}
	return r.acpRecorder.SessionUpdate(ctx, n)
}

// next waits for the next list of commands (go test's -timeout ends a
// wait that is never answered).
func (r *commandsRecorder) next() []string { return <-r.lists }

// TestCommandsUpdateLive: a command file written mid-session, in commands/
// of the definitions root or in .claude/commands (agent.commandDirs, a
// directory made after the daemon started), reaches an ACP client as an
// available_commands_update without a new session.
func TestCommandsUpdateLive(t *testing.T) {
	model := startScriptedModel(t)
	ws := newWorkspace(t, model.config())
	startDaemon(t, ws)
	rec := &commandsRecorder{acpRecorder: &acpRecorder{}, lists: make(chan []string, 16)}
	acpEditor(t, ws, rec)
	if l := rec.next(); !slices.Contains(l, "compact") || slices.Contains(l, "review") {
		t.Fatalf("the first list: %v", l)
	}

	defs := filepath.Join(ws, ".nexus", "definitions", "commands")
	if err := os.MkdirAll(defs, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, defs, map[string]string{"review.md": "---\ndescription: Review the change\n---\nReview $ARGUMENTS."})
	if l := rec.next(); !slices.Contains(l, "review") {
		t.Errorf("after commands/review.md: %v", l)
	}

	claude := filepath.Join(ws, ".claude", "commands")
	if err := os.MkdirAll(claude, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, claude, map[string]string{"ship.md": "Ship it."})
	if l := rec.next(); !slices.Contains(l, "ship") || !slices.Contains(l, "review") {
		t.Errorf("after .claude/commands/ship.md: %v", l)
	}

	if err := os.Remove(filepath.Join(defs, "review.md")); err != nil {
		t.Fatal(err)
	}
	if l := rec.next(); slices.Contains(l, "review") || !slices.Contains(l, "ship") {
		t.Errorf("after commands/review.md went: %v", l)
	}
}

// TestCommandsUpdateLiveEditor: the same through the editor protocol,
// whose available_commands_update fills the VS Code chat's "/" list.
func TestCommandsUpdateLiveEditor(t *testing.T) {
	model := startScriptedModel(t)
	ws := newWorkspace(t, model.config())
	e := startEditor(t, ws)
	e.initialize(os.Getpid())
	id := newSession(t, e)
	defs := filepath.Join(ws, ".nexus", "definitions", "commands")
	if err := os.MkdirAll(defs, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, defs, map[string]string{"review.md": "Review $ARGUMENTS."})
	e.await("an available_commands_update with /review", 30*time.Second, func() bool {
		for _, n := range e.notes {
			var u struct {
				SessionID string `json:"sessionId"`
				Update    struct {
					SessionUpdate     string `json:"sessionUpdate"`
					AvailableCommands []struct {
						Name string `json:"name"`
					} `json:"availableCommands"`
				} `json:"update"`
			}
			if n.method != "nexus/agent/update" || json.Unmarshal(n.params, &u) != nil || u.SessionID != id {
				continue
			}
			for _, c := range u.Update.AvailableCommands {
				if c.Name == "review" {
					return true
				}
			}
		}
		return false
	})
}
