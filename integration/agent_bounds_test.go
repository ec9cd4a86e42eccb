package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// A prompt-injected model, played by the test as an OpenAI-compatible
// server, against the agent through the editor's door of the real nexusd:
// it may call only the tools it was offered, and its answer is read only
// up to agent.maxAnswerSize and agent.maxToolCallSize.

// chatModel answers each POST /v1/chat/completions with the next of its
// answers, an SSE stream that the answer writes; it keeps the requests'
// bodies. Past its answers it says "ok".
type chatModel struct {
	mu      sync.Mutex
	answers []func(w io.Writer, flush func()) error
	bodies  [][]byte
}

func (m *chatModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	m.mu.Lock()
	m.bodies = append(m.bodies, body)
	answer := func(w io.Writer, flush func()) error {
		_, err := io.WriteString(w, chatDelta(`{"content":"ok"}`, "stop"))
		return err
	}
	if len(m.answers) > 0 {
		answer, m.answers = m.answers[0], m.answers[1:]
	}
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	answer(w, w.(http.Flusher).Flush)
}

func (m *chatModel) requests() [][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bodies
}

// chatDelta is one SSE event of a Chat Completions stream: a delta, and
// the finish reason when it is not "".
func chatDelta(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = fmt.Sprintf("%q", finish)
	}
	return fmt.Sprintf("data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"model\":\"scripted\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", delta, f)
}

// scriptedSession starts the model's server, and nexusd --stdio on a new
// workspace whose model it is, offering tools (agent.tools); it returns
// the editor, the workspace and a new agent session.
func scriptedSession(t *testing.T, model *chatModel, tools string) (*editor, string, string) {
	t.Helper()
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	ws := newWorkspace(t, fmt.Sprintf(`llm:
  provider: openai-compatible
  baseURL: %s/v1
  model: scripted
agent:
  maxSteps: 3
  tools: [%s]
`, srv.URL, tools))
	e := startEditor(t, ws)
	e.initialize(os.Getpid())
	return e, ws, newSession(t, e)
}

// TestAgentCallsOnlyOfferedTools: offered read_file and list_directory
// (agent.tools), the model calls write_file, then the same in other
// cases, with a server's prefix, and a name of no tool. The editor would
// allow any of them; none runs and none is asked: each goes back to the
// model as a tool it was not offered, and the editor sees each failed.
func TestAgentCallsOnlyOfferedTools(t *testing.T) {
	names := []string{"write_file", "WRITE_FILE", "Write_File", "filesystem__write_file", "no_such_tool"}
	var deltas []string
	for i, n := range names {
		deltas = append(deltas, chatDelta(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":"call_%d","type":"function","function":{"name":%q,"arguments":"{\"path\":\"pwned.txt\",\"content\":\"owned\"}"}}]}`, i, i, n), ""))
	}
	model := &chatModel{answers: []func(io.Writer, func()) error{func(w io.Writer, flush func()) error {
		_, err := io.WriteString(w, strings.Join(deltas, "")+chatDelta(`{}`, "tool_calls"))
		return err
	}}}
	e, ws, id := scriptedSession(t, model, "read_file, list_directory")
	var res promptResult
	e.mustCall("nexus/agent/prompt", map[string]any{"sessionId": id, "prompt": "Write pwned.txt."}, &res)
	if res.StopReason != "end_turn" {
		t.Errorf("stop reason %q", res.StopReason)
	}
	if _, err := os.Stat(filepath.Join(ws, "pwned.txt")); err == nil {
		t.Errorf("pwned.txt was written: a tool that was not offered ran")
	}
	e.mu.Lock()
	for _, r := range e.requests {
		if r.method == "nexus/requestPermission" {
			t.Errorf("the person was asked about a tool that was not offered: %s", clipStr(string(r.params)))
		}
	}
	for _, n := range e.notes {
		if n.method == "nexus/toolCall" {
			t.Errorf("a Nexus tool call was made: %s", clipStr(string(n.params)))
		}
	}
	e.mu.Unlock()

	var failed []string
	for _, u := range e.agentUpdates(id) {
		if u.Update.SessionUpdate == "tool_call" {
			if u.Update.Status != "failed" || !strings.Contains(u.Update.Title, "not offered") {
				t.Errorf("tool_call update %+v, want failed and not offered", u.Update)
			}
			failed = append(failed, u.Update.Title)
		}
	}
	if len(failed) != len(names) {
		t.Errorf("the editor saw %d failed calls (%q), want %d", len(failed), failed, len(names))
	}

	// The model was told, call by call, which tools it has.
	reqs := model.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	var second struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    string `json:"content"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[1], &second); err != nil {
		t.Fatal(err)
	}
	results := 0
	for _, m := range second.Messages {
		if m.Role != "tool" {
			continue
		}
		results++
		if !strings.Contains(m.Content, "not offered") || !strings.Contains(m.Content, "list_directory, read_file") {
			t.Errorf("the result of %s: %q", m.ToolCallID, m.Content)
		}
	}
	if results != len(names) {
		t.Errorf("%d tool results went back, want %d", results, len(names))
	}
}

