package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/nexuscocreate/nexus/events"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/mcp"
)

func TestLifecycle(t *testing.T) {
	p := newParts(t)
	s := serve(t, p.options())
	c := connect(t, s)

	err := c.call(t, "nexus/runtime/get", map[string]string{"namespace": "a", "key": "k"}, nil)
	if code(err) != jsonrpc2.ServerNotInitialized {
		t.Fatalf("before initialize: got %v, want -32002", err)
	}
	res := c.initialize(t)
	info := res["serverInfo"].(map[string]any)
	if info["name"] != "nexusd" || info["version"] != "test" {
		t.Errorf("serverInfo = %v", info)
	}
	if res["nexus"].(map[string]any)["grpcAddress"] != "unix:///nowhere.sock" {
		t.Errorf("nexus = %v", res["nexus"])
	}
	methods := res["capabilities"].(map[string]any)["nexus"].(map[string]any)["methods"].([]any)
	if len(methods) != 36 {
		t.Errorf("capabilities list %d methods: %v", len(methods), methods)
	}
	if err := c.call(t, "initialize", map[string]any{}, nil); code(err) != jsonrpc2.InvalidRequest {
		t.Errorf("second initialize: %v", err)
	}
	if err := c.call(t, "nexus/nothing", nil, nil); code(err) != jsonrpc2.MethodNotFound || !strings.Contains(err.Error(), "nexus/nothing") {
		t.Errorf("unknown method: %v", err)
	}
	c.mustCall(t, "shutdown", nil, nil)
	if err := c.call(t, "nexus/tools/list", nil, nil); code(err) != jsonrpc2.InvalidRequest {
		t.Errorf("after shutdown: got %v, want -32600", err)
	}
	c.conn.Notify(context.Background(), "exit", nil)
	if got := s.wait(t); got != 0 {
		t.Errorf("exit after shutdown: code %d, want 0", got)
	}
}

