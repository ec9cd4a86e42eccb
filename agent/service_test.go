package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/agent"
	"github.com/nexuscocreate/nexus/llm"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/core"
	"github.com/nexuscocreate/nexus/tools/policy"
	"github.com/nexuscocreate/nexus/workspace"
)

// script is a model that answers from a list of turns, one per request,
// and records the requests: the loop's own behaviour (parallel calls,
// declined calls, malformed calls, overflow, cancellation) needs answers a
// random model cannot be made to give. The adapters are tested against a
// real llama-server in llm, and the whole agent through nexusd in
// integration.
type script struct {
	mu    sync.Mutex
	turns []func(ctx context.Context, req *llm.Request, emit func(llm.Event)) (*llm.Response, error)
	reqs  []*llm.Request
}

func (s *script) Profile() llm.Profile { return llm.Profile{Name: "test"} }

func (s *script) Stream(ctx context.Context, req *llm.Request, emit func(llm.Event)) (*llm.Response, error) {
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	if len(s.turns) == 0 {
		s.mu.Unlock()
		return &llm.Response{Text: "done", Stop: llm.StopEndTurn}, nil
	}
	t := s.turns[0]
	s.turns = s.turns[1:]
	s.mu.Unlock()
	return t(ctx, req, emit)
}

func calls(cs ...llm.ToolCall) func(context.Context, *llm.Request, func(llm.Event)) (*llm.Response, error) {
	return func(_ context.Context, _ *llm.Request, emit func(llm.Event)) (*llm.Response, error) {
		for i := range cs {
			emit(llm.Event{Kind: llm.EventToolCall, ToolCall: &cs[i]})
		}
		return &llm.Response{ToolCalls: cs, Stop: llm.StopToolUse, Usage: llm.Usage{InputTokens: 100, OutputTokens: 10}}, nil
	}
}

func text(s string) func(context.Context, *llm.Request, func(llm.Event)) (*llm.Response, error) {
	return func(_ context.Context, _ *llm.Request, emit func(llm.Event)) (*llm.Response, error) {
		emit(llm.Event{Kind: llm.EventText, Text: s})
		return &llm.Response{Text: s, Stop: llm.StopEndTurn, Usage: llm.Usage{InputTokens: 50, OutputTokens: 5, CachedTokens: 20}}, nil
	}
}

type fixture struct {
	ws        string
	svc       *agent.Service
	model     *script
	m         *tools.Manager
	approvers *policy.Approvers
	cfg       *workspace.Config
	// defs are the definition files ReadDefinitions reads, by path.
	defs map[string]agent.DefinitionFile
	// checkpoints, when set, is the service's store (see
	// newCheckpointedFixture).
	checkpoints agent.Checkpoints
}

