package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/integration/localllm"
)

// The agent through the editor's door: the real nexusd --stdio, a real
// llama-server with a tiny random model (integration/localllm), and the
// real adapters. The model is random: the tests check shapes (tool calls,
// their Nexus ids, statuses, stop reasons), never text.

// agentConfig is a workspace config whose model is the llama-server at
// base over api ("chat", "responses" or "messages"), offered tools.
//
// A random model writes random strings: left free, a "path" never ends and
// the stream fails at max tokens. So the model is shown the same tools
// with enum arguments, through extraBody, which replaces the request's
// tools (the adapters merge it last); its calls are still checked against
// the real tools' schemas and run by them.
func agentConfig(base, api string, maxSteps int, tools ...string) string {
	enums := map[string]string{
		"read_file":        `{"path": {"type": "string", "enum": ["README.md", "docs/a.md"]}}`,
		"list_directory":   `{"path": {"type": "string", "enum": [".", "docs"]}}`,
		"write_file":       `{"path": {"type": "string", "enum": ["notes.txt"]}, "content": {"type": "string", "enum": ["hello"]}}`,
		"get_current_time": `{"timezone": {"type": "string", "enum": ["UTC", "Europe/Berlin"]}}`,
	}
	var defs []string
	for _, name := range tools {
		required := map[string]string{"write_file": `["path", "content"]`, "get_current_time": `["timezone"]`}[name]
		if required == "" {
			required = `["path"]`
		}
		schema := fmt.Sprintf(`{"type": "object", "properties": %s, "required": %s, "additionalProperties": false}`, enums[name], required)
		switch api {
		case "chat":
			defs = append(defs, fmt.Sprintf(`{"type": "function", "function": {"name": %q, "description": "%s", "parameters": %s}}`, name, name, schema))
		case "responses":
			defs = append(defs, fmt.Sprintf(`{"type": "function", "name": %q, "description": "%s", "parameters": %s}`, name, name, schema))
		case "messages":
			defs = append(defs, fmt.Sprintf(`{"name": %q, "description": "%s", "input_schema": %s}`, name, name, schema))
		}
	}
	extra := fmt.Sprintf(`{"tool_choice": "required", "logit_bias": {"5": 50, "4": 100}, "tools": [%s]}`, strings.Join(defs, ", "))
	if api == "messages" {
		// llama-server's Anthropic endpoint ignores both (see
		// integration/localllm/testdata/README.md).
		extra = fmt.Sprintf(`{"tool_choice": {"type": "any"}, "tools": [%s]}`, strings.Join(defs, ", "))
	}
	return fmt.Sprintf(`llm:
  provider: openai-compatible
  api: %s
  baseURL: %s/v1
  model: tiny
  maxOutputTokens: 1024
  contextWindow: 16384
  extraBody: %s
agent:
  maxSteps: %d
  tools: [%s]
`, api, base, extra, maxSteps, strings.Join(tools, ", "))
}

type agentUpdate struct {
	SessionID string `json:"sessionId"`
	Update    struct {
		SessionUpdate string          `json:"sessionUpdate"`
		ToolCallID    string          `json:"toolCallId"`
		Status        string          `json:"status"`
		Title         string          `json:"title"`
		RawInput      json.RawMessage `json:"rawInput"`
	} `json:"update"`
}

type promptResult struct {
	StopReason string `json:"stopReason"`
	Usage      struct {
		Requests     int `json:"requests"`
		InputTokens  int `json:"inputTokens"`
		OutputTokens int `json:"outputTokens"`
	} `json:"usage"`
}

// updates are the nexus/agent/update notifications of a session so far.
func (e *editor) agentUpdates(session string) []agentUpdate {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []agentUpdate
	for _, n := range e.notes {
		if n.method != "nexus/agent/update" {
			continue
		}
		var u agentUpdate
		if err := json.Unmarshal(n.params, &u); err != nil {
			e.t.Fatalf("nexus/agent/update %s: %v", n.params, err)
		}
		if u.SessionID == session {
			out = append(out, u)
		}
	}
	return out
}

// toolCallNotes are the nexus/toolCall notifications of one call.
func (e *editor) toolCallNotes(id string) []map[string]any {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []map[string]any
	for _, n := range e.notes {
		if n.method != "nexus/toolCall" {
			continue
		}
		var c map[string]any
		json.Unmarshal(n.params, &c)
		if c["toolCallId"] == id {
			out = append(out, c)
		}
	}
	return out
}

func newSession(t *testing.T, e *editor) string {
	t.Helper()
	var res struct {
		Session struct {
			ID string `json:"sessionId"`
		} `json:"session"`
		Commands []struct {
			Name string `json:"name"`
		} `json:"availableCommands"`
	}
	e.mustCall("nexus/agent/sessions/new", map[string]any{}, &res)
	if res.Session.ID == "" || len(res.Commands) < 10 {
		t.Fatalf("sessions/new = %+v", res)
	}
	return res.Session.ID
}

