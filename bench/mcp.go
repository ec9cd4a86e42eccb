package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/events"
	"github.com/nexuscocreate/nexus/gateway"
	"github.com/nexuscocreate/nexus/internal/proctree"
	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
	"github.com/nexuscocreate/nexus/tools"
	hub "github.com/nexuscocreate/nexus/tools/mcp"
	"github.com/nexuscocreate/nexus/tools/policy"
	"github.com/nexuscocreate/nexus/workspace"
)

// mcpBin is an MCP server installed by scripts/mcp-servers.sh (make bench
// runs it first).
func mcpBin(name string) (string, error) {
	p, err := filepath.Abs(filepath.Join(".cache", "mcp-servers", "node_modules", ".bin", name))
	if err == nil {
		_, err = os.Stat(p)
	}
	if err != nil {
		return "", fmt.Errorf("%s is not installed (run make mcp-servers): %w", name, err)
	}
	return p, nil
}

// trustAll approves every MCP server the workspace configures, as nexus
// mcp trust --all would, before the daemon starts.
func trustAll(ws string) error {
	cfgs, _, err := hub.LoadConfig(ws, nil)
	if err != nil {
		return err
	}
	store, err := hub.OpenTrustStore(hub.TrustFile(ws))
	if err != nil {
		return err
	}
	for name, cfg := range cfgs {
		if err := store.Approve(name, cfg.Launch().Pin(), time.Now()); err != nil {
			return err
		}
	}
	return nil
}