// The editor leaving ends the requests it left behind: a running tool call
// is cancelled rather than waited for.
func TestExitCancelsRunningRequests(t *testing.T) {
	p := newParts(t)
	s := serve(t, p.options())
	c := connect(t, s)
	c.initialize(t)
	go c.call(t, "nexus/tools/execute", map[string]any{"toolName": "slow"}, nil)
	c.await(t, "the slow call running", func(ns []note) bool { return has(ns, notifyToolCall, `"status":"running"`) })
	c.conn.Notify(context.Background(), "exit", nil)
	s.wait(t)
	deadline := time.Now().Add(20 * time.Second)
	for {
		calls := p.tools.Calls(tools.CallFilter{})
		if len(calls) == 1 && calls[0].Error != nil && calls[0].Error.Code == tools.CodeCancelled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the call did not end cancelled: %+v", calls)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Closing stdin ends the server even while a request is running (the
// connection itself would wait for the request).
func TestStdinCloseWithARunningRequest(t *testing.T) {
	p := newParts(t)
	s := serve(t, p.options())
	c := connect(t, s)
	c.initialize(t)
	go c.call(t, "nexus/tools/execute", map[string]any{"toolName": "slow"}, nil)
	c.await(t, "the slow call running", func(ns []note) bool { return has(ns, notifyToolCall, `"status":"running"`) })
	s.toSrv.Close()
	if code := s.wait(t); code != 1 || s.err != ErrClosed {
		t.Errorf("code %d, err %v; want 1 and ErrClosed", code, s.err)
	}
}

func TestExitCodes(t *testing.T) {
	p := newParts(t)
	t.Run("exit without shutdown", func(t *testing.T) {
		s := serve(t, p.options())
		c := connect(t, s)
		c.initialize(t)
		c.conn.Notify(context.Background(), "exit", nil)
		if got := s.wait(t); got != 1 {
			t.Errorf("code %d, want 1", got)
		}
	})
	t.Run("stdin closed", func(t *testing.T) {
		s := serve(t, p.options())
		c := connect(t, s)
		c.initialize(t)
		s.toSrv.Close()
		if got := s.wait(t); got != 1 {
			t.Errorf("code %d, want 1", got)
		}
	})
}

func TestDefinitionsAndRuntime(t *testing.T) {
	p := newParts(t)
	c := connect(t, serve(t, p.options()))
	c.initialize(t)

	var set struct{ Revision string }
	c.mustCall(t, "nexus/definitions/set", map[string]any{"path": "agents/brief.md", "content": "one\n"}, &set)
	var set2 struct{ Revision string }
	c.mustCall(t, "nexus/definitions/set", map[string]any{"path": "agents/brief.md", "content": "two\n", "expectedRevision": set.Revision}, &set2)
	err := c.call(t, "nexus/definitions/set", map[string]any{"path": "agents/brief.md", "content": "three\n", "expectedRevision": set.Revision}, nil)
	if code(err) != CodeConflict {
		t.Errorf("stale expectedRevision: %v", err)
	}
	var get struct{ Content, Revision string }
	c.mustCall(t, "nexus/definitions/get", map[string]any{"path": "agents/brief.md"}, &get)
	if get.Content != "two\n" || get.Revision != set2.Revision {
		t.Errorf("get = %+v", get)
	}
	c.mustCall(t, "nexus/definitions/get", map[string]any{"path": "agents/brief.md", "revision": set.Revision}, &get)
	if get.Content != "one\n" {
		t.Errorf("get at first revision = %q", get.Content)
	}
	var hist struct {
		Entries []struct{ Revision, Author, Change string }
	}
	c.mustCall(t, "nexus/definitions/history", map[string]any{"path": "agents/brief.md"}, &hist)
	if len(hist.Entries) != 2 || hist.Entries[0].Author != "editor" || hist.Entries[1].Change != "ADDED" {
		t.Errorf("history = %+v", hist)
	}
	var diff struct{ Diff string }
	c.mustCall(t, "nexus/definitions/diff", map[string]any{"path": "agents/brief.md", "fromRevision": set.Revision}, &diff)
	if !strings.Contains(diff.Diff, "-one\n+two\n") {
		t.Errorf("diff = %q", diff.Diff)
	}
	var applied struct{ Revision, Content string }
	c.mustCall(t, "nexus/definitions/applyDiff", map[string]any{"path": "agents/brief.md",
		"diff": "--- a/agents/brief.md\n+++ b/agents/brief.md\n@@ -1 +1 @@\n-two\n+three\n"}, &applied)
	if applied.Content != "three\n" {
		t.Errorf("applyDiff = %+v", applied)
	}
	c.mustCall(t, "nexus/definitions/restore", map[string]any{"path": "agents/brief.md", "revision": set.Revision}, &applied)
	if applied.Content != "one\n" {
		t.Errorf("restore = %+v", applied)
	}
	var list struct {
		Entries []struct{ Name, Path, Type string }
	}
	c.mustCall(t, "nexus/definitions/list", map[string]any{"recursive": true}, &list)
	if len(list.Entries) != 2 || list.Entries[0].Type != "DIRECTORY" || list.Entries[1].Path != "agents/brief.md" {
		t.Errorf("list = %+v", list)
	}
	c.mustCall(t, "nexus/definitions/delete", map[string]any{"path": "agents/brief.md"}, nil)
	if err := c.call(t, "nexus/definitions/get", map[string]any{"path": "agents/brief.md"}, nil); code(err) != CodeNotFound {
		t.Errorf("get after delete: %v", err)
	}
	// An app's root.
	c.mustCall(t, "nexus/definitions/set", map[string]any{"appId": "app1", "path": "x.md", "content": "x"}, nil)
	c.mustCall(t, "nexus/definitions/get", map[string]any{"path": "app1/x.md"}, &get)
	if err := c.call(t, "nexus/definitions/get", map[string]any{"appId": "nope", "path": "x.md"}, nil); code(err) != CodeNotFound {
		t.Errorf("unknown app: %v", err)
	}

	c.mustCall(t, "nexus/runtime/set", map[string]any{"namespace": "app1", "key": "k", "value": "v", "ttlSeconds": 60}, nil)
	var rg struct {
		Found     bool
		Value     string
		ExpiresAt *time.Time
	}
	c.mustCall(t, "nexus/runtime/get", map[string]any{"appId": "app1", "key": "k"}, &rg)
	if !rg.Found || rg.Value != "v" || rg.ExpiresAt == nil {
		t.Errorf("runtime/get = %+v", rg)
	}
	var keys struct{ Keys []string }
	c.mustCall(t, "nexus/runtime/list", map[string]any{"namespace": "app1"}, &keys)
	if len(keys.Keys) != 1 || keys.Keys[0] != "k" {
		t.Errorf("runtime/list = %+v", keys)
	}
	var del struct{ Deleted bool }
	c.mustCall(t, "nexus/runtime/delete", map[string]any{"namespace": "app1", "key": "k"}, &del)
	if !del.Deleted {
		t.Error("runtime/delete: not deleted")
	}
}

func TestInvalidParamsNameTheField(t *testing.T) {
	p := newParts(t)
	c := connect(t, serve(t, p.options()))
	c.initialize(t)
	for _, tc := range []struct {
		method string
		params string
		want   string
	}{
		{"nexus/definitions/get", `{"path": 5}`, "path must be a string"},
		{"nexus/definitions/get", `{"path": "a", "colour": 1}`, `unknown field "colour"`},
		{"nexus/definitions/get", `{}`, "path is required"},
		{"nexus/definitions/get", `{"path": "../x"}`, `path "../x"`},
		{"nexus/definitions/set", `{"path": "a"}`, "content is required"},
		{"nexus/definitions/history", `{"path": "a", "limit": -1}`, "limit -1 is negative"},
		{"nexus/definitions/list", `{"recursive": "yes"}`, "recursive must be a boolean"},
		{"nexus/definitions/get", `[1,2]`, "params must be an object"},
		{"nexus/runtime/get", `{"key": "k"}`, "namespace is required"},
		{"nexus/runtime/set", `{"namespace": "n", "key": "k", "value": "v", "ttlSeconds": -5}`, "ttlSeconds -5 is negative"},
		{"nexus/tools/execute", `{}`, "toolName is required"},
		{"nexus/tools/execute", `{"toolName": "echo", "argumentsJson": "{"}`, "argumentsJson is not valid JSON"},
		{"nexus/toolCalls/list", `{"status": "sleeping"}`, `status "sleeping"`},
		{"nexus/toolCalls/cancel", `{}`, "toolCallId is required"},
		{"nexus/mcp/restart", `{}`, "name is required"},
	} {
		err := c.call(t, tc.method, json.RawMessage(tc.params), nil)
		if code(err) != jsonrpc2.InvalidParams || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: got %v, want -32602 naming %q", tc.method, tc.params, err, tc.want)
		}
	}
}

func TestToolCallStream(t *testing.T) {
	p := newParts(t)
	c := connect(t, serve(t, p.options()))
	c.initialize(t)

	var tl struct{ Tools []struct{ Name string } }
	c.mustCall(t, "nexus/tools/list", nil, &tl)
	if len(tl.Tools) != 3 {
		t.Errorf("tools/list = %+v", tl)
	}
	var tg struct {
		Found bool
		Tool  struct{ Name, Kind, Risk, InputSchemaJson string }
	}
	c.mustCall(t, "nexus/tools/get", map[string]any{"name": "guarded"}, &tg)
	if !tg.Found || tg.Tool.Risk != "high" || !strings.Contains(tg.Tool.InputSchemaJson, `"text"`) {
		t.Errorf("tools/get = %+v", tg)
	}

	// A call started elsewhere (an app over gRPC, here the manager itself).
	call := p.tools.Execute(context.Background(), tools.ExecuteRequest{ToolName: "echo", Arguments: json.RawMessage(`{"text":"hi"}`), AppID: "app1"})
	c.await(t, "the call's final status", func(ns []note) bool {
		return has(ns, notifyToolCall, `"toolCallId":"`+call.ID+`"`, `"status":"completed"`, `"resultJson":"{\"text\":\"hi\"}"`)
	})

	// A call the editor starts, with progress.
	var ex struct {
		Success    bool
		OutputJson string
		ToolCallId string
	}
	c.mustCall(t, "nexus/tools/execute", map[string]any{"toolName": "echo", "arguments": map[string]string{"text": "yo"}, "workDoneToken": "tok-1"}, &ex)
	if !ex.Success || ex.OutputJson != `{"text":"yo"}` {
		t.Errorf("execute = %+v", ex)
	}
	c.await(t, "$/progress begin and end", func(ns []note) bool {
		return has(ns, notifyProgress, `"token":"tok-1"`, `"kind":"begin"`) && has(ns, notifyProgress, `"token":"tok-1"`, `"kind":"end"`)
	})
	var calls struct {
		ToolCalls []struct{ ToolCallId, Status string }
	}
	c.mustCall(t, "nexus/toolCalls/list", map[string]any{"status": "completed", "limit": 1}, &calls)
	if len(calls.ToolCalls) != 1 || calls.ToolCalls[0].ToolCallId != ex.ToolCallId {
		t.Errorf("toolCalls/list = %+v", calls)
	}

	// Invalid arguments are a tool-call error, not a protocol error.
	c.mustCall(t, "nexus/tools/execute", map[string]any{"toolName": "echo", "argumentsJson": `{"text": 5}`}, &ex)
	if ex.Success {
		t.Errorf("bad arguments succeeded: %+v", ex)
	}
}

func TestCancelRequest(t *testing.T) {
	p := newParts(t)
	c := connect(t, serve(t, p.options()))
	c.initialize(t)
	// A cancel of a call the editor did not start: nexus/toolCalls/cancel.
	go p.tools.Execute(context.Background(), tools.ExecuteRequest{ToolName: "slow", AppID: "app1"})
	var running string
	c.await(t, "the app's slow call running", func(ns []note) bool {
		for _, n := range ns {
			if n.method == notifyToolCall && strings.Contains(string(n.params), `"appId":"app1"`) && strings.Contains(string(n.params), `"status":"running"`) {
				var w toolCallWire
				json.Unmarshal(n.params, &w)
				running = w.ToolCallID
				return true
			}
		}
		return false
	})
	var res struct{ Cancelled bool }
	c.mustCall(t, "nexus/toolCalls/cancel", map[string]any{"toolCallId": running}, &res)
	if !res.Cancelled {
		t.Error("toolCalls/cancel: not cancelled")
	}
	if err := c.call(t, "nexus/toolCalls/cancel", map[string]any{"toolCallId": "no-such-call"}, nil); code(err) != CodeNotFound {
		t.Errorf("cancel of an unknown call: %v", err)
	}
}

func TestCancelledRequestGets32800(t *testing.T) {
	p := newParts(t)
	s := serve(t, p.options())
	raw := rawClient(t, s)
	raw.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"capabilities":{}}}`)
	raw.expect(t, `"id":1,"result"`)
	raw.send(t, `{"jsonrpc":"2.0","id":2,"method":"nexus/tools/execute","params":{"toolName":"slow"}}`)
	raw.expect(t, `"status":"running"`)
	raw.send(t, `{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":2}}`)
	// The reply and the call's final status (it ended cancelled) come in
	// either order.
	raw.expectAll(t, `"id":2,"error":{"code":-32800`, `"code":"cancelled","message":"the call was cancelled`)
}

