package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/integration/localllm"
)

// The official ACP TypeScript SDK's client (@agentclientprotocol/sdk)
// against nexusd acp, the Nexus agent over the Agent Client Protocol on
// stdio: integration/acpclient/client.mjs, run by the Node 22 and the SDK
// that scripts/mcp-conformance.sh install puts into
// ~/.cache/nexus/mcp-conformance ($NEXUS_MCP_CONFORMANCE_DIR), pinned by
// integration/mcpconformance/package-lock.json (make test installs them).
// The agent's model is the local llama-server with a tiny random model
// (integration/localllm): the steps check shapes, never text.

// acpToolCall is a tool call as client.mjs reports it.
type acpToolCall struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Kind   string `json:"kind"`
	Status string `json:"status"`
}

// acpResult is the JSON line a step of client.mjs prints.
type acpResult struct {
	SessionID  string        `json:"sessionId"`
	StopReason string        `json:"stopReason"`
	ToolCalls  []acpToolCall `json:"toolCalls"`
	Allowed    []acpToolCall `json:"allowed"`
	Rejected   []acpToolCall `json:"rejected"`
	Replayed   []acpToolCall `json:"replayed"`
}

// idleModel configures a model that the steps without model requests
// (initialize, commands, errors) never call: nothing listens at its
// address.
const idleModel = `llm:
  provider: openai-compatible
  api: chat
  baseURL: http://127.0.0.1:9/v1
  model: tiny
`

// auditedCall is a line of .nexus/audit/toolcalls.jsonl.
type auditedCall struct {
	ID       string `json:"toolCallId"`
	ToolName string `json:"toolName"`
	Status   string `json:"status"`
	Author   string `json:"author"`
	Error    *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// audited reads the workspace's audit log of finished tool calls, by id;
// client.mjs waits for nexusd acp's exit, which writes what is queued.
func audited(t *testing.T, ws string) map[string]auditedCall {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ws, ".nexus", "audit", "toolcalls.jsonl"))
	if err != nil {
		t.Fatalf("the audit log of tool calls: %v", err)
	}
	calls := map[string]auditedCall{}
	lines := bufio.NewScanner(bytes.NewReader(data))
	lines.Buffer(nil, 16<<20)
	for lines.Scan() {
		var c auditedCall
		if err := json.Unmarshal(lines.Bytes(), &c); err != nil {
			t.Fatalf("audit log line %q: %v", lines.Text(), err)
		}
		calls[c.ID] = c
	}
	return calls
}

// checkAudited checks that each call the client saw is a Nexus tool call
// of the session's agent: in the audit log, of one of the tools, ended
// with status.
func checkAudited(t *testing.T, ws, session string, calls []acpToolCall, status string, tools ...string) {
	t.Helper()
	log := audited(t, ws)
	for _, c := range calls {
		a, ok := log[c.ID]
		switch {
		case !ok:
			t.Errorf("tool call %s (%s) is not in the audit log: not a Nexus tool call id", c.ID, c.Title)
		case !strings.HasPrefix(a.Author, "agent:"):
			t.Errorf("tool call %s was made by %q, want the agent (agent:%s)", c.ID, a.Author, session)
		case a.Status != status:
			t.Errorf("tool call %s ended %s in the audit log, want %s (error %+v)", c.ID, a.Status, status, a.Error)
		default:
			found := false
			for _, name := range tools {
				found = found || a.ToolName == name
			}
			if !found {
				t.Errorf("tool call %s is a call of %s, want one of %v", c.ID, a.ToolName, tools)
			}
		}
	}
}

func noFile(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		t.Errorf("%s is on the disk: a write went around the client's fs/write_text_file", path)
	}
}

