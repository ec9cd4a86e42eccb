package llm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/llm"
)

// The OpenAI adapters against a local httptest.Server that records what it
// is sent and answers with the recordings of testdata/openai (see its
// README.md for where each came from).

func recording(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "openai", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sseEvents splits an SSE recording into its events, each with the blank
// line that ends it.
func sseEvents(b []byte) [][]byte {
	var out [][]byte
	for _, ev := range bytes.SplitAfter(b, []byte("\n\n")) {
		if len(bytes.TrimSpace(ev)) > 0 {
			out = append(out, ev)
		}
	}
	return out
}

// writeSSE answers with a stream of events, flushing each.
func writeSSE(w http.ResponseWriter, events ...[]byte) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, ev := range events {
		_, _ = w.Write(ev)
		w.(http.Flusher).Flush()
	}
}

func writeJSON(w http.ResponseWriter, status int, header http.Header, body []byte) {
	for k, v := range header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// fake is a local server: handle answers the nth request (from 1); the
// requests are kept.
type fake struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*fakeRequest
}

type fakeRequest struct {
	path   string
	header http.Header
	body   map[string]any
}

func newFake(t *testing.T, handle func(n int, w http.ResponseWriter, r *http.Request)) *fake {
	f := &fake{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec := &fakeRequest{path: r.URL.Path, header: r.Header.Clone()}
		if err := json.Unmarshal(b, &rec.body); err != nil {
			t.Errorf("request body is not a JSON object: %v: %s", err, b)
		}
		f.mu.Lock()
		f.requests = append(f.requests, rec)
		n := len(f.requests)
		f.mu.Unlock()
		handle(n, w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fake) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func (f *fake) request(i int) *fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[i]
}

// provider is an adapter on the fake server; sleeps records the waits
// between retries instead of waiting.
func (f *fake) provider(t *testing.T, p llm.Profile, sleeps *[]time.Duration) llm.Provider {
	t.Helper()
	p.BaseURL = f.URL + "/v1"
	if p.Model == "" {
		p.Model = "tiny"
	}
	opts := llm.Options{
		Getenv: func(k string) (string, bool) {
			if k == "OPENAI_API_KEY" {
				return "KEY", true
			}
			return "", false
		},
		Sleep: func(done <-chan struct{}, d time.Duration) error {
			if sleeps != nil {
				*sleeps = append(*sleeps, d)
			}
			return nil
		},
	}
	prov, err := llm.New(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	return prov
}

// events collects what a stream emits.
type events struct {
	all     []llm.Event
	text    strings.Builder
	thought strings.Builder
	calls   []llm.ToolCall
	retries []llm.Retry
	usage   []llm.Usage
}

func (e *events) emit(ev llm.Event) {
	e.all = append(e.all, ev)
	switch ev.Kind {
	case llm.EventText:
		e.text.WriteString(ev.Text)
	case llm.EventThought:
		e.thought.WriteString(ev.Text)
	case llm.EventToolCall:
		e.calls = append(e.calls, *ev.ToolCall)
	case llm.EventRetry:
		e.retries = append(e.retries, *ev.Retry)
	case llm.EventUsage:
		e.usage = append(e.usage, *ev.Usage)
	}
}

// apis are the adapters under test, with the recordings of each.
var apis = []struct {
	api, text, tools string
}{
	{llm.APIChat, "llama-chat-text.sse", "llama-chat-tools.sse"},
	{llm.APIResponses, "llama-responses-text.sse", "llama-responses-tools.sse"},
}

func compatible(api string) llm.Profile {
	return llm.Profile{Name: "test", Provider: llm.ProviderOpenAICompatible, API: api}
}

func simpleRequest() *llm.Request {
	return &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "Say hello."}}}
}

