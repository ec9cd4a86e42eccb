package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/nexuscocreate/nexus/integration/localllm"
	"github.com/nexuscocreate/nexus/llm"
)

// The two tools of integration/localllm/testdata/messages.json: each takes
// one path from an enum, so whatever the random model picks is valid.
var llamaTools = []llm.Tool{
	{Name: "read_file", Description: "Read a file of the workspace.",
		Schema: json.RawMessage(`{"type": "object", "properties": {"path": {"type": "string", "enum": ["README.md", "go.mod"]}}, "required": ["path"]}`)},
	{Name: "list_directory", Description: "List a directory of the workspace.",
		Schema: json.RawMessage(`{"type": "object", "properties": {"path": {"type": "string", "enum": [".", "cmd"]}}, "required": ["path"]}`)},
}

// TestAnthropicLlamaServer runs the Messages adapter against a real
// llama-server: a turn that ends in tool calls, then the same conversation
// with the calls and their results sent back. The model is random, so only
// shapes are checked; a run that ends otherwise (max_tokens, or the
// server's mid-stream error, which the adapter reports as ErrStream) is
// tried again.
func TestAnthropicLlamaServer(t *testing.T) {
	base := localllm.Start(t)
	p, err := llm.New(llm.Profile{
		Name: "local", Provider: llm.ProviderOpenAICompatible, API: llm.APIMessages,
		BaseURL: base + "/v1", Model: "tiny", MaxOutputTokens: 1024,
		ExtraBody: map[string]any{"tool_choice": map[string]any{"type": "any"}, "logit_bias": map[string]any{"5": 50, "4": 100}},
	}, llm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := &llm.Request{
		System:   "You are a test.",
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "Read README.md and list the directory cmd."}},
		Tools:    llamaTools,
	}

	// stream runs req until a run ends as accept wants, up to 10 times.
	stream := func(accept func(*llm.Response) bool) (*llm.Response, []llm.Event) {
		t.Helper()
		for run := 1; run <= 10; run++ {
			var events []llm.Event
			resp, err := p.Stream(ctx, req, func(ev llm.Event) { events = append(events, ev) })
			var e *llm.Error
			switch {
			case err != nil && errors.As(err, &e) && e.Status >= 400 && e.Status < 500:
				t.Fatalf("run %d: the server refused the request: %v", run, err)
			case err != nil:
				if !errors.Is(err, llm.ErrStream) && !errors.Is(err, llm.ErrServer) {
					t.Fatalf("run %d: %v", run, err)
				}
				t.Logf("run %d: %v (tried again)", run, err)
			case accept(resp):
				return resp, events
			default:
				t.Logf("run %d ended with %s (tried again)", run, resp.Stop)
			}
		}
		t.Fatal("no run of 10 ended as wanted")
		return nil, nil
	}

	resp, events := stream(func(r *llm.Response) bool { return r.Stop == llm.StopToolUse })
	schemas := map[string]*jsonschema.Resolved{}
	for _, tool := range llamaTools {
		var s jsonschema.Schema
		if err := json.Unmarshal(tool.Schema, &s); err != nil {
			t.Fatal(err)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		schemas[tool.Name] = rs
	}
	var calls []llm.ToolCall
	var usage *llm.Usage
	for _, ev := range events {
		switch ev.Kind {
		case llm.EventToolCall:
			calls = append(calls, *ev.ToolCall)
		case llm.EventUsage:
			usage = ev.Usage
		case llm.EventRetry:
			t.Errorf("a retry event from a server that answered: %+v", ev.Retry)
		}
	}
	if len(calls) == 0 || len(calls) != len(resp.ToolCalls) {
		t.Fatalf("%d tool call events, %d calls in the response", len(calls), len(resp.ToolCalls))
	}
	for _, c := range calls {
		rs, ok := schemas[c.Name]
		if c.ID == "" || !ok {
			t.Fatalf("call %+v: no id, or an unknown tool", c)
		}
		var args any
		if err := json.Unmarshal(c.Arguments, &args); err != nil {
			t.Fatalf("call %s: arguments %s: %v", c.Name, c.Arguments, err)
		}
		if err := rs.Validate(args); err != nil {
			t.Errorf("call %s: arguments %s do not fit the schema: %v", c.Name, c.Arguments, err)
		}
	}
	if usage == nil || usage.OutputTokens <= 0 || *usage != resp.Usage {
		t.Errorf("usage event %+v, response usage %+v", usage, resp.Usage)
	}
	t.Logf("%d calls: %s; usage %+v; model %q", len(calls), calls[0].Arguments, resp.Usage, resp.Model)

	// The calls and their results go back; the server must take them.
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
	for i, c := range resp.ToolCalls {
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleToolResult,
			Result: &llm.ToolResult{CallID: c.ID, Name: c.Name, Content: "result of " + c.Name, IsError: i == 1}})
	}
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Text: "Go on."})
	resp, events = stream(func(*llm.Response) bool { return true })
	if len(events) == 0 || resp.Stop == "" {
		t.Errorf("second turn: %d events, stop %q", len(events), resp.Stop)
	}
}
