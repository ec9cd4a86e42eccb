package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

var slowOnce sync.Once

// slowServer builds integration/mcpservers/slow (a go-sdk MCP server with
// "wait" and "echo") and returns the JSON of an entry that runs it.
func slowServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(binDir, "slow-mcp")
	slowOnce.Do(func() {
		out, err := exec.Command("go", "build", "-o", bin, "./mcpservers/slow").CombinedOutput()
		if err != nil {
			t.Fatalf("build the slow MCP server: %v\n%s", err, out)
		}
	})
	return `{"command": ` + quote(bin) + `}`
}

// bearer adds a bearer token to every request.
type bearer struct {
	token  string
	origin string
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	if b.origin != "" {
		r.Header.Set("Origin", b.origin)
	}
	return http.DefaultTransport.RoundTrip(r)
}

type gatewayClient struct {
	*mcp.ClientSession
	toolsChanged chan struct{}
	progress     chan float64
}

func connectMCP(t *testing.T, transport mcp.Transport) *gatewayClient {
	t.Helper()
	c := &gatewayClient{toolsChanged: make(chan struct{}, 16), progress: make(chan float64, 256)}
	client := mcp.NewClient(&mcp.Implementation{Name: "gateway-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { c.toolsChanged <- struct{}{} },
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			select {
			case c.progress <- r.Params.Progress:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	c.ClientSession = s
	return c
}

func (d *daemon) mcpURL() string {
	d.t.Helper()
	data, err := os.ReadFile(filepath.Join(d.ws, ".nexus", "run", "daemon.json"))
	if err != nil {
		d.t.Fatal(err)
	}
	var info struct {
		MCPURL string `json:"mcpUrl"`
	}
	json.Unmarshal(data, &info)
	if info.MCPURL == "" {
		d.t.Fatalf("daemon.json has no mcpUrl: %s", data)
	}
	return info.MCPURL
}

func httpMCP(url, token string) mcp.Transport {
	return &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token: token}}, MaxRetries: -1}
}

func toolNames(t *testing.T, c *gatewayClient) map[string]bool {
	t.Helper()
	res, err := c.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range res.Tools {
		names[tl.Name] = true
	}
	return names
}

