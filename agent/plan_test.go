package agent_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/agent"
	"github.com/nexuscocreate/nexus/llm"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/workspace"
)

func planCall(id, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: agent.PlanToolName, Arguments: json.RawMessage(args)}
}

// reloaded is what a door is shown of session id once the service was
// started again from the session files.
func (f *fixture) reloaded(t *testing.T, id string) []agent.Update {
	t.Helper()
	f.svc.Close()
	f.open(t)
	_, updates, err := f.svc.Load(person, id)
	if err != nil {
		t.Fatal(err)
	}
	return updates
}

func offeredNames(req *llm.Request) []string {
	var names []string
	for _, tl := range req.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// TestPlanTool: the model's update_plan sets the session's plan, sent to
// the doors as an ACP plan update and to the model as a short summary; it
// is no Nexus tool call (nothing is asked or audited), and the plan is
// saved with the session: a reload replays it.
func TestPlanTool(t *testing.T) {
	f := newFixture(t, nil)
	id := f.session(t)
	f.model.turns = append(f.model.turns,
		calls(planCall("p1", `{"explanation":"three steps","plan":[{"step":"Read a.txt","status":"completed"},`+
			`{"step":"  Write b.txt ","status":"in_progress"},{"step":"Run the tests","status":"pending"}]}`)),
		calls(planCall("p2", `{"plan":[{"step":"Read a.txt","status":"completed"},{"step":"Write b.txt","status":"completed"},`+
			`{"step":"Run the tests","status":"in_progress"}]}`)),
		text("done"))
	var rec recorder
	if _, err := f.svc.Prompt(context.Background(), person, id, "plan it", agent.PromptOptions{OnUpdate: rec.add}); err != nil {
		t.Fatal(err)
	}
	if names := offeredNames(f.model.reqs[0]); names[len(names)-1] != agent.PlanToolName || !slices.Contains(names, "read_file") {
		t.Errorf("offered %v, want the workspace's tools then %s", names, agent.PlanToolName)
	}
	if tl := f.model.reqs[0].Tools[len(f.model.reqs[0].Tools)-1]; !json.Valid(tl.Schema) || len(tl.Description)+len(tl.Schema) > 600 {
		t.Errorf("the plan tool's schema (valid JSON, short: it goes with every request): %s %s", tl.Description, tl.Schema)
	}
	plans := rec.kinds("plan")
	if len(plans) != 2 {
		t.Fatalf("plan updates = %+v", plans)
	}
	want := []agent.PlanEntry{{Content: "Read a.txt", Priority: "medium", Status: "completed"},
		{Content: "Write b.txt", Priority: "medium", Status: "in_progress"}, {Content: "Run the tests", Priority: "medium", Status: "pending"}}
	if !slices.Equal(plans[0].Entries, want) {
		t.Errorf("first plan = %+v, want %+v", plans[0].Entries, want)
	}
	if len(rec.kinds("tool_call")) != 0 || len(rec.kinds("tool_call_update")) != 0 {
		t.Errorf("the plan tool showed as a tool call: %+v", rec.updates)
	}
	if calls := f.m.Calls(tools.CallFilter{}); len(calls) != 0 {
		t.Errorf("the plan tool made Nexus tool calls: %+v", calls)
	}
	r := f.model.reqs[1].Messages[len(f.model.reqs[1].Messages)-1].Result
	if r == nil || r.IsError || r.Content != "Plan updated: 3 steps (1 completed, 1 in progress, 1 pending); the person sees it." {
		t.Errorf("result = %+v", r)
	}

	var replayed [][]agent.PlanEntry
	for _, u := range f.reloaded(t, id) {
		switch u.SessionUpdate {
		case "plan":
			replayed = append(replayed, u.Entries)
		case "tool_call":
			t.Errorf("replay shows the plan call as a tool call: %+v", u)
		}
	}
	if len(replayed) != 2 || replayed[1][2].Status != "in_progress" {
		t.Errorf("replayed plans = %+v", replayed)
	}
}

// TestPlanToolRejectsBadInput: a plan that is not one the schema allows is
// the model's to fix: it is told what was wrong, the doors see nothing,
// and the plan stays as it was.
func TestPlanToolRejectsBadInput(t *testing.T) {
	for _, c := range []struct{ name, args, want string }{
		{"no plan", `{"explanation":"x"}`, `"plan" is missing`},
		{"not json", `{"plan":`, "not an object of the schema"},
		{"empty step", `{"plan":[{"step":"  ","status":"pending"}]}`, "step 1 has no text"},
		{"bad status", `{"plan":[{"step":"a","status":"pending"},{"step":"b","status":"done"}]}`, `step 2 has the status "done"`},
		{"two in progress", `{"plan":[{"step":"a","status":"in_progress"},{"step":"b","status":"in_progress"}]}`, "steps 1 and 2 are both in_progress"},
		{"unknown field", `{"plan":[{"step":"a","status":"pending","priority":"high"}]}`, `unknown field "priority"`},
		{"long step", `{"plan":[{"step":"` + strings.Repeat("x", 501) + `","status":"pending"}]}`, "step 1 is 501 bytes"},
		{"many steps", `{"plan":[` + strings.Repeat(`{"step":"a","status":"pending"},`, 50) + `{"step":"a","status":"pending"}]}`, "51 steps"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, nil)
			id := f.session(t)
			f.model.turns = append(f.model.turns,
				calls(planCall("p1", `{"plan":[{"step":"keep me","status":"pending"}]}`)),
				calls(planCall("p2", c.args)), text("sorry"))
			var rec recorder
			if _, err := f.svc.Prompt(context.Background(), person, id, "plan", agent.PromptOptions{OnUpdate: rec.add}); err != nil {
				t.Fatal(err)
			}
			r := f.model.reqs[2].Messages[len(f.model.reqs[2].Messages)-1].Result
			if r == nil || !r.IsError || !strings.HasPrefix(r.Content, "Invalid arguments: ") || !strings.Contains(r.Content, c.want) {
				t.Errorf("result = %+v, want an error naming %q", r, c.want)
			}
			if plans := rec.kinds("plan"); len(plans) != 1 || plans[0].Entries[0].Content != "keep me" {
				t.Errorf("plan updates = %+v, want only the first", plans)
			}
		})
	}
}