// TestOpenAIReplay: the recorded llama-server streams give the calls, text,
// usage and stop reason they hold.
func TestOpenAIReplay(t *testing.T) {
	for _, a := range apis {
		t.Run(a.api+"/tools", func(t *testing.T) {
			body := recording(t, a.tools)
			f := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeSSE(w, body) })
			var ev events
			resp, err := f.provider(t, compatible(a.api), nil).Stream(context.Background(), simpleRequest(), ev.emit)
			if err != nil {
				t.Fatal(err)
			}
			if len(ev.calls) != 2 || len(resp.ToolCalls) != 2 {
				t.Fatalf("calls: emitted %+v, response %+v", ev.calls, resp.ToolCalls)
			}
			for i, c := range ev.calls {
				if c.ID == "" || c.ID != resp.ToolCalls[i].ID || !validCall(c) {
					t.Errorf("call %d: %+v (%s)", i, c, c.Arguments)
				}
			}
			if ev.calls[0].ID == ev.calls[1].ID {
				t.Errorf("two calls with one id %q", ev.calls[0].ID)
			}
			if resp.Stop != llm.StopToolUse || resp.Model != "/tiny.gguf" {
				t.Errorf("stop %q, model %q", resp.Stop, resp.Model)
			}
			if len(ev.usage) != 1 || resp.Usage.InputTokens != 1117 || resp.Usage.OutputTokens == 0 || resp.Usage.CachedTokens == 0 {
				t.Errorf("usage: emitted %+v, response %+v", ev.usage, resp.Usage)
			}
		})
		t.Run(a.api+"/text", func(t *testing.T) {
			body := recording(t, a.text)
			f := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeSSE(w, body) })
			var ev events
			resp, err := f.provider(t, compatible(a.api), nil).Stream(context.Background(), simpleRequest(), ev.emit)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text == "" || resp.Text != ev.text.String() || len(resp.ToolCalls) != 0 {
				t.Errorf("text %q, emitted %q, calls %+v", resp.Text, ev.text.String(), resp.ToolCalls)
			}
			// llama-server says "length" in Chat Completions, but
			// "completed" in the Responses API, when max tokens cut it.
			want := llm.StopMaxTokens
			if a.api == llm.APIResponses {
				want = llm.StopEndTurn
			}
			if resp.Stop != want || resp.Usage.InputTokens == 0 {
				t.Errorf("stop %q, usage %+v", resp.Stop, resp.Usage)
			}
		})
	}
}

// TestOpenAIReasoning: reasoning deltas are thoughts; cached tokens and an
// incomplete response are read.
func TestOpenAIReasoning(t *testing.T) {
	for _, c := range []struct {
		api, file string
		thought   string
		stop      llm.StopReason
		usage     llm.Usage
	}{
		{llm.APIChat, "openai-chat-reasoning.sse", "The user wants a greeting.", llm.StopEndTurn, llm.Usage{InputTokens: 12, OutputTokens: 9, CachedTokens: 8}},
		{llm.APIResponses, "openai-responses-reasoning.sse", "**Greeting** the user.", llm.StopMaxTokens, llm.Usage{InputTokens: 20, OutputTokens: 64}},
	} {
		t.Run(c.api, func(t *testing.T) {
			body := recording(t, c.file)
			f := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeSSE(w, body) })
			var ev events
			resp, err := f.provider(t, compatible(c.api), nil).Stream(context.Background(), simpleRequest(), ev.emit)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Thought != c.thought || ev.thought.String() != c.thought || resp.Text != "Hello!" || ev.text.String() != "Hello!" {
				t.Errorf("thought %q (emitted %q), text %q (emitted %q)", resp.Thought, ev.thought.String(), resp.Text, ev.text.String())
			}
			if resp.Stop != c.stop || resp.Usage != c.usage {
				t.Errorf("stop %q, usage %+v", resp.Stop, resp.Usage)
			}
			if ev.all[0].Kind != llm.EventThought {
				t.Errorf("first event %+v, want the thought first", ev.all[0])
			}
		})
	}
}

