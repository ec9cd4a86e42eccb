package llm_test

import (
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

// geminiOn is a Gemini provider whose base URL is the replay's.
func geminiOn(t *testing.T, r *replay, s *sleeps, p llm.Profile) llm.Provider {
	t.Helper()
	p.Provider, p.BaseURL = llm.ProviderGemini, r.URL
	if p.Model == "" {
		p.Model = "gemini-2.5-flash"
	}
	opts := llm.Options{Getenv: fixedKey("AIza-test")}
	if s != nil {
		opts.Sleep = s.sleep
	}
	prov, err := llm.New(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	return prov
}

func TestGeminiStream(t *testing.T) {
	r := newReplay(t, answer{file: "gemini/stream-text-parallel-calls.sse"})
	resp, events, err := collect(t, geminiOn(t, r, nil, llm.Profile{}), hello)
	if err != nil {
		t.Fatal(err)
	}
	var order []llm.EventKind
	for _, ev := range events {
		order = append(order, ev.Kind)
	}
	want := []llm.EventKind{llm.EventThought, llm.EventText, llm.EventText, llm.EventToolCall, llm.EventToolCall, llm.EventUsage}
	if !reflect.DeepEqual(order, want) {
		t.Errorf("events %v, want %v", order, want)
	}
	if resp.Text != "I'll look up both cities." || !strings.HasPrefix(resp.Thought, "**Checking two cities**") {
		t.Errorf("text %q, thought %q", resp.Text, resp.Thought)
	}
	wantCalls := []llm.ToolCall{
		{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"location":"Paris"}`)},
		{ID: "call_2", Name: "get_weather", Arguments: json.RawMessage(`{"location":"Tokyo"}`)},
	}
	if !reflect.DeepEqual(resp.ToolCalls, wantCalls) {
		t.Errorf("calls %+v", resp.ToolCalls)
	}
	if resp.Usage != (llm.Usage{InputTokens: 96, OutputTokens: 38 + 24, CachedTokens: 64}) || *events[len(events)-1].Usage != resp.Usage {
		t.Errorf("usage %+v", resp.Usage)
	}
	if resp.Stop != llm.StopToolUse || resp.Model != "gemini-2.5-flash" {
		t.Errorf("stop %q, model %q", resp.Stop, resp.Model)
	}
}

func TestGeminiStopReasons(t *testing.T) {
	for file, want := range map[string]llm.StopReason{
		"gemini/stream-max-tokens.sse": llm.StopMaxTokens,
		"gemini/stream-safety.sse":     llm.StopRefusal,
	} {
		r := newReplay(t, answer{file: file})
		resp, _, err := collect(t, geminiOn(t, r, nil, llm.Profile{}), hello)
		if err != nil || resp.Stop != want {
			t.Errorf("%s: stop %v, error %v, want %q", file, resp, err, want)
		}
	}
}

// TestGeminiRetries: 429 RESOURCE_EXHAUSTED whose RetryInfo asks for 37s,
// then 503 UNAVAILABLE with a Retry-After as an HTTP date, then an answer.
func TestGeminiRetries(t *testing.T) {
	date := time.Now().Add(20 * time.Second).UTC().Format(http.TimeFormat)
	r := newReplay(t,
		answer{status: 429, file: "gemini/resource-exhausted-429.json"},
		answer{status: 503, header: http.Header{"Retry-After": {date}}, file: "gemini/unavailable-503.json"},
		answer{file: "gemini/stream-max-tokens.sse"},
	)
	var s sleeps
	resp, events, err := collect(t, geminiOn(t, r, &s, llm.Profile{}), hello)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Stop != llm.StopMaxTokens || resp.Text != "Once upon a time, in a land far away, there lived" {
		t.Errorf("stop %q, text %q", resp.Stop, resp.Text)
	}
	var retries []*llm.Retry
	for _, ev := range events {
		if ev.Kind == llm.EventRetry {
			retries = append(retries, ev.Retry)
		}
	}
	if len(retries) != 2 || !errors.Is(retries[0].Err, llm.ErrRateLimit) || !errors.Is(retries[1].Err, llm.ErrOverloaded) {
		t.Fatalf("retries %+v", retries)
	}
	if retries[0].Wait != 37*time.Second || retries[1].Wait < 18*time.Second || retries[1].Wait > 20*time.Second {
		t.Errorf("waits %v and %v, want 37s and about 20s", retries[0].Wait, retries[1].Wait)
	}
	if !reflect.DeepEqual(s.waits, []time.Duration{retries[0].Wait, retries[1].Wait}) {
		t.Errorf("slept %v", s.waits)
	}
	if !strings.Contains(retries[0].Err.Error(), "You exceeded your current quota") {
		t.Errorf("the 429's error %q lacks the server's message", retries[0].Err)
	}
	if len(r.requests()) != 3 {
		t.Errorf("%d requests", len(r.requests()))
	}
}

func TestGeminiErrorsNotRetried(t *testing.T) {
	for _, c := range []struct {
		name   string
		answer answer
		want   error
		msg    string
	}{
		{"token count", answer{status: 400, file: "gemini/token-count-400.json"}, llm.ErrContextOverflow, "exceeds the maximum number of tokens allowed"},
		{"key not valid", answer{status: 400, file: "gemini/api-key-invalid-400.json"}, llm.ErrAuth, "API key not valid"},
		{"mid-stream error", answer{file: "gemini/stream-midstream-error.sse"}, llm.ErrStream, "An internal error has occurred"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newReplay(t, c.answer)
			var s sleeps
			_, events, err := collect(t, geminiOn(t, r, &s, llm.Profile{}), hello)
			var e *llm.Error
			if !errors.Is(err, c.want) || !errors.As(err, &e) || !strings.Contains(e.Message, c.msg) {
				t.Fatalf("error %v, want %v with %q", err, c.want, c.msg)
			}
			if len(r.requests()) != 1 || kinds(events)[llm.EventRetry] != 0 || len(s.waits) != 0 {
				t.Errorf("retried: %d requests, events %v", len(r.requests()), kinds(events))
			}
		})
	}
}

// A stream cut mid-way (connection broken, or closed before a finish
// reason) is ErrStream, not retried, with the text before the cut emitted.
func TestGeminiStreamCut(t *testing.T) {
	data, err := os.ReadFile("testdata/gemini/stream-max-tokens.sse")
	if err != nil {
		t.Fatal(err)
	}
	for name, a := range map[string]answer{
		"broken": {file: "gemini/stream-max-tokens.sse", cut: strings.Index(string(data), `"finishReason"`)},
		"closed": {file: "gemini/stream-max-tokens.sse", until: `data: {"candidates":[{"content":{"parts":[{"text":" there lived"}]`},
	} {
		t.Run(name, func(t *testing.T) {
			r := newReplay(t, a)
			var s sleeps
			_, events, err := collect(t, geminiOn(t, r, &s, llm.Profile{}), hello)
			if !errors.Is(err, llm.ErrStream) {
				t.Fatalf("error %v, want ErrStream", err)
			}
			if len(r.requests()) != 1 || kinds(events)[llm.EventText] != 2 || kinds(events)[llm.EventRetry] != 0 {
				t.Errorf("%d requests, events %v", len(r.requests()), kinds(events))
			}
		})
	}
}

func TestGeminiCancel(t *testing.T) {
	r := newReplay(t, answer{file: "gemini/stream-max-tokens.sse", until: `data: {"candidates":[{"content":{"parts":[{"text":", in`, hold: true})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	_, err := geminiOn(t, r, nil, llm.Profile{}).Stream(ctx, hello, func(ev llm.Event) {
		if ev.Kind == llm.EventText {
			cancel()
		}
	})
	if !errors.Is(err, llm.ErrCanceled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want ErrCanceled wrapping context.Canceled", err)
	}
	<-r.ended
}

// The request, checked against the Gemini API reference
// (https://ai.google.dev/api/generate-content): the model's URL with
// alt=sse, the key in x-goog-api-key, contents with roles user and model,
// functionCall and functionResponse parts, systemInstruction,
// tools[].functionDeclarations, generationConfig, the extra body merged.
// The thought signature of a call goes back with it.
func TestGeminiRequestBody(t *testing.T) {
	r := newReplay(t, answer{file: "gemini/stream-text-parallel-calls.sse"}, answer{file: "gemini/stream-max-tokens.sse"})
	temp := 0.2
	p := geminiOn(t, r, nil, llm.Profile{Model: "models/gemini-2.5-flash", MaxOutputTokens: 2048, Temperature: &temp,
		ExtraBody: map[string]any{"generationConfig": map[string]any{"thinkingConfig": map[string]any{"thinkingBudget": 0}}, "safetySettings": []any{}}})
	schema := `{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}`
	req := &llm.Request{
		System:   "You are terse.",
		Messages: []llm.Message{{Role: llm.RoleSystem, Text: "Use metric units."}, {Role: llm.RoleUser, Text: "Weather in Paris and Tokyo?"}},
		Tools:    []llm.Tool{{Name: "get_weather", Description: "The weather of a place.", Schema: json.RawMessage(schema)}},
	}
	resp, _, err := collect(t, p, req)
	if err != nil {
		t.Fatal(err)
	}
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls},
		llm.Message{Role: llm.RoleToolResult, Result: &llm.ToolResult{CallID: "call_1", Name: "get_weather", Content: "18°C"}},
		llm.Message{Role: llm.RoleToolResult, Result: &llm.ToolResult{CallID: "call_2", Name: "get_weather", Content: "no data", IsError: true}},
	)
	if _, _, err := collect(t, p, req); err != nil {
		t.Fatal(err)
	}
	reqs := r.requests()
	for _, q := range reqs {
		if q.method != http.MethodPost || q.path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" || q.query != "alt=sse" ||
			q.header.Get("X-Goog-Api-Key") != "AIza-test" || q.header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s?%s %v", q.method, q.path, q.query, q.header)
		}
	}
	var got, want map[string]any
	if err := json.Unmarshal(reqs[1].body, &got); err != nil {
		t.Fatal(err)
	}
	wantJSON := `{
		"systemInstruction": {"parts": [{"text": "You are terse.\n\nUse metric units."}]},
		"contents": [
			{"role": "user", "parts": [{"text": "Weather in Paris and Tokyo?"}]},
			{"role": "model", "parts": [
				{"text": "I'll look up both cities."},
				{"functionCall": {"id": "call_1", "name": "get_weather", "args": {"location": "Paris"}}, "thoughtSignature": "CiQB0e2Kb0Yx1rLq2pYQ1z7cHd8dXQ0YmE4ZjYxNmM4NjBiNzE="},
				{"functionCall": {"id": "call_2", "name": "get_weather", "args": {"location": "Tokyo"}}}
			]},
			{"role": "user", "parts": [
				{"functionResponse": {"id": "call_1", "name": "get_weather", "response": {"output": "18°C"}}},
				{"functionResponse": {"id": "call_2", "name": "get_weather", "response": {"error": "no data"}}}
			]}
		],
		"tools": [{"functionDeclarations": [{"name": "get_weather", "description": "The weather of a place.", "parametersJsonSchema": ` + schema + `}]}],
		"generationConfig": {"maxOutputTokens": 2048, "temperature": 0.2, "thinkingConfig": {"thinkingBudget": 0}},
		"safetySettings": []
	}`
	if err := json.Unmarshal([]byte(wantJSON), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		t.Errorf("body:\n%s", g)
	}
}
