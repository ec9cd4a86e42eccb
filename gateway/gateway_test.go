package gateway

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/events"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/mcp"
	"github.com/nexuscocreate/nexus/tools/mcp/mcptest"
)

// askingEnv, set to "stdio", makes the test binary mcptest's asking
// server on stdio.
const askingEnv = "NEXUS_TEST_ASKING"

func TestMain(m *testing.M) {
	if os.Getenv(askingEnv) == "stdio" {
		if err := new(mcptest.Asking).ServeStdio(context.Background()); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// everything is the entry of server-everything over stdio (tools, prompts
// and resources), installed by scripts/mcp-servers.sh (make test).
func everything(t *testing.T) mcp.ServerConfig {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("..", ".cache", "mcp-servers", "node_modules", ".bin", "mcp-server-everything"))
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		t.Fatalf("server-everything is not installed: run scripts/mcp-servers.sh (make test does): %v", err)
	}
	return mcp.ServerConfig{Transport: "stdio", Command: bin, Enabled: true}
}

// approve waits until server waits for approval, and approves it.
func approve(t *testing.T, h *mcp.Hub, name string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := h.Trust(access.Person("cli"), name, ""); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server %s never came to wait for approval: %+v", name, h.Servers())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitReady(t *testing.T, h *mcp.Hub, name string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		for _, st := range h.Servers() {
			if st.Name == name && st.State == mcp.StateReady {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server %s never became ready: %+v", name, h.Servers())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSessionServersAreNotExposed: the tools, prompts and resources of a
// server an editor's session brought are not the gateway's clients': they
// are not listed, and a call by their exposed name finds nothing.
// pingGateway is a gateway whose manager allows everything and has one
// tool, ping, with its hub.
func pingGateway(t *testing.T) (*Gateway, *tools.Manager, *mcp.Hub) {
	t.Helper()
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
	return New(Options{Tools: m, Hub: h, Bus: bus, Workspace: ws}), m, h
}

func TestSessionServersAreNotExposed(t *testing.T) {
	g, m, h := pingGateway(t)
	cs := connect(t, g)
	ctx := t.Context()

	// The session's server is ready first; the files' server comes after
	// it, so that the list that has the files' tools was made while the
	// session's server was ready.
	ev := everything(t)
	ev.Source = "ACP client (session s1)"
	if err := h.SetSessionServers("s1", map[string]mcp.ServerConfig{"everything": ev}); err != nil {
		t.Fatal(err)
	}
	approve(t, h, "everything")
	waitReady(t, h, "everything")
	if len(m.List("everything")) == 0 {
		t.Fatal("the session's server registered no tools")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h.Apply(map[string]mcp.ServerConfig{"asking": {Name: "asking", Source: "test", Transport: "stdio", Command: exe,
		Env: map[string]string{askingEnv: "stdio"}, Enabled: true}})
	approve(t, h, "asking")
	waitReady(t, h, "asking")

	var names []string
	deadline := time.Now().Add(30 * time.Second)
	for !slices.Contains(names, "asking__ask") {
		if time.Now().After(deadline) {
			t.Fatalf("the files' server's tools were never listed: %v", names)
		}
		time.Sleep(10 * time.Millisecond)
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		names = names[:0]
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
	}
	if !slices.Contains(names, "ping") {
		t.Errorf("core tools are missing: %v", names)
	}
	for _, n := range names {
		if strings.HasPrefix(n, "everything") {
			t.Errorf("the session's tool %s is listed", n)
		}
	}
	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	resources, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	templates, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(prompts.Prompts)+len(resources.Resources)+len(templates.ResourceTemplates) != 0 {
		t.Errorf("the session's server's prompts or resources are listed: %d prompts, %d resources, %d templates",
			len(prompts.Prompts), len(resources.Resources), len(templates.ResourceTemplates))
	}
	if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "everything__echo", Arguments: map[string]any{"message": "x"}}); err == nil && !res.IsError {
		t.Errorf("a call of the session's tool ran: %+v", res)
	}

	// A name that was a file server's when listed and is a session's at
	// the call is refused at the call.
	ps := &partyServer{party: access.Person("cli").Agent("mcp")}
	res, err := g.toolHandler(ps, toolRef{server: "everything", name: "echo"})(ctx, &sdk.CallToolRequest{
		Params: &sdk.CallToolParamsRaw{Name: "everything__echo", Arguments: []byte(`{"message":"x"}`)}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "belongs to an editor's session") {
		t.Errorf("a call of a session's server by a stale name: %+v %v", res, err)
	}
}