// TestAgentEditor: a prompt → the model calls read_file and
// list_directory → they run as Nexus tool calls by agent:<session>, seen
// as nexus/toolCall and nexus/agent/update → the results go back → the
// turn ends; then the daemon restarts and the session is loaded again.
func TestAgentEditor(t *testing.T) {
	base := localllm.Start(t)
	for _, api := range []string{"chat", "responses", "messages"} {
		t.Run(api, func(t *testing.T) {
			ws := newWorkspace(t, agentConfig(base, api, 2, "read_file", "list_directory"))
			os.WriteFile(filepath.Join(ws, "README.md"), []byte("# hello\n"), 0o644)
			os.MkdirAll(filepath.Join(ws, "docs"), 0o755)
			os.WriteFile(filepath.Join(ws, "docs", "a.md"), []byte("a\n"), 0o644)
			e := startEditor(t, ws)
			e.initialize(os.Getpid())
			id := newSession(t, e)

			var res promptResult
			var calls []agentUpdate
			// llama-server's /v1/messages does not force tool calls: a few
			// tries until one turn calls a tool.
			for try := 0; try < 8 && len(calls) == 0; try++ {
				if err := e.call("nexus/agent/prompt", map[string]any{"sessionId": id, "prompt": "Look at the workspace."}, &res); err != nil {
					if api == "messages" && strings.Contains(err.Message, "peg-native") {
						continue // llama-server's own mid-stream error, now and then
					}
					t.Fatalf("prompt: %v\n%s", err, e.log())
				}
				for _, u := range e.agentUpdates(id) {
					if u.Update.SessionUpdate == "tool_call" {
						calls = append(calls, u)
					}
				}
			}
			if len(calls) == 0 {
				t.Fatalf("no tool call in 8 turns; updates: %+v", e.agentUpdates(id))
			}
			switch res.StopReason {
			case "end_turn", "max_turn_requests", "max_tokens":
			default:
				t.Errorf("stop reason %q", res.StopReason)
			}
			// llama-server's /v1/messages sometimes sends no message_start,
			// which carries the input tokens: some usage is enough there.
			if res.Usage.Requests == 0 || res.Usage.InputTokens+res.Usage.OutputTokens == 0 || (api != "messages" && res.Usage.InputTokens == 0) {
				t.Errorf("usage = %+v", res.Usage)
			}
			for _, c := range calls {
				notes := e.toolCallNotes(c.Update.ToolCallID)
				if len(notes) == 0 {
					t.Fatalf("no nexus/toolCall for agent call %s", c.Update.ToolCallID)
				}
				last := notes[len(notes)-1]
				if n := last["toolName"]; n != "read_file" && n != "list_directory" {
					t.Errorf("the agent called %v", n)
				}
				if last["author"] != "agent:"+id || last["taskId"] != id {
					t.Errorf("nexus/toolCall = %v, want author agent:%s", last, id)
				}
				if s := last["status"]; s != "completed" && s != "error" {
					t.Errorf("final status %v", s)
				}
				var final string
				for _, u := range e.agentUpdates(id) {
					if u.Update.ToolCallID == c.Update.ToolCallID && u.Update.SessionUpdate == "tool_call_update" {
						final = u.Update.Status
					}
				}
				if final != "completed" && final != "failed" {
					t.Errorf("call %s ended %q in the updates", c.Update.ToolCallID, final)
				}
			}

			// A restart: the session is listed and loads with its calls.
			e.notify("exit", nil)
			e.waitExit("exit")
			e2 := startEditor(t, ws)
			e2.initialize(os.Getpid())
			var list struct {
				Sessions []struct {
					ID       string `json:"sessionId"`
					Messages int    `json:"messages"`
				} `json:"sessions"`
			}
			e2.mustCall("nexus/agent/sessions/list", map[string]any{}, &list)
			if len(list.Sessions) != 1 || list.Sessions[0].ID != id || list.Sessions[0].Messages < 3 {
				t.Fatalf("after restart: %+v", list)
			}
			var loaded struct {
				Updates []struct {
					SessionUpdate string `json:"sessionUpdate"`
					ToolCallID    string `json:"toolCallId"`
				} `json:"updates"`
			}
			e2.mustCall("nexus/agent/sessions/load", map[string]any{"sessionId": id}, &loaded)
			n := 0
			for _, u := range loaded.Updates {
				if u.SessionUpdate == "tool_call" {
					n++
				}
			}
			if n == 0 {
				t.Errorf("the loaded session shows no tool call: %+v", loaded.Updates)
			}
			if got := e2.agentUpdates(id); len(got) < len(loaded.Updates) {
				t.Errorf("load sent %d updates as notifications, answered %d", len(got), len(loaded.Updates))
			}
		})
	}
}

