package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nexuscocreate/nexus/agent"
	"github.com/nexuscocreate/nexus/llm"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/workspace"
)

const reviewerBrief = "---\nname: reviewer\ndescription: Reviews files\ntools: [read_file]\n---\nYou review files, briefly.\n"

func taskCall(id, agentName, prompt string) llm.ToolCall {
	args, _ := json.Marshal(map[string]string{"agent": agentName, "prompt": prompt})
	return llm.ToolCall{ID: id, Name: agent.TaskToolName, Arguments: args}
}

// isChild reports whether a request is a subagent's (its system prompt
// says so).
func isChild(req *llm.Request) bool {
	return strings.Contains(req.System, "a subagent of the Nexus agent")
}

// TestSubagentTask: a task call starts a child session whose request
// carries the brief (not the parent's system prompt) and only the brief's
// tools; its calls are Nexus calls of the parent's agent in the parent's
// session and turn, shown under the task's call; its last answer is the
// task's result in the parent's next request; its usage is the parent's;
// a reload runs nothing again.
func TestSubagentTask(t *testing.T) {
	f := commandFixture(t, map[string]string{"agents/reviewer.md": reviewerBrief}, nil)
	os.WriteFile(filepath.Join(f.ws, "AGENTS.md"), []byte("Always answer in English."), 0o644)
	id := f.session(t)
	f.model.turns = append(f.model.turns,
		calls(taskCall("t1", "reviewer", "Read a.txt and say what it holds")),
		calls(llm.ToolCall{ID: "c1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`)}),
		text("a.txt holds alpha"),
		text("The reviewer says: alpha"))
	var rec recorder
	res, err := f.svc.Prompt(context.Background(), person, id, "review a.txt", agent.PromptOptions{OnUpdate: rec.add})
	if err != nil || res.StopReason != agent.StopEndTurn {
		t.Fatalf("Prompt = %+v, %v", res, err)
	}
	reqs := f.model.reqs
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	parentTools := offeredNames(reqs[0])
	if !slices.Contains(parentTools, agent.TaskToolName) {
		t.Fatalf("the parent was offered %v, without %s", parentTools, agent.TaskToolName)
	}
	task := reqs[0].Tools[slices.Index(parentTools, agent.TaskToolName)]
	if !strings.Contains(task.Description, "- reviewer: Reviews files") || !strings.Contains(string(task.Schema), `"enum":["reviewer"]`) {
		t.Errorf("the task tool: %s %s", task.Description, task.Schema)
	}
	child := reqs[1]
	if !isChild(child) || !strings.Contains(child.System, "You review files, briefly.") || strings.Contains(child.System, "You are the Nexus agent") ||
		!strings.Contains(child.System, "Always answer in English.") {
		t.Errorf("the subagent's system prompt (the brief and the project instructions):\n%s", child.System)
	}
	if names := offeredNames(child); !slices.Equal(names, []string{"read_file"}) {
		t.Errorf("the subagent was offered %v, want only the brief's read_file", names)
	}
	if len(child.Messages) != 1 || child.Messages[0].Text != "Read a.txt and say what it holds" {
		t.Errorf("the subagent's first request holds %+v, want the task's prompt alone", child.Messages)
	}
	calls := f.m.Calls(tools.CallFilter{})
	if len(calls) != 1 || calls[0].ToolName != "read_file" || calls[0].Author != "agent:"+id || calls[0].TaskID != id ||
		calls[0].Session != id || calls[0].Turn != "1" {
		t.Fatalf("Nexus calls %+v, want the subagent's read_file as the parent's agent, session and turn 1", calls)
	}
	starts := rec.kinds("tool_call")
	if len(starts) != 2 || starts[0].Title != "Subagent reviewer: Read a.txt and say what it holds" || starts[0].ParentToolCallID != "" {
		t.Fatalf("tool_call updates %+v, want the task's then the subagent's", starts)
	}
	if s := starts[1]; s.ToolCallID != calls[0].ID || s.ParentToolCallID != starts[0].ToolCallID || !strings.HasPrefix(s.Title, "reviewer: ") {
		t.Errorf("the subagent's call shows as %+v, want it under the task %s, titled with the subagent's name", s, starts[0].ToolCallID)
	}
	for _, u := range rec.kinds("tool_call_update") {
		if u.ToolCallID == calls[0].ID && u.Title != "" && !strings.HasPrefix(u.Title, "reviewer: ") {
			t.Errorf("the subagent's call is retitled %q as it runs or ends, without the subagent's name", u.Title)
		}
	}
	for _, u := range rec.kinds("agent_message_chunk") {
		if strings.Contains(u.Content.(*agent.ContentBlock).Text, "holds alpha") {
			t.Errorf("the subagent's text reached the doors as the parent's: %+v", u)
		}
	}
	last := reqs[3].Messages[len(reqs[3].Messages)-1].Result
	if last == nil || last.CallID != "t1" || last.IsError || last.Content != "a.txt holds alpha" {
		t.Errorf("the parent's next request ends with %+v, want the subagent's answer as t1's result", last)
	}
	if info := f.sessionInfo(t, id); info.Usage.Requests != 4 {
		t.Errorf("the session counts %d requests, want 4 (the subagent's are its parent's)", info.Usage.Requests)
	}
	data, err := os.ReadFile(filepath.Join(f.ws, ".nexus", "sessions", id+".jsonl"))
	if err != nil || !strings.Contains(string(data), `"type":"task"`) || !strings.Contains(string(data), "a.txt holds alpha") {
		t.Errorf("the session file has no task record with the subagent's transcript: %v\n%s", err, data)
	}
	n := len(f.model.reqs)
	updates := f.reloaded(t, id)
	if len(f.model.reqs) != n {
		t.Errorf("the reload made model requests")
	}
	i := slices.IndexFunc(updates, func(u agent.Update) bool { return u.ToolCallID == starts[0].ToolCallID })
	if i < 0 || i+1 >= len(updates) {
		t.Fatalf("the reload does not show the task's call: %+v", updates)
	}
	if u := updates[i+1]; u.ToolCallID != calls[0].ID || u.ParentToolCallID != starts[0].ToolCallID || !strings.HasPrefix(u.Title, starts[1].Title) {
		t.Errorf("the reload shows after the task's call %+v, want the subagent's read_file under it as it was shown live, in the words of its end (%+v)", u, starts[1])
	}
	f.model.turns = append(f.model.turns, text("again"))
	if _, err := f.svc.Prompt(context.Background(), person, id, "and now?", agent.PromptOptions{}); err != nil {
		t.Fatal(err)
	}
	if msgs := f.model.reqs[len(f.model.reqs)-1].Messages; len(msgs) != 5 {
		t.Errorf("after the reload the parent's history has %d messages, want 5 (none of the subagent's): %+v", len(msgs), msgs)
	}
}

// contentText is the text of a tool call update's content.
func contentText(u agent.Update) string {
	var out []string
	items, _ := u.Content.([]agent.ToolCallContent)
	for _, it := range items {
		if it.Content != nil {
			out = append(out, it.Content.Text)
		}
	}
	return strings.Join(out, "\n")
}

func (f *fixture) sessionInfo(t *testing.T, id string) agent.SessionInfo {
	t.Helper()
	for _, s := range f.svc.List(person) {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no session %s", id)
	return agent.SessionInfo{}
}

// TestSubagentToolsWithinParent: a subagent is offered the brief's tools
// within the parent's (agent.tools bounds both), never task or
// update_plan; a brief with no tools key has all of its parent's
// workspace tools.
func TestSubagentToolsWithinParent(t *testing.T) {
	f := commandFixture(t, map[string]string{
		"agents/writer.md": "---\ntools: [read_file, write_file, update_plan, task]\n---\nYou write.",
		"agents/all.md":    "You do anything.",
	}, nil)
	f.cfg.Agent.Tools = []string{"read_file", "list_directory", agent.TaskToolName, agent.PlanToolName}
	id := f.session(t)
	f.model.turns = append(f.model.turns, calls(taskCall("t1", "writer", "write")), text("w"), calls(taskCall("t2", "all", "go")), text("a"), text("end"))
	if _, err := f.svc.Prompt(context.Background(), person, id, "go", agent.PromptOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := offeredNames(f.model.reqs[1]); !slices.Equal(got, []string{"read_file"}) {
		t.Errorf("writer was offered %v, want [read_file]: write_file is not the parent's, task and update_plan never a subagent's", got)
	}
	if got := offeredNames(f.model.reqs[3]); !slices.Equal(got, []string{"list_directory", "read_file"}) && !slices.Equal(got, []string{"read_file", "list_directory"}) {
		t.Errorf("all was offered %v, want the parent's workspace tools", got)
	}
}

// TestSubagentsRunInParallel: the task calls of one step run side by side,
// at most agent.maxSubagents at once; the others wait for a place.
func TestSubagentsRunInParallel(t *testing.T) {
	f := commandFixture(t, map[string]string{"agents/reviewer.md": reviewerBrief}, nil)
	f.cfg.Agent.MaxSubagents = 2
	id := f.session(t)
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	started, running, most := 0, 0, 0
	respond := func(ctx context.Context, req *llm.Request, emit func(llm.Event)) (*llm.Response, error) {
		if !isChild(req) {
			return text("all done")(ctx, req, emit)
		}
		mu.Lock()
		started++
		running++
		most = max(most, running)
		cond.Broadcast()
		for started < 2 { // the first two wait for each other: they run at once
			cond.Wait()
		}
		running--
		mu.Unlock()
		return text("reviewed "+req.Messages[0].Text)(ctx, req, emit)
	}
	f.model.turns = append(f.model.turns, calls(taskCall("t1", "reviewer", "one"), taskCall("t2", "reviewer", "two"), taskCall("t3", "reviewer", "three")),
		respond, respond, respond, respond)
	if _, err := f.svc.Prompt(context.Background(), person, id, "review", agent.PromptOptions{}); err != nil {
		t.Fatal(err)
	}
	if started != 3 || most != 2 {
		t.Errorf("%d subagents started, at most %d at once; want 3, and 2 (agent.maxSubagents)", started, most)
	}
	msgs := f.model.reqs[len(f.model.reqs)-1].Messages
	for i, want := range []string{"reviewed one", "reviewed two", "reviewed three"} {
		if r := msgs[len(msgs)-3+i].Result; r == nil || r.Content != want {
			t.Errorf("result %d = %+v, want %q in the model's order", i, r, want)
		}
	}
}

// TestSubagentCancel: the parent's cancel reaches a running subagent: its
// request ends, the task's result says so, and the prompt stops
// cancelled.
func TestSubagentCancel(t *testing.T) {
	f := commandFixture(t, map[string]string{"agents/reviewer.md": reviewerBrief}, nil)
	id := f.session(t)
	started := make(chan struct{})
	f.model.turns = append(f.model.turns, calls(taskCall("t1", "reviewer", "slow")),
		func(ctx context.Context, req *llm.Request, _ func(llm.Event)) (*llm.Response, error) {
			if !isChild(req) {
				return nil, errors.New("not the subagent's request")
			}
			close(started)
			<-ctx.Done()
			return nil, &llm.Error{Kind: llm.KindCanceled, Provider: "test", Message: "cancelled", Err: ctx.Err()}
		})
	done := make(chan agent.PromptResult)
	var rec recorder
	go func() {
		res, err := f.svc.Prompt(context.Background(), person, id, "go", agent.PromptOptions{OnUpdate: rec.add})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-started
	if ok, err := f.svc.Cancel(person, id); !ok || err != nil {
		t.Fatalf("Cancel = %v, %v", ok, err)
	}
	if res := <-done; res.StopReason != agent.StopCancelled {
		t.Errorf("stop = %q, want cancelled", res.StopReason)
	}
	ups := rec.kinds("tool_call_update")
	if len(ups) == 0 || ups[len(ups)-1].Status != "failed" || !strings.Contains(contentText(ups[len(ups)-1]), "was cancelled") {
		t.Errorf("the task's last update %+v, want failed: cancelled", ups)
	}
	f.model.turns = append(f.model.turns, text("ok"))
	if res, err := f.svc.Prompt(context.Background(), person, id, "again", agent.PromptOptions{}); err != nil || res.StopReason != agent.StopEndTurn {
		t.Errorf("after the cancel: %+v, %v", res, err)
	}
}

// TestSubagentFailure: a subagent whose model fails, or a task call of no
// subagent, is the task's error result; the parent's turn goes on.
func TestSubagentFailure(t *testing.T) {
	f := commandFixture(t, map[string]string{"agents/reviewer.md": reviewerBrief}, nil)
	id := f.session(t)
	f.model.turns = append(f.model.turns,
		calls(taskCall("t1", "reviewer", "x"), taskCall("t2", "nobody", "y")),
		func(context.Context, *llm.Request, func(llm.Event)) (*llm.Response, error) {
			return nil, &llm.Error{Kind: llm.KindServer, Provider: "test", Message: "overloaded"}
		},
		text("sorry"))
	res, err := f.svc.Prompt(context.Background(), person, id, "go", agent.PromptOptions{})
	if err != nil || res.StopReason != agent.StopEndTurn {
		t.Fatalf("Prompt = %+v, %v; want the turn to go on", res, err)
	}
	msgs := f.model.reqs[len(f.model.reqs)-1].Messages
	r1, r2 := msgs[len(msgs)-2].Result, msgs[len(msgs)-1].Result
	if r1 == nil || !r1.IsError || !strings.Contains(r1.Content, "The subagent reviewer failed") || !strings.Contains(r1.Content, "overloaded") {
		t.Errorf("t1's result %+v, want the subagent's failure", r1)
	}
	if r2 == nil || !r2.IsError || !strings.Contains(r2.Content, "there is no subagent nobody; the subagents are: reviewer") {
		t.Errorf("t2's result %+v, want no such subagent", r2)
	}
}

// TestBriefs: the task tool is offered only when a brief can be used; a
// broken brief (an unknown front matter key, a name taken) is named with
// its file and line by /tools and not offered.
func TestBriefs(t *testing.T) {
	f := commandFixture(t, map[string]string{
		"agents/bad.md":   "---\nname: bad\ntool: [read_file]\n---\nText.",
		"agents/empty.md": "---\ndescription: nothing\n---\n",
	}, nil)
	id := f.session(t)
	out, err := f.run(t, id, "/tools")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`bad                      broken: agents/bad.md:3: front matter: field tool not found in type agent.briefFront`,
		"broken: agents/empty.md:1: the brief has no text",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("/tools does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\ntask ") {
		t.Errorf("/tools lists task with no usable brief:\n%s", out)
	}
	f.defs["agents/dup.md"] = agent.DefinitionFile{Path: "agents/dup.md", Content: []byte("---\nname: bad\n---\nText.")}
	f.defs["agents/ok.md"] = agent.DefinitionFile{Path: "agents/ok.md", Content: []byte("---\nname: bad\n---\nFine.")}
	f.model.turns = append(f.model.turns, text("hi"))
	if _, err := f.svc.Prompt(context.Background(), person, id, "hi", agent.PromptOptions{}); err != nil {
		t.Fatal(err)
	}
	if names := offeredNames(f.model.reqs[0]); !slices.Contains(names, agent.TaskToolName) {
		t.Errorf("a usable brief, and task not offered: %v", names)
	}
	out, _ = f.run(t, id, "/tools")
	if !strings.Contains(out, "broken: agents/ok.md: the name bad is taken by agents/dup.md") {
		t.Errorf("/tools does not name the taken name:\n%s", out)
	}
}

// TestSubagentOffNoBriefs: with no brief, or agent.tools leaving task out,
// the task tool is not offered.
func TestSubagentOffNoBriefs(t *testing.T) {
	for _, tc := range []struct {
		name string
		defs map[string]string
		edit func(*workspace.Config)
	}{
		{"no brief", nil, nil},
		{"agent.tools leaves it out", map[string]string{"agents/reviewer.md": reviewerBrief}, func(c *workspace.Config) { c.Agent.Tools = []string{"read_file"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := commandFixture(t, tc.defs, nil)
			if tc.edit != nil {
				tc.edit(f.cfg)
			}
			id := f.session(t)
			f.model.turns = append(f.model.turns, text("hi"))
			if _, err := f.svc.Prompt(context.Background(), person, id, "hi", agent.PromptOptions{}); err != nil {
				t.Fatal(err)
			}
			if names := offeredNames(f.model.reqs[0]); slices.Contains(names, agent.TaskToolName) {
				t.Errorf("offered %v", names)
			}
		})
	}
}

// TestSubagentProfile: a brief's profile is the subagent's (its usage is
// counted at that profile, and its transcript names it); a profile that
// does not exist is the task's error, naming the file.
func TestSubagentProfile(t *testing.T) {
	f := commandFixture(t, map[string]string{
		"agents/cheap.md": "---\nprofile: other\n---\nYou are cheap.",
		"agents/gone.md":  "---\nprofile: nope\n---\nYou are gone.",
	}, nil)
	id := f.session(t)
	f.model.turns = append(f.model.turns, calls(taskCall("t1", "cheap", "x"), taskCall("t2", "gone", "y")), text("cheap answer"), text("end"))
	if _, err := f.svc.Prompt(context.Background(), person, id, "go", agent.PromptOptions{}); err != nil {
		t.Fatal(err)
	}
	msgs := f.model.reqs[len(f.model.reqs)-1].Messages
	if r := msgs[len(msgs)-2].Result; r == nil || r.IsError || r.Content != "cheap answer" {
		t.Errorf("t1's result %+v", r)
	}
	if r := msgs[len(msgs)-1].Result; r == nil || !r.IsError || !strings.Contains(r.Content, "agents/gone.md: ") || !strings.Contains(r.Content, `no llm profile "nope"`) {
		t.Errorf("t2's result %+v, want the missing profile named with the file", r)
	}
	live := f.sessionInfo(t, id)
	f.reloaded(t, id)
	if again := f.sessionInfo(t, id); live.Usage.Requests != 3 || live.Cost == nil || again.Cost == nil || *again.Cost != *live.Cost {
		t.Errorf("cost %+v after %d requests, and %+v after a reload; want the same (the subagent's request at its own profile's prices)", live.Cost, live.Usage.Requests, again.Cost)
	}
	data, _ := os.ReadFile(filepath.Join(f.ws, ".nexus", "sessions", id+".jsonl"))
	if !strings.Contains(string(data), `"agent":"cheap","source":"agents/cheap.md","revision":"0123456789abcdef0123456789abcdef01234567","profile":"other"`) ||
		!strings.Contains(string(data), `"profile":"other","usage":{"inputTokens":50,"outputTokens":5,"cachedTokens":20}`) {
		t.Errorf("the session file:\n%s", data)
	}
}

// TestSubagentCallsOnlyItsTools: a subagent that calls a tool it was not
// offered (its parent's write_file, task, update_plan) runs nothing and
// asks no one: each goes back to it as not offered, and the parent's plan
// stays as it was.
func TestSubagentCallsOnlyItsTools(t *testing.T) {
	f := commandFixture(t, map[string]string{"agents/reviewer.md": reviewerBrief}, nil)
	id := f.session(t)
	f.model.turns = append(f.model.turns,
		calls(taskCall("t1", "reviewer", "x")),
		calls(llm.ToolCall{ID: "w", Name: "write_file", Arguments: json.RawMessage(`{"path":"pwned.txt","content":"x"}`)},
			taskCall("t2", "reviewer", "again"), planCall("p", `{"plan":[{"step":"forged","status":"pending"}]}`)),
		text("could not"), text("end"))
	var rec recorder
	if _, err := f.svc.Prompt(context.Background(), person, id, "go", agent.PromptOptions{OnUpdate: rec.add}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "pwned.txt")); err == nil {
		t.Error("the subagent wrote pwned.txt with a tool it was not offered")
	}
	if calls := f.m.Calls(tools.CallFilter{}); len(calls) != 0 {
		t.Errorf("Nexus calls were made: %+v", calls)
	}
	if p := rec.kinds("plan"); len(p) != 0 {
		t.Errorf("the subagent set a plan: %+v", p)
	}
	child := f.model.reqs[2].Messages
	for _, m := range child[len(child)-3:] {
		if m.Result == nil || !m.Result.IsError || !strings.Contains(m.Result.Content, "was not offered to you; the call did not run. The tools you may call are: read_file.") {
			t.Errorf("the subagent was told %+v, want not offered", m.Result)
		}
	}
}