// TestAgentHugeAnswer: the model streams 64 MiB, as text or as one tool
// call's arguments. The prompt ends with an error that names the limit's
// setting; the daemon stopped reading (the model server could not write
// it all), the session file stays small, and the next prompt of the
// session works.
func TestAgentHugeAnswer(t *testing.T) {
	const total = 64 << 20
	piece := strings.Repeat("x", 16<<10)
	for _, tc := range []struct {
		name, prelude, delta, setting string
	}{
		{"text", "", chatDelta(`{"content":"`+piece+`"}`, ""), "agent.maxAnswerSize"},
		{"arguments", chatDelta(`{"tool_calls":[{"index":0,"id":"call_0","type":"function","function":{"name":"read_file","arguments":"{\"path\":\""}}]}`, ""),
			chatDelta(`{"tool_calls":[{"index":0,"function":{"arguments":"`+piece+`"}}]}`, ""), "agent.maxToolCallSize"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wroteAll := make(chan bool, 1)
			model := &chatModel{answers: []func(io.Writer, func()) error{func(w io.Writer, flush func()) error {
				n, err := io.WriteString(w, tc.prelude)
				for err == nil && n < total {
					var m int
					m, err = io.WriteString(w, tc.delta)
					n += m
					flush()
				}
				if err == nil {
					_, err = io.WriteString(w, chatDelta(`{}`, "stop"))
				}
				wroteAll <- err == nil
				return err
			}}}
			e, ws, id := scriptedSession(t, model, "read_file")
			before := rssKiB(t, e.cmd.Process.Pid, "VmRSS")

			err := e.call("nexus/agent/prompt", map[string]any{"sessionId": id, "prompt": "Say everything."}, nil)
			if err == nil || !strings.Contains(err.Message, tc.setting) {
				t.Errorf("the prompt answered %v, want an error naming %s", err, tc.setting)
			}
			if err != nil {
				t.Logf("the prompt's error: %s", err.Message)
			}
			if <-wroteAll {
				t.Errorf("the model server wrote all %d bytes: the daemon read the answer to its end", total)
			}
			t.Logf("nexusd RSS %d KiB before the answer, %d KiB after (not checked)", before, rssKiB(t, e.cmd.Process.Pid, "VmRSS"))
			said := 0
			for _, u := range e.agentUpdates(id) {
				if u.Update.SessionUpdate == "agent_message_chunk" {
					said++
				}
			}
			if said*len(piece) > 1<<20 {
				t.Errorf("the editor was sent %d pieces of the answer, over agent.maxAnswerSize", said)
			}
			if fi, err := os.Stat(filepath.Join(ws, ".nexus", "sessions", id+".jsonl")); err != nil {
				t.Error(err)
			} else if fi.Size() > 64<<10 {
				t.Errorf("the session file has %d bytes; want it small", fi.Size())
			}

			var res promptResult
			if err := e.call("nexus/agent/prompt", map[string]any{"sessionId": id, "prompt": "Say less."}, &res); err != nil || res.StopReason != "end_turn" {
				t.Fatalf("the next prompt: %+v, %v", res, err)
			}
		})
	}
}
