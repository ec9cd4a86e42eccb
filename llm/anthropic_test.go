package llm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/llm"
)

// anthropicOn is an Anthropic provider whose base URL is the replay's.
func anthropicOn(t *testing.T, r *replay, s *sleeps, p llm.Profile) llm.Provider {
	t.Helper()
	p.Provider, p.BaseURL = llm.ProviderAnthropic, r.URL
	if p.Model == "" {
		p.Model = "claude-sonnet-4-5"
	}
	opts := llm.Options{Getenv: fixedKey("sk-ant-test")}
	if s != nil {
		opts.Sleep = s.sleep
	}
	prov, err := llm.New(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	return prov
}

var hello = &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}

func TestAnthropicDocumentedStream(t *testing.T) {
	r := newReplay(t, answer{file: "anthropic/stream-thinking-text-tools.sse"})
	resp, events, err := collect(t, anthropicOn(t, r, nil, llm.Profile{}), hello)
	if err != nil {
		t.Fatal(err)
	}
	var order []llm.EventKind
	for _, ev := range events {
		if len(order) == 0 || order[len(order)-1] != ev.Kind {
			order = append(order, ev.Kind)
		}
	}
	want := []llm.EventKind{llm.EventThought, llm.EventText, llm.EventToolCall, llm.EventUsage}
	if !reflect.DeepEqual(order, want) {
		t.Errorf("events in the order %v, want %v", order, want)
	}
	if resp.Thought != "The user wants the weather in two cities. I can call get_weather for both at once." ||
		resp.Text != "Okay, let's check the weather for San Francisco and Paris:" {
		t.Errorf("thought %q, text %q", resp.Thought, resp.Text)
	}
	wantCalls := []llm.ToolCall{
		{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "get_weather", Arguments: json.RawMessage(`{"location": "San Francisco, CA"}`)},
		{ID: "toolu_01E4d9Z8bxuASFmqNKvUP3x7", Name: "get_time", Arguments: json.RawMessage(`{}`)},
	}
	if !reflect.DeepEqual(resp.ToolCalls, wantCalls) {
		t.Errorf("calls %+v", resp.ToolCalls)
	}
	wantUsage := llm.Usage{InputTokens: 472 + 2048, OutputTokens: 89, CachedTokens: 2048}
	if resp.Usage != wantUsage || resp.Stop != llm.StopToolUse || resp.Model != "claude-sonnet-4-5" {
		t.Errorf("usage %+v, stop %q, model %q", resp.Usage, resp.Stop, resp.Model)
	}
}

func TestAnthropicLlamaRecordings(t *testing.T) {
	r := newReplay(t, answer{file: "anthropic/llama-tool-use.sse"}, answer{file: "anthropic/llama-max-tokens.sse"})
	p := anthropicOn(t, r, nil, llm.Profile{})
	resp, events, err := collect(t, p, hello)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].ID != "3NzM6WnqvTA8llpdZ3U41VCBHSCILBjP" || resp.ToolCalls[0].Name != "read_file" {
		t.Fatalf("calls %+v", resp.ToolCalls)
	}
	var args struct{ Path string }
	if err := json.Unmarshal(resp.ToolCalls[0].Arguments, &args); err != nil || args.Path != "README.md" {
		t.Errorf("arguments %s: %v", resp.ToolCalls[0].Arguments, err)
	}
	if k := kinds(events); k[llm.EventToolCall] != 1 || k[llm.EventUsage] != 1 || k[llm.EventText] == 0 {
		t.Errorf("events %v", k)
	}
	if resp.Stop != llm.StopToolUse || resp.Usage != (llm.Usage{InputTokens: 1117, OutputTokens: 136, CachedTokens: 1116}) {
		t.Errorf("stop %q, usage %+v", resp.Stop, resp.Usage)
	}

	resp, events, err = collect(t, p, hello)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, ev := range events {
		if ev.Kind == llm.EventText {
			text.WriteString(ev.Text)
		}
	}
	if resp.Stop != llm.StopMaxTokens || resp.Text == "" || resp.Text != text.String() || resp.Usage.OutputTokens != 12 {
		t.Errorf("stop %q, text %q (events %q), usage %+v", resp.Stop, resp.Text, text.String(), resp.Usage)
	}
}

