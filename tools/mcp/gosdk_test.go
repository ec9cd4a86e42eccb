//lint:file-ignore SA1019 the test server uses logging and roots, deprecated only by the draft 2026-07-28 (SEP-2577).

package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/nexuscocreate/nexus/tools/mcp/mcptest"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The go-sdk's own MCP server, for what the npm servers cannot show on
// demand: a pinned protocol version, a stream closed mid-call, a server
// that dies, log messages, resource updates and list changes. It runs in
// this process over real HTTP, or as this test binary re-executed over
// stdio (TestMain).

// stdioServerEnv, set to a protocol version, makes the test binary an MCP
// server on stdio that speaks only that version.
const stdioServerEnv = "NEXUS_TEST_GOSDK_STDIO"

// TestMain makes this test binary, re-run with an environment variable, a
// stdio MCP server of the tests: a go-sdk server of a protocol version
// (stdioServerEnv), or the asking server of elicit_test.go.
func TestMain(m *testing.M) {
	if os.Getenv("NEXUS_TEST_ASKING") == "stdio" {
		if err := new(mcptest.Asking).ServeStdio(context.Background()); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	if v := os.Getenv(stdioServerEnv); v != "" {
		srv := newGoServer(v)
		if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// goStdio is the entry of a go-sdk server on stdio speaking version only.
func goStdio(t *testing.T, name, version string) ServerConfig {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := stdio(name, exe)
	cfg.Env = map[string]string{stdioServerEnv: version}
	return cfg
}

// goServer is a go-sdk server and what it saw.
type goServer struct {
	*sdk.Server

	mu      sync.Mutex
	methods []string            // the JSON-RPC requests and notifications it got, in order
	levels  []string            // the levels of logging/setLevel
	subs    map[string]int      // resources/subscribe minus resources/unsubscribe, by URI
	events  map[string][]string // what it saw, by kind: "resume" (a GET's Last-Event-ID), "get", "post"
	changed chan struct{}       // closed and replaced at every change of the above
}

// newGoServer returns a server with tools, a resource and a template, a
// prompt, subscriptions and logging. version, when set, is the only
// protocol version it speaks.
func newGoServer(version string) *goServer {
	g := &goServer{subs: map[string]int{}, events: map[string][]string{}, changed: make(chan struct{})}
	opts := &sdk.ServerOptions{
		SubscribeHandler: func(_ context.Context, r *sdk.SubscribeRequest) error {
			g.note(func() { g.subs[r.Params.URI]++ })
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, r *sdk.UnsubscribeRequest) error {
			g.note(func() { g.subs[r.Params.URI]-- })
			return nil
		},
	}
	if version != "" {
		opts.SupportedProtocolVersions = []string{version}
	}
	g.Server = sdk.NewServer(&sdk.Implementation{Name: "gosdk", Version: "1"}, opts)
	g.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			g.note(func() {
				g.methods = append(g.methods, method)
				if p, ok := req.GetParams().(*sdk.SetLoggingLevelParams); ok {
					g.levels = append(g.levels, string(p.Level))
				}
			})
			return next(ctx, method, req)
		}
	})
	type text struct {
		Text string `json:"text"`
	}
	type count struct {
		N int `json:"n"`
	}
	sdk.AddTool(g.Server, &sdk.Tool{Name: "echo", Description: "Answers its text."},
		func(_ context.Context, _ *sdk.CallToolRequest, in text) (*sdk.CallToolResult, any, error) {
			return textResult("echo: " + in.Text), nil, nil
		})
	// resume closes the SSE stream of its own call (SEP-1699), waits until
	// the client came back for it with Last-Event-ID, and answers.
	sdk.AddTool(g.Server, &sdk.Tool{Name: "resume", Description: "Closes its stream and answers on the resumed one."},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			if req.Extra == nil || req.Extra.CloseSSEStream == nil {
				return nil, nil, fmt.Errorf("not over streamable HTTP")
			}
			before := g.count("resume")
			req.Extra.CloseSSEStream(sdk.CloseSSEStreamArgs{RetryAfter: 20 * time.Millisecond})
			if err := g.await(ctx, 10*time.Second, func() bool { return g.countLocked("resume") > before }); err != nil {
				return nil, nil, fmt.Errorf("the client never resumed: %w", err)
			}
			return textResult("answered on the resumed stream"), nil, nil
		})
	sdk.AddTool(g.Server, &sdk.Tool{Name: "block", Description: "Waits until cancelled."},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	sdk.AddTool(g.Server, &sdk.Tool{Name: "roots", Description: "Lists the client's roots."},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return nil, nil, err
			}
			data, _ := json.Marshal(res.Roots)
			return textResult(string(data)), nil, nil
		})
	// log sends a debug line, a structured warning and an error; the
	// session drops those under the level the client set.
	sdk.AddTool(g.Server, &sdk.Tool{Name: "log", Description: "Logs at three levels."},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			for _, p := range []*sdk.LoggingMessageParams{
				{Level: "debug", Logger: "probe", Data: "a debug line"},
				{Level: "warning", Logger: "disk", Data: map[string]any{"free": "3%", "path": "/var"}},
				{Level: "error", Data: "an error line"},
			} {
				if err := req.Session.Log(ctx, p); err != nil {
					return nil, nil, err
				}
			}
			return textResult("logged"), nil, nil
		})
	sdk.AddTool(g.Server, &sdk.Tool{Name: "logthen", Description: "Logs its text as a warning, then answers at once."},
		func(ctx context.Context, req *sdk.CallToolRequest, in text) (*sdk.CallToolResult, any, error) {
			if err := req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "warning", Data: in.Text}); err != nil {
				return nil, nil, err
			}
			return textResult("logged " + in.Text), nil, nil
		})
	sdk.AddTool(g.Server, &sdk.Tool{Name: "progressthen", Description: "Reports its progress done, then answers at once."},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			if err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1, Total: 1, Message: "done"}); err != nil {
				return nil, nil, err
			}
			return textResult("reported"), nil, nil
		})
	sdk.AddTool(g.Server, &sdk.Tool{Name: "flood", Description: "Logs n info lines at once."},
		func(ctx context.Context, req *sdk.CallToolRequest, in count) (*sdk.CallToolResult, any, error) {
			for i := range in.N {
				if err := req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "info", Data: fmt.Sprintf("line %d", i)}); err != nil {
					return nil, nil, err
				}
			}
			return textResult("flooded"), nil, nil
		})
	g.AddResource(&sdk.Resource{URI: "test://static", Name: "static", MIMEType: "text/plain"}, textResource("static text"))
	g.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: "test://items/{id}", Name: "item", Title: "An item",
		Description: "One item by its id.", MIMEType: "application/json"}, textResource(`{"item":true}`))
	g.AddPrompt(&sdk.Prompt{Name: "hello", Description: "Says hello."}, func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "hello"}}}}, nil
	})
	return g
}

