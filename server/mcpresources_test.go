package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/tools/mcp"
)

// subsServer is a go-sdk MCP server over HTTP with a resource, a template
// and a prompt, that counts its subscriptions.
type subsServer struct {
	*sdk.Server
	URL string

	mu   sync.Mutex
	subs map[string]int
}

func newSubsServer(t *testing.T) *subsServer {
	g := &subsServer{subs: map[string]int{}}
	count := func(uri string, n int) {
		g.mu.Lock()
		g.subs[uri] += n
		g.mu.Unlock()
	}
	g.Server = sdk.NewServer(&sdk.Implementation{Name: "subs", Version: "1"}, &sdk.ServerOptions{
		SubscribeHandler:   func(_ context.Context, r *sdk.SubscribeRequest) error { count(r.Params.URI, 1); return nil },
		UnsubscribeHandler: func(_ context.Context, r *sdk.UnsubscribeRequest) error { count(r.Params.URI, -1); return nil },
	})
	text := func(s string) sdk.ResourceHandler {
		return func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: s}}}, nil
		}
	}
	g.AddResource(&sdk.Resource{URI: "test://a", Name: "a"}, text("the text of a"))
	g.AddResource(&sdk.Resource{URI: "test://b", Name: "b"}, text("the text of b"))
	g.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: "test://items/{id}", Name: "item"}, text("an item"))
	g.AddPrompt(&sdk.Prompt{Name: "hello", Arguments: []*sdk.PromptArgument{{Name: "who", Required: true}}},
		func(_ context.Context, r *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "hello " + r.Params.Arguments["who"]}}}}, nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return g.Server }, nil))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	g.URL = hs.URL
	return g
}

func (g *subsServer) subscribed(uri string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.subs[uri]
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMcpResources: the editor lists resources, templates and prompts,
// reads a resource and renders a prompt; it hears of updates of the
// resources it subscribed to (only those) and of list changes; its
// subscriptions end when it unsubscribes or goes.
func TestMcpResources(t *testing.T) {
	p := newParts(t)
	g := newSubsServer(t)
	hub := mcp.New(mcp.Options{Workspace: p.dir, Tools: p.tools, Bus: p.bus})
	t.Cleanup(hub.Close)
	hub.Apply(map[string]mcp.ServerConfig{"web": {Name: "web", Source: "test", Transport: "http", URL: g.URL, Enabled: true}})
	if _, err := hub.Trust(editor, "web", ""); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "web ready", func() bool { return statusOf(hub, "web").State == mcp.StateReady })
	opts := p.options()
	opts.MCP = hub
	s := serve(t, opts)
	c := connect(t, s)
	c.initialize(t)

	var rs mcpResourcesResult
	c.mustCall(t, "nexus/mcp/resources/list", map[string]any{"serverName": "web"}, &rs)
	if len(rs.Resources) != 2 || rs.Resources[0].ServerName != "web" || rs.Resources[0].URI != "test://a" {
		t.Fatalf("resources %+v", rs)
	}
	var read mcpReadResult
	c.mustCall(t, "nexus/mcp/resources/read", map[string]any{"serverName": "web", "uri": "test://a"}, &read)
	if read.ContentsJSON != `[{"mimeType":"text/plain","text":"the text of a","uri":"test://a"}]` {
		t.Errorf("read %s", read.ContentsJSON)
	}
	var ts mcpTemplatesResult
	c.mustCall(t, "nexus/mcp/resources/templates", map[string]any{}, &ts)
	if len(ts.Templates) != 1 || ts.Templates[0] != (mcpResourceTemplateWire{ServerName: "web", URITemplate: "test://items/{id}", Name: "item"}) {
		t.Fatalf("templates %+v", ts)
	}
	var ps mcpPromptsResult
	c.mustCall(t, "nexus/mcp/prompts/list", map[string]any{"serverName": "web"}, &ps)
	if len(ps.Prompts) != 1 || ps.Prompts[0].Name != "hello" || ps.Prompts[0].ArgumentsJSON != `[{"name":"who","required":true}]` {
		t.Fatalf("prompts %+v", ps)
	}
	var got mcpPromptGetResult
	c.mustCall(t, "nexus/mcp/prompts/get", map[string]any{"serverName": "web", "name": "hello", "arguments": map[string]string{"who": "you"}}, &got)
	if !strings.Contains(got.ResultJSON, `"text":"hello you"`) {
		t.Errorf("prompt %s", got.ResultJSON)
	}

	// Errors: an unknown server, a missing uri, a template of nothing.
	if err := c.call(t, "nexus/mcp/resources/subscribe", map[string]any{"serverName": "nope", "uri": "test://a"}, nil); code(err) != CodeNotFound {
		t.Errorf("an unknown server: %v", err)
	}
	if err := c.call(t, "nexus/mcp/resources/subscribe", map[string]any{"serverName": "web"}, nil); code(err) != -32602 {
		t.Errorf("no uri: %v", err)
	}

	// Subscribed to a (twice: once), not to b, which another party is.
	c.mustCall(t, "nexus/mcp/resources/subscribe", map[string]any{"serverName": "web", "uri": "test://a"}, nil)
	c.mustCall(t, "nexus/mcp/resources/subscribe", map[string]any{"serverName": "web", "uri": "test://a"}, nil)
	releaseB, err := hub.Subscribe(context.Background(), "web", "test://b")
	if err != nil {
		t.Fatal(err)
	}
	defer releaseB()
	if n := g.subscribed("test://a"); n != 1 {
		t.Fatalf("the server got %d subscribes of a", n)
	}
	g.ResourceUpdated(context.Background(), &sdk.ResourceUpdatedNotificationParams{URI: "test://b"})
	g.ResourceUpdated(context.Background(), &sdk.ResourceUpdatedNotificationParams{URI: "test://a"})
	c.await(t, "a updated", func(ns []note) bool {
		return has(ns, notifyMCPResourceUpdated, `"server":"web"`, `"uri":"test://a"`, `"time":"`)
	})
	g.AddPrompt(&sdk.Prompt{Name: "bye"}, func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{}, nil
	})
	c.await(t, "prompts changed", func(ns []note) bool {
		return has(ns, notifyMCPListChanged, `"server":"web"`, `"kind":"prompts"`)
	})
	c.mu.Lock()
	if has(c.notes, notifyMCPResourceUpdated, "test://b") {
		t.Error("the editor heard of a resource it did not subscribe to")
	}
	c.mu.Unlock()

	c.mustCall(t, "nexus/mcp/resources/unsubscribe", map[string]any{"serverName": "web", "uri": "test://a"}, nil)
	waitUntil(t, "a unsubscribed", func() bool { return g.subscribed("test://a") == 0 })

	// The editor goes: its subscriptions go with it; others' stay.
	c.mustCall(t, "nexus/mcp/resources/subscribe", map[string]any{"serverName": "web", "uri": "test://a"}, nil)
	waitUntil(t, "a subscribed again", func() bool { return g.subscribed("test://a") == 1 })
	s.toSrv.Close()
	s.wait(t)
	waitUntil(t, "a unsubscribed when the editor left", func() bool { return g.subscribed("test://a") == 0 })
	if n := g.subscribed("test://b"); n != 1 {
		t.Errorf("b, another party's, has %d subscriptions", n)
	}
}