// TestAnthropicRetries: 429 with Retry-After in seconds, 429 with
// Retry-After as an HTTP date, 529 overloaded, then an answer: one retry
// event each, the waits are the server's (or the backoff's), the same body
// each time.
func TestAnthropicRetries(t *testing.T) {
	date := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	r := newReplay(t,
		answer{status: 429, header: http.Header{"Retry-After": {"7"}}, file: "anthropic/rate-limit-429.json"},
		answer{status: 429, header: http.Header{"Retry-After": {date}}, file: "anthropic/rate-limit-429.json"},
		answer{status: 529, file: "anthropic/overloaded-529.json"},
		answer{file: "anthropic/llama-max-tokens.sse"},
	)
	var s sleeps
	resp, events, err := collect(t, anthropicOn(t, r, &s, llm.Profile{}), hello)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Stop != llm.StopMaxTokens {
		t.Errorf("stop %q", resp.Stop)
	}
	var retries []*llm.Retry
	for _, ev := range events {
		if ev.Kind == llm.EventRetry {
			retries = append(retries, ev.Retry)
		}
	}
	if len(retries) != 3 {
		t.Fatalf("%d retry events, want 3", len(retries))
	}
	for i, want := range []error{llm.ErrRateLimit, llm.ErrRateLimit, llm.ErrOverloaded} {
		if retries[i].Attempt != i+2 || !errors.Is(retries[i].Err, want) {
			t.Errorf("retry %d: attempt %d, error %v, want %v", i, retries[i].Attempt, retries[i].Err, want)
		}
		if s.waits[i] != retries[i].Wait {
			t.Errorf("retry %d: waited %v, the event says %v", i, s.waits[i], retries[i].Wait)
		}
	}
	if w := retries[0].Wait; w != 7*time.Second {
		t.Errorf("Retry-After 7: waited %v", w)
	}
	if w := retries[1].Wait; w < 28*time.Second || w > 30*time.Second {
		t.Errorf("Retry-After %s: waited %v, want about 30s", date, w)
	}
	if w := retries[2].Wait; w < 2*time.Second || w > 3*time.Second { // 500ms << 2, with up to half again of jitter
		t.Errorf("529 without Retry-After: waited %v, want the third backoff (2s–3s)", w)
	}
	if !strings.Contains(retries[2].Err.Error(), "Overloaded") {
		t.Errorf("the 529's error %q lacks the server's message", retries[2].Err)
	}
	reqs := r.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	for _, q := range reqs[1:] {
		if !bytes.Equal(q.body, reqs[0].body) {
			t.Errorf("a retry sent another body:\n%s\n%s", q.body, reqs[0].body)
		}
	}
}

// An overloaded_error event before any content is retried: nothing was
// emitted yet.
func TestAnthropicOverloadedBeforeContent(t *testing.T) {
	r := newReplay(t, answer{file: "anthropic/stream-overloaded-midstream.sse"}, answer{file: "anthropic/llama-tool-use.sse"})
	var s sleeps
	resp, events, err := collect(t, anthropicOn(t, r, &s, llm.Profile{}), hello)
	if err != nil {
		t.Fatal(err)
	}
	if k := kinds(events); k[llm.EventRetry] != 1 || !errors.Is(events[0].Retry.Err, llm.ErrOverloaded) {
		t.Errorf("events %v, first %+v", k, events[0])
	}
	if resp.Stop != llm.StopToolUse || len(r.requests()) != 2 {
		t.Errorf("stop %q after %d requests", resp.Stop, len(r.requests()))
	}
}