func newFixture(t *testing.T, edit func(*workspace.Config)) *fixture {
	t.Helper()
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha"), 0o644)
	os.WriteFile(filepath.Join(ws, "b.txt"), []byte("beta"), 0o644)
	cfg := workspace.DefaultConfig()
	cfg.LLM = workspace.LLMConfig{Default: "test", Profiles: map[string]workspace.LLMProfile{
		"test":  {Provider: "openai-compatible", BaseURL: "http://127.0.0.1:1/v1", Model: "m", Prices: workspace.LLMPrices{Input: 1, Output: 2}},
		"other": {Provider: "openai-compatible", BaseURL: "http://127.0.0.1:1/v1", Model: "m2"},
	}}
	if edit != nil {
		edit(cfg)
	}
	f := &fixture{ws: ws, model: &script{}, cfg: cfg, approvers: &policy.Approvers{}}
	pol := policy.New(policy.Rules{Workspace: ws}, nil)
	m, err := tools.NewManager(tools.Options{Gate: pol.Gate(f.approvers, time.Minute, nil)})
	if err != nil {
		t.Fatal(err)
	}
	ct, err := core.New(core.Config{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ct.Close() }) // its handle of ws keeps Windows from removing it
	for _, tl := range ct.List() {
		if err := m.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	f.m = m
	f.open(t)
	t.Cleanup(func() { m.Close() })
	return f
}

func (f *fixture) open(t *testing.T) {
	t.Helper()
	svc, err := agent.NewService(agent.Options{
		Layout: workspace.NewLayout(f.ws), Config: f.cfg, Tools: f.m, Checkpoints: f.checkpoints,
		NewProvider: func(p llm.Profile) (llm.Provider, error) { return f.model, nil },
		ReadDefinitions: func(_ access.Party, dir string) ([]agent.DefinitionFile, error) {
			var out []agent.DefinitionFile
			for p, d := range f.defs {
				if strings.HasPrefix(p, dir+"/") {
					out = append(out, d)
				}
			}
			return out, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.approvers.Route(svc.ApproverFor)
	f.svc = svc
	t.Cleanup(func() { svc.Close() })
}

var person = access.Person("editor")

func (f *fixture) session(t *testing.T) string {
	t.Helper()
	info, err := f.svc.New(context.Background(), agent.NewSession{Owner: person})
	if err != nil {
		t.Fatal(err)
	}
	return info.ID
}

type recorder struct {
	mu      sync.Mutex
	updates []agent.Update
}

func (r *recorder) add(u agent.Update) {
	r.mu.Lock()
	r.updates = append(r.updates, u)
	r.mu.Unlock()
}

func (r *recorder) kinds(kind string) []agent.Update {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []agent.Update
	for _, u := range r.updates {
		if u.SessionUpdate == kind {
			out = append(out, u)
		}
	}
	return out
}

func TestTurnRunsParallelReadCallsAsNexusCalls(t *testing.T) {
	f := newFixture(t, nil)
	id := f.session(t)
	f.model.turns = append(f.model.turns,
		calls(llm.ToolCall{ID: "c1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`)},
			llm.ToolCall{ID: "c2", Name: "read_file", Arguments: json.RawMessage(`{"path":"b.txt"}`)}),
		text("both read"))
	var rec recorder
	res, err := f.svc.Prompt(context.Background(), person, id, "read a and b", agent.PromptOptions{OnUpdate: rec.add})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "end_turn" || res.Usage.Requests != 2 || res.Usage.InputTokens != 150 {
		t.Errorf("result = %+v", res)
	}
	if res.Cost == nil || res.Cost.Amount <= 0 {
		t.Errorf("cost = %+v, want a known cost (prices are set)", res.Cost)
	}
	// The second request carries both results, after their calls.
	req := f.model.reqs[1]
	var got []string
	for _, m := range req.Messages {
		if m.Result != nil {
			got = append(got, m.Result.CallID+"="+m.Result.Content)
		}
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], "c1=") || !strings.Contains(got[0], "alpha") || !strings.Contains(got[1], "beta") {
		t.Errorf("results sent back = %v", got)
	}
	// Each call is a Nexus tool call by agent:<id>, seen as tool_call then
	// tool_call_update completed, with the Nexus id.
	starts := rec.kinds("tool_call")
	if len(starts) != 2 {
		t.Fatalf("tool_call updates = %+v", starts)
	}
	for _, u := range starts {
		c, ok := f.m.Get(u.ToolCallID)
		if !ok || c.Author != "agent:"+id || c.TaskID != id || c.ToolName != "read_file" {
			t.Errorf("call %s = %+v, %v", u.ToolCallID, c, ok)
		}
	}
	done := 0
	for _, u := range rec.kinds("tool_call_update") {
		if u.Status == "completed" {
			done++
		}
	}
	if done != 2 {
		t.Errorf("%d completed tool_call_updates, want 2", done)
	}
	if len(rec.kinds("agent_message_chunk")) != 1 || len(rec.kinds("usage_update")) != 1 {
		t.Errorf("updates = %+v", rec.updates)
	}
	// The model was offered tools, with icerc only on those that may ask.
	offered := map[string]string{}
	for _, tl := range f.model.reqs[0].Tools {
		offered[tl.Name] = string(tl.Schema)
	}
	if !strings.Contains(offered["write_file"], `"icerc"`) || strings.Contains(offered["read_file"], `"icerc"`) {
		t.Errorf("schemas: write_file %s / read_file %s", offered["write_file"], offered["read_file"])
	}
}

func TestDeclinedCallGoesBackToTheModel(t *testing.T) {
	f := newFixture(t, nil)
	id := f.session(t)
	f.model.turns = append(f.model.turns,
		calls(llm.ToolCall{ID: "w1", Name: "write_file", Arguments: json.RawMessage(
			`{"path":"c.txt","content":"x","icerc":{"intent":"make c","expected_outcome":"c.txt exists"}}`)}),
		text("ok, I will not"))
	var asked tools.ICERC
	ask := func(_ context.Context, call tools.Call, rec policy.ICERC) (policy.Answer, error) {
		asked = rec
		return policy.RejectOnce, nil
	}
	res, err := f.svc.Prompt(context.Background(), person, id, "write c", agent.PromptOptions{Ask: policy.Approver{Who: person, Ask: ask}})
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Prompt = %+v, %v", res, err)
	}
	// The person's agent is asked (a write is medium risk), with the
	// model's intent and outcome; the call did not run.
	if asked.Intent != "make c" || asked.ExpectedOutcome != "c.txt exists" || asked.Command == "" {
		t.Errorf("ICERC asked = %+v", asked)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "c.txt")); !os.IsNotExist(err) {
		t.Errorf("c.txt was written: %v", err)
	}
	r := f.model.reqs[1].Messages[len(f.model.reqs[1].Messages)-1].Result
	if r == nil || !r.IsError || !strings.HasPrefix(r.Content, "Declined:") {
		t.Errorf("result = %+v", r)
	}
}

func TestAgentOfThePersonIsAskedWithoutApprover(t *testing.T) {
	// No terminal and no editor: the ask is denied, never allowed.
	f := newFixture(t, nil)
	id := f.session(t)
	f.model.turns = append(f.model.turns,
		calls(llm.ToolCall{ID: "w1", Name: "write_file", Arguments: json.RawMessage(`{"path":"c.txt","content":"x"}`)}), text("fine"))
	if _, err := f.svc.Prompt(context.Background(), person, id, "write c", agent.PromptOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "c.txt")); !os.IsNotExist(err) {
		t.Errorf("c.txt was written without approval")
	}
}

func TestICERCFullText(t *testing.T) {
	f := newFixture(t, nil)
	id := f.session(t)
	f.model.turns = append(f.model.turns,
		calls(llm.ToolCall{ID: "w1", Name: "write_file", Arguments: json.RawMessage(
			`{"path":"c.txt","content":"x","icerc_full_text":"Intent: create c\nCommand: write c.txt\nExpected Outcome: a file\nRisk: low"}`)}),
		text("done"))
	var asked tools.ICERC
	ask := func(_ context.Context, call tools.Call, rec policy.ICERC) (policy.Answer, error) {
		asked = rec
		return policy.AllowOnce, nil
	}
	if _, err := f.svc.Prompt(context.Background(), person, id, "write c", agent.PromptOptions{Ask: policy.Approver{Who: person, Ask: ask}}); err != nil {
		t.Fatal(err)
	}
	if asked.Intent != "create c" || asked.ExpectedOutcome != "a file" {
		t.Errorf("ICERC = %+v", asked)
	}
	if b, err := os.ReadFile(filepath.Join(f.ws, "c.txt")); err != nil || string(b) != "x" {
		t.Errorf("c.txt = %q, %v (icerc_full_text must not reach the tool)", b, err)
	}
}

func TestMalformedCallsStopTheTurn(t *testing.T) {
	f := newFixture(t, nil)
	id := f.session(t)
	bad := calls(llm.ToolCall{ID: "x", Name: "read_file", Arguments: json.RawMessage(`"{path: a.txt"`)})
	f.model.turns = append(f.model.turns, bad, bad, bad, text("never"))
	_, err := f.svc.Prompt(context.Background(), person, id, "read", agent.PromptOptions{})
	var te *agent.ToolExecutionError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("err = %v, want a ToolExecutionError", err)
	}
	// Each malformed call went back with the schema error first.
	r := f.model.reqs[1].Messages[len(f.model.reqs[1].Messages)-1].Result
	if r == nil || !r.IsError || !strings.Contains(r.Content, "Invalid arguments") {
		t.Errorf("result = %+v", r)
	}
	// The session survives: the next prompt works.
	f.model.turns = append(f.model.turns[:0], text("hello"))
	if res, err := f.svc.Prompt(context.Background(), person, id, "hi", agent.PromptOptions{}); err != nil || res.StopReason != "end_turn" {
		t.Errorf("next prompt = %+v, %v", res, err)
	}
}