func TestPermissionPrompts(t *testing.T) {
	p := newParts(t)
	c := connect(t, serve(t, p.options()))
	c.initialize(t)
	execute := func() (ok bool, code string) {
		var ex struct {
			Success   bool
			ErrorCode string
		}
		c.mustCall(t, "nexus/tools/execute", map[string]any{"toolName": "guarded", "arguments": map[string]string{"text": "x"}, "intent": "test the prompt"}, &ex)
		return ex.Success, ex.ErrorCode
	}
	for _, tc := range []struct {
		answer func(json.RawMessage) (any, error)
		ok     bool
	}{
		{func(json.RawMessage) (any, error) { return "allow_once", nil }, true},
		{func(json.RawMessage) (any, error) { return map[string]string{"answer": "reject_once"}, nil }, false},
		{func(json.RawMessage) (any, error) {
			return nil, jsonrpc2.NewError(-32000, "the person closed the prompt")
		}, false},
		{func(json.RawMessage) (any, error) { return "maybe", nil }, false},
	} {
		c.mu.Lock()
		c.answer = tc.answer
		c.mu.Unlock()
		ok, code := execute()
		if ok != tc.ok || (!ok && code != tools.CodePermissionDenied) {
			t.Errorf("answer: got success=%v code=%q, want success=%v", ok, code, tc.ok)
		}
	}
	c.mu.Lock()
	asked := len(c.asked)
	var first permissionParams
	json.Unmarshal(c.asked[0], &first)
	c.answer = func(json.RawMessage) (any, error) { return "allow_always", nil }
	c.mu.Unlock()
	if asked != 4 {
		t.Errorf("asked %d times, want 4", asked)
	}
	if first.ICERC.Intent != "test the prompt" || first.ICERC.Risk.Level != tools.RiskHigh || first.ToolCall.ToolName != "guarded" || len(first.Options) != 4 {
		t.Errorf("request = %+v", first)
	}
	if ok, _ := execute(); !ok {
		t.Error("allow_always: denied")
	}
	if ok, _ := execute(); !ok {
		t.Error("after allow_always: denied")
	}
	c.mu.Lock()
	asked = len(c.asked)
	c.mu.Unlock()
	if asked != 5 {
		t.Errorf("asked %d times after allow_always, want 5 (remembered)", asked)
	}
	if c.unannounced != 0 {
		t.Errorf("%d prompts came before the nexus/toolCall of their call", c.unannounced)
	}
}

