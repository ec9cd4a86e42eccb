package integration

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// compactingSession is an editor's session of a workspace with an
// AGENTS.md, whose scripted model has a window of 4,000 tokens and
// context.autoCompact 0.5: a request over 2,000 tokens is compacted first.
func compactingSession(t *testing.T, model *scriptedModel) (*editor, string) {
	t.Helper()
	cfg := strings.Replace(model.config(), "  model: scripted\n", "  model: scripted\n  contextWindow: 4000\n", 1) +
		"  tools: [read_file]\ncontext:\n  autoCompact: 0.5\n"
	ws := newWorkspace(t, cfg)
	writeFiles(t, ws, map[string]string{"AGENTS.md": "ROOT-RULE: answer in French."})
	e := startEditor(t, ws)
	e.initialize(os.Getpid())
	return e, newSession(t, e)
}

// promptUntilSummary sends prompts of about 400 tokens until the model has
// been asked for a summary, and returns the index of that request.
func promptUntilSummary(t *testing.T, e *editor, model *scriptedModel, id string) int {
	t.Helper()
	for i := range 10 {
		var res promptResult
		e.mustCall("nexus/agent/prompt", map[string]any{"sessionId": id, "prompt": strings.Repeat("Tell me more. ", 115) + string(rune('a'+i))}, &res)
		if res.StopReason != "end_turn" {
			t.Fatalf("prompt %d: stop reason %q", i, res.StopReason)
		}
		for j, b := range model.requestBodies() {
			if isSummaryRequest(b) {
				return j
			}
		}
	}
	t.Fatal("no summary was asked in 10 prompts")
	return 0
}

// TestAutoCompaction: through nexusd and the editor protocol, against the
// scripted model: the request that would pass context.autoCompact's share
// of the window is preceded by a summary request, the one /compact sends;
// the request then sent is smaller than the one before the compaction,
// carries the summary and the same system prompt with AGENTS.md; the chat
// gets the compaction's line and what it did.
func TestAutoCompaction(t *testing.T) {
	model := startScriptedModel(t)
	e, id := compactingSession(t, model)
	i := promptUntilSummary(t, e, model, id)
	bodies := model.requestBodies()
	if i < 2 || i+1 >= len(bodies) {
		t.Fatalf("the summary is request %d of %d", i, len(bodies))
	}
	before, summary, after := bodies[i-1], bodies[i], bodies[i+1]
	if len(after) >= len(before) {
		t.Errorf("the request after the compaction has %d bytes, the one before it %d", len(after), len(before))
	}
	first, _ := systemOf(t, bodies[0])
	system, rest := systemOf(t, after)
	if system != first || !strings.Contains(system, "ROOT-RULE: answer in French.") || !strings.Contains(system, "You are the Nexus agent") {
		t.Errorf("the system prompt after the compaction:\n%s\nbefore:\n%s", system, first)
	}
	if !strings.HasPrefix(rest, "[Summary of the earlier conversation]\ndone\n") || strings.Count(rest, "Tell me more.") != 115 {
		t.Errorf("the messages after the compaction: the summary, then the last prompt alone, want; got\n%.400s", rest)
	}
	if s, _ := systemOf(t, summary); s != first {
		t.Errorf("the summary request's system prompt:\n%s", s)
	}
	// With the tools: Anthropic refuses a history of tool calls without.
	if !strings.Contains(string(summary), `"name":"read_file"`) {
		t.Errorf("the summary request offers no tools: %.300s", summary)
	}
	var c struct {
		Trigger      string `json:"trigger"`
		Messages     int    `json:"messages"`
		TokensBefore int    `json:"tokensBefore"`
		TokensAfter  int    `json:"tokensAfter"`
		Limit        int    `json:"limit"`
	}
	e.await("the compaction's line and what it did", 30*time.Second, func() bool {
		for _, n := range e.notes {
			var u struct {
				SessionID string `json:"sessionId"`
				Update    struct {
					SessionUpdate string          `json:"sessionUpdate"`
					Compaction    json.RawMessage `json:"compaction"`
					Content       struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"update"`
			}
			if n.method == "nexus/agent/update" && json.Unmarshal(n.params, &u) == nil && u.SessionID == id &&
				u.Update.SessionUpdate == "command_output" && strings.HasPrefix(u.Update.Content.Text, "Compacted ") {
				return json.Unmarshal(u.Update.Compaction, &c) == nil
			}
		}
		return false
	})
	if c.Trigger != "auto" || c.Messages < 2 || c.Limit != 2000 || c.TokensBefore <= 2000 || c.TokensAfter > 2000 {
		t.Errorf("compaction %+v", c)
	}

	// /compact asks with the same request, by the same code.
	var res promptResult
	e.mustCall("nexus/agent/prompt", map[string]any{"sessionId": id, "prompt": "One more."}, &res)
	e.mustCall("nexus/agent/prompt", map[string]any{"sessionId": id, "prompt": "/compact"}, &res)
	bodies = model.requestBodies()
	_, auto := systemOf(t, summary)
	_, manual := systemOf(t, bodies[len(bodies)-1])
	if !isSummaryRequest(bodies[len(bodies)-1]) || lastLine(auto) != lastLine(manual) {
		t.Errorf("/compact's summary request ends %q, the automatic one %q", lastLine(manual), lastLine(auto))
	}
}

// TestAutoCompactionFallsBackToPruning: a summary the model refuses
// prunes the oldest turns instead; the turn completes under the limit.
func TestAutoCompactionFallsBackToPruning(t *testing.T) {
	model := startScriptedModel(t)
	model.refuseSummaries = true
	e, id := compactingSession(t, model)
	i := promptUntilSummary(t, e, model, id)
	bodies := model.requestBodies()
	if i+1 >= len(bodies) {
		t.Fatalf("no request after the failed summary (%d of %d)", i, len(bodies))
	}
	_, all := systemOf(t, bodies[i])
	_, rest := systemOf(t, bodies[i+1])
	if strings.Contains(rest, "[Summary") || strings.Count(rest, "Tell me more. ") >= strings.Count(all, "Tell me more. ") {
		t.Errorf("the messages after the pruning: %d prompts' words of %d, want fewer than the summary request had:\n%.400s",
			strings.Count(rest, "Tell me more. "), strings.Count(all, "Tell me more. "), rest)
	}
	e.await("the fallback's line", 10*time.Second, func() bool {
		out := commandText(e, id)
		return strings.Contains(out, "The summary failed (") && strings.Contains(out, "no summary today") && strings.Contains(out, "instead: ")
	})
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndex(s, "\n")+1:]
}
