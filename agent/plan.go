package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/nexuscocreate/nexus/llm"
)

// The plan is the session's list of steps, kept by the model with the
// update_plan tool (Codex's name and shape; Claude Code's TodoWrite is the
// same idea). The tool is the agent's own: it is no Nexus tool call, asks
// no one, touches nothing outside the session, and is offered whenever
// agent.tools lets it through. Each change is an ACP "plan" update and a
// "plan" record of the session's file; /clear forgets it. Its text is the
// model's: the doors show it inert.

// PlanToolName is the name of the agent's plan tool, as the model and
// agent.tools see it.
const PlanToolName = "update_plan"

// The statuses of a plan step, in ACP's words.
const (
	PlanPending    = "pending"
	PlanInProgress = "in_progress"
	PlanCompleted  = "completed"
)

// Bounds of a plan: the model's text, kept in the session and sent to
// every door with each change.
const (
	maxPlanSteps    = 50
	maxPlanStepSize = 500 // bytes of a step's text
)

// planSchema and planTool's description are sent with every request:
// they are kept short (about 120 tokens together).
var planSchema = json.RawMessage(`{"type":"object","properties":{"explanation":{"type":"string"},` +
	`"plan":{"type":"array","items":{"type":"object","properties":{"step":{"type":"string"},` +
	`"status":{"type":"string","enum":["pending","in_progress","completed"]}},` +
	`"required":["step","status"],"additionalProperties":false}}},` +
	`"required":["plan"],"additionalProperties":false}`)

// planTool is the tool as the model is offered it.
var planTool = llm.Tool{
	Name: PlanToolName,
	Description: "Keep the plan of a task of several steps, shown to the person: send the whole list " +
		"each time a step starts or ends; at most one step is in_progress.",
	Schema: planSchema,
}

// planArgs is the tool's input.
type planArgs struct {
	Explanation string `json:"explanation"`
	Plan        *[]struct {
		Step   string `json:"step"`
		Status string `json:"status"`
	} `json:"plan"`
}

// parsePlan validates the model's arguments and returns the plan they
// set: every step with text and a known status, at most one in progress,
// within the bounds. An empty list clears the plan.
func parsePlan(args json.RawMessage) ([]PlanEntry, error) {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	var a planArgs
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("the arguments are not an object of the schema: %w", err)
	}
	if dec.More() {
		return nil, errors.New("the arguments hold more than one JSON value")
	}
	if a.Plan == nil {
		return nil, errors.New(`"plan" is missing: send the whole list of steps ([] clears the plan)`)
	}
	steps := *a.Plan
	if len(steps) > maxPlanSteps {
		return nil, fmt.Errorf("the plan has %d steps; at most %d are kept", len(steps), maxPlanSteps)
	}
	out := make([]PlanEntry, 0, len(steps))
	inProgress := -1
	for i, s := range steps {
		text := strings.TrimSpace(s.Step)
		switch {
		case text == "":
			return nil, fmt.Errorf("step %d has no text", i+1)
		case len(text) > maxPlanStepSize:
			return nil, fmt.Errorf("step %d is %d bytes; a step is at most %d", i+1, len(text), maxPlanStepSize)
		case !utf8.ValidString(text):
			return nil, fmt.Errorf("step %d is not valid UTF-8", i+1)
		}
		switch s.Status {
		case PlanPending, PlanCompleted:
		case PlanInProgress:
			if inProgress >= 0 {
				return nil, fmt.Errorf("steps %d and %d are both in_progress; at most one step is", inProgress+1, i+1)
			}
			inProgress = i
		default:
			return nil, fmt.Errorf("step %d has the status %q; it is one of pending, in_progress, completed", i+1, s.Status)
		}
		out = append(out, PlanEntry{Content: text, Priority: "medium", Status: s.Status})
	}
	return out, nil
}

// planSummary is what the model is told of a plan it set.
func planSummary(p []PlanEntry) string {
	if len(p) == 0 {
		return "The plan is cleared."
	}
	n := map[string]int{}
	for _, e := range p {
		n[e.Status]++
	}
	return fmt.Sprintf("Plan updated: %d steps (%d completed, %d in progress, %d pending); the person sees it.",
		len(p), n[PlanCompleted], n[PlanInProgress], n[PlanPending])
}

// runPlan is a call of the plan tool: the session's plan is set, saved
// and sent to the doors as a plan update, or the model is told what was
// wrong with its arguments and the plan stays as it was.
func (ss *Session) runPlan(c llm.ToolCall, emit func(Update)) (ToolResult, bool) {
	res := ToolResult{CallID: c.ID, Name: c.Name, Title: "Update plan", Kind: "think"}
	plan, err := parsePlan(c.Arguments)
	if err != nil {
		res.IsError = true
		res.Content = "Invalid arguments: " + err.Error() + ". The plan is unchanged; call " + PlanToolName + " again with arguments that match its schema."
		return res, true
	}
	ss.setPlan(plan)
	emit(planUpdate(plan))
	res.Content = planSummary(plan)
	return res, false
}

// planUpdate is the ACP plan update of a plan: the whole list (none when
// it was cleared: a door shows no plan then).
func planUpdate(p []PlanEntry) Update {
	return Update{SessionUpdate: "plan", Entries: slices.Clone(p)}
}

// setPlan keeps the plan and writes it to the session's file.
func (ss *Session) setPlan(p []PlanEntry) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.plan = p
	ss.logLocked(record{Type: "plan", Plan: p})
}

// planNote is the plan as a compaction's summary carries it, so that the
// model keeps its plan when the calls that set it are summarised away;
// "" when there is none.
func planNote(p []PlanEntry) string {
	if len(p) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\n[Your plan, as you last set it with " + PlanToolName + "]")
	for _, e := range p {
		fmt.Fprintf(&b, "\n- [%s] %s", e.Status, e.Content)
	}
	return b.String()
}

// currentPlan is the session's plan as its model last set it (nil if
// none).
func (ss *Session) currentPlan() []PlanEntry {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return slices.Clone(ss.plan)
}
