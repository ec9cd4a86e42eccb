package gateway

import (
	"strconv"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// connSessions name the MCP sessions of the socket's connections, which
// have no Mcp-Session-Id: a connection is one session, "mcp:<n>", n
// counted from 1 in this daemon's life.
type connSessions struct {
	mu   sync.Mutex
	next int
	ids  map[*sdk.ServerSession]string
}

// sessionOf is the Session of a client's tool calls, for their
// checkpoints: its MCP session, undone as one with `nexus undo --session`.
func (g *Gateway) sessionOf(ss *sdk.ServerSession) string {
	if ss == nil {
		return ""
	}
	if id := ss.ID(); id != "" {
		return "mcp:" + id
	}
	c := &g.conns
	c.mu.Lock()
	defer c.mu.Unlock()
	if id, ok := c.ids[ss]; ok {
		return id
	}
	if c.ids == nil {
		c.ids = map[*sdk.ServerSession]string{}
	}
	c.next++
	id := "mcp:" + strconv.Itoa(c.next)
	c.ids[ss] = id
	return id
}

// forget drops the name of a connection's session when it ends.
func (g *Gateway) forget(ss *sdk.ServerSession) {
	g.conns.mu.Lock()
	delete(g.conns.ids, ss)
	g.conns.mu.Unlock()
}