// TestOpenAIRequestBody: the bodies are what OpenAI documents for each API.
func TestOpenAIRequestBody(t *testing.T) {
	temp := 0.25
	req := &llm.Request{
		System: "You are a coding agent.",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Text: "Read README.md."},
			{Role: llm.RoleAssistant, Text: "Reading it.", ToolCalls: []llm.ToolCall{
				{ID: "call_1", Name: "read_file", Arguments: json.RawMessage(`{"path": "README.md"}`)},
				{ID: "call_2", Name: "list_directory", Arguments: json.RawMessage(`"{\"path\": "`)},
			}},
			{Role: llm.RoleToolResult, Result: &llm.ToolResult{CallID: "call_1", Name: "read_file", Content: "# Nexus"}},
			{Role: llm.RoleToolResult, Result: &llm.ToolResult{CallID: "call_2", Name: "list_directory", Content: "bad arguments", IsError: true}},
			{Role: llm.RoleSystem, Text: "Be brief."},
		},
		Tools:       localTools(),
		Temperature: &temp,
	}
	extra := map[string]any{"tool_choice": "required", "logit_bias": map[string]any{"5": 50}, "store": false}
	for _, c := range []struct {
		provider, api, file, path string
		check                     func(t *testing.T, body map[string]any)
	}{
		{llm.ProviderOpenAI, llm.APIChat, "llama-chat-tools.sse", "/v1/chat/completions", func(t *testing.T, b map[string]any) {
			want(t, b, "max_completion_tokens", 300.0)
			checkChat(t, b)
		}},
		{llm.ProviderOpenAICompatible, llm.APIChat, "llama-chat-tools.sse", "/v1/chat/completions", func(t *testing.T, b map[string]any) {
			want(t, b, "max_tokens", 300.0)
			checkChat(t, b)
		}},
		{llm.ProviderOpenAI, llm.APIResponses, "llama-responses-tools.sse", "/v1/responses", checkResponses},
		{llm.ProviderOpenAICompatible, llm.APIResponses, "llama-responses-tools.sse", "/v1/responses", checkResponses},
	} {
		t.Run(c.provider+"/"+c.api, func(t *testing.T) {
			t.Setenv("OPENAI_ORG_ID", "org-leak") // the SDK's environment is not read
			body := recording(t, c.file)
			f := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeSSE(w, body) })
			p := llm.Profile{Name: "test", Provider: c.provider, API: c.api, Model: "gpt-test", MaxOutputTokens: 300, ExtraBody: extra}
			if _, err := f.provider(t, p, nil).Stream(context.Background(), req, func(llm.Event) {}); err != nil {
				t.Fatal(err)
			}
			r := f.request(0)
			if r.path != c.path {
				t.Errorf("path %q, want %q", r.path, c.path)
			}
			auth := r.header.Get("Authorization")
			if c.provider == llm.ProviderOpenAI && auth != "Bearer KEY" {
				t.Errorf("Authorization %q, want Bearer KEY", auth)
			}
			if c.provider == llm.ProviderOpenAICompatible && auth != "" {
				t.Errorf("Authorization %q sent to an openai-compatible server without a key", auth)
			}
			if org := r.header.Get("OpenAI-Organization"); org != "" {
				t.Errorf("OpenAI-Organization %q read from the environment", org)
			}
			b := r.body
			want(t, b, "model", "gpt-test")
			want(t, b, "stream", true)
			want(t, b, "temperature", 0.25)
			want(t, b, "tool_choice", "required")
			want(t, b, "logit_bias", map[string]any{"5": 50.0})
			want(t, b, "store", false)
			c.check(t, b)
			if t.Failed() {
				out, _ := json.MarshalIndent(b, "", "  ")
				t.Logf("body: %s", out)
			}
		})
	}
}

func checkChat(t *testing.T, b map[string]any) {
	t.Helper()
	want(t, b, "stream_options", map[string]any{"include_usage": true})
	want(t, b, "messages", []any{
		map[string]any{"role": "system", "content": "You are a coding agent."},
		map[string]any{"role": "user", "content": "Read README.md."},
		map[string]any{"role": "assistant", "content": "Reading it.", "tool_calls": []any{
			map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "read_file", "arguments": `{"path": "README.md"}`}},
			map[string]any{"id": "call_2", "type": "function", "function": map[string]any{"name": "list_directory", "arguments": `{}`}},
		}},
		map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "# Nexus"},
		map[string]any{"role": "tool", "tool_call_id": "call_2", "content": "Error: bad arguments"},
		map[string]any{"role": "system", "content": "Be brief."},
	})
	tools, _ := b["tools"].([]any)
	if len(tools) != 2 {
		t.Fatalf("tools: %v", b["tools"])
	}
	want(t, tools[0].(map[string]any), "", map[string]any{"type": "function", "function": map[string]any{
		"name": "read_file", "description": "Read a file of the workspace.",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string", "enum": []any{"README.md", "go.mod"}}}, "required": []any{"path"}},
	}})
}

