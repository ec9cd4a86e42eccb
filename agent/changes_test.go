package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/agent"
	"github.com/nexuscocreate/nexus/checkpoints"
	"github.com/nexuscocreate/nexus/llm"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/core"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// newCheckpointedFixture is newFixture with a checkpoints store that
// records the calls' changes, as nexusd has it, and the policy allowing
// write_file and execute_command without asking (tools.policy allow).
func newCheckpointedFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, nil)
	defs, err := state.OpenDefinitions(state.DefinitionsOptions{Dir: filepath.Join(f.ws, ".nexus", "definitions"),
		HistoryDir: filepath.Join(f.ws, ".nexus", "history.git")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { defs.Close() })
	st, err := checkpoints.Open(checkpoints.Options{Workspace: f.ws, Definitions: defs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	pol := policy.New(policy.Rules{Workspace: f.ws, Tools: map[string]policy.Decision{"write_file": policy.Allow, "execute_command": policy.Allow}}, nil)
	m, err := tools.NewManager(tools.Options{Gate: pol.Gate(f.approvers, time.Minute, nil), Recorder: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	ct, err := core.New(core.Config{Workspace: f.ws})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ct.Close() })
	for _, tl := range ct.List() {
		if err := m.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	f.svc.Close()
	f.m, f.checkpoints = m, st
	f.open(t)
	return f
}

// completedOf returns the completed update of the call named tool.
func completedOf(updates []agent.Update, tool string) (agent.Update, bool) {
	for _, u := range updates {
		if u.SessionUpdate == "tool_call_update" && u.Status == "completed" && u.ToolName == tool {
			return u, true
		}
	}
	return agent.Update{}, false
}

// TestCompletedWriteCarriesItsDiff: a write the policy allowed without
// asking ends with the diff its checkpoint recorded; a read with none;
// and a reloaded session shows the diff again.
func TestCompletedWriteCarriesItsDiff(t *testing.T) {
	f := newCheckpointedFixture(t)
	id := f.session(t)
	f.model.turns = append(f.model.turns,
		calls(llm.ToolCall{ID: "w1", Name: "write_file", Arguments: json.RawMessage(`{"path":"a.txt","content":"alpha\nomega\n"}`)}),
		calls(llm.ToolCall{ID: "r1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`)}),
		text("done"))
	var updates []agent.Update
	if _, err := f.svc.Prompt(context.Background(), person, id, "write a", agent.PromptOptions{
		OnUpdate: func(u agent.Update) { updates = append(updates, u) }}); err != nil {
		t.Fatal(err)
	}
	w, ok := completedOf(updates, "write_file")
	if !ok {
		t.Fatalf("no completed write_file update in %+v", updates)
	}
	if len(w.Changes) != 1 || w.Changes[0].Path != "a.txt" || w.Changes[0].Action != "modified" ||
		!strings.Contains(w.Changes[0].Diff, "\n+alpha\n+omega\n") || w.Changes[0].Truncated || w.MoreChanges != 0 {
		t.Errorf("write_file's changes = %+v", w.Changes)
	}
	// The texts, for ACP's diff content: the file before and after.
	if len(w.Edits) != 1 || w.Edits[0].Before == nil || *w.Edits[0].Before != "alpha" || w.Edits[0].After == nil || *w.Edits[0].After != "alpha\nomega\n" {
		t.Errorf("write_file's edits = %+v", w.Edits)
	}
	if r, ok := completedOf(updates, "read_file"); !ok || r.Changes != nil || r.Edits != nil {
		t.Errorf("read_file's completed update = %+v, %v: want no changes", r, ok)
	}
	// The model is not sent the diff.
	last := f.model.reqs[1].Messages[len(f.model.reqs[1].Messages)-1].Result
	if last == nil || strings.Contains(last.Content, "omega") {
		t.Errorf("the model's result = %+v", last)
	}

	f.svc.Close()
	f.open(t)
	_, replayed, err := f.svc.Load(person, id)
	if err != nil {
		t.Fatal(err)
	}
	var shown []agent.FileChange
	for _, u := range replayed {
		if u.SessionUpdate == "tool_call" && u.ToolCallID == w.ToolCallID {
			shown = u.Changes
		}
	}
	if len(shown) != 1 || shown[0].Diff != w.Changes[0].Diff {
		t.Errorf("reloaded changes = %+v, want %+v", shown, w.Changes)
	}
}

// TestCompletedWriteCarriesItsDiffCut: a diff over a few KiB is cut at
// a line's end and says so.
func TestCompletedWriteCarriesItsDiffCut(t *testing.T) {
	f := newCheckpointedFixture(t)
	id := f.session(t)
	var big strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&big, "line %d\n", i)
	}
	args, _ := json.Marshal(map[string]string{"path": "big.txt", "content": big.String()})
	huge, _ := json.Marshal(map[string]string{"path": "huge.txt", "content": strings.Repeat("x\n", 150<<10)})
	f.model.turns = append(f.model.turns, calls(llm.ToolCall{ID: "w1", Name: "write_file", Arguments: args}),
		calls(llm.ToolCall{ID: "w2", Name: "write_file", Arguments: huge}), text("done"))
	var updates []agent.Update
	if _, err := f.svc.Prompt(context.Background(), person, id, "write big", agent.PromptOptions{
		OnUpdate: func(u agent.Update) { updates = append(updates, u) }}); err != nil {
		t.Fatal(err)
	}
	u, ok := completedOf(updates, "write_file")
	if !ok || len(u.Changes) != 1 {
		t.Fatalf("completed write_file = %+v, %v", u, ok)
	}
	c := u.Changes[0]
	if c.Action != "added" || !c.Truncated || len(c.Diff) > 4<<10 || !strings.HasSuffix(c.Diff, "\n") || !strings.Contains(c.Diff, "+line 0\n") {
		t.Errorf("%s: %s, truncated %v, %d bytes of diff", c.Path, c.Action, c.Truncated, len(c.Diff))
	}
	// A file over 256 KiB: no diff is computed, nor its text kept.
	var h agent.Update
	for _, u := range updates {
		if len(u.Changes) == 1 && u.Changes[0].Path == "huge.txt" {
			h = u
		}
	}
	if len(h.Changes) != 1 || h.Changes[0].Diff != "" || !h.Changes[0].Truncated || h.Edits != nil {
		t.Errorf("huge.txt's completed update: %+v", h)
	}
}
