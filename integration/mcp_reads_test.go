package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// The static resource and the prompt of server-everything that the reads
// below use.
const (
	everythingDoc    = "demo://resource/static/document/architecture.md"
	everythingPrompt = "simple-prompt"
)

const readsConfig = `apps:
  - id: denied
    grants:
      tools: {deny: ["everything/*"]}
  - id: reader
mcp:
  http: {address: "127.0.0.1:0"}
`

// TestMCPReadsFollowGrants (issue 24, break 8): an app denied a server's
// tools ("everything/*") is denied its resources and prompts too, through
// gRPC (ReadMcpResource, GetMcpPrompt) and the gateway (resources/read,
// prompts/get), with a permission error that names the rule; it is not
// shown them in the lists either. Every read, refused or not, is a call in
// the daemon's record (ListToolCalls, nexus calls, the audit file) with its
// app and server.
func TestMCPReadsFollowGrants(t *testing.T) {
	ws := newWorkspace(t, readsConfig)
	writeMCP(t, ws, `"everything": {"command": `+quote(mcpBin(t, "mcp-server-everything"))+`}`)
	d := startDaemon(t, ws)
	d.trustMCP("everything")
	d.waitMCP("everything", "ready")
	denied, reader := as(d.appToken("denied")), as(d.appToken("reader"))
	const rule = `app "denied" denies "everything/mcp_resource" (by "everything/*")`

	// gRPC.
	_, err := d.tools().ReadMcpResource(denied, &nexusv1.ReadMcpResourceRequest{ServerName: "everything", Uri: everythingDoc})
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), rule) {
		t.Fatalf("ReadMcpResource by the denied app: %v", err)
	}
	_, err = d.tools().GetMcpPrompt(denied, &nexusv1.GetMcpPromptRequest{ServerName: "everything", Name: everythingPrompt})
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), `denies "everything/mcp_prompt"`) {
		t.Fatalf("GetMcpPrompt by the denied app: %v", err)
	}
	if _, err := d.tools().ListMcpResources(denied, &nexusv1.ListMcpResourcesRequest{ServerName: "everything"}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("ListMcpResources of everything by the denied app: %v", err)
	}
	if res, err := d.tools().ListMcpPrompts(denied, &nexusv1.ListMcpPromptsRequest{}); err != nil || len(res.Prompts) != 0 {
		t.Fatalf("ListMcpPrompts by the denied app: %v %v", res, err)
	}
	res, err := d.tools().ReadMcpResource(reader, &nexusv1.ReadMcpResourceRequest{ServerName: "everything", Uri: everythingDoc})
	if err != nil || !strings.Contains(res.ContentsJson, everythingDoc) {
		t.Fatalf("ReadMcpResource by an app with no grants (a read is low risk): %v %v", res, err)
	}
	prompt, err := d.tools().GetMcpPrompt(reader, &nexusv1.GetMcpPromptRequest{ServerName: "everything", Name: everythingPrompt})
	if err != nil || !strings.Contains(prompt.ResultJson, "messages") {
		t.Fatalf("GetMcpPrompt by an app with no grants: %v %v", prompt, err)
	}

	// The gateway, with the app's token, once it serves the hub's
	// resources and prompts (it takes them in after the server is ready):
	// seen in the lists of the reader, which may see them.
	url := d.mcpURL()
	ctx := context.Background()
	allowed := connectMCP(t, httpMCP(url, d.appToken("reader")))
	waitFor(func() bool {
		rs, err := allowed.ListResources(ctx, nil)
		ps, err2 := allowed.ListPrompts(ctx, nil)
		return err == nil && err2 == nil && slices.ContainsFunc(rs.Resources, func(r *mcp.Resource) bool { return r.URI == everythingDoc }) && len(ps.Prompts) > 0
	})
	gw := connectMCP(t, httpMCP(url, d.appToken("denied")))
	_, err = gw.ReadResource(ctx, &mcp.ReadResourceParams{URI: everythingDoc})
	if err == nil || !strings.Contains(err.Error(), "permission_denied") || !strings.Contains(err.Error(), rule) {
		t.Fatalf("resources/read by the denied app: %v", err)
	}
	_, err = gw.GetPrompt(ctx, &mcp.GetPromptParams{Name: "everything__" + everythingPrompt})
	if err == nil || !strings.Contains(err.Error(), "permission_denied") || !strings.Contains(err.Error(), `denies "everything/mcp_prompt"`) {
		t.Fatalf("prompts/get by the denied app: %v", err)
	}
	if rs, err := gw.ListResources(ctx, nil); err != nil || len(rs.Resources) != 0 {
		t.Fatalf("resources/list shows the denied app %v (%v)", rs, err)
	}
	if ps, err := gw.ListPrompts(ctx, nil); err != nil || len(ps.Prompts) != 0 {
		t.Fatalf("prompts/list shows the denied app %v (%v)", ps, err)
	}
	read, err := allowed.ReadResource(ctx, &mcp.ReadResourceParams{URI: everythingDoc})
	if err != nil || len(read.Contents) == 0 {
		t.Fatalf("resources/read by the reader: %v %v", read, err)
	}
	if ps, err := allowed.ListPrompts(ctx, nil); err != nil || len(ps.Prompts) == 0 {
		t.Fatalf("prompts/list of the reader: %v %v", ps, err)
	}

	// Every read is a call of the daemon's, with its app and server.
	calls, err := d.tools().ListToolCalls(as(d.admin), &nexusv1.ListToolCallsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, c := range calls.ToolCalls {
		if c.ServerName != "everything" {
			continue
		}
		outcome := c.Status
		if c.Error != nil {
			outcome = c.Error.Code
		}
		count[c.AppId+" "+c.ToolName+" "+outcome]++
	}
	want := map[string]int{
		"denied mcp_resource permission_denied": 2, "denied mcp_prompt permission_denied": 2,
		"reader mcp_resource completed": 2, "reader mcp_prompt completed": 1,
	}
	for k, n := range want {
		if count[k] != n {
			t.Errorf("%d calls %q, want %d (all: %v)", count[k], k, n, count)
		}
	}
	out, _, code := nexus(t, ws, "", "calls")
	if code != 0 || !strings.Contains(out, "mcp_resource") || !strings.Contains(out, "mcp_prompt") || !strings.Contains(out, "permission_denied") {
		t.Errorf("nexus calls:\n%s", out)
	}
	audit := filepath.Join(ws, ".nexus", "audit", "toolcalls.jsonl")
	waitFor(func() bool {
		data, _ := os.ReadFile(audit)
		for _, line := range strings.Split(string(data), "\n") {
			var rec struct {
				ToolName, ServerName, AppID string
				Error                       *struct{ Code string }
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.ToolName == "mcp_resource" && rec.ServerName == "everything" &&
				rec.AppID == "denied" && rec.Error != nil && rec.Error.Code == "permission_denied" {
				return true
			}
		}
		return false
	})
}

// waitFor polls until cond holds; a wait that never ends is go test's
// timeout, whose stack names the caller.
func waitFor(cond func() bool) {
	for !cond() {
		time.Sleep(20 * time.Millisecond)
	}
}

// openSession opens a Streamable HTTP session with token and returns its
// id, or the HTTP status and body of the refusal.
func openSession(t *testing.T, url, token string) (id string, code int, body string) {
	t.Helper()
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	resp := postMCP(t, url, token, "", init)
	b := make([]byte, 4096)
	n, _ := resp.Body.Read(b)
	resp.Body.Close()
	return resp.Header.Get("Mcp-Session-Id"), resp.StatusCode, string(b[:n])
}

func postMCP(t *testing.T, url, token, session, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestGatewayHTTPSessionsBounded (issue 24, break 10): one token holds at
// most mcp.http.maxSessionsPerToken sessions open; one more closes that
// token's least recently used session (its next request gets 404), never
// another token's.
func TestGatewayHTTPSessionsBounded(t *testing.T) {
	ws := newWorkspace(t, "apps:\n  - id: greedy\n  - id: other\nmcp:\n  http: {address: \"127.0.0.1:0\", maxSessionsPerToken: 3}\n")
	d := startDaemon(t, ws)
	url, greedy, other := d.mcpURL(), d.appToken("greedy"), d.appToken("other")
	open := func(token string) string {
		t.Helper()
		id, code, body := openSession(t, url, token)
		if code != http.StatusOK || id == "" {
			t.Fatalf("a session: %d %s", code, body)
		}
		return id
	}
	ping := func(token, id string) int {
		t.Helper()
		resp := postMCP(t, url, token, id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
		resp.Body.Close()
		return resp.StatusCode
	}
	theirs := open(other)
	ids := []string{open(greedy), open(greedy), open(greedy)}
	// ids[0] is used again: ids[1] is now the least recently used.
	if code := ping(greedy, ids[0]); code != http.StatusOK {
		t.Fatalf("ping of a live session: %d", code)
	}
	fourth := open(greedy)
	for id, want := range map[string]int{ids[0]: http.StatusOK, ids[1]: http.StatusNotFound, ids[2]: http.StatusOK, fourth: http.StatusOK} {
		if code := ping(greedy, id); code != want {
			t.Errorf("after a 4th session, session %s: %d, want %d", id, code, want)
		}
	}
	if code := ping(other, theirs); code != http.StatusOK {
		t.Errorf("another token's session after greedy's 4th: %d", code)
	}
}

// TestGatewayHTTPSessionsExpire (issue 24, break 10): a session that sends
// nothing for mcp.http.sessionIdleTimeout is closed: its id is no longer
// known. A request resets the idle time, so the test leaves the session
// alone for longer each round until it is gone.
func TestGatewayHTTPSessionsExpire(t *testing.T) {
	ws := newWorkspace(t, "apps:\n  - id: idle\nmcp:\n  http: {address: \"127.0.0.1:0\", sessionIdleTimeout: 1s}\n")
	d := startDaemon(t, ws)
	url, token := d.mcpURL(), d.appToken("idle")
	id, code, body := openSession(t, url, token)
	if code != http.StatusOK || id == "" {
		t.Fatalf("session: %d %s", code, body)
	}
	for idle := time.Second; ; idle *= 2 {
		time.Sleep(idle) // what is tested: the session left idle this long
		resp := postMCP(t, url, token, id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			return
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("a request of the idle session: %d", resp.StatusCode)
		}
	}
}