func checkResponses(t *testing.T, b map[string]any) {
	t.Helper()
	want(t, b, "instructions", "You are a coding agent.")
	want(t, b, "max_output_tokens", 300.0)
	want(t, b, "input", []any{
		map[string]any{"role": "user", "content": "Read README.md."},
		map[string]any{"role": "assistant", "content": "Reading it."},
		map[string]any{"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": `{"path": "README.md"}`},
		map[string]any{"type": "function_call", "call_id": "call_2", "name": "list_directory", "arguments": `{}`},
		map[string]any{"type": "function_call_output", "call_id": "call_1", "output": "# Nexus"},
		map[string]any{"type": "function_call_output", "call_id": "call_2", "output": "Error: bad arguments"},
		map[string]any{"role": "system", "content": "Be brief."},
	})
	tools, _ := b["tools"].([]any)
	if len(tools) != 2 {
		t.Fatalf("tools: %v", b["tools"])
	}
	want(t, tools[1].(map[string]any), "", map[string]any{
		"type": "function", "name": "list_directory", "description": "List a directory of the workspace.", "strict": false,
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string", "enum": []any{".", "cmd"}}}, "required": []any{"path"}},
	})
}

// want checks a field of a JSON object (the object itself for key "").
func want(t *testing.T, obj map[string]any, key string, v any) {
	t.Helper()
	var got any = obj
	if key != "" {
		var ok bool
		if got, ok = obj[key]; !ok {
			t.Errorf("no %q in the body", key)
			return
		}
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(v)
	if !bytes.Equal(g, w) {
		t.Errorf("%q:\n got %s\nwant %s", key, g, w)
	}
}

// TestOpenAIRetries: 429 with Retry-After in seconds and as an HTTP date,
// 503 and 529 are retried, one retry event each, with the waits asked
// for; then the stream is read.
func TestOpenAIRetries(t *testing.T) {
	for _, a := range apis {
		t.Run(a.api, func(t *testing.T) {
			rate := recording(t, "openai-429-rate-limit.json")
			overloaded := recording(t, "openai-503-overloaded.json")
			stream := recording(t, a.text)
			date := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
			f := newFake(t, func(n int, w http.ResponseWriter, _ *http.Request) {
				switch n {
				case 1:
					writeJSON(w, http.StatusTooManyRequests, http.Header{"Retry-After": {"2"}}, rate)
				case 2:
					writeJSON(w, http.StatusTooManyRequests, http.Header{"Retry-After": {date}}, rate)
				case 3:
					writeJSON(w, http.StatusServiceUnavailable, nil, overloaded)
				case 4:
					writeJSON(w, 529, nil, overloaded)
				default:
					writeSSE(w, stream)
				}
			})
			var sleeps []time.Duration
			var ev events
			resp, err := f.provider(t, compatible(a.api), &sleeps).Stream(context.Background(), simpleRequest(), ev.emit)
			if err != nil {
				t.Fatal(err)
			}
			if f.count() != 5 || len(ev.retries) != 4 || len(sleeps) != 4 {
				t.Fatalf("%d requests, retries %+v, sleeps %v", f.count(), ev.retries, sleeps)
			}
			if sleeps[0] != 2*time.Second || sleeps[1] <= 28*time.Second || sleeps[1] > 30*time.Second || sleeps[2] <= 0 || sleeps[3] <= 0 {
				t.Errorf("waits %v: want 2s, about 30s, then backoffs", sleeps)
			}
			kinds := []error{llm.ErrRateLimit, llm.ErrRateLimit, llm.ErrOverloaded, llm.ErrOverloaded}
			for i, r := range ev.retries {
				if r.Attempt != i+2 || r.Wait != sleeps[i] || !errors.Is(r.Err, kinds[i]) {
					t.Errorf("retry %d: %+v", i, r)
				}
			}
			if !strings.Contains(ev.retries[0].Err.Error(), "Rate limit reached") {
				t.Errorf("the retry's error lost the server's message: %v", ev.retries[0].Err)
			}
			if resp.Text == "" {
				t.Errorf("no text after the retries: %+v", resp)
			}
		})
	}
}

// TestOpenAIErrors: answers that are not retried are classified, with the
// server's message.
func TestOpenAIErrors(t *testing.T) {
	for _, a := range apis {
		for _, c := range []struct {
			name, file string
			status     int
			kind       error
			message    string
		}{
			{"openai-context", "openai-400-context-length.json", http.StatusBadRequest, llm.ErrContextOverflow, "maximum context length"},
			{"llama-context", "llama-context-overflow.json", http.StatusBadRequest, llm.ErrContextOverflow, "exceeds the available context size"},
			{"auth", "openai-401-invalid-key.json", http.StatusUnauthorized, llm.ErrAuth, "Incorrect API key"},
			{"model", "openai-404-model-not-found.json", http.StatusNotFound, llm.ErrModelNotFound, "does not exist"},
		} {
			t.Run(a.api+"/"+c.name, func(t *testing.T) {
				body := recording(t, c.file)
				f := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeJSON(w, c.status, nil, body) })
				var ev events
				_, err := f.provider(t, compatible(a.api), nil).Stream(context.Background(), simpleRequest(), ev.emit)
				var e *llm.Error
				if !errors.Is(err, c.kind) || !errors.As(err, &e) || e.Status != c.status || !strings.Contains(e.Message, c.message) {
					t.Fatalf("error %v (%#v), want %v with %q", err, e, c.kind, c.message)
				}
				if f.count() != 1 || len(ev.all) != 0 {
					t.Errorf("%d requests, events %+v: want one request, no retry", f.count(), ev.all)
				}
			})
		}
	}
}

