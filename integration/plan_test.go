package integration

import (
	"context"
	"slices"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
)

// planRecorder is an ACP client that hands each plan update to a channel
// as it comes, besides recording every update.
type planRecorder struct {
	*acpRecorder
	plans chan *acpsdk.SessionUpdatePlan
}

func (r *planRecorder) SessionUpdate(ctx context.Context, n acpsdk.SessionNotification) error {
	if n.Update.Plan != nil {
		r.plans <- n.Update.Plan
	}
	return r.acpRecorder.SessionUpdate(ctx, n)
}

// TestPlanACP: the model's update_plan reaches an ACP editor as a plan
// update with the steps and their statuses, each time the plan changes;
// a plan that breaks the rules (two steps in progress) reaches no one
// (agent/plan_test.go checks that the model is told why).
func TestPlanACP(t *testing.T) {
	model := startScriptedModel(t)
	ws := newWorkspace(t, agentTurnConfig(model))
	startDaemon(t, ws)

	rec := &planRecorder{acpRecorder: &acpRecorder{}, plans: make(chan *acpsdk.SessionUpdatePlan, 16)}
	conn, sessionID, stderr := acpEditor(t, ws, rec)
	ctx := context.Background()
	model.then(
		scriptedCall{"update_plan", `{"plan":[{"step":"Read the notes","status":"in_progress"},{"step":"Write the summary","status":"pending"}]}`},
		scriptedCall{"update_plan", `{"plan":[{"step":"Read the notes","status":"in_progress"},{"step":"Write the summary","status":"in_progress"}]}`},
		scriptedCall{"update_plan", `{"plan":[{"step":"Read the notes","status":"completed"},{"step":"Write the summary","status":"in_progress"}]}`},
	)
	if _, err := conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: sessionID, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("Summarise the notes.")}}); err != nil {
		t.Fatalf("prompt: %v\n%s", err, stderr.String())
	}

	// The updates are notifications: they may come after the answer.
	type step struct{ content, status string }
	seen := func(p *acpsdk.SessionUpdatePlan) []step {
		var out []step
		for _, e := range p.Entries {
			out = append(out, step{e.Content, string(e.Status)})
			if e.Priority != acpsdk.PlanEntryPriorityMedium {
				t.Errorf("entry %q has priority %q", e.Content, e.Priority)
			}
		}
		return out
	}
	for i, want := range [][]step{
		{{"Read the notes", "in_progress"}, {"Write the summary", "pending"}},
		{{"Read the notes", "completed"}, {"Write the summary", "in_progress"}},
	} {
		if got := seen(<-rec.plans); !slices.Equal(got, want) {
			t.Errorf("plan update %d = %v, want %v", i+1, got, want)
		}
	}
	select {
	case p := <-rec.plans:
		t.Errorf("a third plan update: %v", seen(p))
	default:
	}
	// No tool call of the plan: it is the agent's own, not the workspace's.
	rec.mu.Lock()
	for _, u := range rec.updates {
		if u.ToolCall != nil {
			t.Errorf("a tool call was shown: %+v", u.ToolCall)
		}
	}
	rec.mu.Unlock()
}

// TestPlanChat: nexus chat shows the agent's plan as it changes, a line a
// step, and again when the session is resumed (the plan is saved with it).
func TestPlanChat(t *testing.T) {
	model := startScriptedModel(t)
	ws := newWorkspace(t, agentTurnConfig(model))
	startDaemon(t, ws)
	model.then(
		scriptedCall{"update_plan", `{"plan":[{"step":"Read the notes","status":"in_progress"},{"step":"Write the summary","status":"pending"}]}`},
		scriptedCall{"update_plan", `{"plan":[{"step":"Read the notes","status":"completed"},{"step":"Write the summary","status":"in_progress"}]}`},
	)
	_, errOut, code := nexus(t, ws, "", "chat", "-p", "Summarise the notes.")
	first := "Plan (0/2 done):\n  [>] Read the notes\n  [ ] Write the summary\n"
	second := "Plan (1/2 done):\n  [x] Read the notes\n  [>] Write the summary\n"
	if code != 0 || !strings.Contains(errOut, first) || !strings.Contains(errOut, second) {
		t.Fatalf("nexus chat -p: exit %d\n%s", code, errOut)
	}
	m := resumeHint.FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("no session id on stderr: %q", errOut)
	}
	out, errOut, code := nexus(t, ws, "/quit\n", "chat", "--resume", m[1])
	if code != 0 || !strings.Contains(out, "> Summarise the notes.\n"+first) || !strings.Contains(out, second) {
		t.Errorf("resumed: exit %d\n%s\n%s", code, out, errOut)
	}
}