func textResult(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

func textResource(s string) sdk.ResourceHandler {
	return func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: s}}}, nil
	}
}

// note changes what the server saw, under its lock, and wakes waiters.
func (g *goServer) note(fn func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	fn()
	close(g.changed)
	g.changed = make(chan struct{})
}

func (g *goServer) count(kind string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.countLocked(kind)
}

func (g *goServer) countLocked(kind string) int { return len(g.events[kind]) }

// await waits until cond, called under the lock, holds.
func (g *goServer) await(ctx context.Context, timeout time.Duration, cond func() bool) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		g.mu.Lock()
		ok, ch := cond(), g.changed
		g.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("not in %v", timeout)
		}
	}
}

// waitFor is await for tests.
func (g *goServer) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := g.await(t.Context(), 20*time.Second, cond); err != nil {
		g.mu.Lock()
		defer g.mu.Unlock()
		t.Fatalf("the server never saw %s: methods %v, levels %v, subs %v, events %v", what, g.methods, g.levels, g.subs, g.events)
	}
}

// httpServer is a goServer over Streamable HTTP on a loopback port.
type httpServer struct {
	*goServer
	URL string
	srv *http.Server
}

// serveHTTP serves g over Streamable HTTP, with an event store so that
// streams can be resumed, until the test ends or kill.
func serveHTTP(t *testing.T, g *goServer) *httpServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return g.Server },
		&sdk.StreamableHTTPOptions{EventStore: sdk.NewMemoryEventStore(nil)})
	hs := &httpServer{goServer: g, URL: "http://" + l.Addr().String() + "/mcp"}
	hs.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			g.note(func() {
				g.events["get"] = append(g.events["get"], r.Header.Get("Last-Event-ID"))
				if id := r.Header.Get("Last-Event-ID"); id != "" {
					g.events["resume"] = append(g.events["resume"], id)
				}
			})
		case http.MethodPost:
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m struct{ Method string }
			json.Unmarshal(body, &m)
			g.note(func() { g.events["post"] = append(g.events["post"], m.Method) })
		}
		h.ServeHTTP(w, r)
	})}
	go hs.srv.Serve(l)
	t.Cleanup(hs.kill)
	return hs
}

// kill stops the server at once, as a crash would: the port refuses
// connections and the open ones are closed.
func (hs *httpServer) kill() { hs.srv.Close() }

func httpEntry(name, url string) ServerConfig {
	return ServerConfig{Name: name, Source: "test", Transport: "http", URL: url, Enabled: true}
}

// session returns the live session of a ready server.
func (th *testHub) session(t *testing.T, name string) *sdk.ClientSession {
	t.Helper()
	s, err := th.server(name)
	if err != nil {
		t.Fatal(err)
	}
	session, _, terr := s.current()
	if terr != nil {
		t.Fatal(terr)
	}
	return session
}

func wantNoDiscover(t *testing.T, g *goServer) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	if slices.Contains(g.methods, "server/discover") || slices.Contains(g.events["post"], "server/discover") {
		t.Errorf("the hub sent server/discover: %v", g.events["post"])
	}
	if len(g.methods) == 0 || g.methods[0] != "initialize" {
		t.Errorf("the first request was not initialize: %v", g.methods)
	}
}