// TestOpenAIStreamCut: a stream whose connection closes mid-way, without
// its end, is a stream error, not retried, after the text it gave.
func TestOpenAIStreamCut(t *testing.T) {
	for _, a := range apis {
		t.Run(a.api, func(t *testing.T) {
			evs := sseEvents(recording(t, a.text))
			f := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				writeSSE(w, evs[:len(evs)/2]...)
				panic(http.ErrAbortHandler) // the connection closes, the chunked body unended
			})
			var ev events
			_, err := f.provider(t, compatible(a.api), nil).Stream(context.Background(), simpleRequest(), ev.emit)
			if !errors.Is(err, llm.ErrStream) {
				t.Fatalf("error %v, want a stream error", err)
			}
			if f.count() != 1 || ev.text.Len() == 0 || len(ev.retries) != 0 {
				t.Errorf("%d requests, text %q, retries %+v", f.count(), ev.text.String(), ev.retries)
			}
		})
	}
}

// TestOpenAIStreamEnds: a stream that ends cleanly before the model
// finished (no finish_reason, no response.completed) is a stream error.
func TestOpenAIStreamEnds(t *testing.T) {
	for _, a := range apis {
		t.Run(a.api, func(t *testing.T) {
			evs := sseEvents(recording(t, a.text))
			f := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeSSE(w, evs[:3]...) })
			_, err := f.provider(t, compatible(a.api), nil).Stream(context.Background(), simpleRequest(), func(llm.Event) {})
			if !errors.Is(err, llm.ErrStream) {
				t.Fatalf("error %v, want a stream error", err)
			}
		})
	}
}

// TestOpenAIStreamErrorEvent: an error the server sends in the stream
// ends it with the server's message.
func TestOpenAIStreamErrorEvent(t *testing.T) {
	for _, c := range []struct {
		api, file string
		kind      error
		message   string
	}{
		{llm.APIChat, "llama-chat-stream-error.sse", llm.ErrServer, "peg-native format"},
		{llm.APIResponses, "openai-responses-failed.sse", llm.ErrStream, "failed to generate"},
	} {
		t.Run(c.api, func(t *testing.T) {
			body := recording(t, c.file)
			f := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeSSE(w, body) })
			_, err := f.provider(t, compatible(c.api), nil).Stream(context.Background(), simpleRequest(), func(llm.Event) {})
			if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.message) {
				t.Fatalf("error %v, want %v with %q", err, c.kind, c.message)
			}
		})
	}
}