func TestNotifications(t *testing.T) {
	p := newParts(t)
	c := connect(t, serve(t, p.options()))
	c.initialize(t)
	rev, err := p.defs.Set("a/b.md", []byte("x"), writeAs("app:app1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.rt.Set(t.Context(), "app1", "k", "v", 0); err != nil {
		t.Fatal(err)
	}
	p.bus.Publish(events.Log{Source: "app", Level: "WARN", Message: "careful", AppID: "app1", Time: time.Now()})
	p.bus.Publish(mcp.Status{Name: "everything", State: "ready", Transport: "stdio", Tools: 3, Since: time.Now()})
	daemonLog := slog.New(LogHandler(slog.DiscardHandler, p.bus))
	daemonLog.Warn("disk is slow", "path", "a/b.md")
	daemonLog.Info("not for the editor")
	// An MCP server's log message comes from the hub, once: not again
	// through the daemon log's tee, nor as window/logMessage (the tee would
	// have published first).
	daemonLog.Error(mcp.ServerLogMessage, "server", "db", "data", `{"open":0}`)
	p.bus.Publish(mcp.LogMessage{Server: "db", Level: "critical", Logger: "pool", Data: json.RawMessage(`{"open":0}`), Time: time.Now()})
	c.await(t, "definition, runtime and log notifications", func(ns []note) bool {
		return has(ns, notifyDefinitionChanged, `"path":"a/b.md"`, `"revision":"`+rev+`"`, `"author":"app:app1"`, `"change":"ADDED"`) &&
			has(ns, notifyRuntimeChanged, `"namespace":"app1"`, `"key":"k"`, `"change":"set"`) &&
			has(ns, notifyLog, `"message":"careful"`, `"appId":"app1"`, `"level":"warn"`) &&
			has(ns, notifyLogMessage, `"type":2`, `[app app1] careful`) &&
			has(ns, notifyMCPServerStatus, `"name":"everything"`, `"state":"ready"`, `"toolCount":3`) &&
			has(ns, notifyLog, `"source":"nexusd"`, `"message":"disk is slow"`, `"context":{"path":"a/b.md"}`) &&
			has(ns, notifyLogMessage, `[nexusd] disk is slow`) &&
			has(ns, notifyLog, `"source":"mcp"`, `"level":"critical"`, `"message":"{\"open\":0}"`, `"server":"db"`, `"logger":"pool"`, `"data":{"open":0}`)
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	if has(c.notes, notifyLog, "not for the editor") {
		t.Error("an info line of the daemon reached the editor")
	}
	if has(c.notes, notifyLog, `"source":"nexusd"`, mcp.ServerLogMessage) || has(c.notes, notifyLogMessage, "open") {
		t.Error("an MCP server's log message reached the editor twice")
	}
}

func has(ns []note, method string, parts ...string) bool {
	for _, n := range ns {
		if n.method != method {
			continue
		}
		ok := true
		for _, p := range parts {
			if !strings.Contains(string(n.params), p) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func TestWireErrorUnavailable(t *testing.T) {
	err := fmt.Errorf("get runtime key %q: redis at 127.0.0.1:6379 is unreachable (EOF): %w", "k", state.ErrUnavailable)
	we, ok := wireError(context.Background(), err).(*jsonrpc2.Error)
	if !ok || we.Code != CodeUnavailable || we.Message != err.Error() || !strings.Contains(string(we.Data), `"unavailable"`) {
		t.Errorf("wireError = %#v, want code %d, the message, data unavailable", we, CodeUnavailable)
	}
}
