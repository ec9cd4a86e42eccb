package llm_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/llm"
)

// An answer over its Limits, streamed by a real HTTP server in every shape
// each adapter reads (text, thoughts, one call's arguments, many calls,
// one endless event), ends the request with a KindAnswerTooLarge error
// that names the setting; the adapter closes the stream there (the server
// fails to write the rest), and nothing over the limits was emitted or
// returned.

// endless is a model server that writes prelude, then chunk (chunk(i) for
// the i-th) until it has written total bytes or a write fails; done says
// whether it wrote them all.
type endless struct {
	prelude string
	chunk   func(i int) string
	done    chan bool
}

const endlessTotal = 64 << 20

func (e *endless) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	n, err := io.WriteString(w, e.prelude)
	for i := 0; err == nil && n < endlessTotal; i++ {
		var m int
		m, err = io.WriteString(w, e.chunk(i))
		n += m
		fl.Flush()
	}
	e.done <- err == nil
}

var testLimits = llm.Limits{Answer: 64 << 10, ToolCall: 32 << 10}

// sse is one server-sent event of data, with its event name when it has one.
func sse(event, data string) string {
	if event == "" {
		return "data: " + data + "\n\n"
	}
	return "event: " + event + "\ndata: " + data + "\n\n"
}

var kib = strings.Repeat("x", 1<<10)

type shape struct {
	name    string
	prelude string
	chunk   func(i int) string
	setting string // the setting the error names
}

func same(s string) func(int) string { return func(int) string { return s } }

// shapes are the oversized answers of each API.
var shapes = map[string][]shape{
	"chat": {
		{"text", "", same(sse("", `{"choices":[{"index":0,"delta":{"content":"`+kib+`"}}]}`)), "agent.maxAnswerSize"},
		{"thoughts", "", same(sse("", `{"choices":[{"index":0,"delta":{"reasoning_content":"`+kib+`"}}]}`)), "agent.maxAnswerSize"},
		{"arguments", sse("", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"write_file","arguments":""}}]}}]}`),
			same(sse("", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"`+kib+`"}}]}}]}`)), "agent.maxToolCallSize"},
		{"calls", "", func(i int) string {
			return sse("", fmt.Sprintf(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":"c%d","type":"function","function":{"name":"read_file","arguments":"%s"}}]}}]}`, i, i, kib))
		}, "agent.maxToolCallSize"},
		{"event", `data: {"choices":[{"index":0,"delta":{"content":"`, same(kib), "agent.maxAnswerSize"},
	},
	"responses": {
		{"text", "", same(sse("response.output_text.delta", `{"type":"response.output_text.delta","item_id":"m1","output_index":0,"content_index":0,"delta":"`+kib+`"}`)), "agent.maxAnswerSize"},
		{"thoughts", "", same(sse("response.reasoning_text.delta", `{"type":"response.reasoning_text.delta","item_id":"r1","output_index":0,"content_index":0,"delta":"`+kib+`"}`)), "agent.maxAnswerSize"},
		{"arguments", sse("response.output_item.added", `{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc1","call_id":"c1","name":"write_file","arguments":""}}`),
			same(sse("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","item_id":"fc1","output_index":0,"delta":"`+kib+`"}`)), "agent.maxToolCallSize"},
		{"calls", "", func(i int) string {
			return sse("response.output_item.done", fmt.Sprintf(`{"type":"response.output_item.done","output_index":%d,"item":{"type":"function_call","id":"fc%d","call_id":"c%d","name":"read_file","arguments":"%s"}}`, i, i, i, kib))
		}, "agent.maxToolCallSize"},
		{"event", "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"", same(kib), "agent.maxAnswerSize"},
	},
	"messages": {
		{"text", anthropicStart(`{"type":"text","text":""}`), same(sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+kib+`"}}`)), "agent.maxAnswerSize"},
		{"thoughts", anthropicStart(`{"type":"thinking","thinking":""}`), same(sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"`+kib+`"}}`)), "agent.maxAnswerSize"},
		{"arguments", anthropicStart(`{"type":"tool_use","id":"t1","name":"write_file","input":{}}`),
			same(sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"`+kib+`"}}`)), "agent.maxToolCallSize"},
		{"calls", anthropicStart(`{"type":"text","text":""}`), func(i int) string {
			return sse("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":"t%d","name":"read_file","input":{"pad":"%s"}}}`, i+1, i, kib))
		}, "agent.maxToolCallSize"},
		{"event", anthropicStart(`{"type":"text","text":""}`) + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"", same(kib), "agent.maxAnswerSize"},
	},
	"gemini": {
		{"text", "", same(sse("", `{"candidates":[{"content":{"role":"model","parts":[{"text":"`+kib+`"}]},"index":0}]}`)), "agent.maxAnswerSize"},
		{"thoughts", "", same(sse("", `{"candidates":[{"content":{"role":"model","parts":[{"text":"`+kib+`","thought":true}]},"index":0}]}`)), "agent.maxAnswerSize"},
		{"arguments", "", same(sse("", `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"write_file","args":{"content":"`+strings.Repeat(kib, 40)+`"}}}]},"index":0}]}`)), "agent.maxToolCallSize"},
		{"calls", "", same(sse("", `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"read_file","args":{"path":"`+kib+`"}}}]},"index":0}]}`)), "agent.maxToolCallSize"},
		{"event", `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"`, same(kib), "agent.maxAnswerSize"},
	},
}

