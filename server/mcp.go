package server

import (
	"context"
	"errors"

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
