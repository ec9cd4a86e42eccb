package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/agent"
	"github.com/nexuscocreate/nexus/llm"
	"github.com/nexuscocreate/nexus/workspace"
)

const summaryAsk = "Summarise our conversation so far"

// isSummary reports whether req asks the model for a compaction's summary.
func isSummary(req *llm.Request) bool {
	m := req.Messages
	return len(m) > 0 && strings.HasPrefix(m[len(m)-1].Text, summaryAsk)
}

// compactFixture is a session of a workspace with an AGENTS.md whose
// profile's window puts context.autoCompact's limit about room tokens
// above the first request; the model answers summary to a summary
// request and "ok" to the others.
func compactFixture(t *testing.T, room int, summary func(context.Context, *llm.Request, func(llm.Event)) (*llm.Response, error)) (*fixture, string, int) {
	t.Helper()
	f := newFixture(t, func(c *workspace.Config) { c.Agent.Tools = []string{"read_file"} })
	if err := os.WriteFile(filepath.Join(f.ws, "AGENTS.md"), []byte("RULE-X: answer in French."), 0o644); err != nil {
		t.Fatal(err)
	}
	id := f.session(t)
	if _, err := f.svc.Prompt(context.Background(), person, id, "hello", agent.PromptOptions{}); err != nil {
		t.Fatal(err)
	}
	limit := agent.RequestTokens(f.model.reqs[0]) + room
	f.svc.Close()
	p := f.cfg.LLM.Profiles["test"]
	p.ContextWindow = limit * 2
	f.cfg.LLM.Profiles["test"] = p
	f.cfg.Context.AutoCompact = 0.5
	f.open(t)
	for range 40 {
		f.model.turns = append(f.model.turns, func(ctx context.Context, req *llm.Request, emit func(llm.Event)) (*llm.Response, error) {
			if isSummary(req) {
				return summary(ctx, req, emit)
			}
			return text("ok")(ctx, req, emit)
		})
	}
	return f, id, limit
}

// promptUntilCompacted sends prompts of about 100 tokens until one shows
// a compaction, and returns that update.
func promptUntilCompacted(t *testing.T, f *fixture, id string) agent.Update {
	t.Helper()
	for i := range 12 {
		rec := &recorder{}
		res, err := f.svc.Prompt(context.Background(), person, id, strings.Repeat("word ", 80)+string(rune('a'+i)), agent.PromptOptions{OnUpdate: rec.add})
		if err != nil || res.StopReason != agent.StopEndTurn {
			t.Fatalf("prompt %d: %+v, %v", i, res, err)
		}
		for _, u := range rec.kinds("command_output") {
			if u.Compaction != nil {
				t.Logf("prompt %d: %s", i, u.Content.(*agent.ContentBlock).Text)
				return u
			}
		}
	}
	t.Fatal("no compaction in 12 prompts")
	return agent.Update{}
}

