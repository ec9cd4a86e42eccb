package gateway

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/events"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/mcp"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// BenchmarkGatewayEcho calls server-everything's echo (over stdio, behind
// the McpHub) through the gateway, from a go-sdk client in this process:
// what the gateway adds to a hub call (go test -bench GatewayEcho
// -cpuprofile to see where).
func BenchmarkGatewayEcho(b *testing.B) {
	everything, err := filepath.Abs(filepath.Join("..", ".cache", "mcp-servers", "node_modules", ".bin", "mcp-server-everything"))
	if err == nil {
		_, err = os.Stat(everything)
	}
	if err != nil {
		b.Skipf("server-everything is not installed (make mcp-servers): %v", err)
	}
	ws := b.TempDir()
	os.MkdirAll(filepath.Join(ws, ".nexus"), 0o755)
	data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": map[string]any{"command": everything}}})
	os.WriteFile(filepath.Join(ws, ".nexus", "mcp.json"), data, 0o644)
	cfgs, _, err := mcp.LoadConfig(ws, nil)
	if err != nil {
		b.Fatal(err)
	}
	store, err := mcp.OpenTrustStore(mcp.TrustFile(ws))
	if err != nil {
		b.Fatal(err)
	}
	store.Approve("everything", cfgs["everything"].Launch().Pin(), time.Now())
	pol := policy.New(policy.Rules{Tools: map[string]policy.Decision{"everything/echo": policy.Allow}, Workspace: ws}, nil)
	bus := events.New()
	m, err := tools.NewManager(tools.Options{Bus: bus, Gate: pol.Gate(&policy.Approvers{}, time.Minute, nil), AuditFile: filepath.Join(ws, ".nexus", "audit.jsonl")})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	h := mcp.New(mcp.Options{Workspace: ws, Tools: m, Bus: bus})
	defer h.Close()
	h.Apply(cfgs)
	for st := h.Servers(); len(st) != 1 || st[0].State != mcp.StateReady; st = h.Servers() {
		time.Sleep(5 * time.Millisecond)
	}
	cs := connect(b, New(Options{Tools: m, Hub: h, Bus: bus, Workspace: ws}))
	ctx := b.Context()
	params := &sdk.CallToolParams{Name: "everything__echo", Arguments: map[string]any{"message": "bench"}}
	for {
		if r, err := cs.CallTool(ctx, params); err == nil && !r.IsError {
			break
		}
		time.Sleep(10 * time.Millisecond) // until the gateway lists the tool
	}
	for range 300 {
		cs.CallTool(ctx, params)
	}
	for b.Loop() {
		if r, err := cs.CallTool(ctx, params); err != nil || r.IsError {
			b.Fatal(err, r)
		}
	}
}

// connect runs g and serves it, as an agent acting for the person, to a
// go-sdk client over in-memory transports, until tb ends.
func connect(tb testing.TB, g *Gateway) *sdk.ClientSession {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	go g.Run(ctx)
	ct, st := sdk.NewInMemoryTransports()
	ss, err := g.Server(access.Person("cli").Agent("mcp")).Connect(ctx, st, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cs.Close() })
	return cs
}
