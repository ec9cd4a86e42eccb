//lint:file-ignore SA1019 roots are deprecated only by the draft 2026-07-28 (SEP-2577); the hub speaks 2025-11-25 and before, where they are current.

package mcp

import (
	"context"
	"net/url"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProtocolVersion is the MCP version the hub offers in initialize: the
// newest stable one. A server that speaks an older one (2025-06-18,
// 2025-03-26, 2024-11-05) answers with it, and the session speaks that.
//
// The go-sdk's own default is the draft 2026-07-28, for which it first
// sends the stateless server/discover probe: every 2025 server refuses it
// (over HTTP with a 400) before the hub falls back to initialize, one
// useless round trip and an error in the server's log at every connect.
const ProtocolVersion = "2025-11-25"

// sessionOptions are the options of every connection to a server.
func sessionOptions() *mcp.ClientSessionOptions {
	return &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion}
}

// Roots: the hub offers servers one root, the workspace, in roots/list.
// A daemon serves one workspace for its whole life (it holds the
// workspace's lock), so the list never changes: the capability says so
// (listChanged false) and no notifications/roots/list_changed is ever
// sent.

// offerRoots makes the workspace the client's root.
func (h *Hub) offerRoots(client *mcp.Client) {
	client.AddRoots(h.root())
}

// root is the workspace as an MCP root: its file:// URI and its name.
func (h *Hub) root() *mcp.Root {
	dir, err := filepath.Abs(h.opts.Workspace)
	if err != nil {
		dir = filepath.Clean(h.opts.Workspace)
	}
	return &mcp.Root{URI: (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String(), Name: filepath.Base(dir)}
}

// connected readies a new session: the server is asked for the daemon's
// log level, and gets the subscriptions made before it (re)started.
func (s *server) connected(ctx context.Context, session *mcp.ClientSession) {
	s.setLogLevel(ctx, session)
	s.resubscribe(ctx, session)
}