func TestMaxSteps(t *testing.T) {
	f := newFixture(t, func(c *workspace.Config) { c.Agent.MaxSteps = 2 })
	id := f.session(t)
	read := calls(llm.ToolCall{ID: "r", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`)})
	f.model.turns = append(f.model.turns, read, read, read)
	res, err := f.svc.Prompt(context.Background(), person, id, "loop", agent.PromptOptions{})
	if err != nil || res.StopReason != "max_turn_requests" || len(f.model.reqs) != 2 {
		t.Errorf("Prompt = %+v, %v after %d requests", res, err, len(f.model.reqs))
	}
}

func TestContextOverflowPrunesThenRetriesOnce(t *testing.T) {
	f := newFixture(t, nil)
	id := f.session(t)
	for range 3 {
		f.model.turns = append(f.model.turns, text("fine"))
	}
	for i := range 3 {
		if _, err := f.svc.Prompt(context.Background(), person, id, "turn "+string(rune('a'+i)), agent.PromptOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	overflow := func(context.Context, *llm.Request, func(llm.Event)) (*llm.Response, error) {
		return nil, &llm.Error{Kind: llm.KindContextOverflow, Provider: "test", Status: 400, Message: "prompt is too long"}
	}
	f.model.turns = append(f.model.turns, overflow, text("after pruning"))
	f.model.reqs = nil
	res, err := f.svc.Prompt(context.Background(), person, id, "more", agent.PromptOptions{})
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Prompt = %+v, %v", res, err)
	}
	if len(f.model.reqs) != 2 || len(f.model.reqs[1].Messages) >= len(f.model.reqs[0].Messages) {
		t.Errorf("requests: %d, messages %d then %d", len(f.model.reqs), len(f.model.reqs[0].Messages), len(f.model.reqs[len(f.model.reqs)-1].Messages))
	}
	// A second overflow in the same prompt is an error, not a loop.
	f.model.turns = append(f.model.turns, overflow, overflow, overflow)
	_, err = f.svc.Prompt(context.Background(), person, id, "again", agent.PromptOptions{})
	var le *agent.LIALError
	if !errors.As(err, &le) || !errors.Is(err, llm.ErrContextOverflow) {
		t.Errorf("err = %v, want a LIALError wrapping ErrContextOverflow", err)
	}
}

func TestCancelMidStream(t *testing.T) {
	f := newFixture(t, nil)
	id := f.session(t)
	started := make(chan struct{})
	f.model.turns = append(f.model.turns, func(ctx context.Context, _ *llm.Request, emit func(llm.Event)) (*llm.Response, error) {
		emit(llm.Event{Kind: llm.EventText, Text: "thinking…"})
		close(started)
		<-ctx.Done()
		return nil, &llm.Error{Kind: llm.KindCanceled, Provider: "test", Message: "cancelled", Err: ctx.Err()}
	})
	done := make(chan agent.PromptResult)
	go func() {
		res, err := f.svc.Prompt(context.Background(), person, id, "slow", agent.PromptOptions{})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-started
	if ok, err := f.svc.Cancel(person, id); !ok || err != nil {
		t.Fatalf("Cancel = %v, %v", ok, err)
	}
	if res := <-done; res.StopReason != "cancelled" {
		t.Errorf("stop = %q", res.StopReason)
	}
	// The session goes on.
	if res, err := f.svc.Prompt(context.Background(), person, id, "again", agent.PromptOptions{}); err != nil || res.StopReason != "end_turn" {
		t.Errorf("after cancel: %+v, %v", res, err)
	}
}

func TestSessionsSurviveARestart(t *testing.T) {
	f := newFixture(t, nil)
	id := f.session(t)
	f.model.turns = append(f.model.turns,
		calls(llm.ToolCall{ID: "c1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`)}), text("read it"))
	if _, err := f.svc.Prompt(context.Background(), person, id, "read a", agent.PromptOptions{}); err != nil {
		t.Fatal(err)
	}
	before := f.svc.List(person)
	f.svc.Close()
	f.open(t)
	after := f.svc.List(person)
	if len(after) != 1 || after[0].ID != id || after[0].Messages != before[0].Messages || after[0].Usage != before[0].Usage || after[0].Title != "read a" {
		t.Fatalf("after restart %+v, before %+v", after, before)
	}
	_, updates, err := f.svc.Load(person, id)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, u := range updates {
		kinds = append(kinds, u.SessionUpdate)
	}
	if strings.Join(kinds, ",") != "user_message_chunk,tool_call,agent_message_chunk,usage_update" {
		t.Errorf("replay = %v", kinds)
	}
	// The resumed session goes on where it was: the model sees the old turn.
	f.model.reqs = nil
	if _, err := f.svc.Prompt(context.Background(), person, id, "and now?", agent.PromptOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := len(f.model.reqs[0].Messages); n != 5 {
		t.Errorf("the resumed request has %d messages, want 5", n)
	}
	// An app sees none of the person's sessions; deleting removes the file.
	app := access.ForApp(&access.App{ID: "planner"})
	if l := f.svc.List(app); len(l) != 0 {
		t.Errorf("app sees %v", l)
	}
	if _, err := f.svc.Prompt(context.Background(), app, id, "hi", agent.PromptOptions{}); !errors.Is(err, agent.ErrNoSession) {
		t.Errorf("app prompts the person's session: %v", err)
	}
	if err := f.svc.Delete(person, id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(f.ws, ".nexus", "sessions", id+".jsonl")); !os.IsNotExist(err) {
		t.Errorf("session file left: %v", err)
	}
}