func anthropicStart(block string) string {
	return sse("message_start", `{"type":"message_start","message":{"id":"m1","type":"message","role":"assistant","model":"m","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}`) +
		sse("content_block_start", `{"type":"content_block_start","index":0,"content_block":`+block+`}`)
}

func limitsProfile(api, url string) llm.Profile {
	switch api {
	case "chat":
		return llm.Profile{Name: "t", Provider: llm.ProviderOpenAICompatible, API: llm.APIChat, Model: "m", BaseURL: url + "/v1"}
	case "responses":
		return llm.Profile{Name: "t", Provider: llm.ProviderOpenAI, API: llm.APIResponses, Model: "m", BaseURL: url + "/v1"}
	case "messages":
		return llm.Profile{Name: "t", Provider: llm.ProviderAnthropic, Model: "m", BaseURL: url}
	}
	return llm.Profile{Name: "t", Provider: llm.ProviderGemini, Model: "m", BaseURL: url}
}

func TestAnswerLimits(t *testing.T) {
	for _, api := range []string{"chat", "responses", "messages", "gemini"} {
		for _, sh := range shapes[api] {
			t.Run(api+"/"+sh.name, func(t *testing.T) {
				srv := &endless{prelude: sh.prelude, chunk: sh.chunk, done: make(chan bool, 1)}
				hs := httptest.NewServer(srv)
				defer hs.Close()
				prov, err := llm.New(limitsProfile(api, hs.URL), llm.Options{
					Getenv: func(string) (string, bool) { return "key", true },
					Retry:  llm.RetryPolicy{Max: -1},
				})
				if err != nil {
					t.Fatal(err)
				}
				said := 0
				var calls []llm.ToolCall
				resp, err := prov.Stream(context.Background(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}, Limits: testLimits},
					func(ev llm.Event) {
						said += len(ev.Text)
						if ev.ToolCall != nil {
							calls = append(calls, *ev.ToolCall)
						}
					})
				var e *llm.Error
				if !errors.As(err, &e) || !errors.Is(err, llm.ErrAnswerTooLarge) {
					t.Fatalf("Stream = %v, want an answer_too_large error", err)
				}
				if !strings.Contains(e.Message, sh.setting) || !strings.Contains(e.Message, ".nexus/config.yaml") {
					t.Errorf("the error does not name %s in .nexus/config.yaml: %v", sh.setting, err)
				}
				if wroteAll := <-srv.done; wroteAll {
					t.Errorf("the server wrote all %d bytes: the adapter read the stream to its end", endlessTotal)
				}
				if said > testLimits.Answer {
					t.Errorf("%d bytes of text and thoughts were emitted, over the limit of %d", said, testLimits.Answer)
				}
				checkCalls(t, "emitted", calls)
				if resp != nil {
					checkCalls(t, "returned", resp.ToolCalls)
					if n := len(resp.Text) + len(resp.Thought); n > testLimits.Answer {
						t.Errorf("the response has %d bytes of text and thoughts, over the limit of %d", n, testLimits.Answer)
					}
				}
			})
		}
	}
}

func checkCalls(t *testing.T, how string, calls []llm.ToolCall) {
	t.Helper()
	total := 0
	for _, c := range calls {
		if len(c.Arguments) > testLimits.ToolCall {
			t.Errorf("a call of %d bytes of arguments was %s, over the limit of %d", len(c.Arguments), how, testLimits.ToolCall)
		}
		total += len(c.Arguments)
	}
	if total > 4*testLimits.ToolCall {
		t.Errorf("calls of %d bytes in all were %s, over 4 × %d", total, how, testLimits.ToolCall)
	}
}

// Under the limits, the answer is whole: the budget counts, it does not cut.
func TestAnswerUnderLimits(t *testing.T) {
	text := strings.Repeat(kib, 63)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for range 63 {
			io.WriteString(w, sse("", `{"choices":[{"index":0,"delta":{"content":"`+kib+`"}}]}`))
		}
		io.WriteString(w, sse("", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"write_file","arguments":"{\"content\":\"`+strings.Repeat(kib, 31)+`\"}"}}]}}]}`))
		io.WriteString(w, sse("", `{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`))
	}))
	defer hs.Close()
	prov, err := llm.New(limitsProfile("chat", hs.URL), llm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := prov.Stream(context.Background(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}, Limits: testLimits}, func(llm.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != text || len(resp.ToolCalls) != 1 || len(resp.ToolCalls[0].Arguments) != 31<<10+len(`{"content":""}`) {
		t.Errorf("got %d bytes of text and calls %d", len(resp.Text), len(resp.ToolCalls))
	}
}