// TestACPClientTS runs each step of client.mjs (see there) against a
// workspace of its own; each step launches nexusd acp itself, and the load
// step twice.
func TestACPClientTS(t *testing.T) {
	node, script := tsClient(t, "acpclient/client.mjs")
	nexusd := filepath.Join(binDir, "nexusd")

	// model is the llama-server's base URL, started by the first step that
	// needs a model (and skipped without root, as localllm needs it).
	parent := t
	var base string
	model := func(t *testing.T) string {
		t.Helper()
		localllm.Install(t)
		if base == "" {
			b, stop, err := localllm.Serve()
			if err != nil {
				t.Fatal(err)
			}
			parent.Cleanup(stop)
			base = b
		}
		return base
	}

	// workspace makes a workspace with config and the files the model's
	// tools name (agentConfig's enums).
	workspace := func(t *testing.T, config string) string {
		t.Helper()
		ws := newWorkspace(t, config)
		os.MkdirAll(filepath.Join(ws, "docs"), 0o755)
		for name, text := range map[string]string{"README.md": "# README as the disk has it\n", "docs/a.md": "a\n"} {
			if err := os.WriteFile(filepath.Join(ws, filepath.FromSlash(name)), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return ws
	}

	// step runs client.mjs NAME on ws and returns the result it printed.
	step := func(t *testing.T, ws, name string, env ...string) acpResult {
		t.Helper()
		env = append(env, "NEXUSD="+nexusd, "NEXUS_WORKSPACE="+ws)
		out := tsStep(t, node, script, env, name, nil)
		if len(out) != 1 {
			t.Fatalf("client.mjs %s printed %d lines, want its result: %q", name, len(out), out)
		}
		var res acpResult
		if err := json.Unmarshal([]byte(out[0]), &res); err != nil {
			t.Fatalf("client.mjs %s's result %q: %v", name, out[0], err)
		}
		return res
	}

	reads := func(t *testing.T) string {
		return agentConfig(model(t), "chat", 2, "read_file", "list_directory") +
			"tools:\n  policy:\n    read_file: allow\n    list_directory: allow\n"
	}
	writes := func(t *testing.T, policy string) string {
		return agentConfig(model(t), "chat", 1, "write_file") + "tools:\n  policy:\n    write_file: " + policy + "\n"
	}

	t.Run("initialize", func(t *testing.T) {
		step(t, workspace(t, idleModel), "initialize")
	})

	t.Run("session_new", func(t *testing.T) {
		step(t, workspace(t, idleModel), "session-new")
	})

	t.Run("prompt_tools", func(t *testing.T) {
		ws := workspace(t, reads(t))
		res := step(t, ws, "prompt-tools")
		checkAudited(t, ws, res.SessionID, res.ToolCalls, "completed", "read_file", "list_directory")
	})

	t.Run("permission", func(t *testing.T) {
		ws := workspace(t, writes(t, "ask"))
		res := step(t, ws, "permission")
		checkAudited(t, ws, res.SessionID, res.Allowed, "completed", "write_file")
		checkAudited(t, ws, res.SessionID, res.Rejected, "error", "write_file")
		noFile(t, filepath.Join(ws, "notes.txt"))
	})

	t.Run("fs_read", func(t *testing.T) {
		// Only README.md for the model to read.
		config := agentConfig(model(t), "chat", 1, "read_file")
		const both = `"enum": ["README.md", "docs/a.md"]`
		if !strings.Contains(config, both) {
			t.Fatalf("agentConfig offers read_file without %s: %s", both, config)
		}
		config = strings.Replace(config, both, `"enum": ["README.md"]`, 1) + "tools:\n  policy:\n    read_file: allow\n"
		ws := workspace(t, config)
		res := step(t, ws, "fs-read")
		checkAudited(t, ws, res.SessionID, res.ToolCalls, "completed", "read_file")
		if data, err := os.ReadFile(filepath.Join(ws, "README.md")); err != nil || string(data) != "# README as the disk has it\n" {
			t.Errorf("README.md on the disk: %q %v", data, err)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		ws := workspace(t, writes(t, "ask"))
		step(t, ws, "cancel")
		noFile(t, filepath.Join(ws, "notes.txt"))
	})

	t.Run("load", func(t *testing.T) {
		ws := workspace(t, reads(t))
		res := step(t, ws, "load")
		checkAudited(t, ws, res.SessionID, res.ToolCalls, "completed", "read_file", "list_directory")
	})

	t.Run("mcp_server", func(t *testing.T) {
		slowServer(t) // builds it
		step(t, workspace(t, idleModel), "mcp-server", "ACP_MCP_SERVER="+filepath.Join(binDir, "slow-mcp"))
	})

	t.Run("errors", func(t *testing.T) {
		step(t, workspace(t, idleModel), "errors")
	})

	t.Run("mode", func(t *testing.T) {
		ws := workspace(t, writes(t, "allow"))
		step(t, ws, "mode")
		noFile(t, filepath.Join(ws, "notes.txt"))
	})
}