// TestAgentEditorCancelWhileAsking: Stop while the agent's write_file
// waits for the person ends the turn cancelled, and the call with code
// cancelled, "the call was cancelled" (the person stopped it; not "the
// caller went away"); nothing is written.
func TestAgentEditorCancelWhileAsking(t *testing.T) {
	base := localllm.Start(t)
	ws := newWorkspace(t, agentConfig(base, "chat", 1, "write_file"))
	e := startEditor(t, ws)
	e.permission = "never"
	e.initialize(os.Getpid())
	id := newSession(t, e)
	_, ch := e.start("nexus/agent/prompt", map[string]any{"sessionId": id, "prompt": "Write a file."})
	var asked string
	e.await("the agent's write_file to ask", 60*time.Second, func() bool {
		for _, r := range e.requests {
			if r.method == "nexus/requestPermission" {
				var p struct {
					ToolCall struct {
						ToolCallID string `json:"toolCallId"`
					} `json:"toolCall"`
				}
				json.Unmarshal(r.params, &p)
				asked = p.ToolCall.ToolCallID
				return true
			}
		}
		return false
	})
	e.mustCall("nexus/agent/cancel", map[string]any{"sessionId": id}, nil)
	var res promptResult
	if m := e.wait("the cancelled prompt", ch); m.Error != nil || json.Unmarshal(m.Result, &res) != nil || res.StopReason != "cancelled" {
		t.Fatalf("prompt answered %s %+v", m.Result, m.Error)
	}
	var last map[string]any
	e.await("the asked call's end", 30*time.Second, func() bool { // under e.mu
		for _, n := range e.notes {
			var c map[string]any
			if n.method == "nexus/toolCall" && json.Unmarshal(n.params, &c) == nil && c["toolCallId"] == asked {
				last = c
			}
		}
		return last != nil && last["status"] != "initiated" && last["status"] != "running"
	})
	errObj, _ := last["error"].(map[string]any)
	if last["status"] != "error" || errObj["code"] != "cancelled" || !strings.Contains(fmt.Sprint(errObj["message"]), "the call was cancelled") {
		t.Errorf("the asked call ended %v", last)
	}
	if _, err := os.Stat(filepath.Join(ws, "notes.txt")); err == nil {
		t.Error("notes.txt was written")
	}
}

// TestAgentEditorDenied: the person's agent writing a file is asked even
// though the person's own calls are allowed; the editor rejects it, the
// file is not written, and the model gets a declined result.
func TestAgentEditorDenied(t *testing.T) {
	base := localllm.Start(t)
	ws := newWorkspace(t, agentConfig(base, "chat", 1, "write_file"))
	e := startEditor(t, ws)
	e.permission = "reject_once"
	e.initialize(os.Getpid())
	id := newSession(t, e)
	var res promptResult
	e.mustCall("nexus/agent/prompt", map[string]any{"sessionId": id, "prompt": "Write a file."}, &res)
	if res.StopReason != "max_turn_requests" {
		t.Errorf("stop reason %q", res.StopReason)
	}
	e.mu.Lock()
	asked := 0
	for _, r := range e.requests {
		if r.method == "nexus/requestPermission" {
			asked++
		}
	}
	e.mu.Unlock()
	if asked == 0 {
		t.Fatalf("the agent's write_file was not asked about\n%s", e.log())
	}
	var calls []string
	for _, u := range e.agentUpdates(id) {
		if u.Update.SessionUpdate == "tool_call" {
			calls = append(calls, u.Update.ToolCallID)
		}
	}
	for _, c := range calls {
		notes := e.toolCallNotes(c)
		last := notes[len(notes)-1]
		errObj, _ := last["error"].(map[string]any)
		if last["status"] != "error" || errObj["code"] != "permission_denied" {
			t.Errorf("denied call = %v", last)
		}
	}
	entries, _ := os.ReadDir(ws)
	for _, en := range entries {
		if en.Name() == "notes.txt" {
			t.Errorf("the workspace has %s: a rejected write ran", en.Name())
		}
	}
}

// TestAgentEditorCancel: nexus/agent/cancel in the middle of a long turn
// ends it with stop reason cancelled, and the session goes on.
func TestAgentEditorCancel(t *testing.T) {
	base := localllm.Start(t)
	ws := newWorkspace(t, agentConfig(base, "chat", 1000, "list_directory"))
	e := startEditor(t, ws)
	e.initialize(os.Getpid())
	id := newSession(t, e)
	_, ch := e.start("nexus/agent/prompt", map[string]any{"sessionId": id, "prompt": "Keep looking."})
	e.await("a tool call of the agent", 60*time.Second, func() bool {
		for _, n := range e.notes {
			if n.method == "nexus/agent/update" && strings.Contains(string(n.params), `"tool_call"`) {
				return true
			}
		}
		return false
	})
	var c struct {
		Cancelled bool `json:"cancelled"`
	}
	e.mustCall("nexus/agent/cancel", map[string]any{"sessionId": id}, &c)
	m := e.wait("the cancelled prompt", ch)
	var res promptResult
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || res.StopReason != "cancelled" || !c.Cancelled {
		t.Fatalf("cancel = %+v, prompt answered %s %+v", c, m.Result, m.Error)
	}
	if err := e.call("nexus/agent/prompt", map[string]any{"sessionId": id, "prompt": "/cost"}, &res); err != nil {
		t.Errorf("the session after cancel: %v", err)
	}
}
