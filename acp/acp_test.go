package acp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/acp"
	"github.com/nexuscocreate/nexus/agent"
	"github.com/nexuscocreate/nexus/llm"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/command"
	"github.com/nexuscocreate/nexus/tools/core"
	"github.com/nexuscocreate/nexus/tools/mcp"
	"github.com/nexuscocreate/nexus/tools/mcp/mcptest"
	"github.com/nexuscocreate/nexus/tools/policy"
	"github.com/nexuscocreate/nexus/workspace"
)

// These tests drive acp.Serve with the Go SDK's own client over pipes,
// with a scripted model: the door's behaviour (permissions through the
// client, the client's files, modes, cancel, errors) needs answers a
// random model cannot be made to give. The real nexusd acp, driven by the
// official TypeScript SDK against a real llama-server, is tested in
// integration (TestACPClientTS).

// TestMain lets this test binary be the command sandbox's helper, as
// nexusd is.
// With NEXUS_TEST_ASKING=stdio it is an MCP server on stdio (mcptest's
// asking server), for a client to pass to a session.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == command.HelperArg {
		os.Exit(command.HelperMain(os.Args[2:]))
	}
	if os.Getenv("NEXUS_TEST_ASKING") == "stdio" {
		if err := new(mcptest.Asking).ServeStdio(context.Background()); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// script answers each model request with its next turn, and keeps the
// requests.
type script struct {
	mu       sync.Mutex
	turns    []func(ctx context.Context) (*llm.Response, error)
	requests []*llm.Request
}

func (s *script) Profile() llm.Profile { return llm.Profile{Name: "test"} }

// lastUser is the last user message the model was sent.
func (s *script) lastUser() (llm.Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return llm.Message{}, false
	}
	msgs := s.requests[len(s.requests)-1].Messages
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			return msgs[i], true
		}
	}
	return llm.Message{}, false
}

func (s *script) Stream(ctx context.Context, req *llm.Request, emit func(llm.Event)) (*llm.Response, error) {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	if len(s.turns) == 0 {
		s.mu.Unlock()
		emit(llm.Event{Kind: llm.EventText, Text: "done"})
		return &llm.Response{Text: "done", Stop: llm.StopEndTurn}, nil
	}
	t := s.turns[0]
	s.turns = s.turns[1:]
	s.mu.Unlock()
	return t(ctx)
}

func (s *script) add(turns ...func(ctx context.Context) (*llm.Response, error)) {
	s.mu.Lock()
	s.turns = append(s.turns, turns...)
	s.mu.Unlock()
}

func calls(cs ...llm.ToolCall) func(context.Context) (*llm.Response, error) {
	return func(context.Context) (*llm.Response, error) {
		return &llm.Response{ToolCalls: cs, Stop: llm.StopToolUse}, nil
	}
}

type fixture struct {
	ws    string
	model *script
	svc   *agent.Service
	cfg   *workspace.Config
	m     *tools.Manager
	// hub, when set, takes the MCP servers clients pass.
	hub *mcp.Hub
}

