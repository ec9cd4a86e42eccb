package gateway

import (
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/tools"
)

// A client's calls carry its MCP session, for their checkpoints: a
// connection without Mcp-Session-Id is one session of its own.
func TestCallsCarryTheClientsSession(t *testing.T) {
	g, m, _ := pingGateway(t)
	session := func(cs *sdk.ClientSession) string {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "ping", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("ping: %+v, %v", res, err)
		}
		calls := m.Calls(tools.CallFilter{Limit: 1}) // the newest: this one
		if len(calls) != 1 || calls[0].ToolName != "ping" {
			t.Fatalf("calls %+v", calls)
		}
		return calls[0].Session
	}
	one, two := connect(t, g), connect(t, g)
	a, b := session(one), session(two)
	if a == "" || b == "" || a == b {
		t.Errorf("two connections' sessions %q and %q, want two different ones", a, b)
	}
	if again := session(one); again != a {
		t.Errorf("a connection's second call in session %q, its first in %q", again, a)
	}
}