func TestAnthropicErrorsNotRetried(t *testing.T) {
	for _, c := range []struct {
		name   string
		answer answer
		want   error
		status int
		msg    string
	}{
		{"prompt too long", answer{status: 400, file: "anthropic/prompt-too-long-400.json"}, llm.ErrContextOverflow, 400, "prompt is too long: 210000 tokens > 200000 maximum"},
		{"llama-server context", answer{status: 400, file: "anthropic/llama-context-overflow.json"}, llm.ErrContextOverflow, 400, "exceeds the available context size"},
		{"auth", answer{status: 401, file: "anthropic/authentication-401.json"}, llm.ErrAuth, 401, "invalid x-api-key"},
		{"mid-stream error", answer{file: "anthropic/llama-midstream-error.sse"}, llm.ErrStream, 0, "does not match the expected peg-native format"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newReplay(t, c.answer)
			var s sleeps
			_, events, err := collect(t, anthropicOn(t, r, &s, llm.Profile{}), hello)
			var e *llm.Error
			if !errors.Is(err, c.want) || !errors.As(err, &e) || e.Status != c.status || !strings.Contains(e.Message, c.msg) {
				t.Fatalf("error %v (%#v), want %v with status %d and %q", err, e, c.want, c.status, c.msg)
			}
			if e.Retryable() || len(r.requests()) != 1 || kinds(events)[llm.EventRetry] != 0 || len(s.waits) != 0 {
				t.Errorf("retried: %d requests, events %v", len(r.requests()), kinds(events))
			}
			if c.want == llm.ErrStream && kinds(events)[llm.EventText] == 0 {
				t.Error("no text emitted before the error")
			}
		})
	}
}

// A stream cut mid-way is ErrStream, not retried, and the text before the
// cut was emitted.
func TestAnthropicStreamCut(t *testing.T) {
	data, err := os.ReadFile("testdata/anthropic/llama-max-tokens.sse")
	if err != nil {
		t.Fatal(err)
	}
	r := newReplay(t, answer{file: "anthropic/llama-max-tokens.sse", cut: len(data) / 2})
	var s sleeps
	_, events, err := collect(t, anthropicOn(t, r, &s, llm.Profile{}), hello)
	if !errors.Is(err, llm.ErrStream) {
		t.Fatalf("error %v, want ErrStream", err)
	}
	if len(r.requests()) != 1 || kinds(events)[llm.EventText] == 0 || kinds(events)[llm.EventRetry] != 0 {
		t.Errorf("%d requests, events %v", len(r.requests()), kinds(events))
	}
}

// Tool input that is not JSON is delivered as a JSON string of the raw
// text, and the turn ends normally.
func TestAnthropicMalformedToolInput(t *testing.T) {
	r := newReplay(t, answer{file: "anthropic/llama-malformed-tool-input.sse"})
	resp, events, err := collect(t, anthropicOn(t, r, nil, llm.Profile{}), hello)
	if err != nil {
		t.Fatal(err)
	}
	var call *llm.ToolCall
	for _, ev := range events {
		if ev.Kind == llm.EventToolCall {
			call = ev.ToolCall
		}
	}
	if call == nil || call.Name != "read_file" || resp.Stop != llm.StopToolUse {
		t.Fatalf("call %+v, stop %q", call, resp.Stop)
	}
	var s string
	if err := json.Unmarshal(call.Arguments, &s); err != nil || s != `{ "path":README.md` {
		t.Errorf("arguments %s (%v), want a JSON string of the raw text", call.Arguments, err)
	}
	if _, err := json.Marshal(resp); err != nil {
		t.Errorf("the response does not marshal: %v", err)
	}
}

// Cancelling mid-stream ends the request at once: ErrCanceled wrapping
// context.Canceled, and the server sees its request's context end.
func TestAnthropicCancel(t *testing.T) {
	r := newReplay(t, answer{file: "anthropic/llama-max-tokens.sse", until: "event: message_delta", hold: true})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	texts := 0
	_, err := anthropicOn(t, r, nil, llm.Profile{}).Stream(ctx, hello, func(ev llm.Event) {
		if ev.Kind == llm.EventText {
			texts++
			cancel()
		}
	})
	if !errors.Is(err, llm.ErrCanceled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want ErrCanceled wrapping context.Canceled", err)
	}
	<-r.ended // the server's request context ended
	if texts != 1 {
		t.Errorf("%d text events after the cancel, want 1", texts)
	}
}