func newFixture(t *testing.T, rules map[string]policy.Decision) *fixture {
	t.Helper()
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha on disk\n"), 0o644)
	cfg := workspace.DefaultConfig()
	cfg.LLM = workspace.LLMConfig{Default: "test", Profiles: map[string]workspace.LLMProfile{
		"test": {Provider: "openai-compatible", BaseURL: "http://127.0.0.1:1/v1", Model: "m"},
	}}
	f := &fixture{ws: ws, model: &script{}, cfg: cfg}
	approvers := &policy.Approvers{}
	pol := policy.New(policy.Rules{Workspace: ws, Tools: rules}, nil)
	m, err := tools.NewManager(tools.Options{Gate: pol.Gate(approvers, time.Minute, nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	f.m = m
	ct, err := core.New(core.Config{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range append(ct.List(), ct.ExecuteCommand(core.ExecConfig{Mode: command.Off, Runner: command.NewRunner(command.RunnerOptions{})})) {
		if err := m.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	svc, err := agent.NewService(agent.Options{Layout: workspace.NewLayout(ws), Config: cfg, Tools: m,
		NewProvider: func(llm.Profile) (llm.Provider, error) { return f.model, nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	approvers.Route(svc.ApproverFor)
	f.svc = svc
	return f
}

// serve starts the door on pipes and returns the two ends a client uses.
func (f *fixture) serve(t *testing.T, getenv func(string) (string, bool)) (toAgent io.WriteCloser, fromAgent io.Reader) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		opts := acp.Options{Agent: f.svc, Config: f.cfg, Workspace: f.ws, Party: access.Person("acp"), Version: "test", Getenv: getenv}
		if f.hub != nil {
			opts.Hub = f.hub
		}
		acp.Serve(ctx, opts, inR, outW)
		outW.Close()
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		<-done
	})
	return inW, outR
}

// client is an ACP client: it records the updates, keeps files in
// memory (its "buffers") and answers permission requests with answer.
type client struct {
	mu       sync.Mutex
	updates  []acpsdk.SessionNotification
	asked    []acpsdk.RequestPermissionRequest
	buffers  map[string]string
	written  map[string]string
	answer   func(acpsdk.RequestPermissionRequest) acpsdk.RequestPermissionOutcome
	askedNow chan struct{}
	// terminals, when set, are offered: every command prints terminalOutput
	// and exits 3.
	terminals bool
	created   []acpsdk.CreateTerminalRequest
	released  int
}

const terminalOutput = "hello from the editor's terminal\n"

func newClient(buffers map[string]string) *client {
	return &client{buffers: buffers, written: map[string]string{}, askedNow: make(chan struct{}, 16),
		answer: func(acpsdk.RequestPermissionRequest) acpsdk.RequestPermissionOutcome {
			return acpsdk.NewRequestPermissionOutcomeSelected("allow_once")
		}}
}

func (c *client) ReadTextFile(ctx context.Context, req acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	text, ok := c.buffers[req.Path]
	if !ok {
		return acpsdk.ReadTextFileResponse{}, acpsdk.NewInvalidParams(map[string]any{"path": req.Path, "error": "no such buffer"})
	}
	return acpsdk.ReadTextFileResponse{Content: text}, nil
}

func (c *client) WriteTextFile(ctx context.Context, req acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.written[req.Path] = req.Content
	c.buffers[req.Path] = req.Content
	return acpsdk.WriteTextFileResponse{}, nil
}

func (c *client) RequestPermission(ctx context.Context, req acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.asked = append(c.asked, req)
	answer := c.answer
	c.mu.Unlock()
	c.askedNow <- struct{}{}
	return acpsdk.RequestPermissionResponse{Outcome: answer(req)}, nil
}

func (c *client) SessionUpdate(ctx context.Context, n acpsdk.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates = append(c.updates, n)
	return nil
}

var errNoTerminal = errors.New("this client has no terminals")

func (c *client) CreateTerminal(_ context.Context, req acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.terminals {
		return acpsdk.CreateTerminalResponse{}, errNoTerminal
	}
	c.created = append(c.created, req)
	return acpsdk.CreateTerminalResponse{TerminalId: "term-1"}, nil
}
func (c *client) KillTerminal(context.Context, acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	return acpsdk.KillTerminalResponse{}, nil
}
func (c *client) TerminalOutput(context.Context, acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	return acpsdk.TerminalOutputResponse{Output: terminalOutput}, nil
}
func (c *client) ReleaseTerminal(context.Context, acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	c.mu.Lock()
	c.released++
	c.mu.Unlock()
	return acpsdk.ReleaseTerminalResponse{}, nil
}
func (c *client) WaitForTerminalExit(context.Context, acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	return acpsdk.WaitForTerminalExitResponse{ExitCode: acpsdk.Ptr(3)}, nil
}

// updatesJSON are the updates of session id so far, as JSON lines.
func (c *client) updatesJSON(id acpsdk.SessionId) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, n := range c.updates {
		if n.SessionId == id {
			data, _ := json.Marshal(n.Update)
			b.Write(data)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func (f *fixture) connect(t *testing.T, c *client) *acpsdk.ClientSideConnection {
	t.Helper()
	w, r := f.serve(t, func(string) (string, bool) { return "", false })
	conn := acpsdk.NewClientSideConnection(c, w, r)
	if _, err := conn.Initialize(context.Background(), acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber,
		ClientCapabilities: acpsdk.ClientCapabilities{Fs: acpsdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true},
			Terminal: c.terminals}}); err != nil {
		t.Fatal(err)
	}
	return conn
}

func TestInitialize(t *testing.T) {
	f := newFixture(t, nil)
	w, r := f.serve(t, func(string) (string, bool) { return "", false })
	conn := acpsdk.NewClientSideConnection(newClient(nil), w, r)
	resp, err := conn.Initialize(context.Background(), acpsdk.InitializeRequest{ProtocolVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	caps := resp.AgentCapabilities
	if resp.ProtocolVersion != 1 || !caps.LoadSession || !caps.PromptCapabilities.EmbeddedContext || caps.PromptCapabilities.Image ||
		caps.SessionCapabilities.List == nil || resp.AgentInfo == nil || resp.AgentInfo.Name != "nexus" || len(resp.AuthMethods) != 0 {
		data, _ := json.Marshal(resp)
		t.Errorf("initialize answered %s", data)
	}
}

// TestMissingKey: a profile whose API key is not set offers a method
// naming the variable, and session/new says so.
func TestMissingKey(t *testing.T) {
	f := newFixture(t, nil)
	f.cfg.LLM.Profiles["test"] = workspace.LLMProfile{Provider: "openai", Model: "gpt", APIKeyEnv: "NEXUS_ACP_TEST_KEY"}
	w, r := f.serve(t, func(string) (string, bool) { return "", false })
	conn := acpsdk.NewClientSideConnection(newClient(nil), w, r)
	resp, err := conn.Initialize(context.Background(), acpsdk.InitializeRequest{ProtocolVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.AuthMethods) != 1 || resp.AuthMethods[0].Agent == nil || resp.AuthMethods[0].Agent.Id != "env:NEXUS_ACP_TEST_KEY" {
		data, _ := json.Marshal(resp.AuthMethods)
		t.Fatalf("authMethods = %s", data)
	}
	_, err = conn.Authenticate(context.Background(), acpsdk.AuthenticateRequest{MethodId: "env:NEXUS_ACP_TEST_KEY"})
	if err == nil || !strings.Contains(err.Error(), "NEXUS_ACP_TEST_KEY is not set") {
		t.Errorf("authenticate: %v", err)
	}
}

func (f *fixture) newSession(t *testing.T, conn *acpsdk.ClientSideConnection) acpsdk.SessionId {
	t.Helper()
	resp, err := conn.NewSession(context.Background(), acpsdk.NewSessionRequest{Cwd: f.ws, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Modes == nil || len(resp.Modes.AvailableModes) != 4 || resp.Modes.CurrentModeId != "default" {
		t.Errorf("modes = %+v", resp.Modes)
	}
	return resp.SessionId
}

func prompt(t *testing.T, conn *acpsdk.ClientSideConnection, id acpsdk.SessionId, text string) acpsdk.StopReason {
	t.Helper()
	resp, err := conn.Prompt(context.Background(), acpsdk.PromptRequest{SessionId: id, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(text)}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.StopReason
}

// TestTurnThroughTheClient: a read goes to the client's buffer, a write the
// policy asks about is asked through the client (ICERC, the diff, four
// options) and, allowed, lands in the client, not on disk.
func TestTurnThroughTheClient(t *testing.T) {
	f := newFixture(t, map[string]policy.Decision{"write_file": policy.Ask, "read_file": policy.Allow})
	c := newClient(nil)
	conn := f.connect(t, c)
	c.buffers = map[string]string{filepath.Join(f.ws, "a.txt"): "alpha in the editor, unsaved\n"}
	id := f.newSession(t, conn)
	f.model.add(calls(
		llm.ToolCall{ID: "1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`)},
		llm.ToolCall{ID: "2", Name: "write_file", Arguments: json.RawMessage(`{"path":"new.txt","content":"hello"}`)},
	))
	if stop := prompt(t, conn, id, "read a.txt and write new.txt"); stop != acpsdk.StopReasonEndTurn {
		t.Errorf("stop reason %q", stop)
	}
	updates := c.updatesJSON(id)
	for _, want := range []string{`"sessionUpdate":"tool_call"`, `"kind":"read"`, `alpha in the editor, unsaved`, `"status":"completed"`,
		`"type":"diff"`, filepath.Join(f.ws, "new.txt"), `"sessionUpdate":"available_commands_update"`, `"sessionUpdate":"agent_message_chunk"`} {
		if !strings.Contains(updates, want) {
			t.Errorf("the updates lack %s:\n%s", want, updates)
		}
	}
	if got := c.written[filepath.Join(f.ws, "new.txt")]; got != "hello" {
		t.Errorf("the client was written %q, want hello (all: %v)", got, c.written)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "new.txt")); !os.IsNotExist(err) {
		t.Errorf("new.txt is on disk (%v): the write should have gone to the client", err)
	}
	if len(c.asked) != 1 {
		t.Fatalf("asked %d times, want once (the write)", len(c.asked))
	}
	ask, _ := json.Marshal(c.asked[0])
	for _, want := range []string{"allow_once", "allow_always", "reject_once", "reject_always", `\n  intent:   `, `\nrisk:     `, `\nasked by: agent session `, `"type":"diff"`} {
		if !strings.Contains(string(ask), want) {
			t.Errorf("the permission request lacks %s: %s", want, ask)
		}
	}
}

// TestClientTerminal: with acp.terminal client, execute_command runs in
// the client's terminal, shown in the tool call, and is released; without
// it, a client's terminals are not used.
func TestClientTerminal(t *testing.T) {
	for _, where := range []string{"client", "nexus"} {
		t.Run(where, func(t *testing.T) {
			f := newFixture(t, map[string]policy.Decision{"execute_command": policy.Allow})
			f.cfg.ACP.Terminal = where
			c := newClient(map[string]string{})
			c.terminals = true
			conn := f.connect(t, c)
			id := f.newSession(t, conn)
			f.model.add(calls(llm.ToolCall{ID: "x", Name: "execute_command", Arguments: json.RawMessage(`{"command":"echo from nexus"}`)}))
			prompt(t, conn, id, "run it")
			u := c.updatesJSON(id)
			if where == "nexus" {
				if len(c.created) != 0 || !strings.Contains(u, `"stdout":"from nexus\n"`) {
					t.Errorf("acp.terminal nexus: terminals created %v; updates:\n%s", c.created, u)
				}
				return
			}
			if len(c.created) != 1 || c.created[0].Command != "/bin/sh" || strings.Join(c.created[0].Args, " ") != "-c echo from nexus" ||
				c.created[0].Cwd == nil || *c.created[0].Cwd != f.ws {
				t.Fatalf("terminal/create: %+v", c.created)
			}
			for _, want := range []string{`"type":"terminal"`, `"terminalId":"term-1"`, "hello from the editor's terminal", `"exitCode":3`} {
				if !strings.Contains(u, want) {
					t.Errorf("the updates lack %s:\n%s", want, u)
				}
			}
			if c.released != 1 {
				t.Errorf("the terminal was released %d times", c.released)
			}
		})
	}
}

// TestClientMCPServer: a server the client passes waits for the person's
// approval, asked through the client before the next prompt and not again
// after a refusal on that connection; approved, its tools are the
// session's.
func TestClientMCPServer(t *testing.T) {
	f := newFixture(t, nil)
	f.hub = mcp.New(mcp.Options{Workspace: f.ws, Tools: f.m, TrustFile: filepath.Join(t.TempDir(), "trust.json")})
	t.Cleanup(f.hub.Close)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	servers := []acpsdk.McpServer{{Stdio: &acpsdk.McpServerStdio{Name: "asking", Command: exe, Args: []string{},
		Env: []acpsdk.EnvVariable{{Name: "NEXUS_TEST_ASKING", Value: "stdio"}}}}}
	open := func(answer string) (*client, *acpsdk.ClientSideConnection, acpsdk.SessionId) {
		c := newClient(map[string]string{})
		c.answer = func(acpsdk.RequestPermissionRequest) acpsdk.RequestPermissionOutcome {
			return acpsdk.NewRequestPermissionOutcomeSelected(acpsdk.PermissionOptionId(answer))
		}
		conn := f.connect(t, c)
		resp, err := conn.NewSession(context.Background(), acpsdk.NewSessionRequest{Cwd: f.ws, McpServers: servers})
		if err != nil {
			t.Fatal(err)
		}
		return c, conn, resp.SessionId
	}
	tools := func(c *client, conn *acpsdk.ClientSideConnection, id acpsdk.SessionId) string {
		c.mu.Lock()
		c.updates = nil
		c.mu.Unlock()
		prompt(t, conn, id, "/tools")
		return c.updatesJSON(id)
	}

	c, conn, id := open("reject_once")
	if u := tools(c, conn, id); strings.Contains(u, "asking__") || len(c.asked) != 1 {
		t.Fatalf("refused: asked %d times; /tools:\n%s", len(c.asked), u)
	}
	ask, _ := json.Marshal(c.asked[0])
	if !strings.Contains(string(ask), "NEXUS_TEST_ASKING=stdio") || !strings.Contains(string(ask), exe) {
		t.Errorf("the approval request does not show what runs: %s", ask)
	}
	tools(c, conn, id)
	if len(c.asked) != 1 {
		t.Errorf("a refused server was asked about again (%d times)", len(c.asked))
	}

	c2, conn2, id2 := open("allow_always")
	if u := tools(c2, conn2, id2); !strings.Contains(u, "asking__") || len(c2.asked) != 1 {
		t.Errorf("approved: asked %d times; /tools:\n%s", len(c2.asked), u)
	}
}

// TestRejectAndModes: a rejected call fails, read-only denies a write
// without asking, and ask-every-time asks about a call the policy allows.
func TestRejectAndModes(t *testing.T) {
	f := newFixture(t, map[string]policy.Decision{"write_file": policy.Ask, "edit_file": policy.Allow})
	c := newClient(map[string]string{})
	c.answer = func(acpsdk.RequestPermissionRequest) acpsdk.RequestPermissionOutcome {
		return acpsdk.NewRequestPermissionOutcomeSelected("reject_once")
	}
	conn := f.connect(t, c)
	id := f.newSession(t, conn)
	write := llm.ToolCall{ID: "w", Name: "write_file", Arguments: json.RawMessage(`{"path":"x.txt","content":"x"}`)}
	f.model.add(calls(write))
	prompt(t, conn, id, "write")
	if u := c.updatesJSON(id); !strings.Contains(u, `"status":"failed"`) || !strings.Contains(u, "rejected") {
		t.Errorf("a rejected write did not fail as rejected:\n%s", u)
	}

	if _, err := conn.SetSessionMode(context.Background(), acpsdk.SetSessionModeRequest{SessionId: id, ModeId: "read-only"}); err != nil {
		t.Fatal(err)
	}
	asked := len(c.asked)
	f.model.add(calls(write))
	prompt(t, conn, id, "write again")
	if len(c.asked) != asked {
		t.Errorf("read-only mode asked about a write")
	}
	if u := c.updatesJSON(id); !strings.Contains(u, "read-only") || !strings.Contains(u, `"current_mode_update"`) {
		t.Errorf("read-only mode: the write's failure does not name the mode:\n%s", u)
	}

	if _, err := conn.SetSessionMode(context.Background(), acpsdk.SetSessionModeRequest{SessionId: id, ModeId: "ask"}); err != nil {
		t.Fatal(err)
	}
	f.model.add(calls(llm.ToolCall{ID: "e", Name: "edit_file", Arguments: json.RawMessage(`{"path":"a.txt","oldText":"alpha","newText":"omega"}`)}))
	prompt(t, conn, id, "edit")
	if len(c.asked) != asked+1 {
		t.Errorf("ask mode did not ask about an edit the policy allows (asked %d, then %d)", asked, len(c.asked))
	}

	if _, err := conn.SetSessionMode(context.Background(), acpsdk.SetSessionModeRequest{SessionId: id, ModeId: "yolo"}); err == nil ||
		!strings.Contains(err.Error(), "yolo") {
		t.Errorf("an unknown mode: %v", err)
	}
}

// TestCancel: session/cancel stops a turn waiting for the person, and the
// prompt answers cancelled.
func TestCancel(t *testing.T) {
	f := newFixture(t, map[string]policy.Decision{"write_file": policy.Ask})
	c := newClient(map[string]string{})
	release := make(chan struct{})
	c.answer = func(acpsdk.RequestPermissionRequest) acpsdk.RequestPermissionOutcome {
		<-release
		return acpsdk.NewRequestPermissionOutcomeCancelled()
	}
	conn := f.connect(t, c)
	id := f.newSession(t, conn)
	f.model.add(calls(llm.ToolCall{ID: "w", Name: "write_file", Arguments: json.RawMessage(`{"path":"x.txt","content":"x"}`)}))
	stop := make(chan acpsdk.StopReason, 1)
	go func() {
		resp, err := conn.Prompt(context.Background(), acpsdk.PromptRequest{SessionId: id, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("write")}})
		if err != nil {
			t.Error(err)
		}
		stop <- resp.StopReason
	}()
	<-c.askedNow
	if err := conn.Cancel(context.Background(), acpsdk.CancelNotification{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	close(release) // the client answers the pending request "cancelled", as the spec says
	if got := <-stop; got != acpsdk.StopReasonCancelled {
		t.Errorf("stop reason %q, want cancelled", got)
	}
	if u := c.updatesJSON(id); !strings.Contains(u, "the call was cancelled") {
		t.Errorf("the write does not end as cancelled by the person:\n%s", u)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "x.txt")); !os.IsNotExist(err) {
		t.Errorf("x.txt was written")
	}
}

// TestLoad: a session opened by another connection replays its
// conversation before session/load answers.
func TestLoad(t *testing.T) {
	f := newFixture(t, nil)
	c := newClient(map[string]string{})
	conn := f.connect(t, c)
	id := f.newSession(t, conn)
	f.model.add(calls(llm.ToolCall{ID: "model-id", Name: "list_directory", Arguments: json.RawMessage(`{"path":"."}`)}))
	prompt(t, conn, id, "remember this prompt")
	var live string
	c.mu.Lock()
	for _, n := range c.updates {
		if n.Update.ToolCall != nil {
			live = string(n.Update.ToolCall.ToolCallId)
		}
	}
	c.mu.Unlock()

	c2 := newClient(map[string]string{})
	conn2 := f.connect(t, c2)
	if _, err := conn2.LoadSession(context.Background(), acpsdk.LoadSessionRequest{SessionId: id, Cwd: f.ws, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	u := c2.updatesJSON(id)
	if !strings.Contains(u, `"sessionUpdate":"user_message_chunk"`) || !strings.Contains(u, "remember this prompt") {
		t.Errorf("session/load replayed:\n%s", u)
	}
	// The tool call as it was shown live: its Nexus id, title and kind.
	if live == "" || !strings.Contains(u, `"toolCallId":"`+live+`"`) || !strings.Contains(u, `"kind":"read"`) || strings.Contains(u, "model-id") {
		t.Errorf("session/load replayed the tool call %s as:\n%s", live, u)
	}
	list, err := conn2.ListSessions(context.Background(), acpsdk.ListSessionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 1 || list.Sessions[0].SessionId != id || list.Sessions[0].Title == nil {
		t.Errorf("session/list = %+v", list.Sessions)
	}
}

// TestBadInput: every bad message gets a JSON-RPC error that says what was
// wrong, and the agent goes on answering.
func TestBadInput(t *testing.T) {
	f := newFixture(t, nil)
	w, r := f.serve(t, func(string) (string, bool) { return "", false })
	lines := bufio.NewReader(r)
	exchange := func(line string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(w, line+"\n"); err != nil {
			t.Fatal(err)
		}
		for {
			out, err := lines.ReadString('\n')
			if err != nil {
				t.Fatalf("after %s: %v", line, err)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(out), &m); err != nil {
				t.Fatalf("the agent wrote %q: %v", out, err)
			}
			if _, ok := m["method"]; ok {
				continue // a notification
			}
			return m
		}
	}
	errorOf := func(m map[string]any) (float64, string) {
		e, _ := m["error"].(map[string]any)
		code, _ := e["code"].(float64)
		msg, _ := e["message"].(string)
		return code, msg
	}
	for _, tc := range []struct {
		line string
		code float64
		says string
	}{
		{`this is not JSON`, -32700, "not JSON"},
		{`[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}]`, -32600, "batch"},
		{`{"jsonrpc":"2.0","id":2,"method":"no/such/method","params":{}}`, -32601, ""},
		{`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":1}}`, 0, ""},
		{`{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`, -32602, "outside the workspace"},
		{`{"jsonrpc":"2.0","id":5,"method":"session/new","params":{"cwd":"relative","mcpServers":[]}}`, -32602, "not an absolute path"},
		{`{"jsonrpc":"2.0","id":6,"method":"session/prompt","params":{"sessionId":"nope","prompt":[{"type":"text","text":"hi"}]}}`, -32002, "nope"},
		{`{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":"` + f.ws + `","mcpServers":[]}}`, 0, ""},
	} {
		m := exchange(tc.line)
		code, msg := errorOf(m)
		if code != tc.code || !strings.Contains(msg, tc.says) {
			t.Errorf("%s\n  answered %v, want code %v saying %q", tc.line, m, tc.code, tc.says)
		}
	}
}

// TestCommandFiles: a command file of the workspace is in the
// available_commands_update a client gets, and a prompt of it sends its
// text to the model.
func TestCommandFiles(t *testing.T) {
	f := newFixture(t, nil)
	dir := filepath.Join(f.ws, ".claude", "commands")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "review.md"), []byte("---\ndescription: Review a file\n---\nReview $1."), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newClient(nil)
	conn := f.connect(t, c)
	id := f.newSession(t, conn)
	if stop := prompt(t, conn, id, "/review a.txt"); stop != acpsdk.StopReasonEndTurn {
		t.Errorf("stop reason %q", stop)
	}
	if m, ok := f.model.lastUser(); !ok || m.Text != "Review a.txt." {
		t.Errorf("/review sent %+v", m)
	}
	if updates := c.updatesJSON(id); !strings.Contains(updates, `{"description":"Review a file","input":{"hint":"arguments"},"name":"review"}`) {
		t.Errorf("available_commands_update lacks /review:\n%s", updates)
	}
}