// TestOpenAIStreamErrorFirst: an error event before anything else is
// classified from its code, and retried when its kind is (written from
// OpenAI's documented formats: a Chat chunk {"error": {...}}, a Responses
// "error" event).
func TestOpenAIStreamErrorFirst(t *testing.T) {
	for _, c := range []struct {
		name, api, event string
		kind             error
	}{
		{"chat-rate-limit", llm.APIChat, `data: {"error": {"message": "Rate limit reached for gpt-4.1 on requests per min (RPM).", "type": "requests", "param": null, "code": "rate_limit_exceeded"}}` + "\n\n", llm.ErrRateLimit},
		{"responses-rate-limit", llm.APIResponses, "event: error\n" + `data: {"type": "error", "code": "rate_limit_exceeded", "message": "Rate limit reached for gpt-4.1 on requests per min (RPM).", "param": null, "sequence_number": 1}` + "\n\n", llm.ErrRateLimit},
		{"chat-server-error", llm.APIChat, `data: {"error": {"message": "The server had an error while processing your request.", "type": "server_error", "param": null, "code": null}}` + "\n\n", llm.ErrStream},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := map[string]string{llm.APIChat: "llama-chat-text.sse", llm.APIResponses: "llama-responses-text.sse"}[c.api]
			stream := recording(t, text)
			f := newFake(t, func(n int, w http.ResponseWriter, _ *http.Request) {
				if n == 1 {
					writeSSE(w, []byte(c.event))
					return
				}
				writeSSE(w, stream)
			})
			var sleeps []time.Duration
			var ev events
			resp, err := f.provider(t, compatible(c.api), &sleeps).Stream(context.Background(), simpleRequest(), ev.emit)
			if c.kind == llm.ErrStream {
				if !errors.Is(err, llm.ErrStream) || !strings.Contains(err.Error(), "processing your request") || f.count() != 1 {
					t.Fatalf("error %v after %d requests, want a stream error, not retried", err, f.count())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.count() != 2 || len(ev.retries) != 1 || !errors.Is(ev.retries[0].Err, c.kind) || resp.Text == "" {
				t.Fatalf("%d requests, retries %+v, response %+v", f.count(), ev.retries, resp)
			}
		})
	}
}

// TestOpenAIMalformedArguments: arguments that are not JSON are no error:
// the call comes with its text as a JSON string.
func TestOpenAIMalformedArguments(t *testing.T) {
	body := recording(t, "llama-chat-malformed-args.sse")
	f := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeSSE(w, body) })
	var ev events
	resp, err := f.provider(t, compatible(llm.APIChat), nil).Stream(context.Background(), simpleRequest(), ev.emit)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.calls) != 2 || resp.Stop != llm.StopToolUse {
		t.Fatalf("calls %+v, stop %q", ev.calls, resp.Stop)
	}
	var s string
	if err := json.Unmarshal(ev.calls[0].Arguments, &s); err != nil || s != `{ "path":"go.mod" ` {
		t.Errorf("malformed arguments %s: want the text as a JSON string", ev.calls[0].Arguments)
	}
	if !validCall(ev.calls[1]) {
		t.Errorf("the valid call: %+v", ev.calls[1])
	}
}

// TestOpenAICancel: cancelling the context mid-stream ends the request at
// once: the server sees its request's context end, the error is
// ErrCanceled and wraps the cause.
func TestOpenAICancel(t *testing.T) {
	for _, a := range apis {
		t.Run(a.api, func(t *testing.T) {
			evs := sseEvents(recording(t, a.text))
			gone := make(chan struct{})
			f := newFake(t, func(_ int, w http.ResponseWriter, r *http.Request) {
				writeSSE(w, evs[:len(evs)/2]...)
				<-r.Context().Done() // until the client goes away
				close(gone)
			})
			cause := errors.New("the user pressed stop")
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			_, err := f.provider(t, compatible(a.api), nil).Stream(ctx, simpleRequest(), func(ev llm.Event) {
				if ev.Kind == llm.EventText {
					cancel(cause)
				}
			})
			if !errors.Is(err, llm.ErrCanceled) || !errors.Is(err, cause) {
				t.Fatalf("error %v, want ErrCanceled wrapping the cause", err)
			}
			<-gone
			if f.count() != 1 {
				t.Errorf("%d requests", f.count())
			}
		})
	}
}

// TestOpenAINoAnswer: a server that cannot be reached is retried (the
// policy's 4 times), then a server error.
func TestOpenAINoAnswer(t *testing.T) {
	for _, a := range apis {
		t.Run(a.api, func(t *testing.T) {
			f := newFake(t, func(int, http.ResponseWriter, *http.Request) {})
			p := f.provider(t, compatible(a.api), nil)
			f.Close()
			var ev events
			_, err := p.Stream(context.Background(), simpleRequest(), ev.emit)
			if !errors.Is(err, llm.ErrServer) || len(ev.retries) != 4 {
				t.Fatalf("error %v after retries %+v, want a server error after 4 retries", err, ev.retries)
			}
		})
	}
}
