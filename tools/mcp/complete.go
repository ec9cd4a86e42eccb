package mcp

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Complete asks a server for the completions of an argument of one of its
// prompts or resource templates (completion/complete); params name them by
// the server's own names. A server that does not declare completions
// completes nothing: an empty list, not an error. An error the server
// answers with keeps its code.
func (h *Hub) Complete(ctx context.Context, name string, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	session, err := h.readySession(name, "whose completions to ask for")
	if err != nil {
		return nil, err
	}
	if caps := session.InitializeResult().Capabilities; caps == nil || caps.Completions == nil {
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
	}
	res, err := session.Complete(ctx, params)
	var wire *jsonrpc.Error
	switch {
	case errors.As(err, &wire):
		return nil, &jsonrpc.Error{Code: wire.Code, Message: fmt.Sprintf("MCP server %q: completion: %s", name, wire.Message), Data: wire.Data}
	case err != nil:
		return nil, fmt.Errorf("MCP server %q: completion: %w", name, err)
	}
	if res.Completion.Values == nil {
		res.Completion.Values = []string{}
	}
	return res, nil
}
