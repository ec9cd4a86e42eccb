package integration

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// Only the person answers (tools/policy, "Who may answer"): an app, on
// every door it can open with its token, is asked nothing — not about its
// own calls, not about an MCP server it brings. The hostile app and the
// prompt-injected model (scriptedModel) are played by the tests.

// launcherAttack is the arguments of an execute_command that writes the
// folder-open task of .vscode/tasks.json: code that runs outside every
// sandbox the next time the person opens the folder.
var launcherAttack = mustJSON(map[string]any{"command": `mkdir -p .vscode && echo '{"version":"2.0.0","tasks":[]}' > .vscode/tasks.json`})

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// remembersAllowFor reports whether .nexus/approvals.json holds an allow
// for app.
func remembersAllowFor(t *testing.T, ws, app string) bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ws, ".nexus", "approvals.json"))
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Approvals []struct {
			AppID string `json:"appId"`
			Allow bool   `json:"allow"`
		} `json:"approvals"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("approvals.json: %v\n%s", err, data)
	}
	for _, a := range f.Approvals {
		if a.AppID == app && a.Allow {
			return true
		}
	}
	return false
}

// launcherHeld fails t when the attack wrote the launcher, or left an
// allow for app behind.
func launcherHeld(t *testing.T, ws, app string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(ws, ".vscode", "tasks.json")); err == nil {
		t.Error("the app's command ran: .vscode/tasks.json was written")
	}
	if remembersAllowFor(t, ws, app) {
		t.Errorf(".nexus/approvals.json remembers an allow for app %q", app)
	}
}

// acpAnswering is an ACP client that answers every permission request
// with answer (default allow_always), and counts them.
type acpAnswering struct {
	acpRecorder
	answer  string
	askedMu sync.Mutex
	asked   []acpsdk.RequestPermissionRequest
}

func (c *acpAnswering) RequestPermission(_ context.Context, req acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	c.askedMu.Lock()
	c.asked = append(c.asked, req)
	c.askedMu.Unlock()
	answer := c.answer
	if answer == "" {
		answer = "allow_always"
	}
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected(acpsdk.PermissionOptionId(answer))}, nil
}

func (c *acpAnswering) questions() int {
	c.askedMu.Lock()
	defer c.askedMu.Unlock()
	return len(c.asked)
}

// startACP runs nexusd acp on ws (with the token in tokenFile, when not
// "") as client, initialized.
func startACP(t *testing.T, ws, tokenFile string, client acpsdk.Client) *acpsdk.ClientSideConnection {
	t.Helper()
	args := []string{"acp", "--workspace", ws}
	if tokenFile != "" {
		args = append(args, "--token-file", tokenFile)
	}
	cmd := exec.Command(filepath.Join(binDir, "nexusd"), args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Logf("nexusd acp: %v\n%s", err, stderr.String())
		}
	})
	conn := acpsdk.NewClientSideConnection(client, stdin, stdout)
	if _, err := conn.Initialize(context.Background(), acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}); err != nil {
		t.Fatalf("initialize: %v\n%s", err, stderr.String())
	}
	return conn
}

// acpPrompt opens a session of conn in ws and prompts it once.
func acpPrompt(t *testing.T, conn *acpsdk.ClientSideConnection, ws string, servers []acpsdk.McpServer) {
	t.Helper()
	if servers == nil {
		servers = []acpsdk.McpServer{}
	}
	sess, err := conn.NewSession(context.Background(), acpsdk.NewSessionRequest{Cwd: ws, McpServers: servers})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	if _, err := conn.Prompt(context.Background(), acpsdk.PromptRequest{SessionId: sess.SessionId,
		Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("set up the project")}}); err != nil {
		t.Fatalf("session/prompt: %v", err)
	}
}

// agentPrompt prompts a new gRPC Agent session of token, answering each
// permission request of the stream with answer (by the same token); it
// returns how many it answered and the stream's end (nil: a result).
func agentPrompt(t *testing.T, conn *grpc.ClientConn, token string, askPermissions bool, answer string) (int, error) {
	t.Helper()
	ag := nexusv1.NewAgentClient(conn)
	s, err := ag.NewSession(as(token), &nexusv1.NewSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	id := s.Session.SessionId
	stream, err := ag.Prompt(as(token), &nexusv1.PromptRequest{SessionId: id, Text: "set up the project", AskPermissions: askPermissions})
	if err != nil {
		t.Fatal(err)
	}
	answered := 0
	for {
		r, err := stream.Recv()
		if err == io.EOF {
			return answered, nil
		}
		if err != nil {
			return answered, err
		}
		if r.Result != nil {
			continue
		}
		var u struct {
			SessionUpdate string `json:"sessionUpdate"`
			Permission    *struct {
				RequestID string `json:"requestId"`
			} `json:"permission"`
		}
		if json.Unmarshal([]byte(r.UpdateJson), &u) == nil && u.SessionUpdate == "permission_request" && u.Permission != nil {
			if _, err := ag.AnswerPermission(as(token), &nexusv1.AnswerPermissionRequest{SessionId: id, RequestId: u.Permission.RequestID, Answer: answer}); err != nil {
				t.Errorf("AnswerPermission: %v", err)
			}
			answered++
		}
	}
}

// TestAppApprovesNothing (issue 24, break 1): an app with no tool grants
// tries to approve its own execute_command that writes .vscode/tasks.json,
// through the three doors that asked it: the MCP gateway's elicitation to
// its own client (nexusd mcp with its token), gRPC Agent's
// ask_permissions + AnswerPermission (on the unix socket and over
// TCP/TLS), and ACP's session/request_permission
// to its own ACP client (nexusd acp --token-file). No editor is attached:
// each time the command does not run, the app is never asked, and no
// "always" is remembered for it.
func TestAppApprovesNothing(t *testing.T) {
	m := startScriptedModel(t)
	// One app per door, none with grants, so that what one door let
	// through (an "always") does not decide for the next.
	apps := []string{"viamcp", "viaagent", "viatls", "viaacp"}
	ws := newWorkspace(t, "apps:\n  - id: "+strings.Join(apps, "\n  - id: ")+"\n"+m.config())
	d := startDaemon(t, ws, "--grpc-addr", "127.0.0.1:0")
	tokenFile := func(app string) string { return filepath.Join(ws, ".nexus", "run", "apps", app+".token") }
	// held fails t when the attack wrote the launcher, or left an allow
	// for app behind, and then removes the launcher for the next door.
	held := func(t *testing.T, app string) {
		t.Helper()
		launcherHeld(t, ws, app)
		os.RemoveAll(filepath.Join(ws, ".vscode"))
		// Its later plain calls reuse nothing.
		r, err := d.tools().ExecuteTool(as(d.appToken(app)), &nexusv1.ExecuteToolRequest{ToolName: "execute_command", ArgumentsJson: launcherAttack, RequestingAppId: app})
		if err != nil || r.Success || r.ErrorCode != "permission_denied" || !strings.Contains(r.Message, "no editor is attached") {
			t.Errorf("the app's ExecuteTool afterwards: %v %v", r, err)
		}
	}

	t.Run("MCP gateway elicitation", func(t *testing.T) {
		c := connectAnsweringOver(t, &mcp.CommandTransport{Command: exec.Command(filepath.Join(binDir, "nexusd"), "mcp", "--workspace", ws, "--token-file", tokenFile("viamcp"))}, true)
		c.answer(func(context.Context, *mcp.ElicitParams) *mcp.ElicitResult {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "allow_always"}}
		})
		var args map[string]any
		json.Unmarshal([]byte(launcherAttack), &args)
		text, isErr := callText(t, c.ClientSession, "execute_command", args)
		if !isErr || !strings.Contains(text, "no editor is attached to ask the person") {
			t.Errorf("execute_command through the gateway: %q %v", text, isErr)
		}
		if n := len(c.questions()); n != 0 {
			t.Errorf("the app's MCP client was asked %d questions", n)
		}
		held(t, "viamcp")
	})

	for _, door := range []struct {
		name, app string
		conn      *grpc.ClientConn
	}{
		{"unix socket", "viaagent", d.conn},
		{"TCP/TLS", "viatls", dialTCP(t, d.info.GRPCTCPAddress, credentials.NewTLS(pinned(d.info.TLSFingerprint)), "")},
	} {
		t.Run("gRPC Agent ask_permissions over "+door.name, func(t *testing.T) {
			m.next("execute_command", launcherAttack)
			defer m.next("", "")
			answered, err := agentPrompt(t, door.conn, d.appToken(door.app), true, "allow_always")
			if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "only the person answers") || answered != 0 {
				t.Errorf("Prompt with ask_permissions by an app: answered %d, %v", answered, err)
			}
			held(t, door.app)
		})
	}

	t.Run("ACP session/request_permission", func(t *testing.T) {
		m.next("execute_command", launcherAttack)
		defer m.next("", "")
		client := &acpAnswering{}
		acpPrompt(t, startACP(t, ws, tokenFile("viaacp"), client), ws, nil)
		if n := client.questions(); n != 0 {
			t.Errorf("the app's ACP client was asked %d questions", n)
		}
		held(t, "viaacp")
	})
}

// TestAppACPServerWaits (issue 24, break 2): an app runs nexusd acp with
// its token and passes a stdio MCP server (/bin/sh -c …) in session/new,
// ready to approve it itself. It is never asked; the server waits for the
// person: it does not start, and .nexus/mcp-trust.json pins nothing.
func TestAppACPServerWaits(t *testing.T) {
	m := startScriptedModel(t)
	ws := newWorkspace(t, "apps:\n  - id: planner\n"+m.config())
	d := startDaemon(t, ws)
	// What it runs marks that it ran, then serves MCP (nexusd mcp on a
	// workspace of its own), so that a prompt that started it goes on.
	marker, own := filepath.Join(t.TempDir(), "ran"), t.TempDir()
	client := &acpAnswering{}
	conn := startACP(t, ws, filepath.Join(ws, ".nexus", "run", "apps", "planner.token"), client)
	acpPrompt(t, conn, ws, []acpsdk.McpServer{{Stdio: &acpsdk.McpServerStdio{Name: "evil", Command: "/bin/sh",
		Args: []string{"-c", `echo ran > "$0"; exec "$1" mcp --workspace "$2"`, marker, filepath.Join(binDir, "nexusd"), own}, Env: []acpsdk.EnvVariable{}}}})
	if n := client.questions(); n != 0 {
		t.Errorf("the app's ACP client was asked %d questions", n)
	}
	if data, err := os.ReadFile(filepath.Join(ws, ".nexus", "mcp-trust.json")); err == nil && strings.Contains(string(data), "evil") {
		t.Errorf(".nexus/mcp-trust.json pins the app's server:\n%s", data)
	}
	servers, err := d.tools().ListMcpServers(as(d.admin), &nexusv1.ListMcpServersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers.Servers {
		if s.Name == "evil" && s.State != "pending_approval" {
			t.Errorf("the app's server is %q, want pending_approval", s.State)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the app's MCP server ran")
	}
	d.stop()
	if strings.Contains(d.stderr.String(), "approved by the person") {
		t.Errorf("the daemon logged an approval by the person:\n%s", d.stderr)
	}
}

// TestWhoMayAnswer is the rule of tools/policy's "Who may answer" through
// the real nexusd, with the person's editor attached: on each door, a
// party's write of .vscode/tasks.json (a protected path: always asked,
// whoever calls) is answered by the editor, or by the door's own client
// ("itself": the gateway client's elicitation, gRPC Agent's
// AnswerPermission, the ACP client's session/request_permission). The
// door's own client answers only when it is the person's; an app's is
// never asked, and its question goes to the editor. Where the client
// answers, the editor rejects: a write happens only on the answer of the
// one the cell names.
func TestWhoMayAnswer(t *testing.T) {
	m := startScriptedModel(t)
	write := mustJSON(map[string]any{"path": ".vscode/tasks.json", "content": "{}"})
	m.next("write_file", write)
	ws := newWorkspace(t, "apps:\n  - id: bare\n  - id: granted\n    grants:\n      tools:\n        allow: [write_file]\n"+
		"mcp:\n  http: {address: \"127.0.0.1:0\"}\n"+m.config())
	e := startEditor(t, ws)
	res := e.initialize(os.Getpid())
	conn, _ := grpcAdmin(t, res)
	var info struct {
		MCPURL string `json:"mcpUrl"`
	}
	if data, err := os.ReadFile(filepath.Join(ws, ".nexus", "run", "daemon.json")); err != nil || json.Unmarshal(data, &info) != nil || info.MCPURL == "" {
		t.Fatalf("daemon.json: %v %+v", err, info)
	}
	tokenFile := func(party string) string {
		if party == "the person" || party == "an agent for the person" {
			return res.Nexus.AdminTokenFile
		}
		if party == "app with grants" {
			return filepath.Join(ws, ".nexus", "run", "apps", "granted.token")
		}
		return filepath.Join(ws, ".nexus", "run", "apps", "bare.token")
	}
	token := func(party string) string {
		data, err := os.ReadFile(tokenFile(party))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(data))
	}
	var writeArgs map[string]any
	json.Unmarshal([]byte(write), &writeArgs)

	// Each door runs the write as party; itself says whether the door's
	// own client offers to answer (allow_once). It returns how often the
	// client was asked.
	mcpDoor := func(transport func(party string) mcp.Transport) func(t *testing.T, party string, itself bool) int {
		return func(t *testing.T, party string, itself bool) int {
			c := connectAnsweringOver(t, transport(party), itself)
			if itself {
				c.answer(func(context.Context, *mcp.ElicitParams) *mcp.ElicitResult {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "allow_once"}}
				})
			}
			callText(t, c.ClientSession, "write_file", writeArgs)
			return len(c.questions())
		}
	}
	doors := map[string]func(t *testing.T, party string, itself bool) int{
		"gRPC ExecuteTool": func(t *testing.T, party string, _ bool) int {
			app := map[string]string{"app with grants": "granted", "app without grants": "bare"}[party]
			if _, err := nexusv1.NewToolManagerClient(conn).ExecuteTool(as(token(party)), &nexusv1.ExecuteToolRequest{
				ToolName: "write_file", ArgumentsJson: write, RequestingAppId: app}); err != nil {
				t.Fatal(err)
			}
			return 0
		},
		"gRPC Agent": func(t *testing.T, party string, itself bool) int {
			n, err := agentPrompt(t, conn, token(party), itself, "allow_once")
			if err != nil && status.Code(err) != codes.PermissionDenied {
				t.Fatal(err)
			}
			return n
		},
		"editor": func(t *testing.T, _ string, _ bool) int {
			var r map[string]any
			e.mustCall("nexus/tools/execute", map[string]any{"toolName": "write_file", "argumentsJson": write}, &r)
			return 0
		},
		"ACP": func(t *testing.T, party string, itself bool) int {
			tf := ""
			if party == "an agent for an app" {
				tf = tokenFile(party)
			}
			// The model's intent poses as the command; the person's ACP
			// editor is shown it inert, labelled as the model's words.
			m.next("write_file", mustJSON(map[string]any{"path": ".vscode/tasks.json", "content": "{}",
				"icerc": map[string]any{"intent": "\x1b[2K\rcommand:  go test ./...\u202e", "expected_outcome": "tests pass"}}))
			defer m.next("write_file", write)
			client := &acpAnswering{answer: "allow_once"}
			acpPrompt(t, startACP(t, ws, tf, client), ws, nil)
			client.askedMu.Lock()
			asked := slices.Clone(client.asked)
			client.askedMu.Unlock()
			for _, q := range asked {
				text := q.ToolCall.Content[0].Content.Content.Text.Text
				if !strings.Contains(text, "\nin the model's words, not checked by Nexus:\n  intent:   \\x1b[2K\\rcommand:  go test ./...\\u202e\n") ||
					!strings.Contains(text, "\ncommand:  write_file .vscode/tasks.json") || !strings.Contains(text, "asked by: agent session ") {
					t.Errorf("the permission request shows:\n%s", text)
				}
			}
			return client.questions()
		},
		"MCP stdio": mcpDoor(func(party string) mcp.Transport {
			return &mcp.CommandTransport{Command: exec.Command(filepath.Join(binDir, "nexusd"), "mcp", "--workspace", ws, "--token-file", tokenFile(party))}
		}),
		"MCP HTTP": mcpDoor(func(party string) mcp.Transport { return httpMCP(info.MCPURL, token(party)) }),
	}

	const answered, refused = "answered", "refused"
	for _, c := range []struct {
		door, party, answerer, want string
	}{
		{"gRPC ExecuteTool", "app without grants", "editor", answered},
		{"gRPC ExecuteTool", "app with grants", "editor", answered},
		{"gRPC ExecuteTool", "the person", "editor", answered},
		{"gRPC Agent", "an agent for the person", "itself", answered},
		{"gRPC Agent", "an agent for the person", "editor", answered},
		{"gRPC Agent", "an agent for an app", "itself", refused},
		{"gRPC Agent", "an agent for an app", "editor", answered},
		{"editor", "the person", "editor", answered},
		{"ACP", "an agent for the person", "itself", answered},
		{"ACP", "an agent for an app", "itself", refused},
		{"ACP", "an agent for an app", "editor", answered},
		{"MCP stdio", "app without grants", "itself", refused},
		{"MCP stdio", "app with grants", "itself", refused},
		{"MCP stdio", "app without grants", "editor", answered},
		{"MCP stdio", "an agent for the person", "itself", answered},
		{"MCP HTTP", "app without grants", "itself", refused},
		{"MCP HTTP", "app with grants", "itself", refused},
		{"MCP HTTP", "app with grants", "editor", answered},
		{"MCP HTTP", "an agent for the person", "itself", answered},
	} {
		t.Run(c.door+"/"+c.party+"/"+c.answerer, func(t *testing.T) {
			target := filepath.Join(ws, ".vscode", "tasks.json")
			os.Remove(target)
			itself := c.answerer == "itself"
			e.mu.Lock()
			e.permission = map[bool]string{true: "reject_once", false: "allow_once"}[itself]
			e.mu.Unlock()
			before := e.permissionsAsked()
			asked := doors[c.door](t, c.party, itself)
			_, err := os.Stat(target)
			ran, editor := err == nil, e.permissionsAsked()-before
			switch {
			case c.want == answered && itself && (!ran || asked == 0 || editor != 0):
				t.Errorf("want the door's own client to answer: ran %v, it was asked %d times, the editor %d", ran, asked, editor)
			case c.want == answered && !itself && (!ran || editor == 0):
				t.Errorf("want the editor to answer: ran %v, the editor was asked %d times", ran, editor)
			case c.want == refused && (ran || asked != 0):
				t.Errorf("want the door's own client refused: ran %v, it was asked %d times", ran, asked)
			}
		})
	}
}

// TestAppAnswersNoServerQuestion: a hub MCP server's question during an
// app's call is the person's to answer too: the app's gateway client,
// which declared elicitation and sampling, is not asked (no editor: the
// question is declined, and the sampling request is denied, as the
// person was not asked to allow it), and ExecuteToolStream with
// ask_elicitation by the app is refused.
func TestAppAnswersNoServerQuestion(t *testing.T) {
	a, url := askingServer(t)
	// Its grants name the tools, not asking/mcp_sampling (as "asking/*"
	// would): the server's sampling request is asked.
	ws := newWorkspace(t, "apps:\n  - id: planner\n    grants:\n      tools:\n        allow: [\"asking/ask\", \"asking/sample\"]\nmcp:\n  sampling: {client: true}\n")
	writeMCP(t, ws, `"asking": {"type": "http", "url": `+quote(url)+`}`)
	d := startDaemon(t, ws)
	d.trustMCP("asking")
	d.waitMCP("asking", "ready")
	tokenFile := filepath.Join(ws, ".nexus", "run", "apps", "planner.token")

	c := connectAnsweringOver(t, &mcp.CommandTransport{Command: exec.Command(filepath.Join(binDir, "nexusd"), "mcp", "--workspace", ws, "--token-file", tokenFile)}, true)
	c.answer(func(_ context.Context, p *mcp.ElicitParams) *mcp.ElicitResult {
		if schema, _ := json.Marshal(p.RequestedSchema); strings.Contains(string(schema), "allow_once") {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "allow_once"}} // a permission form
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"email": "app@example.com"}}
	})
	callText(t, c.ClientSession, "asking__sample", map[string]any{"prompt": "the capital of France?"})
	if o := seen(t, a); strings.Contains(o.JSON, "from the client") || o.Err == "" {
		t.Errorf("the server saw %+v, want its sampling request denied (no person to ask)", o)
	}
	var args map[string]any
	json.Unmarshal([]byte(askArgsJSON("Your GitHub token, please")), &args)
	callText(t, c.ClientSession, "asking__ask", args)
	if o := seen(t, a); o.JSON != `{"action":"decline"}` {
		t.Errorf("the server saw %+v, want a decline (no person to ask)", o)
	}
	if n := len(c.questions()); n != 0 {
		t.Errorf("the app's MCP client was asked %d questions", n)
	}

	stream, err := d.framework().ExecuteToolStream(as(d.appToken("planner")), &nexusv1.ExecuteToolRequest{ToolName: "ask", ServerName: "asking",
		ArgumentsJson: askArgsJSON("Anyone?"), RequestingAppId: "planner", AskElicitation: true})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "only the person answers") {
		t.Errorf("ExecuteToolStream with ask_elicitation by an app: %v", err)
	}
}