// The request body and headers, checked against Anthropic's Messages API
// reference: system at the top level, tool_use blocks in the assistant
// message, the results of one turn as tool_result blocks of one user
// message, input_schema, max_tokens, stream, x-api-key and
// anthropic-version, and the profile's extra body merged.
func TestAnthropicRequestBody(t *testing.T) {
	r := newReplay(t, answer{file: "anthropic/llama-max-tokens.sse"}, answer{file: "anthropic/llama-max-tokens.sse"})
	temp := 0.3
	p := anthropicOn(t, r, nil, llm.Profile{Temperature: &temp, ExtraBody: map[string]any{
		"tool_choice": map[string]any{"type": "any"}, "top_k": 5, "odd.key": true,
	}})
	schema := `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`
	req := &llm.Request{
		System: "You are terse.",
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Text: "The workspace is a Go module."},
			{Role: llm.RoleUser, Text: "Read a and b."},
			{Role: llm.RoleAssistant, Text: "Reading both.", ToolCalls: []llm.ToolCall{
				{ID: "toolu_1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a"}`)},
				{ID: "toolu_2", Name: "read_file", Arguments: json.RawMessage(`"not an object"`)},
			}},
			{Role: llm.RoleToolResult, Result: &llm.ToolResult{CallID: "toolu_1", Name: "read_file", Content: "A"}},
			{Role: llm.RoleToolResult, Result: &llm.ToolResult{CallID: "toolu_2", Name: "read_file", Content: "no such file", IsError: true}},
			{Role: llm.RoleUser, Text: "Thanks."},
		},
		Tools: []llm.Tool{{Name: "read_file", Description: "Read a file.", Schema: json.RawMessage(schema)}},
	}
	if _, _, err := collect(t, p, req); err != nil {
		t.Fatal(err)
	}
	q := r.requests()[0]
	if q.method != http.MethodPost || q.path != "/v1/messages" {
		t.Errorf("%s %s", q.method, q.path)
	}
	if q.header.Get("X-Api-Key") != "sk-ant-test" || q.header.Get("Anthropic-Version") != "2023-06-01" || q.header.Get("Authorization") != "" {
		t.Errorf("headers %v", q.header)
	}
	var got map[string]any
	if err := json.Unmarshal(q.body, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{}
	wantJSON := `{
		"model": "claude-sonnet-4-5",
		"max_tokens": 4096,
		"temperature": 0.3,
		"stream": true,
		"system": [{"type": "text", "text": "You are terse.\n\nThe workspace is a Go module."}],
		"messages": [
			{"role": "user", "content": [{"type": "text", "text": "Read a and b."}]},
			{"role": "assistant", "content": [
				{"type": "text", "text": "Reading both."},
				{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}},
				{"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {}}
			]},
			{"role": "user", "content": [
				{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "A"}]},
				{"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "no such file"}], "is_error": true}
			]},
			{"role": "user", "content": [{"type": "text", "text": "Thanks."}]}
		],
		"tools": [{"name": "read_file", "description": "Read a file.", "input_schema": ` + schema + `}],
		"tool_choice": {"type": "any"},
		"top_k": 5,
		"odd.key": true
	}`
	if err := json.Unmarshal([]byte(wantJSON), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		t.Errorf("body:\n%s", g)
	}

	// A compatible server: the base URL may end in /v1, no key is sent,
	// and the request's max tokens win over the profile's.
	p, err := llm.New(llm.Profile{Provider: llm.ProviderOpenAICompatible, API: llm.APIMessages, BaseURL: r.URL + "/v1/", Model: "tiny", MaxOutputTokens: 100},
		llm.Options{Getenv: fixedKey("")})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := collect(t, p, &llm.Request{Messages: hello.Messages, MaxOutputTokens: 50}); err != nil {
		t.Fatal(err)
	}
	q = r.requests()[1]
	var body struct {
		MaxTokens int `json:"max_tokens"`
	}
	if err := json.Unmarshal(q.body, &body); err != nil || q.path != "/v1/messages" || q.header.Get("X-Api-Key") != "" || body.MaxTokens != 50 {
		t.Errorf("path %s, headers %v, body %s (%v)", q.path, q.header, q.body, err)
	}
}
