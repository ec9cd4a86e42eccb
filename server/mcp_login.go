package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/nexuscocreate/nexus/tools/mcp"
)

// Signing in to the MCP servers that ask for it (OAuth): nexus/mcp/login
// and nexus/mcp/logout.

// showDocument is LSP's request to the editor to show a document;
// external opens a URL in the browser (vscode-languageclient calls
// env.openExternal).
const showDocument = "window/showDocument"

type showDocumentParams struct {
	URI      string `json:"uri"`
	External bool   `json:"external"`
}

type mcpLoginParams struct {
	Name string `json:"name"`
}

type mcpLoginResult struct {
	Server mcpServerWire `json:"server"`
}

// mcpLogin signs the person in to a server: the editor is asked to open
// the authorization URL in the browser, and the answer comes once the
// person signed in, or the sign-in failed, timed out or was cancelled
// ($/cancelRequest).
func (s *Server) mcpLogin(ctx context.Context, p *mcpLoginParams) (*mcpLoginResult, error) {
	if p.Name == "" {
		return nil, missing("name", "the MCP server to sign in to")
	}
	if s.opts.MCP == nil {
		return nil, coded(CodeUnavailable, "unavailable", "this daemon runs no MCP servers")
	}
	st, err := s.opts.MCP.Login(ctx, p.Name, func(u string) { go s.openExternal(ctx, p.Name, u) })
	if err != nil {
		return nil, mcpMethodError(ctx, err)
	}
	return &mcpLoginResult{Server: mcpServerJSON(st)}, nil
}

// openExternal asks the editor to open u in the browser; an editor that
// cannot is told the URL to open.
func (s *Server) openExternal(ctx context.Context, server, u string) {
	var res struct {
		Success bool `json:"success"`
	}
	_, err := s.conn.Call(ctx, showDocument, showDocumentParams{URI: u, External: true}, &res)
	if ctx.Err() != nil || err == nil && res.Success {
		return
	}
	s.logger.Info("the editor did not open the sign-in page; it is told the URL", "server", server)
	s.conn.Notify(context.WithoutCancel(ctx), "window/showMessage", map[string]any{"type": messageInfo,
		"message": fmt.Sprintf("To sign in to the MCP server %s, open %s in a browser.", server, u)})
}

type mcpLogoutParams struct {
	Name string `json:"name"`
}

type mcpLogoutResult struct {
	Server mcpServerWire `json:"server"`
	// SignedOut is false when there were no tokens to delete.
	SignedOut bool `json:"signedOut"`
}

// mcpLogout deletes a server's tokens and disconnects it.
func (s *Server) mcpLogout(ctx context.Context, p *mcpLogoutParams) (*mcpLogoutResult, error) {
	if p.Name == "" {
		return nil, missing("name", "the MCP server to sign out of")
	}
	if s.opts.MCP == nil {
		return nil, coded(CodeUnavailable, "unavailable", "this daemon runs no MCP servers")
	}
	st, removed, err := s.opts.MCP.Logout(p.Name)
	if err != nil {
		return nil, mcpMethodError(ctx, err)
	}
	return &mcpLogoutResult{Server: mcpServerJSON(st), SignedOut: removed}, nil
}

// mcpMethodError is the error of a nexus/mcp/ method: not found for an
// unknown server, the cancellation as such, else failed precondition.
func mcpMethodError(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, mcp.ErrUnknownServer):
		return notFound("%v: servers are configured in .nexus/mcp.json, .vscode/mcp.json or .mcp.json", err)
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return precondition("%v", err)
}
