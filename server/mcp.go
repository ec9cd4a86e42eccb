package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nexuscocreate/nexus/tools/mcp"
)

// The nexus/mcp/ methods.

type mcpServersResult struct {
	Servers []mcpServerWire `json:"servers"`
}

func (s *Server) mcpServers(_ context.Context, _ *struct{}) (*mcpServersResult, error) {
	res := &mcpServersResult{Servers: []mcpServerWire{}}
	if s.opts.MCP == nil {
		return res, nil
	}
	for _, st := range s.opts.MCP.Servers() {
		res.Servers = append(res.Servers, mcpServerJSON(st))
	}
	return res, nil
}

type mcpRestartParams struct {
	Name string `json:"name"`
}

func (s *Server) mcpRestart(_ context.Context, p *mcpRestartParams) (*emptyResult, error) {
	if p.Name == "" {
		return nil, missing("name", "the MCP server to restart")
	}
	if s.opts.MCP == nil {
		return nil, coded(CodeUnavailable, "unavailable", "this daemon runs no MCP servers")
	}
	if err := s.opts.MCP.Restart(p.Name); err != nil {
		if errors.Is(err, mcp.ErrUnknownServer) {
			return nil, notFound("%v: servers are configured in .nexus/mcp.json, .vscode/mcp.json or .mcp.json", err)
		}
		return nil, precondition("%v", err)
	}
	return &emptyResult{}, nil
}

type mcpTrustParams struct {
	Name string `json:"name"`
	// Pin, when set, is the pin of the entry the person was shown.
	Pin string `json:"pin,omitempty"`
}

type mcpTrustResult struct {
	Server mcpServerWire `json:"server"`
}

// mcpTrust is the person's approval of a server waiting for it: the entry
// as it is now, or as it was shown when pin is set.
func (s *Server) mcpTrust(_ context.Context, p *mcpTrustParams) (*mcpTrustResult, error) {
	if p.Name == "" {
		return nil, missing("name", "the MCP server to approve")
	}
	if s.opts.MCP == nil {
		return nil, coded(CodeUnavailable, "unavailable", "this daemon runs no MCP servers")
	}
	st, err := s.opts.MCP.Trust(editor, p.Name, p.Pin)
	if err != nil {
		if errors.Is(err, mcp.ErrUnknownServer) {
			return nil, notFound("%v: servers are configured in .nexus/mcp.json, .vscode/mcp.json or .mcp.json", err)
		}
		return nil, precondition("%v", err)
	}
	return &mcpTrustResult{Server: mcpServerJSON(st)}, nil
}

// requestMcpTrust is the request nexusd sends the editor about an MCP
// server that waits for the person's approval.
const requestMcpTrust = "nexus/requestMcpTrust"

// The answers to nexus/requestMcpTrust.
const (
	trustAllow  = "allow"
	trustReject = "reject"
)

type mcpTrustRequest struct {
	// Server carries what the entry runs (launch) and its pin.
	Server  mcpServerWire `json:"server"`
	Options []string      `json:"options"`
}

// attachTrustAsker makes the editor the one asked to approve MCP servers
// that wait, from initialized until the editor goes.
func (s *Server) attachTrustAsker() {
	if s.opts.MCP != nil {
		s.opts.MCP.SetTrustAsker(editor, s.askEditorTrust)
	}
}

// askEditorTrust sends nexus/requestMcpTrust and waits for the answer:
// "allow" or "reject", as a string or {"answer": string}. An error reply
// (an editor that does not know the method) leaves the server waiting.
func (s *Server) askEditorTrust(ctx context.Context, st mcp.Status) (bool, error) {
	// The editor hears of the server's state before it is asked about it.
	s.out.event(st)
	if err := s.out.flush(ctx); err != nil {
		return false, err
	}
	return s.askEditorTrustOf(ctx, requestMcpTrust, mcpTrustRequest{Server: mcpServerJSON(st), Options: []string{trustAllow, trustReject}})
}

// askEditorTrustOf sends a question of trust (method, params) and waits for the
// answer; when ctx ends first, the editor gets $/cancelRequest.
func (s *Server) askEditorTrustOf(ctx context.Context, method string, params any) (bool, error) {
	var raw json.RawMessage
	id, err := s.conn.Call(ctx, method, params, &raw)
	if ctx.Err() != nil {
		if id.IsValid() {
			s.conn.Notify(context.WithoutCancel(ctx), "$/cancelRequest", map[string]any{"id": idValue(id)})
		}
		return false, ctx.Err()
	}
	if err != nil {
		return false, err
	}
	return trustAnswer(raw)
}

// trustAnswer reads the editor's answer to a question of trust: "allow"
// or "reject", as a string or {"answer": string}.
func trustAnswer(raw json.RawMessage) (bool, error) {
	var ans string
	if json.Unmarshal(raw, &ans) != nil {
		var obj struct {
			Answer string `json:"answer"`
		}
		if json.Unmarshal(raw, &obj) != nil {
			return false, fmt.Errorf("the editor's answer %s is neither a string nor {\"answer\": string}", clip(string(raw)))
		}
		ans = obj.Answer
	}
	switch ans {
	case trustAllow:
		return true, nil
	case trustReject:
		return false, nil
	}
	return false, fmt.Errorf("the editor's answer %q is not %q or %q", ans, trustAllow, trustReject)
}
