package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// asking is a tool whose handler asks the person through the manager, as
// the McpHub does for an MCP server's question.
func askingTool(m **Manager) Tool {
	return Tool{
		Definition: Definition{Name: "asking", Kind: KindOther, Risk: RiskLow},
		Timeout:    300 * time.Millisecond,
		Handler: func(ctx context.Context, inv *Invocation, _ json.RawMessage) (json.RawMessage, error) {
			call, ask := (*m).ElicitorFor(inv.CallID)
			if ask == nil {
				return json.RawMessage(`"no one"`), nil
			}
			resume := (*m).AwaitPerson(inv.CallID)
			defer resume()
			res, err := ask(ctx, &Elicitation{ID: "q", Call: &call, Mode: ElicitForm, Message: "name?"})
			if err != nil {
				return nil, err
			}
			return json.Marshal(res)
		},
	}
}

func TestElicitorRouting(t *testing.T) {
	var m *Manager
	m, _ = newTestManager(t, allowAll, askingTool(&m))

	// No one attached: the handler hears so.
	c := m.Execute(t.Context(), ExecuteRequest{ToolName: "asking"})
	if string(c.ResultJSON) != `"no one"` {
		t.Fatalf("result %s", c.ResultJSON)
	}

	// The manager's elicitor (the editor), which takes longer than the
	// call's timeout: the person's time does not count.
	var asked *Elicitation
	m.SetElicitor(func(_ context.Context, q *Elicitation) (ElicitResult, error) {
		asked = q
		time.Sleep(600 * time.Millisecond)
		return ElicitResult{Action: ElicitDecline}, nil
	})
	c = m.Execute(t.Context(), ExecuteRequest{ToolName: "asking"})
	if c.Status != StatusCompleted || !strings.Contains(string(c.ResultJSON), "decline") {
		t.Fatalf("call %+v %s", c.Error, c.ResultJSON)
	}
	if asked.Call == nil || asked.Call.ID != c.ID || asked.Call.Status != StatusRunning {
		t.Fatalf("the question's call %+v, want the running call %s", asked.Call, c.ID)
	}

	// The call's own elicitor wins.
	c = m.Execute(t.Context(), ExecuteRequest{ToolName: "asking", Elicit: func(context.Context, *Elicitation) (ElicitResult, error) {
		return ElicitResult{Action: ElicitAccept, Content: map[string]any{"name": "own"}}, nil
	}})
	if !strings.Contains(string(c.ResultJSON), `"own"`) {
		t.Fatalf("result %s", c.ResultJSON)
	}

	// Once resumed, the time left runs out as before.
	slow := Tool{Definition: Definition{Name: "slow", Kind: KindOther, Risk: RiskLow}, Timeout: 300 * time.Millisecond,
		Handler: func(ctx context.Context, inv *Invocation, _ json.RawMessage) (json.RawMessage, error) {
			m.AwaitPerson(inv.CallID)()
			<-ctx.Done()
			return nil, ctx.Err()
		}}
	if err := m.Register(slow); err != nil {
		t.Fatal(err)
	}
	if c = m.Execute(t.Context(), ExecuteRequest{ToolName: "slow"}); c.Error == nil || c.Error.Code != CodeTimeout {
		t.Fatalf("call %+v", c.Error)
	}
}

func TestOwnTool(t *testing.T) {
	m, _ := newTestManager(t, allowAll)
	own := &Tool{Definition: Definition{Name: "own", ServerName: "srv", Kind: KindOther, Risk: RiskMedium,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)},
		Handler: func(context.Context, *Invocation, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`1`), nil
		}}
	c := m.Execute(t.Context(), ExecuteRequest{Tool: own, Arguments: json.RawMessage(`{"n":2}`)})
	if c.Status != StatusCompleted || c.ToolName != "own" || c.ServerName != "srv" {
		t.Fatalf("call %+v", c)
	}
	// Validated like any tool.
	if c = m.Execute(t.Context(), ExecuteRequest{Tool: own, Arguments: json.RawMessage(`{}`)}); c.Error == nil || c.Error.Code != CodeInvalidArguments {
		t.Fatalf("call %+v", c.Error)
	}
	// No one can call it by name: it is not in the registry.
	if _, ok := m.Lookup("own", "srv"); ok {
		t.Fatal("an own tool was registered")
	}
	if c = m.Execute(t.Context(), ExecuteRequest{ToolName: "own", ServerName: "srv", Arguments: json.RawMessage(`{"n":2}`)}); c.Error == nil || c.Error.Code != CodeUnknownTool {
		t.Fatalf("call by name %+v", c.Error)
	}
}

func TestElicitationCheck(t *testing.T) {
	q := &Elicitation{Mode: ElicitForm, Schema: json.RawMessage(`{"type":"object","properties":{` +
		`"name":{"type":"string","default":"Ann"},"n":{"type":"integer","minimum":1,"default":2},"ok":{"type":"boolean"}},"required":["ok","name"]}`)}
	r, err := q.Check(ElicitResult{Action: ElicitAccept, Content: map[string]any{"ok": true}})
	if err != nil || r.Content["name"] != "Ann" || r.Content["n"] != 2.0 {
		t.Fatalf("%+v %v: want the defaults filled in, a required one too", r, err)
	}
	for _, bad := range []map[string]any{{"name": "x"}, {"ok": "yes"}, {"ok": true, "n": 0}} {
		if _, err := q.Check(ElicitResult{Action: ElicitAccept, Content: bad}); err == nil {
			t.Errorf("content %v passed", bad)
		}
	}
	if r, err := q.Check(ElicitResult{Action: ElicitDecline, Content: map[string]any{"x": 1}}); err != nil || r.Content != nil {
		t.Fatalf("decline %+v %v: want no content", r, err)
	}
	if _, err := q.Check(ElicitResult{Action: "maybe"}); err == nil {
		t.Fatal("an unknown action passed")
	}
	u := &Elicitation{Mode: ElicitURL, URL: "https://x"}
	if _, err := u.Check(ElicitResult{Action: ElicitAccept, Content: map[string]any{"a": 1}}); err == nil {
		t.Fatal("content in an answer to a URL question passed")
	}
}