// TestPlanToolFollowsAgentTools: agent.tools, when set, decides whether
// the plan tool is offered, as it does for every tool; a call of it when
// it is not offered runs nothing.
func TestPlanToolFollowsAgentTools(t *testing.T) {
	f := newFixture(t, func(c *workspace.Config) { c.Agent.Tools = []string{"read_file"} })
	id := f.session(t)
	f.model.turns = append(f.model.turns, calls(planCall("p1", `{"plan":[{"step":"a","status":"pending"}]}`)), text("ok"))
	var rec recorder
	if _, err := f.svc.Prompt(context.Background(), person, id, "plan", agent.PromptOptions{OnUpdate: rec.add}); err != nil {
		t.Fatal(err)
	}
	if names := offeredNames(f.model.reqs[0]); !slices.Equal(names, []string{"read_file"}) {
		t.Errorf("offered %v", names)
	}
	if len(rec.kinds("plan")) != 0 {
		t.Errorf("a plan tool not offered set a plan: %+v", rec.kinds("plan"))
	}
	f2 := newFixture(t, func(c *workspace.Config) { c.Agent.Tools = []string{"read_file", "update_plan"} })
	if _, err := f2.svc.Prompt(context.Background(), person, f2.session(t), "hi", agent.PromptOptions{}); err != nil {
		t.Fatal(err)
	}
	if names := offeredNames(f2.model.reqs[0]); !slices.Equal(names, []string{"read_file", agent.PlanToolName}) {
		t.Errorf("offered %v", names)
	}
	// /tools lists it, with no risk: it costs no permission.
	var out recorder
	if _, err := f2.svc.Prompt(context.Background(), person, f2.session(t), "/tools", agent.PromptOptions{OnUpdate: out.add}); err != nil {
		t.Fatal(err)
	}
	if said := out.kinds("command_output"); len(said) != 1 || !strings.Contains(said[0].Content.(*agent.ContentBlock).Text, "update_plan                      none   Keep the plan of a task") {
		t.Errorf("/tools said %+v", said)
	}
}

// TestClearForgetsThePlan: /clear sends an empty plan to the doors, and a
// reload after it shows none.
func TestClearForgetsThePlan(t *testing.T) {
	f := newFixture(t, nil)
	id := f.session(t)
	f.model.turns = append(f.model.turns, calls(planCall("p1", `{"plan":[{"step":"a","status":"pending"}]}`)), text("ok"))
	if _, err := f.svc.Prompt(context.Background(), person, id, "plan", agent.PromptOptions{}); err != nil {
		t.Fatal(err)
	}
	var rec recorder
	if _, err := f.svc.Prompt(context.Background(), person, id, "/clear", agent.PromptOptions{OnUpdate: rec.add}); err != nil {
		t.Fatal(err)
	}
	if plans := rec.kinds("plan"); len(plans) != 1 || len(plans[0].Entries) != 0 {
		t.Errorf("plan updates of /clear = %+v, want one empty", plans)
	}
	for _, u := range f.reloaded(t, id) {
		if u.SessionUpdate == "plan" {
			t.Errorf("a cleared plan was replayed: %+v", u)
		}
	}
}

// TestCompactKeepsThePlan: /compact summarises away the calls that set
// the plan; the summary carries the plan (as saved with the session, here
// read back after a restart), so the model still has it.
func TestCompactKeepsThePlan(t *testing.T) {
	f := newFixture(t, nil)
	id := f.session(t)
	f.model.turns = append(f.model.turns,
		calls(planCall("p1", `{"plan":[{"step":"Read a.txt","status":"completed"},{"step":"Write b.txt","status":"in_progress"}]}`)),
		text("first"), text("second"), text("third"), text("The summary."), text("after"))
	for _, p := range []string{"one", "two", "three", "reload", "/compact", "four"} {
		if p == "reload" { // the plan is read back from the session's file
			f.svc.Close()
			f.open(t)
			continue
		}
		if _, err := f.svc.Prompt(context.Background(), person, id, p, agent.PromptOptions{}); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	last := f.model.reqs[len(f.model.reqs)-1]
	want := "[Summary of the earlier conversation]\nThe summary.\n\n[Your plan, as you last set it with update_plan]\n- [completed] Read a.txt\n- [in_progress] Write b.txt"
	if last.Messages[0].Text != want {
		t.Errorf("first message after /compact = %q, want %q", last.Messages[0].Text, want)
	}
}