// benchMCP measures the McpHub: server-everything's echo through the daemon
// (over gRPC, and from an MCP client of the gateway through nexusd mcp)
// against the same call from a bare go-sdk client to a server, and the time
// from daemon start to every server ready against starting the same
// servers one after another.
func benchMCP(tmp string) error {
	everything, err := mcpBin("mcp-server-everything")
	if err != nil {
		return err
	}
	memory, err := mcpBin("mcp-server-memory")
	if err != nil {
		return err
	}
	filesystem, err := mcpBin("mcp-server-filesystem")
	if err != nil {
		return err
	}
	// server-everything over Streamable HTTP, which the daemon and a bare
	// client can both reach: the same server process for both.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	web := exec.Command(everything, "streamableHttp")
	web.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	tree, err := proctree.Start(web, proctree.Options{})
	if err != nil {
		return err
	}
	defer func() { tree.Kill(); web.Wait(); tree.Release() }()
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	for deadline := time.Now().Add(30 * time.Second); ; {
		if c, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server-everything does not listen on %s", url)
		}
		time.Sleep(20 * time.Millisecond)
	}

	ws := filepath.Join(tmp, "mcp")
	servers := map[string][]string{
		"everything":  {everything},
		"memory":      {memory},
		"filesystem":  {filesystem, ws},
		"everything2": {everything},
	}
	cfg := map[string]any{}
	for name, argv := range servers {
		cfg[name] = map[string]any{"command": argv[0], "args": argv[1:], "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(tmp, name+".jsonl")}}
	}
	cfg["web"] = map[string]any{"url": url}
	data, _ := json.Marshal(map[string]any{"mcpServers": cfg})
	if err := os.MkdirAll(filepath.Join(ws, ".nexus"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(ws, ".nexus", "mcp.json"), data, 0o644); err != nil {
		return err
	}
	// An MCP client of the gateway acts as an agent: the policy lets it
	// call everything's tools without asking.
	if err := os.WriteFile(filepath.Join(ws, ".nexus", "config.yaml"), []byte("tools:\n  policy:\n    \"everything/*\": allow\n"), 0o644); err != nil {
		return err
	}
	// The person approved these servers before (nexus mcp trust): they
	// start with the daemon.
	if err := trustAll(ws); err != nil {
		return err
	}

	// Start to ready: the daemon starts its servers concurrently.
	start := time.Now()
	conn, actx, stop, err := daemonClient(ws)
	if err != nil {
		return err
	}
	defer stop()
	tm := nexusv1.NewToolManagerClient(conn)
	for {
		resp, err := tm.ListMcpServers(actx, &nexusv1.ListMcpServersRequest{})
		if err != nil {
			return err
		}
		ready := 0
		for _, s := range resp.Servers {
			switch s.State {
			case "ready":
				ready++
			case "failed":
				return fmt.Errorf("MCP server %s failed: %s", s.Name, s.Error)
			}
		}
		if ready == len(servers)+1 {
			break
		}
		if time.Since(start) > 2*time.Minute {
			return fmt.Errorf("MCP servers not ready: %v", resp.Servers)
		}
		time.Sleep(5 * time.Millisecond)
	}
	concurrent := time.Since(start)

	// The same servers, one after another: start, initialize, list tools.
	ctx := context.Background()
	start = time.Now()
	for name, argv := range servers {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "MEMORY_FILE_PATH="+filepath.Join(tmp, name+"-seq.jsonl"))
		s, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if _, err := s.ListTools(ctx, nil); err != nil {
			return err
		}
		defer s.Close()
	}
	sequential := time.Since(start)
	fmt.Printf("%-44s %10v   %-34s %10v   ratio %.4f×   (target report)\n", fmt.Sprintf("daemon start to %d stdio + 1 HTTP servers ready", len(servers)),
		concurrent.Round(time.Millisecond), "vs the same started one by one", sequential.Round(time.Millisecond), float64(concurrent)/float64(sequential))

	// echo through the daemon against a bare go-sdk client: over HTTP to the
	// same server process, and over stdio to a server of its own.
	webBare, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	if err != nil {
		return err
	}
	defer webBare.Close()
	stdioBare, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, &mcp.CommandTransport{Command: exec.Command(everything)}, nil)
	if err != nil {
		return err
	}
	defer stdioBare.Close()
	cf := nexusv1.NewCoreFrameworkClient(conn)
	viaDaemon := func(server string) func() error {
		return func() error {
			r, err := cf.ExecuteTool(actx, &nexusv1.ExecuteToolRequest{ToolName: "echo", ServerName: server, ArgumentsJson: `{"message":"bench"}`})
			if err == nil && (!r.Success || !strings.Contains(r.OutputJson, "Echo: bench")) {
				err = fmt.Errorf("echo: %s %s", r.ErrorCode, r.Message)
			}
			return err
		}
	}
	direct := func(s *mcp.ClientSession) func() error {
		return func() error {
			_, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "bench"}})
			return err
		}
	}
	// p50s times the calls in turns, so that all see the same machine
	// (this one is shared and noisy), and returns their medians.
	p50s := func(calls ...func() error) ([]time.Duration, error) {
		for range 300 { // V8 compiles the servers' hot paths
			for _, call := range calls {
				if err := call(); err != nil {
					return nil, err
				}
			}
		}
		took := make([][]time.Duration, len(calls))
		for range 2000 {
			for i, call := range calls {
				t := time.Now()
				if err := call(); err != nil {
					return nil, err
				}
				took[i] = append(took[i], time.Since(t))
			}
		}
		out := make([]time.Duration, len(calls))
		for i := range took {
			out[i] = median(took[i])
		}
		return out, nil
	}
	t, err := p50s(viaDaemon("web"), direct(webBare))
	if err != nil {
		return err
	}
	report("ExecuteTool(echo) via nexusd, HTTP, p50", t[0], t[1], "bare go-sdk client, same server", "≤ 1.2×")
	fmt.Printf("%-44s %10v\n", "  added by the daemon (gRPC, policy, audit)", (t[0] - t[1]).Round(time.Microsecond/10))

	// Over stdio, beside a core tool's call (get_current_time: gRPC, the
	// manager, policy, audit, and no MCP) to show what of the difference
	// is not the hub's.
	// And the McpHub alone: the same manager (policy, audit log) and hub in
	// this process, without the daemon's gRPC door.
	inProcess, closeHub, err := inProcessHub(filepath.Join(tmp, "hub-in-process"), everything)
	if err != nil {
		return err
	}
	defer closeHub()
	t, err = p50s(viaDaemon("everything"), direct(stdioBare), func() error {
		r, err := cf.ExecuteTool(actx, &nexusv1.ExecuteToolRequest{ToolName: "get_current_time", ArgumentsJson: `{"timezone":"UTC"}`})
		if err == nil && !r.Success {
			err = fmt.Errorf("get_current_time: %s %s", r.ErrorCode, r.Message)
		}
		return err
	}, inProcess)
	if err != nil {
		return err
	}
	report("McpHub call(echo), stdio, in process, p50", t[3], t[1], "bare go-sdk client, own server", "≤ 1.3×")
	fmt.Printf("%-44s %10v\n", "  added by the manager (policy, audit), hub", (t[3] - t[1]).Round(time.Microsecond/10))
	report("ExecuteTool(echo) via nexusd, stdio, p50", t[0], t[1], "bare go-sdk client, own server", "report")
	fmt.Printf("%-44s %10v   ExecuteTool(get_current_time), no MCP: %v\n", "  added by the daemon (gRPC, policy, audit)",
		(t[0] - t[1]).Round(time.Microsecond/10), t[2].Round(time.Microsecond/10))

	// The same echo from an MCP client of the gateway: nexusd mcp hands the
	// client's stdio to the daemon (its MCP socket, SCM_RIGHTS), and the
	// gateway calls the tool through the manager and the hub. A client on
	// the socket itself shows what is left of nexusd mcp's part (nothing:
	// no process copies the bytes).
	bin := filepath.Join(tmp, "nexusd")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/nexusd").CombinedOutput(); err != nil {
		return fmt.Errorf("build nexusd: %v: %s", err, out)
	}
	gw, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin, "mcp", "--workspace", ws)}, nil)
	if err != nil {
		return err
	}
	defer gw.Close()
	sock, err := mcpSocket(ws)
	if err != nil {
		return err
	}
	defer sock.Close()
	viaGateway := func(s *mcp.ClientSession) func() error {
		return func() error {
			r, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "everything__echo", Arguments: map[string]any{"message": "bench"}})
			if err != nil {
				return err
			}
			if t, ok := r.Content[0].(*mcp.TextContent); r.IsError || !ok || t.Text != "Echo: bench" {
				data, _ := json.Marshal(r)
				return fmt.Errorf("everything__echo via the gateway: %s", data)
			}
			return nil
		}
	}
	t, err = p50s(viaGateway(gw), direct(stdioBare), viaGateway(sock))
	if err != nil {
		return err
	}
	report("tools/call(echo) via nexusd mcp, stdio, p50", t[0], t[1], "bare go-sdk client, own server", "≤ 1.3×")
	fmt.Printf("%-44s %10v   of which nexusd mcp's part %v\n", "  added by nexusd mcp, the gateway and the hub",
		(t[0] - t[1]).Round(time.Microsecond/10), (t[0] - t[2]).Round(time.Microsecond/10))
	return nil
}

