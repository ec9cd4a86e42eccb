package integration

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// The editor's nexus/checkpoints/ methods, as the Changes view uses them.
type edCheckpoint struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	Session  string `json:"session"`
	Turn     string `json:"turn"`
	UndoneBy string `json:"undoneBy"`
	Files    []struct {
		Path   string `json:"path"`
		Action string `json:"action"`
	} `json:"files"`
}

type edResult struct {
	Checkpoint *edCheckpoint `json:"checkpoint"`
	Undone     []string      `json:"undone"`
	Restored   []struct {
		Path string `json:"path"`
	} `json:"restored"`
	Conflicts []struct {
		Path   string `json:"path"`
		Reason string `json:"reason"`
	} `json:"conflicts"`
}

// TestCheckpointsEditor: an agent session's turn in the editor, listed,
// diffed with both contents, undone (a conflict comes back in the result,
// and nothing changes until force), redone, and /undo in the editor's
// chat; nexus/checkpointsChanged tells the view to list again.
func TestCheckpointsEditor(t *testing.T) {
	model := startScriptedModel(t)
	ws := newWorkspace(t, agentTurnConfig(model))
	writeFiles(t, ws, map[string]string{"a.txt": "a0\n"})
	e := startEditor(t, ws)
	e.initialize(os.Getpid())
	session := newSession(t, e)

	model.then(scriptedCall{"write_file", `{"path":"a.txt","content":"a1\n"}`},
		scriptedCall{"write_file", `{"path":"b.txt","content":"b1\n"}`})
	var pr promptResult
	e.mustCall("nexus/agent/prompt", map[string]any{"sessionId": session, "prompt": "Write a and b."}, &pr)
	e.await("nexus/checkpointsChanged", 30*time.Second, func() bool {
		for _, n := range e.notes {
			if n.method == "nexus/checkpointsChanged" && strings.Contains(string(n.params), session) {
				return true
			}
		}
		return false
	})

	var list struct {
		Checkpoints []edCheckpoint `json:"checkpoints"`
		Usage       struct {
			Checkpoints int   `json:"checkpoints"`
			MaxBytes    int64 `json:"maxBytes"`
		} `json:"usage"`
	}
	e.mustCall("nexus/checkpoints/list", map[string]any{"session": session}, &list)
	if len(list.Checkpoints) != 2 || list.Checkpoints[0].Turn != "1" || list.Usage.Checkpoints < 2 || list.Usage.MaxBytes != 1<<30 {
		t.Fatalf("list: %+v", list)
	}
	var aID string
	for _, c := range list.Checkpoints {
		if c.Files[0].Path == "a.txt" {
			aID = c.ID
		}
	}
	var diff struct {
		Checkpoint edCheckpoint `json:"checkpoint"`
		Files      []struct {
			Path   string  `json:"path"`
			Action string  `json:"action"`
			Diff   string  `json:"diff"`
			Before *string `json:"before"`
			After  *string `json:"after"`
		} `json:"files"`
	}
	e.mustCall("nexus/checkpoints/diff", map[string]any{"id": aID}, &diff)
	if len(diff.Files) != 1 || diff.Files[0].Before == nil || *diff.Files[0].Before != "a0\n" || diff.Files[0].After == nil ||
		*diff.Files[0].After != "a1\n" || !strings.Contains(diff.Files[0].Diff, "+a1") {
		t.Errorf("diff: %+v", diff)
	}
	if err := e.call("nexus/checkpoints/diff", map[string]any{"id": "no-such-checkpoint"}, nil); err == nil || err.Code != -32004 {
		t.Errorf("diff of no checkpoint: %+v", err)
	}
	if err := e.call("nexus/checkpoints/undo", map[string]any{"turn": "1"}, nil); err == nil || err.Code != -32602 {
		t.Errorf("undo of a turn without its session: %+v", err)
	}

	// The person edits a.txt: the undo answers the conflict, not an error.
	writeFiles(t, ws, map[string]string{"a.txt": "mine\n"})
	var res edResult
	e.mustCall("nexus/checkpoints/undo", map[string]any{"session": session, "lastTurn": true}, &res)
	if res.Checkpoint != nil || len(res.Restored) != 0 || len(res.Conflicts) != 1 || res.Conflicts[0].Path != "a.txt" {
		t.Errorf("undo over the person's edit: %+v", res)
	}
	sameFiles(t, "after a refused undo", files(t, ws, "a.txt", "b.txt"), map[string]string{"a.txt": "mine\n", "b.txt": "b1\n"})
	e.mustCall("nexus/checkpoints/undo", map[string]any{"session": session, "lastTurn": true, "force": true}, &res)
	if res.Checkpoint == nil || len(res.Restored) != 2 {
		t.Fatalf("undo with force: %+v", res)
	}
	sameFiles(t, "after undo", files(t, ws, "a.txt", "b.txt"), map[string]string{"a.txt": "a0\n", "b.txt": "<absent>"})
	// The redo reverses the undo: the person's edit is back too.
	e.mustCall("nexus/checkpoints/redo", map[string]any{}, &res)
	if len(res.Restored) != 2 {
		t.Fatalf("redo: %+v", res)
	}
	sameFiles(t, "after redo", files(t, ws, "a.txt", "b.txt"), map[string]string{"a.txt": "mine\n", "b.txt": "b1\n"})

	// /undo in the editor's chat: the conflict, then --force.
	e.mustCall("nexus/agent/prompt", map[string]any{"sessionId": session, "prompt": "/undo"}, &pr)
	e.await("/undo's conflict", 30*time.Second, func() bool {
		return strings.Contains(commandText(e, session), "a.txt: ") &&
			strings.Contains(commandText(e, session), "nothing was changed (/undo --force restores anyway)")
	})
	sameFiles(t, "after a refused /undo", files(t, ws, "a.txt", "b.txt"), map[string]string{"a.txt": "mine\n", "b.txt": "b1\n"})
	e.mustCall("nexus/agent/prompt", map[string]any{"sessionId": session, "prompt": "/undo --force"}, &pr)
	sameFiles(t, "after /undo --force", files(t, ws, "a.txt", "b.txt"), map[string]string{"a.txt": "a0\n", "b.txt": "<absent>"})
	var gc struct {
		Pruned     int   `json:"pruned"`
		BytesAfter int64 `json:"bytesAfter"`
	}
	e.mustCall("nexus/checkpoints/gc", map[string]any{}, &gc)
	if gc.Pruned != 0 || gc.BytesAfter <= 0 {
		t.Errorf("gc: %+v", gc)
	}
}

// commandText is the text of the session's command_output updates; the
// caller holds e.mu (as await's condition does).
func commandText(e *editor, session string) string {
	var b strings.Builder
	for _, n := range e.notes {
		if n.method != "nexus/agent/update" || !strings.Contains(string(n.params), session) {
			continue
		}
		var u struct {
			Update struct {
				SessionUpdate string `json:"sessionUpdate"`
				Content       struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"update"`
		}
		if json.Unmarshal(n.params, &u) == nil && u.Update.SessionUpdate == "command_output" {
			b.WriteString(u.Update.Content.Text + "\n")
		}
	}
	return b.String()
}
