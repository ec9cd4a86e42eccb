package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// scriptedModel is a prompt-injected model, played by the tests: an
// OpenAI-compatible chat completions server (SSE) that answers a request
// whose last message is not a tool result with the tool call set by next,
// and any other with the text set by say ("done" until then).
type scriptedModel struct {
	url string

	mu       sync.Mutex
	name     string // of the tool call; "" answers text
	args     string
	text     string
	requests int
	// queue are tool calls made one a request, before name and args: a
	// turn of several calls in a row.
	queue []scriptedCall
	// bodies are the requests' bodies, in order.
	bodies [][]byte
	// refuseSummaries answers a request for a compaction's summary with
	// HTTP 400 (no retry): a summary that fails.
	refuseSummaries bool
}

// summaryAsk begins the request for a compaction's summary (the last
// message of /compact's and of an automatic compaction's request).
const summaryAsk = "Summarise our conversation so far"

// isSummaryRequest reports whether a request body asks for a summary.
func isSummaryRequest(body []byte) bool {
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.Messages) == 0 {
		return false
	}
	var text string
	json.Unmarshal(req.Messages[len(req.Messages)-1].Content, &text)
	return strings.HasPrefix(text, summaryAsk)
}

// scriptedCall is a tool call of the queue.
type scriptedCall struct{ name, args string }

// then queues tool calls, made one a request whatever the last message.
func (m *scriptedModel) then(calls ...scriptedCall) {
	m.mu.Lock()
	m.queue = append(m.queue, calls...)
	m.mu.Unlock()
}

func startScriptedModel(t *testing.T) *scriptedModel {
	t.Helper()
	m := &scriptedModel{text: "done"}
	srv := httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(srv.Close)
	m.url = srv.URL
	return m
}

// next makes the model call tool name with args (JSON) until changed; ""
// makes it answer text.
func (m *scriptedModel) next(name, args string) {
	m.mu.Lock()
	m.name, m.args = name, args
	m.mu.Unlock()
}

// config is the llm section of a workspace whose model is m.
func (m *scriptedModel) config() string {
	return fmt.Sprintf("llm:\n  provider: openai-compatible\n  api: chat\n  baseURL: %s/v1\n  model: scripted\nagent:\n  maxSteps: 3\n", m.url)
}

// requestBodies are the bodies of the requests the model had so far.
func (m *scriptedModel) requestBodies() [][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.bodies)
}

func (m *scriptedModel) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, "not a chat completions request", http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.requests++
	m.bodies = append(m.bodies, body)
	n, name, args, text := m.requests, m.name, m.args, m.text
	if m.refuseSummaries && isSummaryRequest(body) {
		m.mu.Unlock()
		http.Error(w, `{"error":{"message":"no summary today","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	queued := len(m.queue) > 0
	if queued {
		name, args, m.queue = m.queue[0].name, m.queue[0].args, m.queue[1:]
	}
	m.mu.Unlock()
	if !queued && len(req.Messages) > 0 && req.Messages[len(req.Messages)-1].Role == "tool" {
		name = ""
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion.chunk", "created": 1, "model": "scripted",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	if name == "" {
		send(map[string]any{"role": "assistant", "content": text}, nil)
		send(map[string]any{}, "stop")
	} else {
		send(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": fmt.Sprintf("call_%d", n), "type": "function",
			"function": map[string]any{"name": name, "arguments": args}}}}, nil)
		send(map[string]any{}, "tool_calls")
	}
	b, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion.chunk", "created": 1, "model": "scripted",
		"choices": []any{}, "usage": map[string]any{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
}