// callText calls a tool and returns its text content and isError.
func callText(t *testing.T, c *mcp.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// lastCall is the newest call of tool (server/name) the daemon knows.
func (d *daemon) lastCall(server, tool string) *nexusv1.ToolCall {
	d.t.Helper()
	resp, err := d.tools().ListToolCalls(as(d.admin), &nexusv1.ListToolCallsRequest{})
	if err != nil {
		d.t.Fatal(err)
	}
	for _, c := range resp.ToolCalls {
		if c.ServerName == server && c.ToolName == tool {
			return c
		}
	}
	return nil
}

const gatewayConfig = `apps:
  - id: planner
    grants:
      tools: {allow: [write_file], deny: [read_file]}
tools:
  policy:
    "slow/echo": allow
    "slow/wait": allow
    "slow2/echo": allow
mcp:
  http: {address: "127.0.0.1:0"}
`

func TestGatewayHTTP(t *testing.T) {
	ws := newWorkspace(t, gatewayConfig)
	writeMCP(t, ws, `"slow": `+slowServer(t))
	os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello from the workspace\n"), 0o644)
	d := startDaemon(t, ws)
	d.trustMCP("slow")
	d.waitMCP("slow", "ready")
	url := d.mcpURL()

	person := connectMCP(t, httpMCP(url, d.admin))
	deadline := time.Now().Add(10 * time.Second)
	for names := toolNames(t, person); !names["slow__echo"]; names = toolNames(t, person) {
		if time.Now().After(deadline) {
			t.Fatalf("no slow__echo among %v", names)
		}
		time.Sleep(20 * time.Millisecond)
	}
	names := toolNames(t, person)
	for _, n := range []string{"read_file", "write_file", "execute_command", "slow__echo", "slow__wait"} {
		if !names[n] {
			t.Errorf("tools/list has no %s: %v", n, names)
		}
	}

	// A low-risk core tool runs; the call is the daemon's, by agent:mcp.
	if text, isErr := callText(t, person.ClientSession, "read_file", map[string]any{"path": "hello.txt"}); isErr || !strings.Contains(text, "hello from the workspace") {
		t.Fatalf("read_file: %q %v", text, isErr)
	}
	if c := d.lastCall("", "read_file"); c == nil || c.Status != "completed" || c.Author != "agent:mcp" {
		t.Fatalf("the daemon's read_file call: %v", c)
	}
	// A hub tool the policy allows.
	if text, isErr := callText(t, person.ClientSession, "slow__echo", map[string]any{"text": "through the gateway"}); isErr || text != "through the gateway" {
		t.Fatalf("slow__echo: %q %v", text, isErr)
	}
	// write_file asks; with no editor to ask, it is denied.
	if text, isErr := callText(t, person.ClientSession, "write_file", map[string]any{"path": "x.txt", "content": "x"}); !isErr || !strings.HasPrefix(text, "permission_denied") {
		t.Fatalf("write_file by the person's MCP client: %q %v", text, isErr)
	}
	if _, err := os.Stat(filepath.Join(ws, "x.txt")); err == nil {
		t.Fatal("a denied write_file wrote")
	}
	// Invalid arguments are refused by the manager's validation.
	if text, isErr := callText(t, person.ClientSession, "slow__echo", map[string]any{"text": 42}); !isErr || !strings.HasPrefix(text, "invalid_arguments") {
		t.Fatalf("slow__echo with a number: %q %v", text, isErr)
	}

	// An app's grants apply: write_file allowed, read_file denied.
	app := connectMCP(t, httpMCP(url, d.appToken("planner")))
	if text, isErr := callText(t, app.ClientSession, "write_file", map[string]any{"path": "by-app.txt", "content": "app"}); isErr {
		t.Fatalf("write_file by the planner: %q", text)
	}
	if c := d.lastCall("", "write_file"); c == nil || c.Author != "app:planner" || c.AppId != "planner" {
		t.Fatalf("the planner's write_file call: %v", c)
	}
	if text, isErr := callText(t, app.ClientSession, "read_file", map[string]any{"path": "hello.txt"}); !isErr || !strings.HasPrefix(text, "permission_denied") {
		t.Fatalf("read_file by the planner: %q %v", text, isErr)
	}

	// Progress reaches the client, and its cancel cancels the Nexus call.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "slow__wait", Arguments: map[string]any{"seconds": 60}}
		params.SetProgressToken("p1")
		_, err := person.CallTool(ctx, params)
		done <- err
	}()
	select {
	case <-person.progress:
	case <-time.After(20 * time.Second):
		t.Fatal("no progress from slow__wait")
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled call returned no error")
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		c := d.lastCall("slow", "wait")
		if c != nil && c.Status == "error" && c.Error.GetCode() == "cancelled" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Nexus call was not cancelled: %v", c)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A server added while the client is connected: list_changed, then its tools.
	for len(person.toolsChanged) > 0 {
		<-person.toolsChanged
	}
	writeMCP(t, ws, `"slow": `+slowServer(t)+`, "slow2": `+slowServer(t))
	d.trustMCP("slow2")
	deadline = time.Now().Add(20 * time.Second)
	for !toolNames(t, person)["slow2__echo"] {
		select {
		case <-person.toolsChanged:
		case <-time.After(time.Until(deadline)):
			t.Fatal("no tools/list_changed with slow2's tools")
		}
	}
}

func TestGatewayRefusesOtherOrigins(t *testing.T) {
	ws := newWorkspace(t, "mcp:\n  http: {address: \"127.0.0.1:0\"}\n")
	d := startDaemon(t, ws)
	url := d.mcpURL()
	post := func(token, origin, host string) int {
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		name                string
		token, origin, host string
		want                int
	}{
		{"no token", "", "", "", http.StatusUnauthorized},
		{"unknown token", "nope", "", "", http.StatusUnauthorized},
		{"a web page's origin", d.admin, "https://evil.example", "", http.StatusForbidden},
		{"a rebound host name", d.admin, "", "evil.example:80", http.StatusForbidden},
	} {
		if got := post(c.token, c.origin, c.host); got != c.want {
			t.Errorf("%s: status %d, want %d", c.name, got, c.want)
		}
	}
	// A loopback origin is a local page, allowed.
	s := connectMCP(t, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{token: d.admin, origin: "http://localhost:3000"}}})
	if names := toolNames(t, s); !names["read_file"] {
		t.Fatalf("tools: %v", names)
	}
}

func TestGatewayStdio(t *testing.T) {
	ws := newWorkspace(t, "")
	os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("stdio hello\n"), 0o644)
	nexusd := filepath.Join(binDir, "nexusd")

	// No daemon runs: nexusd mcp is the daemon.
	c := connectMCP(t, &mcp.CommandTransport{Command: exec.Command(nexusd, "mcp", "--workspace", ws)})
	if text, isErr := callText(t, c.ClientSession, "read_file", map[string]any{"path": "hello.txt"}); isErr || !strings.Contains(text, "stdio hello") {
		t.Fatalf("read_file in-process: %q %v", text, isErr)
	}
	c.Close()
	// It stops with its client: the lock is free for a daemon.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(ws, ".nexus", "run", "daemon.json")); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("nexusd mcp did not stop when its client went")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A daemon runs: nexusd mcp connects to it, and the calls are its.
	d := startDaemon(t, ws)
	c = connectMCP(t, &mcp.CommandTransport{Command: exec.Command(nexusd, "mcp", "--workspace", ws)})
	if names := toolNames(t, c); !names["write_file"] {
		t.Fatalf("tools through the running daemon: %v", names)
	}
	if text, isErr := callText(t, c.ClientSession, "read_file", map[string]any{"path": "hello.txt"}); isErr || !strings.Contains(text, "stdio hello") {
		t.Fatalf("read_file through the daemon: %q %v", text, isErr)
	}
	if call := d.lastCall("", "read_file"); call == nil || call.Author != "agent:mcp" {
		t.Fatalf("the running daemon did not make the call: %v", call)
	}
	if text, isErr := callText(t, c.ClientSession, "write_file", map[string]any{"path": "y.txt", "content": "y"}); !isErr || !strings.HasPrefix(text, "permission_denied") {
		t.Fatalf("write_file: %q %v", text, isErr)
	}
}
