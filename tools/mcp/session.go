package mcp

import (
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
