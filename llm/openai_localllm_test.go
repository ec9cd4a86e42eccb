package llm_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/nexuscocreate/nexus/integration/localllm"
	"github.com/nexuscocreate/nexus/llm"
)

// The OpenAI adapters against a real llama-server (integration/localllm),
// with its tiny random-weight model: tool_choice "required" and a
// logit_bias toward <tool_call> make it call the tools of the testdata
// requests there. The model is random: the tests look at shapes, never at
// text, and try a few times.

// toolEnums are the values each tool's path may take.
var toolEnums = map[string][]string{
	"read_file":      {"README.md", "go.mod"},
	"list_directory": {".", "cmd"},
}

func localTools() []llm.Tool {
	return []llm.Tool{
		{Name: "read_file", Description: "Read a file of the workspace.",
			Schema: json.RawMessage(`{"type": "object", "properties": {"path": {"type": "string", "enum": ["README.md", "go.mod"]}}, "required": ["path"]}`)},
		{Name: "list_directory", Description: "List a directory of the workspace.",
			Schema: json.RawMessage(`{"type": "object", "properties": {"path": {"type": "string", "enum": [".", "cmd"]}}, "required": ["path"]}`)},
	}
}

func localProfile(base, api string) llm.Profile {
	return llm.Profile{
		Name: "local", Provider: llm.ProviderOpenAICompatible, API: api, BaseURL: base + "/v1", Model: "tiny",
		MaxOutputTokens: 256,
		ExtraBody:       map[string]any{"tool_choice": "required", "logit_bias": map[string]any{"5": 50, "4": 100}},
	}
}

// validCall reports whether a call names a known tool with arguments of
// its schema.
func validCall(c llm.ToolCall) bool {
	enum, ok := toolEnums[c.Name]
	if !ok || c.ID == "" {
		return false
	}
	var args struct {
		Path *string `json:"path"`
	}
	if err := json.Unmarshal(c.Arguments, &args); err != nil || args.Path == nil {
		return false
	}
	return slices.Contains(enum, *args.Path)
}

func TestLocalLLMToolCalls(t *testing.T) {
	base := localllm.Start(t)
	for _, api := range []string{llm.APIChat, llm.APIResponses} {
		t.Run(api, func(t *testing.T) {
			p, err := llm.New(localProfile(base, api), llm.Options{})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			req := &llm.Request{
				System:   "You are a coding agent.",
				Messages: []llm.Message{{Role: llm.RoleUser, Text: "Read README.md and list the directory cmd."}},
				Tools:    localTools(),
			}
			// The model is random: try until a turn has only valid calls.
			var resp *llm.Response
			var calls []llm.ToolCall
			for try := 1; ; try++ {
				calls = nil
				var usage []llm.Usage
				resp, err = p.Stream(ctx, req, func(ev llm.Event) {
					switch ev.Kind {
					case llm.EventToolCall:
						calls = append(calls, *ev.ToolCall)
					case llm.EventUsage:
						usage = append(usage, *ev.Usage)
					}
				})
				if err != nil {
					t.Logf("try %d: %v", try, err)
				} else {
					ok := len(calls) > 0 && resp.Stop == llm.StopToolUse && len(usage) > 0 &&
						resp.Usage.InputTokens > 0 && resp.Usage.OutputTokens > 0 && slices.EqualFunc(calls, resp.ToolCalls, sameCall)
					for _, c := range calls {
						ok = ok && validCall(c)
					}
					if ok {
						break
					}
					t.Logf("try %d: stop %s, calls %+v, usage %+v", try, resp.Stop, calls, resp.Usage)
				}
				if try == 5 {
					t.Fatalf("no turn of valid tool calls in %d tries", try)
				}
			}
			t.Logf("%d calls, usage %+v, model %q", len(calls), resp.Usage, resp.Model)

			// Send the calls back with a result each: the server must take
			// the assistant message and the tool results (a 200 and a stream).
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, ToolCalls: calls})
			for _, c := range calls {
				req.Messages = append(req.Messages, llm.Message{Role: llm.RoleToolResult, Result: &llm.ToolResult{CallID: c.ID, Name: c.Name, Content: "package main\n"}})
			}
			for try := 1; ; try++ {
				resp, err = p.Stream(ctx, req, func(llm.Event) {})
				if err == nil {
					break
				}
				t.Logf("second turn, try %d: %v", try, err)
				if try == 3 {
					t.Fatalf("the second turn failed %d times: %v", try, err)
				}
			}
			if resp.Stop == "" || resp.Usage.InputTokens == 0 {
				t.Fatalf("second turn: %+v", resp)
			}
		})
	}
}

func sameCall(a, b llm.ToolCall) bool {
	return a.ID == b.ID && a.Name == b.Name && string(a.Arguments) == string(b.Arguments)
}