func TestTornLastRecord(t *testing.T) {
	f := newFixture(t, nil)
	id := f.session(t)
	f.model.turns = append(f.model.turns, text("one"))
	if _, err := f.svc.Prompt(context.Background(), person, id, "hi", agent.PromptOptions{}); err != nil {
		t.Fatal(err)
	}
	f.svc.Close()
	p := filepath.Join(f.ws, ".nexus", "sessions", id+".jsonl")
	fh, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	fh.WriteString(`{"type":"message","message":{"role":"us`)
	fh.Close()
	f.open(t)
	if l := f.svc.List(person); len(l) != 1 || l[0].Messages != 2 {
		t.Errorf("after a torn write: %+v", l)
	}
}

func TestSpecialCommands(t *testing.T) {
	f := newFixture(t, nil)
	id := f.session(t)
	run := func(line string) (agent.PromptResult, string, error) {
		var rec recorder
		res, err := f.svc.Prompt(context.Background(), person, id, line, agent.PromptOptions{OnUpdate: rec.add})
		var out []string
		for _, u := range rec.kinds("command_output") {
			out = append(out, u.Content.(*agent.ContentBlock).Text)
		}
		return res, strings.Join(out, "\n"), err
	}
	if _, out, _ := run("/help"); !strings.Contains(out, "/compact") || !strings.Contains(out, "/resume") {
		t.Errorf("/help = %q", out)
	}
	if res, _, _ := run("/quit"); !res.Quit {
		t.Errorf("/quit = %+v", res)
	}
	if _, out, _ := run("/tools"); !strings.Contains(out, "read_file") || !strings.Contains(out, "write_file") {
		t.Errorf("/tools = %q", out)
	}
	if _, out, err := run("/model other"); err != nil || !strings.Contains(out, "other") {
		t.Errorf("/model other = %q, %v", out, err)
	}
	if _, _, err := run("/model nope"); err == nil || !strings.Contains(err.Error(), `no llm profile "nope"`) {
		t.Errorf("/model nope = %v", err)
	}
	if _, _, err := run("/system Be brief."); err != nil {
		t.Fatal(err)
	}
	f.model.turns = append(f.model.turns, text("a"), text("b"), text("c"))
	for _, p := range []string{"one", "two", "three"} {
		if _, _, err := run(p); err != nil {
			t.Fatal(err)
		}
	}
	// /compact: a failed summary leaves the history whole.
	before := f.svc.List(person)[0].Messages
	f.model.turns = append(f.model.turns, func(context.Context, *llm.Request, func(llm.Event)) (*llm.Response, error) {
		return nil, &llm.Error{Kind: llm.KindServer, Provider: "test", Status: 500, Message: "boom"}
	})
	if _, _, err := run("/compact"); err == nil || !strings.Contains(err.Error(), "unchanged") {
		t.Errorf("failed /compact = %v", err)
	}
	if n := f.svc.List(person)[0].Messages; n != before {
		t.Errorf("a failed /compact changed the history: %d → %d", before, n)
	}
	f.model.turns = append(f.model.turns, text("We said one, two, three."))
	if _, out, err := run("/compact"); err != nil || !strings.Contains(out, "Compacted") {
		t.Errorf("/compact = %q, %v", out, err)
	}
	if n := f.svc.List(person)[0].Messages; n >= before {
		t.Errorf("/compact kept %d messages of %d", n, before)
	}
	if _, out, _ := run("/cost"); !strings.Contains(out, "requests") {
		t.Errorf("/cost = %q", out)
	}
	if _, out, _ := run("/sessions"); !strings.Contains(out, id) {
		t.Errorf("/sessions = %q", out)
	}
	if res, _, err := run("/resume " + id); err != nil || res.Resume != id {
		t.Errorf("/resume = %+v, %v", res, err)
	}
	if _, _, err := run("/clear"); err != nil {
		t.Fatal(err)
	}
	if n := f.svc.List(person)[0].Messages; n != 1 { // the system message stays
		t.Errorf("after /clear: %d messages", n)
	}
	if _, _, err := run("/nope"); err == nil || !strings.Contains(err.Error(), "/help") {
		t.Errorf("/nope = %v", err)
	}
}

