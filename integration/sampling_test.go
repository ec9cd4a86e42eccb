package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/integration/localllm"
)

// trustAsking approves the asking server from the editor and waits until
// it is ready.
func trustAsking(t *testing.T, e *editor) {
	t.Helper()
	var pin string
	e.await("the server waiting for approval", 30*time.Second, func() bool {
		for _, n := range e.notes {
			var st struct{ Name, State, Pin string }
			if n.method == "nexus/mcpServerStatus" && json.Unmarshal(n.params, &st) == nil && st.Name == "asking" && st.State == "pending_approval" {
				pin = st.Pin
				return true
			}
		}
		return false
	})
	e.mustCall("nexus/mcp/trust", map[string]any{"name": "asking", "pin": pin}, nil)
	e.await("the server ready", 30*time.Second, func() bool {
		for _, n := range e.notes {
			if n.method == "nexus/mcpServerStatus" && strings.Contains(string(n.params), `"name":"asking"`) && strings.Contains(string(n.params), `"state":"ready"`) {
				return true
			}
		}
		return false
	})
}

// TestSamplingWithTheLocalModel: a server's sampling request during a CLI
// call is a call of asking/mcp_sampling, asked of the editor with its
// ICERC record (the model, the messages); approved, the real llama-server
// answers through the configured profile; rejected, the server gets
// "User rejected sampling request"; "always" is remembered for the server.
func TestSamplingWithTheLocalModel(t *testing.T) {
	base := localllm.Start(t)
	a, url := askingServer(t)
	ws := newWorkspace(t, fmt.Sprintf(`llm:
  profiles:
    local:
      provider: openai-compatible
      baseURL: %s/v1
      model: tiny
      maxOutputTokens: 64
mcp:
  sampling:
    profile: local
    maxTokens: 16
`, base))
	writeMCP(t, ws, `"asking": {"type": "http", "url": `+quote(url)+`}`)
	e := startEditor(t, ws)
	e.initialize(os.Getpid())
	trustAsking(t, e)
	setPermission, permissions := e.setPermission, e.permissionRequests
	run := func(prompt string) (string, string, int) {
		return nexus(t, ws, "", "tools", "run", "sample", "--server", "asking", "--args", `{"prompt":"`+prompt+`","system":"Be brief.","maxTokens":200}`)
	}

	// Approved once: the model answers.
	setPermission("allow_once")
	out, errOut, code := run("Say hello.")
	if code != 0 {
		t.Fatalf("nexus tools run sample: %d\n%s%s", code, out, errOut)
	}
	o := seen(t, a)
	var res struct {
		Model, Role, StopReason string
		Content                 struct{ Type, Text string }
	}
	if err := json.Unmarshal([]byte(o.JSON), &res); err != nil || res.Role != "assistant" || res.Content.Type != "text" || res.Model == "" ||
		(res.StopReason != "endTurn" && res.StopReason != "maxTokens") {
		t.Fatalf("the server saw %+v (%v)", o, err)
	}
	asked := permissions()
	if len(asked) != 1 {
		t.Fatalf("%d permission requests, want 1", len(asked))
	}
	var perm struct {
		ToolCall struct {
			ToolName, ServerName, Author, RequestID string
		} `json:"toolCall"`
		Icerc struct {
			Intent, Command string
			Risk            struct {
				Level, Scope string
				Details      []string
			}
		} `json:"icerc"`
	}
	json.Unmarshal([]byte(asked[0]), &perm)
	if perm.ToolCall.ToolName != "mcp_sampling" || perm.ToolCall.ServerName != "asking" || perm.ToolCall.Author != "mcp:asking" ||
		perm.ToolCall.RequestID == "" || !strings.Contains(perm.Icerc.Command, "ask model tiny (profile local, openai-compatible) for at most 16 tokens") ||
		!strings.Contains(perm.Icerc.Command, "system: Be brief.") || !strings.Contains(perm.Icerc.Command, "user: Say hello.") ||
		perm.Icerc.Risk.Level != "medium" || !strings.Contains(perm.Icerc.Intent, `MCP server "asking" asks the model tiny`) {
		t.Errorf("the permission request: %s", asked[0])
	}
	// The sampling is a call in the activity stream, within the CLI's call.
	e.await("the sampling call completed", 30*time.Second, func() bool {
		for _, n := range e.notes {
			if n.method == "nexus/toolCall" && strings.Contains(string(n.params), `"toolName":"mcp_sampling"`) &&
				strings.Contains(string(n.params), `"status":"completed"`) && strings.Contains(string(n.params), `"requestId":"`+perm.ToolCall.RequestID+`"`) {
				return true
			}
		}
		return false
	})
	if !strings.Contains(errOut, perm.ToolCall.RequestID) {
		t.Errorf("the sampling came in call %s, the CLI ran:\n%s", perm.ToolCall.RequestID, errOut)
	}

	// Rejected: the server hears the person said no.
	setPermission("reject_once")
	if _, errOut, code := run("Say no."); code == 0 || !strings.Contains(errOut, "User rejected sampling request") {
		t.Errorf("a rejected sampling: exit %d\n%s", code, errOut)
	}
	if o := seen(t, a); !strings.Contains(o.Err, "User rejected sampling request") {
		t.Errorf("the server saw %+v", o)
	}

	// "Always" is remembered for this server: the next one is not asked.
	setPermission("allow_always")
	if _, errOut, code := run("Again."); code != 0 {
		t.Fatalf("allow_always: %d\n%s", code, errOut)
	}
	seen(t, a)
	n := len(permissions())
	setPermission("never")
	if _, errOut, code := run("Once more."); code != 0 || len(permissions()) != n {
		t.Errorf("after allow_always: exit %d, %d permission requests (was %d)\n%s", code, len(permissions()), n, errOut)
	}
	seen(t, a)
	var list struct {
		Approvals []struct{ ToolName, ServerName string }
	}
	e.mustCall("nexus/approvals/list", map[string]any{}, &list)
	if len(list.Approvals) != 1 || list.Approvals[0].ToolName != "mcp_sampling" || list.Approvals[0].ServerName != "asking" {
		t.Errorf("remembered: %+v", list)
	}
}

