package gateway

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/events"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/mcp"
)

// A client's calls carry its MCP session, for their checkpoints: a
// connection without Mcp-Session-Id is one session of its own.
func TestCallsCarryTheClientsSession(t *testing.T) {
	ws := t.TempDir()
	bus := events.New()
	m, err := tools.NewManager(tools.Options{Bus: bus, Gate: func(context.Context, *tools.GateRequest, func(tools.ICERC)) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if err := m.Register(tools.Tool{Definition: tools.Definition{Name: "ping", Kind: tools.KindRead, Risk: tools.RiskLow},
		Handler: func(context.Context, *tools.Invocation, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{}`), nil
		}}); err != nil {
		t.Fatal(err)
	}
	h := mcp.New(mcp.Options{Workspace: ws, Tools: m, Bus: bus, TrustFile: filepath.Join(t.TempDir(), "trust.json")})
	t.Cleanup(h.Close)
	g := New(Options{Tools: m, Hub: h, Bus: bus, Workspace: ws})
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
