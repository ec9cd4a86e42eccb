package tools

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// scriptedHooks answer as they are told and record what they saw.
type scriptedHooks struct {
	ask   string
	deny  *Error
	notes []string

	mu     sync.Mutex
	before []HookCall
	after  []HookCall
}

func (h *scriptedHooks) Before(_ context.Context, c *HookCall) (string, *Error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.before = append(h.before, *c)
	return h.ask, h.deny
}

func (h *scriptedHooks) After(_ context.Context, c *HookCall) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.after = append(h.after, *c)
	return h.notes
}

func newHookedManager(t *testing.T, h Hooks, gate Gate) *Manager {
	t.Helper()
	m, err := NewManager(Options{Gate: gate, Hooks: h})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Register(echoTool); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func TestHooksAroundACall(t *testing.T) {
	h := &scriptedHooks{notes: []string{"checked"}}
	var gated []string
	m := newHookedManager(t, h, func(_ context.Context, gr *GateRequest, _ func(ICERC)) error {
		gated = append(gated, gr.HookAsk)
		return nil
	})
	c := m.Execute(context.Background(), ExecuteRequest{ToolName: "echo", Arguments: json.RawMessage(`{"text":"hi"}`), Session: "s", Turn: "t"})
	if c.Error != nil {
		t.Fatalf("call failed: %+v", c.Error)
	}
	if len(h.before) != 1 || h.before[0].Call.ToolName != "echo" || h.before[0].Call.Session != "s" || string(h.before[0].Args) != `{"text":"hi"}` {
		t.Fatalf("before saw %+v", h.before)
	}
	if len(h.after) != 1 || !strings.Contains(string(h.after[0].Result), `"text":"hi"`) || h.after[0].Error != nil {
		t.Fatalf("after saw %+v", h.after)
	}
	if len(gated) != 1 || gated[0] != "" {
		t.Fatalf("the gate saw HookAsk %q", gated)
	}
	if len(c.Notes) != 1 || c.Notes[0] != "checked" {
		t.Fatalf("notes %q, want the after hook's", c.Notes)
	}
	if kept, _ := m.Get(c.ID); len(kept.Notes) != 1 {
		t.Fatalf("the kept call has notes %q", kept.Notes)
	}
}

func TestHookDeniesBeforeTheGate(t *testing.T) {
	h := &scriptedHooks{deny: Errorf(CodePermissionDenied, "no writes on Fridays")}
	m := newHookedManager(t, h, func(context.Context, *GateRequest, func(ICERC)) error {
		t.Error("the gate was asked about a call a hook denied")
		return nil
	})
	c := m.Execute(context.Background(), ExecuteRequest{ToolName: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)})
	if c.Error == nil || c.Error.Code != CodePermissionDenied || c.Error.Message != "no writes on Fridays" {
		t.Fatalf("call ended %+v, want the hook's denial", c.Error)
	}
	if len(h.after) != 0 {
		t.Fatalf("after hooks ran for a call that did not: %+v", h.after)
	}
}

func TestHookAskReachesTheGate(t *testing.T) {
	h := &scriptedHooks{ask: "a write to notes"}
	var asked string
	m := newHookedManager(t, h, func(_ context.Context, gr *GateRequest, _ func(ICERC)) error {
		asked = gr.HookAsk
		return Errorf(CodePermissionDenied, "rejected by the person")
	})
	c := m.Execute(context.Background(), ExecuteRequest{ToolName: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)})
	if asked != "a write to notes" || c.Error == nil || c.Error.Message != "rejected by the person" {
		t.Fatalf("the gate saw HookAsk %q; the call ended %+v", asked, c.Error)
	}
}

func TestHooksSkipInvalidCalls(t *testing.T) {
	h := &scriptedHooks{}
	m := newHookedManager(t, h, allowAll)
	c := m.Execute(context.Background(), ExecuteRequest{ToolName: "echo", Arguments: json.RawMessage(`{"txt":1}`)})
	if c.Error == nil || c.Error.Code != CodeInvalidArguments {
		t.Fatalf("call ended %+v", c.Error)
	}
	if len(h.before)+len(h.after) != 0 {
		t.Fatalf("hooks ran for a call with invalid arguments")
	}
}