// inProcessHub starts server-everything (over stdio) behind a tool manager
// with the daemon's policy and audit log, and an McpHub, in this process,
// and returns a call of its echo.
func inProcessHub(ws, everything string) (call func() error, closeAll func(), err error) {
	if err := os.MkdirAll(filepath.Join(ws, ".nexus"), 0o755); err != nil {
		return nil, nil, err
	}
	pol := policy.New(policy.Rules{Tools: map[string]policy.Decision{"everything/echo": policy.Allow}, Workspace: ws}, nil)
	bus := events.New()
	m, err := tools.NewManager(tools.Options{Bus: bus, Gate: pol.Gate(&policy.Approvers{}, time.Minute, nil),
		AuditFile: filepath.Join(ws, ".nexus", "audit.jsonl")})
	if err != nil {
		return nil, nil, err
	}
	data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": map[string]any{"command": everything}}})
	if err := os.WriteFile(filepath.Join(ws, ".nexus", "mcp.json"), data, 0o644); err != nil {
		return nil, nil, err
	}
	if err := trustAll(ws); err != nil {
		return nil, nil, err
	}
	cfg, _, err := hub.LoadConfig(ws, nil)
	if err != nil {
		return nil, nil, err
	}
	h := hub.New(hub.Options{Workspace: ws, Tools: m, Bus: bus})
	closeAll = func() { h.Close(); m.Close() }
	h.Apply(cfg)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if st := h.Servers(); len(st) == 1 && st[0].State == "ready" {
			break
		}
		if time.Now().After(deadline) {
			closeAll()
			return nil, nil, fmt.Errorf("server-everything in process: not ready: %+v", h.Servers())
		}
	}
	req := tools.ExecuteRequest{ServerName: "everything", ToolName: "echo", Arguments: json.RawMessage(`{"message":"bench"}`)}
	return func() error {
		if c := m.Execute(context.Background(), req); c.Status != tools.StatusCompleted || !strings.Contains(string(c.ResultJSON), "Echo: bench") {
			return fmt.Errorf("echo in process: %+v", c.Error)
		}
		return nil
	}, closeAll, nil
}

// mcpSocket is a go-sdk client on the MCP socket of the daemon of ws.
func mcpSocket(ws string) (*mcp.ClientSession, error) {
	var info workspace.DaemonInfo
	data, err := os.ReadFile(filepath.Join(ws, ".nexus", "run", "daemon.json"))
	if err == nil {
		err = json.Unmarshal(data, &info)
	}
	if err != nil {
		return nil, err
	}
	tok, err := os.ReadFile(info.AdminTokenFile)
	if err != nil {
		return nil, err
	}
	c, err := net.Dial("unix", info.MCPSocket)
	if err != nil {
		return nil, err
	}
	r, err := gateway.Handshake(c, strings.TrimSpace(string(tok)))
	if err != nil {
		c.Close()
		return nil, err
	}
	return mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(context.Background(),
		&mcp.IOTransport{Reader: readCloser{r, c}, Writer: c}, nil)
}

type readCloser struct {
	io.Reader
	io.Closer
}