// TestChatElicitation: nexus chat asks an MCP server's question inline,
// field by field, during the agent's call of the server's tool (the tiny
// model is made to call it, with fixed arguments), and the server gets the
// answer.
func TestChatElicitation(t *testing.T) {
	base := localllm.Start(t)
	a, url := askingServer(t)
	schema := `{"type":"object","properties":{"name":{"type":"string","title":"Name","default":"Ann"},"age":{"type":"integer"}},"required":["age"]}`
	params := fmt.Sprintf(`{"type": "object", "properties": {"message": {"type": "string", "enum": ["Who are you?"]}, "schema": {"type": "string", "enum": [%s]}}, "required": ["message", "schema"], "additionalProperties": false}`, quote(schema))
	extra := fmt.Sprintf(`{"tool_choice": "required", "tools": [{"type": "function", "function": {"name": "asking__ask", "description": "ask", "parameters": %s}}]}`, params)
	ws := newWorkspace(t, fmt.Sprintf(`llm:
  provider: openai-compatible
  baseURL: %s/v1
  model: tiny
  maxOutputTokens: 1024
  contextWindow: 16384
  extraBody: %s
agent:
  maxSteps: 1
  tools: ["asking/*"]
tools:
  policy:
    "asking/*": allow
`, base, extra))
	writeMCP(t, ws, `"asking": {"type": "http", "url": `+quote(url)+`}`)
	d := startDaemon(t, ws)
	d.trustMCP("asking")
	d.waitMCP("asking", "ready")
	tm := startChat(t, ws)
	tm.await("the prompt", ready)
	const answer = "Answer? [y]es, fill in the form / [n]o, decline / [c]ancel: "
	for try := 0; ; try++ {
		mark := len(tm.text())
		tm.send("Ask me.")
		s := tm.await("the question or the prompt", func(s string) bool {
			return strings.Contains(s[mark:], answer) || strings.Count(s[mark:], "\n> ") > 0
		})
		if strings.Contains(s[mark:], answer) {
			break
		}
		if try == 4 {
			t.Fatalf("the model never called asking/ask:\n%s", s)
		}
	}
	tm.send("y")
	tm.await("the name", func(s string) bool { return strings.HasSuffix(s, "Name [Ann]: ") })
	tm.send("")
	tm.await("the age", func(s string) bool { return strings.HasSuffix(s, "age (integer; required): ") })
	tm.send("x")
	tm.await("the age again", func(s string) bool {
		return strings.HasSuffix(s, `"x" is not a number`+"\n  age (integer; required): ")
	})
	tm.send("42")
	if o := seen(t, a); o.JSON != `{"action":"accept","content":{"age":42,"name":"Ann"}}` {
		t.Errorf("the server saw %+v\n%s", o, tm.text())
	}
	// The model may call the tool more than once in its step: the other
	// questions are declined.
	var s string
	for asked := strings.Count(tm.text(), answer); ; asked++ {
		s = tm.await("the prompt after the turn", func(s string) bool {
			return strings.HasSuffix(s, "\n> ") || strings.Count(s, answer) > asked
		})
		if strings.Count(s, answer) == asked {
			break
		}
		tm.send("n")
		select {
		case o := <-a.Seen:
			if o.JSON != `{"action":"decline"}` {
				t.Errorf("the server saw %+v", o)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the server saw no decline:\n%s", tm.text())
		}
	}
	if !strings.Contains(s, "MCP server asking asks (during the call asking/ask):") || !strings.Contains(s, "Who are you?") {
		t.Errorf("the chat:\n%s", s)
	}
	tm.send("/quit")
	<-tm.ended
}
