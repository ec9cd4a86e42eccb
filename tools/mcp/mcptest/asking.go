// Package mcptest has MCP servers for tests, made with the go-sdk. Start
// with [Asking].
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

//lint:file-ignore SA1019 sampling is deprecated from protocol 2026-07-28 (SEP-2577); servers use it until then

// Asking is a server whose tools ask the client during the call:
//
//   - ask {message, schema}: elicitation/create in form mode with the
//     requested schema (JSON text); the result is the answer as JSON
//     ({"action", "content"}), or the error's text with isError.
//   - ask_url {message, url}: elicitation/create in URL mode.
//   - ask_briefly {message}: elicitation/create sent during the call (a
//     client of protocol 2025-11-25 only), cancelled after 300ms.
//   - visit {message, url}: elicitation/create in URL mode during the call
//     (2025-11-25), elicitationId "visit-1"; once accepted, the server
//     sends notifications/elicitation/complete for it.
//   - sample {prompt, system, hint, maxTokens}: sampling/createMessage;
//     the result is the CreateMessageResult as JSON, or the error.
//   - caps: the protocol version and the client's capabilities, as JSON.
//
// Each result is also handed to Seen, when set (an in-process server).
type Asking struct {
	mu sync.Mutex
	// Seen receives each tool's outcome as the server saw it.
	Seen chan Outcome
}

// Outcome is what a tool of Asking got from the client.
type Outcome struct {
	Tool string
	JSON string // the result as JSON, or ""
	Err  string // the error, or ""
}

type askArgs struct {
	Message string `json:"message,omitempty"`
	Schema  string `json:"schema,omitempty" jsonschema:"the requested schema, JSON text"`
	URL     string `json:"url,omitempty"`
}

type sampleArgs struct {
	Prompt    string `json:"prompt"`
	System    string `json:"system,omitempty"`
	Hint      string `json:"hint,omitempty"`
	MaxTokens int64  `json:"maxTokens,omitempty"`
}

// Server returns the MCP server. Its tools ask as a server of protocol
// 2026-07-28 does (multi round-trip requests, SEP-2322): they answer with
// input requests, and the client calls them again with the responses; the
// go-sdk sends a client of an older version elicitation/create and
// sampling/createMessage requests during the call instead.
func (a *Asking) Server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "asking", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "Asks the person to fill a form"},
		func(ctx context.Context, req *mcp.CallToolRequest, in askArgs) (*mcp.CallToolResult, any, error) {
			if r, ok := req.Params.InputResponses["q"]; ok {
				return a.outcome("ask", r, nil)
			}
			var schema any // raw: the fields keep their order
			if in.Schema != "" {
				if !json.Valid([]byte(in.Schema)) {
					return nil, nil, fmt.Errorf("schema is not JSON: %s", in.Schema)
				}
				schema = json.RawMessage(in.Schema)
			}
			return ask(&mcp.ElicitParams{Mode: "form", Message: in.Message, RequestedSchema: schema}), nil, nil
		})
	// ask_briefly asks as a server of protocol 2025-11-25 does (a request
	// during the call), and cancels its question after 300ms.
	mcp.AddTool(s, &mcp.Tool{Name: "ask_briefly", Description: "Asks the person, but not for long"},
		func(ctx context.Context, req *mcp.CallToolRequest, in askArgs) (*mcp.CallToolResult, any, error) {
			ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: in.Message})
			return a.outcome("ask_briefly", res, err)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "visit", Description: "Sends the person to a URL, then says the step is complete"},
		func(ctx context.Context, req *mcp.CallToolRequest, in askArgs) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "url", Message: in.Message, URL: in.URL, ElicitationID: "visit-1"})
			if err == nil && res.Action == "accept" {
				err = req.Session.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: "visit-1"})
			}
			return a.outcome("visit", res, err)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "ask_url", Description: "Sends the person to a URL"},
		func(ctx context.Context, req *mcp.CallToolRequest, in askArgs) (*mcp.CallToolResult, any, error) {
			if r, ok := req.Params.InputResponses["q"]; ok {
				return a.outcome("ask_url", r, nil)
			}
			return ask(&mcp.ElicitParams{Mode: "url", Message: in.Message, URL: in.URL, ElicitationID: "e-1"}), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sample", Description: "Asks the client's model"},
		func(ctx context.Context, req *mcp.CallToolRequest, in sampleArgs) (*mcp.CallToolResult, any, error) {
			if r, ok := req.Params.InputResponses["q"]; ok {
				if res, ok := r.(*mcp.CreateMessageWithToolsResult); ok && len(res.Content) == 1 {
					return a.outcome("sample", &mcp.CreateMessageResult{Content: res.Content[0], Model: res.Model, Role: res.Role, StopReason: res.StopReason}, nil)
				}
				return a.outcome("sample", r, nil)
			}
			p := &mcp.CreateMessageParams{SystemPrompt: in.System, MaxTokens: in.MaxTokens,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Prompt}}}}
			if p.MaxTokens == 0 {
				p.MaxTokens = 32
			}
			if in.Hint != "" {
				p.ModelPreferences = &mcp.ModelPreferences{Hints: []*mcp.ModelHint{{Name: in.Hint}}}
			}
			return ask(p), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "caps", Description: "The client's capabilities"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			caps := map[string]any{}
			if p := req.Session.InitializeParams(); p != nil {
				caps["protocolVersion"], caps["capabilities"] = p.ProtocolVersion, p.Capabilities
			}
			return a.outcome("caps", caps, nil)
		})
	// An error the client answers with (a refused answer, a rejected
	// sampling) fails the call: the server sees it here.
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if err != nil && method == "tools/call" {
				name := ""
				if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok {
					name = p.Name
				}
				res, _, _ := a.outcome(name, nil, err)
				return res, nil
			}
			return res, err
		}
	})
	return s
}

// ask is the result that asks the client for q.
func ask(q mcp.InputRequest) *mcp.CallToolResult {
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": q}}
}

func (a *Asking) outcome(tool string, v any, err error) (*mcp.CallToolResult, any, error) {
	if r, ok := v.(*mcp.ElicitResult); ok && r != nil {
		v = map[string]any{"action": r.Action, "content": r.Content} // without its _meta
		if r.Content == nil {
			v = map[string]any{"action": r.Action}
		}
	}
	o := Outcome{Tool: tool}
	if err != nil {
		o.Err = err.Error()
	} else {
		b, _ := json.Marshal(v)
		o.JSON = string(b)
	}
	a.mu.Lock()
	seen := a.Seen
	a.mu.Unlock()
	if seen != nil {
		seen <- o
	}
	if err != nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "error: " + err.Error()}}}, nil, nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: o.JSON}}}, nil, nil
}

// Handler serves the server over Streamable HTTP.
func (a *Asking) Handler() http.Handler {
	s := a.Server()
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
}

// ServeStdio serves the server on the process's stdin and stdout until the
// client goes.
func (a *Asking) ServeStdio(ctx context.Context) error {
	return a.Server().Run(ctx, &mcp.StdioTransport{})
}