// TestAutoCompaction: the request that would pass context.autoCompact's
// share of the window has its older turns summarised first, with the
// request /compact sends; the request then sent is under the limit, keeps
// the system prompt with AGENTS.md as it was and the person's prompt
// verbatim, and a resumed session starts from the summary.
func TestAutoCompaction(t *testing.T) {
	f, id, limit := compactFixture(t, 400, text("SUMMARY"))
	u := promptUntilCompacted(t, f, id)
	c := u.Compaction
	if c.Trigger != agent.CompactAuto || c.Messages < 1 || c.Dropped != 0 || c.Limit != limit || c.TokensBefore <= limit || c.TokensAfter > limit {
		t.Errorf("compaction %+v, limit %d", *c, limit)
	}
	if b, _ := u.Content.(*agent.ContentBlock); b == nil || !strings.HasPrefix(b.Text, "Compacted ") {
		t.Errorf("compaction line %+v", u.Content)
	}
	reqs := f.model.reqs
	n := len(reqs)
	summaryReq, next := reqs[n-2], reqs[n-1]
	if !isSummary(summaryReq) || len(summaryReq.Tools) != len(next.Tools) || len(next.Tools) == 0 {
		t.Fatalf("the request before the last is not a summary request with the step's tools (%d, %d): %+v",
			len(summaryReq.Tools), len(next.Tools), summaryReq.Messages[len(summaryReq.Messages)-1])
	}
	if size := agent.RequestTokens(next); size > limit || size != c.TokensAfter {
		t.Errorf("the request after the compaction: ~%d tokens, want %d, at most %d", size, c.TokensAfter, limit)
	}
	if next.System != reqs[0].System || !strings.Contains(next.System, "RULE-X") {
		t.Errorf("the system prompt changed, or lost AGENTS.md:\n%s", next.System)
	}
	if got := next.Messages[0].Text; got != "[Summary of the earlier conversation]\nSUMMARY" {
		t.Errorf("first message %q", got)
	}
	if last := next.Messages[len(next.Messages)-1]; last.Role != agent.RoleUser || !strings.HasPrefix(last.Text, "word word") {
		t.Errorf("the person's prompt is not kept verbatim: %+v", last)
	}
	for i := 1; i < n; i++ {
		if isSummary(reqs[i]) && isSummary(reqs[i-1]) {
			t.Errorf("two summary requests in a row (%d, %d)", i-1, i)
		}
	}
	// Saved: the session, loaded again, starts from the summary.
	f.svc.Close()
	f.open(t)
	if _, err := f.svc.Prompt(context.Background(), person, id, "after", agent.PromptOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := f.model.reqs[len(f.model.reqs)-1].Messages[0].Text; !strings.HasPrefix(got, "[Summary of the earlier conversation]") {
		t.Errorf("after a reload the first message is %q", got)
	}
}

// TestAutoCompactionFallsBackToPruning: a summary that fails, or is no
// smaller than what it would replace, prunes the oldest turns instead; the
// turn completes, and the line says why.
func TestAutoCompactionFallsBackToPruning(t *testing.T) {
	for name, summary := range map[string]func(context.Context, *llm.Request, func(llm.Event)) (*llm.Response, error){
		"model error": func(context.Context, *llm.Request, func(llm.Event)) (*llm.Response, error) {
			return nil, &llm.Error{Kind: llm.KindServer, Provider: "test", Status: 500, Message: "boom"}
		},
		"empty":       text(" "),
		"not smaller": text(strings.Repeat("long ", 2000)),
	} {
		t.Run(name, func(t *testing.T) {
			f, id, limit := compactFixture(t, 400, summary)
			u := promptUntilCompacted(t, f, id)
			c := u.Compaction
			if c.Messages != 0 || c.Dropped < 1 || c.Error == "" || c.TokensAfter > limit {
				t.Errorf("compaction %+v, limit %d", *c, limit)
			}
			if b, _ := u.Content.(*agent.ContentBlock); b == nil || !strings.HasPrefix(b.Text, "The summary failed (") {
				t.Errorf("line %+v", u.Content)
			}
			last := f.model.reqs[len(f.model.reqs)-1]
			if isSummary(last) || agent.RequestTokens(last) > limit {
				t.Errorf("the request after the fallback: ~%d tokens (limit %d)", agent.RequestTokens(last), limit)
			}
			// The pruning is saved too.
			f.svc.Close()
			f.open(t)
			info, _, err := f.svc.Load(person, id)
			if err != nil {
				t.Fatal(err)
			}
			if want := len(last.Messages) + 1; info.Messages != want { // and the answer
				t.Errorf("after a reload the history holds %d messages, want %d", info.Messages, want)
			}
		})
	}
}

// TestAutoCompactionOff: context.autoCompact 0 sends the request as it is.
func TestAutoCompactionOff(t *testing.T) {
	f, id, _ := compactFixture(t, 100, func(context.Context, *llm.Request, func(llm.Event)) (*llm.Response, error) {
		return nil, errors.New("no summary may be asked")
	})
	f.cfg.Context.AutoCompact = 0
	for i := range 4 {
		rec := &recorder{}
		if _, err := f.svc.Prompt(context.Background(), person, id, strings.Repeat("word ", 80), agent.PromptOptions{OnUpdate: rec.add}); err != nil {
			t.Fatalf("prompt %d: %v", i, err)
		}
		for _, u := range rec.kinds("command_output") {
			t.Errorf("prompt %d: %+v", i, u)
		}
	}
}

// TestContextSaysAutoCompaction: /context says when requests are compacted.
func TestContextSaysAutoCompaction(t *testing.T) {
	f, id, _ := compactFixture(t, 100, text("SUMMARY"))
	contextOut := func() string {
		rec := &recorder{}
		if _, err := f.svc.Prompt(context.Background(), person, id, "/context", agent.PromptOptions{OnUpdate: rec.add}); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, u := range rec.kinds("command_output") {
			b.WriteString(u.Content.(*agent.ContentBlock).Text)
		}
		return b.String()
	}
	if out := contextOut(); !strings.Contains(out, "Automatic compaction: before a request over ~") || !strings.Contains(out, "(context.autoCompact 0.5 of the window of ") {
		t.Errorf("/context:\n%s", out)
	}
	f.cfg.Context.AutoCompact = 0
	if out := contextOut(); !strings.Contains(out, "Automatic compaction: off (context.autoCompact is 0).") {
		t.Errorf("/context with autoCompact 0:\n%s", out)
	}
}

// TestAutoCompactionOncePerTurn: a compaction that cannot bring the
// request under the limit (the person's prompt alone is over it) is tried
// once; the turn's later steps only prune (the third would have had the
// prompt and the first call to summarise), and the turn completes.
func TestAutoCompactionOncePerTurn(t *testing.T) {
	f, id, limit := compactFixture(t, 30, text("SUMMARY"))
	f.model.turns = nil
	summaries, steps := 0, 0
	for range 10 {
		f.model.turns = append(f.model.turns, func(ctx context.Context, req *llm.Request, emit func(llm.Event)) (*llm.Response, error) {
			if isSummary(req) {
				summaries++
				return text("SUMMARY")(ctx, req, emit)
			}
			if steps++; steps <= 2 {
				return calls(llm.ToolCall{ID: fmt.Sprint("r", steps), Name: "read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`)})(ctx, req, emit)
			}
			return text("ok")(ctx, req, emit)
		})
	}
	rec := &recorder{}
	res, err := f.svc.Prompt(context.Background(), person, id, strings.Repeat("word ", 80), agent.PromptOptions{OnUpdate: rec.add})
	if err != nil || res.StopReason != agent.StopEndTurn {
		t.Fatalf("prompt: %+v, %v", res, err)
	}
	if summaries != 1 || steps != 3 {
		t.Errorf("%d summary requests and %d steps, want 1 and 3", summaries, steps)
	}
	var shown []agent.Compaction
	for _, u := range rec.kinds("command_output") {
		if u.Compaction != nil {
			shown = append(shown, *u.Compaction)
		}
	}
	if len(shown) != 1 || shown[0].TokensAfter <= limit {
		t.Errorf("compactions shown: %+v (limit %d), want one that could not get under it", shown, limit)
	}
}