func TestNoModelConfigured(t *testing.T) {
	f := newFixture(t, func(c *workspace.Config) { c.LLM = workspace.LLMConfig{} })
	_, err := f.svc.New(context.Background(), agent.NewSession{Owner: person})
	var ce *agent.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "llm:") {
		t.Errorf("err = %v", err)
	}
}

func TestMissingKeyNamesTheVariable(t *testing.T) {
	ws := t.TempDir()
	cfg := workspace.DefaultConfig()
	cfg.LLM = workspace.LLMConfig{Default: "o", Profiles: map[string]workspace.LLMProfile{"o": {Provider: "openai", Model: "gpt-5", APIKeyEnv: "NEXUS_TEST_NO_SUCH_KEY"}}}
	m, _ := tools.NewManager(tools.Options{})
	defer m.Close()
	svc, err := agent.NewService(agent.Options{Layout: workspace.NewLayout(ws), Config: cfg, Tools: m,
		NewProvider: func(p llm.Profile) (llm.Provider, error) {
			return llm.New(p, llm.Options{Getenv: func(string) (string, bool) { return "", false }})
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	_, err = svc.New(context.Background(), agent.NewSession{Owner: person})
	var le *agent.LIALInitError
	if !errors.As(err, &le) || !errors.Is(err, llm.ErrMissingKey) || !strings.Contains(err.Error(), "NEXUS_TEST_NO_SUCH_KEY") {
		t.Errorf("err = %v", err)
	}
}

func TestErrorCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want agent.Code
	}{
		{fmt.Errorf("%w: %q", agent.ErrNoSession, "x"), agent.CodeNotFound},
		{agent.ErrBusy, agent.CodeFailedPrecondition},
		{&agent.ConfigError{Err: errors.New("no profile")}, agent.CodeFailedPrecondition},
		{&agent.LIALInitError{Err: &llm.Error{Kind: llm.KindMissingKey}}, agent.CodeFailedPrecondition},
		{&agent.LIALError{Err: &llm.Error{Kind: llm.KindAuth}}, agent.CodeFailedPrecondition},
		{&agent.LIALError{Err: &llm.Error{Kind: llm.KindRateLimit}}, agent.CodeUnavailable},
		{agent.ErrClosed, agent.CodeUnavailable},
		{&agent.ToolExecutionError{Err: errors.New("malformed")}, agent.CodeAborted},
		{context.Canceled, agent.CodeCanceled},
		{errors.New("boom"), agent.CodeInternal},
	} {
		if got := agent.ErrorCode(tc.err); got != tc.want {
			t.Errorf("ErrorCode(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
	// A misused special command is the caller's mistake.
	f := newFixture(t, nil)
	id := f.session(t)
	_, err := f.svc.Prompt(context.Background(), person, id, "/nope", agent.PromptOptions{})
	if agent.ErrorCode(err) != agent.CodeInvalidArgument {
		t.Errorf("/nope: %v is %s", err, agent.ErrorCode(err))
	}
}

// TestProfileKey: messages about a profile name the keys config.yaml has:
// llm.X for the profile written directly under llm, llm.profiles.NAME.X
// for a named one.
func TestProfileKey(t *testing.T) {
	for _, tc := range []struct {
		yaml, profile, want string
	}{
		{"llm:\n  provider: openai\n  model: m\n", "default", "llm"},
		{"llm:\n  profiles:\n    small: {provider: openai, model: m}\n", "small", "llm.profiles.small"},
	} {
		cfg, err := workspace.ParseConfig("config.yaml", []byte(tc.yaml), func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		if got := agent.Profile(tc.profile, cfg.LLM.Profiles[tc.profile]).Key(); got != tc.want {
			t.Errorf("%q: key %q, want %q", tc.yaml, got, tc.want)
		}
	}
}

// TestCostKey: /cost without prices names the key to set as the file has
// it: llm.prices for the profile written directly under llm.
func TestCostKey(t *testing.T) {
	f := newFixture(t, func(c *workspace.Config) {
		cfg, err := workspace.ParseConfig("config.yaml", []byte("llm:\n  provider: openai-compatible\n  baseURL: http://127.0.0.1:1/v1\n  model: m\n"),
			func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		c.LLM = cfg.LLM
	})
	id := f.session(t)
	var rec recorder
	if _, err := f.svc.Prompt(context.Background(), person, id, "/cost", agent.PromptOptions{OnUpdate: rec.add}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, u := range rec.kinds("command_output") {
		out = append(out, u.Content.(*agent.ContentBlock).Text)
	}
	if len(out) != 1 || !strings.Contains(out[0], "no prices for this profile: llm.prices)") {
		t.Errorf("/cost = %q, want it to name llm.prices", out)
	}
}

// TestCallsOfToolsNotOffered: agent.tools offers read_file and
// list_directory; calls of any other name (write_file, which the person
// would allow; it in another case; with a server's prefix; a name of no
// tool) never reach the ToolManager. Each goes back to the model as
// unknown, naming the tools it has, and the doors see it failed.
func TestCallsOfToolsNotOffered(t *testing.T) {
	f := newFixture(t, func(c *workspace.Config) { c.Agent.Tools = []string{"read_file", "list_directory"} })
	id := f.session(t)
	names := []string{"write_file", "Write_File", "READ_FILE", "fs__read_file", "fs/write_file", "no_such_tool"}
	var cs []llm.ToolCall
	for i, n := range names {
		cs = append(cs, llm.ToolCall{ID: fmt.Sprint("c", i), Name: n, Arguments: json.RawMessage(`{"path":"c.txt","content":"x"}`)})
	}
	f.model.turns = append(f.model.turns, calls(cs...), text("ok"))
	asked := 0
	ask := func(context.Context, tools.Call, policy.ICERC) (policy.Answer, error) {
		asked++
		return policy.AllowOnce, nil
	}
	var rec recorder
	res, err := f.svc.Prompt(context.Background(), person, id, "write c", agent.PromptOptions{Ask: policy.Approver{Who: person, Ask: ask}, OnUpdate: rec.add})
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Prompt = %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "c.txt")); !os.IsNotExist(err) {
		t.Errorf("c.txt was written by a tool that was not offered")
	}
	if asked != 0 {
		t.Errorf("the person was asked %d times about tools that were not offered", asked)
	}
	if got := f.m.Calls(tools.CallFilter{}); len(got) != 0 {
		t.Errorf("the ToolManager saw calls: %+v", got)
	}
	var results []*llm.ToolResult
	for _, m := range f.model.reqs[1].Messages {
		if m.Result != nil {
			results = append(results, m.Result)
		}
	}
	if len(results) != len(names) {
		t.Fatalf("%d results went back, want %d", len(results), len(names))
	}
	for i, r := range results {
		if !r.IsError || !strings.Contains(r.Content, "not offered") || !strings.Contains(r.Content, "list_directory, read_file.") ||
			!strings.Contains(r.Content, names[i]) {
			t.Errorf("result of %s = %+v", names[i], r)
		}
	}
	starts := rec.kinds("tool_call")
	if len(starts) != len(names) {
		t.Fatalf("tool_call updates = %+v", starts)
	}
	for i, u := range starts {
		if u.Status != "failed" || !strings.Contains(u.Title, "not offered") || !strings.Contains(u.Title, names[i]) || u.ToolName != "" {
			t.Errorf("update of %s = %+v", names[i], u)
		}
	}
}

// TestAnswerTooLarge: the request carries agent.maxAnswerSize and
// agent.maxToolCallSize; an answer over them ends the prompt with the
// adapter's error, nothing of it is kept, and the next prompt works.
func TestAnswerTooLarge(t *testing.T) {
	f := newFixture(t, func(c *workspace.Config) { c.Agent.MaxAnswerSize, c.Agent.MaxToolCallSize = 2048, 4096 })
	id := f.session(t)
	f.model.turns = append(f.model.turns, func(_ context.Context, req *llm.Request, emit func(llm.Event)) (*llm.Response, error) {
		emit(llm.Event{Kind: llm.EventText, Text: strings.Repeat("x", req.Limits.Answer)})
		return nil, &llm.Error{Kind: llm.KindAnswerTooLarge, Provider: "test", Message: "over agent.maxAnswerSize"}
	}, text("short"))
	_, err := f.svc.Prompt(context.Background(), person, id, "say a lot", agent.PromptOptions{})
	if !errors.Is(err, llm.ErrAnswerTooLarge) || !strings.Contains(err.Error(), "agent.maxAnswerSize") {
		t.Fatalf("Prompt = %v, want the answer_too_large error", err)
	}
	if l := f.model.reqs[0].Limits; l.Answer != 2048 || l.ToolCall != 4096 {
		t.Errorf("the request's limits = %+v", l)
	}
	res, err := f.svc.Prompt(context.Background(), person, id, "say less", agent.PromptOptions{})
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("the next prompt = %+v, %v", res, err)
	}
	for _, m := range f.model.reqs[1].Messages {
		if m.Role == llm.RoleAssistant {
			t.Errorf("the failed answer is in the history: %.40q", m.Text)
		}
	}
}

// The calls of a prompt carry the session and the turn, the number of the
// person's prompt in the session, which a resumed session goes on
// counting (special commands are no turn).
func TestCallsCarrySessionAndTurn(t *testing.T) {
	f := newFixture(t, nil)
	id := f.session(t)
	read := func(callID string) func(context.Context, *llm.Request, func(llm.Event)) (*llm.Response, error) {
		return calls(llm.ToolCall{ID: callID, Name: "read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`)})
	}
	prompt := func(text string) []agent.Update {
		t.Helper()
		var rec recorder
		if _, err := f.svc.Prompt(context.Background(), person, id, text, agent.PromptOptions{OnUpdate: rec.add}); err != nil {
			t.Fatal(err)
		}
		return rec.kinds("tool_call")
	}
	turnOf := func(u []agent.Update) string {
		t.Helper()
		if len(u) != 1 {
			t.Fatalf("tool calls %+v, want one", u)
		}
		c, ok := f.m.Get(u[0].ToolCallID)
		if !ok || c.Session != id {
			t.Fatalf("call %+v: session %q, want %q", c, c.Session, id)
		}
		return c.Turn
	}
	f.model.turns = append(f.model.turns, read("c1"), text("one"))
	if got := turnOf(prompt("first")); got != "1" {
		t.Errorf("first prompt's turn %q, want 1", got)
	}
	prompt("/help")
	f.model.turns = append(f.model.turns, read("c2"), text("two"))
	if got := turnOf(prompt("second")); got != "2" {
		t.Errorf("second prompt's turn %q, want 2", got)
	}
	f.svc.Close()
	f.open(t)
	prompt("/clear")
	f.model.turns = append(f.model.turns, read("c3"), text("three"))
	if got := turnOf(prompt("third")); got != "3" {
		t.Errorf("after a restart and /clear, the third prompt's turn %q, want 3", got)
	}
}
