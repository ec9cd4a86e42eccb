package server

import (
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/tools/mcp"
)

// TestMcpTrust: the editor is asked about each MCP server that waits for
// approval, with what it runs; "allow" approves it, "reject" or an error
// leaves it waiting, and nexus/mcp/trust approves exactly what was shown.
func TestMcpTrust(t *testing.T) {
	p := newParts(t)
	var logs lockedBuffer
	hub := mcp.New(mcp.Options{Workspace: p.dir, Tools: p.tools, Bus: p.bus, Restart: "never", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	t.Cleanup(hub.Close)
	ghost := func(name string) mcp.ServerConfig {
		return mcp.ServerConfig{Name: name, Source: ".mcp.json", Transport: "stdio", Command: "/nonexistent/" + name,
			Args: []string{"--flag"}, Env: map[string]string{"TOKEN": "t0k"}, Cwd: p.dir, Enabled: true}
	}
	cfgs := map[string]mcp.ServerConfig{"first": ghost("first")}
	hub.Apply(cfgs)
	opts := p.options()
	opts.MCP = hub
	c := connect(t, serve(t, opts))
	var answers = map[string]string{"first": "reject", "second": "allow"}
	c.trustAnswer = func(params json.RawMessage) (any, error) {
		var req mcpTrustRequest
		json.Unmarshal(params, &req)
		return answers[req.Server.Name], nil
	}
	init := c.initialize(t)
	if caps := init["capabilities"].(map[string]any)["nexus"].(map[string]any); caps["requestMcpTrust"] != true {
		t.Errorf("capabilities: %v", caps)
	}
	asked := func(name string) mcpTrustRequest {
		t.Helper()
		var got mcpTrustRequest
		c.await(t, "nexus/requestMcpTrust about "+name, func([]note) bool {
			for _, raw := range c.trustAsked {
				var req mcpTrustRequest
				if json.Unmarshal(raw, &req) == nil && req.Server.Name == name {
					got = req
					return true
				}
			}
			return false
		})
		return got
	}
	// Asked at initialized about the server already waiting, announced
	// first by its status; rejected, it waits.
	req := asked("first")
	l := req.Server.Launch
	if req.Server.State != mcp.StatePendingApproval || l.Command != "/nonexistent/first" || l.Args[0] != "--flag" ||
		l.Env["TOKEN"] != "t0k" || req.Server.Pin == "" || strings.Join(req.Options, ",") != "allow,reject" {
		t.Fatalf("asked %+v", req)
	}
	c.await(t, "the status of first before the question", func(ns []note) bool {
		return has(ns, notifyMCPServerStatus, `"name":"first"`, `"state":"pending_approval"`, `"trusted":false`, `"command":"/nonexistent/first"`)
	})
	if st := statusOf(hub, "first"); st.State != mcp.StatePendingApproval {
		t.Fatalf("first after reject: %+v", st)
	}

	// nexus/mcp/trust: bad params, a stale pin, then the pin shown.
	var res mcpTrustResult
	if err := c.call(t, "nexus/mcp/trust", map[string]any{}, &res); code(err) != -32602 {
		t.Errorf("no name: %v", err)
	}
	if err := c.call(t, "nexus/mcp/trust", map[string]any{"name": "nope"}, &res); code(err) != CodeNotFound {
		t.Errorf("unknown server: %v", err)
	}
	if err := c.call(t, "nexus/mcp/trust", map[string]any{"name": "first", "pin": "sha256:0"}, &res); code(err) != CodeFailedPrecondition ||
		!strings.Contains(err.Error(), "changed since it was shown") {
		t.Errorf("stale pin: %v", err)
	}
	c.mustCall(t, "nexus/mcp/trust", map[string]any{"name": "first", "pin": req.Server.Pin}, &res)
	if !res.Server.Trusted || res.Server.State == mcp.StatePendingApproval {
		t.Fatalf("trusted: %+v", res.Server)
	}
	c.await(t, "first trusted", func(ns []note) bool {
		return has(ns, notifyMCPServerStatus, `"name":"first"`, `"trusted":true`)
	})

	// A server that comes to wait while the editor is attached: asked,
	// allowed, trusted.
	cfgs["second"] = ghost("second")
	hub.Apply(cfgs)
	asked("second")
	c.await(t, "second trusted", func(ns []note) bool {
		return has(ns, notifyMCPServerStatus, `"name":"second"`, `"trusted":true`)
	})

	// An editor that does not answer the method leaves a server waiting.
	c.mu.Lock()
	c.trustAnswer = nil
	c.mu.Unlock()
	cfgs["third"] = ghost("third")
	hub.Apply(cfgs)
	asked("third")
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(logs.String(), "nexus mcp trust approves it"); {
		if time.Now().After(deadline) {
			t.Fatalf("the hub never noted that the editor did not answer:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := statusOf(hub, "third"); st.State != mcp.StatePendingApproval || st.Trusted {
		t.Fatalf("third after an error reply: %+v", st)
	}
}

// lockedBuffer is a log sink a test can read while the hub writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func statusOf(h *mcp.Hub, name string) mcp.Status {
	for _, st := range h.Servers() {
		if st.Name == name {
			return st
		}
	}
	return mcp.Status{}
}
