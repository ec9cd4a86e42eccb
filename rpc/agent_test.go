package rpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/nexuscocreate/nexus/daemon"
	"github.com/nexuscocreate/nexus/llm"
	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
	"github.com/nexuscocreate/nexus/workspace"
)

// scripted is a deterministic model double for the Agent door's own
// behaviour: asked a prompt, it calls read_file on hello.txt; given a tool
// result, it answers "result: " and the result's content. The prompt
// "block" waits until its request is cancelled (started and ended report
// it); "fail" fails as a provider outage would.
type scripted struct {
	profile llm.Profile
	started chan struct{}
	ended   chan struct{}
}

func (m *scripted) Profile() llm.Profile { return m.profile }

func (m *scripted) Stream(ctx context.Context, req *llm.Request, emit func(llm.Event)) (*llm.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	switch {
	case last.Role == llm.RoleUser && last.Text == "block":
		m.started <- struct{}{}
		<-ctx.Done()
		m.ended <- struct{}{}
		return nil, &llm.Error{Kind: llm.KindCanceled, Provider: "scripted", Message: "cancelled", Err: ctx.Err()}
	case last.Role == llm.RoleUser && last.Text == "fail":
		return nil, &llm.Error{Kind: llm.KindServer, Provider: "scripted", Status: 502, Message: "the scripted model is down"}
	case last.Role == llm.RoleUser:
		call := llm.ToolCall{ID: fmt.Sprintf("call-%d", len(req.Messages)), Name: "read_file", Arguments: json.RawMessage(`{"path":"hello.txt"}`)}
		emit(llm.Event{Kind: llm.EventToolCall, ToolCall: &call})
		return &llm.Response{ToolCalls: []llm.ToolCall{call}, Stop: llm.StopToolUse, Usage: llm.Usage{InputTokens: 10, OutputTokens: 5}}, nil
	}
	text := "result: "
	if last.Result != nil {
		text += last.Result.Content
	}
	emit(llm.Event{Kind: llm.EventText, Text: text})
	return &llm.Response{Text: text, Stop: llm.StopEndTurn, Usage: llm.Usage{InputTokens: 20, OutputTokens: 7}}, nil
}

const agentConfig = `
llm:
  default: main
  profiles:
    main:
      provider: openai-compatible
      baseURL: http://127.0.0.1:9/v1
      model: scripted
    broken:
      provider: openai
      model: gpt-test
      apiKeyEnv: NEXUS_TEST_UNSET_KEY
tools:
  policy:
    read_file: ask
apps:
  - id: planner
    grants:
      tools:
        deny: [read_file]
`

type agentDaemon struct {
	t      *testing.T
	conn   *grpc.ClientConn
	admin  string
	ws     string
	model  *scripted
	cancel context.CancelFunc
}

// startAgentDaemon opens and serves a daemon in this process with the
// scripted model, and connects to its unix socket as a client would.
func startAgentDaemon(t *testing.T) *agentDaemon {
	t.Helper()
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".nexus"), 0o755)
	if err := os.WriteFile(filepath.Join(ws, ".nexus", "config.yaml"), []byte(agentConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello from the workspace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := &scripted{started: make(chan struct{}, 1), ended: make(chan struct{}, 1)}
	p, err := daemon.Open(context.Background(), daemon.Options{Workspace: ws, Stderr: io.Discard, LogLevel: "error", Version: "test",
		NewProvider: func(pr llm.Profile) (llm.Provider, error) {
			if pr.Name == "broken" {
				return nil, &llm.Error{Kind: llm.KindMissingKey, Provider: pr.Provider, Message: "no API key: set NEXUS_TEST_UNSET_KEY in the environment nexusd runs in"}
			}
			m.profile = pr
			return m, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		p.Close()
	})
	var info daemon.Info
	for {
		b, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(workspace.DaemonFile)))
		if err == nil && json.Unmarshal(b, &info) == nil && info.PID == os.Getpid() {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Serve ended: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	tok, err := os.ReadFile(info.AdminTokenFile)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(info.GRPCAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &agentDaemon{t: t, conn: conn, admin: strings.TrimSpace(string(tok)), ws: ws, model: m, cancel: cancel}
}

func (d *agentDaemon) as(token string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
}

func (d *agentDaemon) appToken(app string) string {
	b, err := os.ReadFile(filepath.Join(d.ws, ".nexus", "run", "apps", app+".token"))
	if err != nil {
		d.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// update is the part of an agent.Update the tests look at.
type update struct {
	SessionUpdate string `json:"sessionUpdate"`
	ToolCallID    string `json:"toolCallId"`
	Status        string `json:"status"`
	Content       json.RawMessage
	Permission    *struct {
		RequestID string `json:"requestId"`
		ToolCall  struct {
			ToolName string `json:"toolName"`
		} `json:"toolCall"`
		ICERC struct {
			Command string `json:"command"`
			Risk    struct {
				Level string `json:"level"`
			} `json:"risk"`
		} `json:"icerc"`
		Options []string `json:"options"`
	} `json:"permission"`
}

func (u update) text() string {
	var b struct{ Text string }
	json.Unmarshal(u.Content, &b)
	return b.Text
}

// prompt is one Prompt stream, read a message at a time.
type prompt struct {
	t      *testing.T
	stream nexusv1.Agent_PromptClient
}

func (d *agentDaemon) prompt(ctx context.Context, req *nexusv1.PromptRequest) *prompt {
	d.t.Helper()
	s, err := nexusv1.NewAgentClient(d.conn).Prompt(ctx, req)
	if err != nil {
		d.t.Fatal(err)
	}
	return &prompt{t: d.t, stream: s}
}

// until reads updates until one of kind, and returns it with the ones
// before it.
func (p *prompt) until(kind string) (update, []update) {
	p.t.Helper()
	var seen []update
	for {
		m, err := p.stream.Recv()
		if err != nil {
			p.t.Fatalf("waiting for %s: %v (seen %+v)", kind, err, seen)
		}
		if m.Result != nil {
			p.t.Fatalf("waiting for %s: the result came: %v (seen %+v)", kind, m.Result, seen)
		}
		var u update
		if err := json.Unmarshal([]byte(m.UpdateJson), &u); err != nil {
			p.t.Fatalf("update_json %q: %v", m.UpdateJson, err)
		}
		if u.SessionUpdate == kind {
			return u, seen
		}
		seen = append(seen, u)
	}
}

// result reads to the end of the stream and returns the result, the
// updates before it, and the stream's error.
func (p *prompt) result() (*nexusv1.PromptResult, []update, error) {
	var seen []update
	for {
		m, err := p.stream.Recv()
		if err != nil {
			return nil, seen, err
		}
		if m.Result != nil {
			if _, err := p.stream.Recv(); !errors.Is(err, io.EOF) {
				p.t.Errorf("after the result: %v", err)
			}
			return m.Result, seen, nil
		}
		var u update
		json.Unmarshal([]byte(m.UpdateJson), &u)
		seen = append(seen, u)
	}
}

func find(us []update, kind, status string) *update {
	for i := range us {
		if us[i].SessionUpdate == kind && (status == "" || us[i].Status == status) {
			return &us[i]
		}
	}
	return nil
}

func wantCode(t *testing.T, what string, err error, code codes.Code, msg string) {
	t.Helper()
	if status.Code(err) != code || !strings.Contains(status.Convert(err).Message(), msg) {
		t.Errorf("%s: %v, want %v with %q", what, err, code, msg)
	}
}

// TestAgentPermissionRoundTrip: a prompt with ask_permissions gets the
// permission request of its tool call in its stream; AnswerPermission
// answers it once, only for the one who prompted; allow runs the call,
// reject gives the model a declined result and the turn goes on.
func TestAgentPermissionRoundTrip(t *testing.T) {
	d := startAgentDaemon(t)
	ag := nexusv1.NewAgentClient(d.conn)
	admin, planner := d.as(d.admin), d.as(d.appToken("planner"))
	s, err := ag.NewSession(admin, &nexusv1.NewSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	id := s.Session.SessionId
	if s.Session.Profile != "main" || s.Session.Model != "scripted" || s.Session.AppId != "" {
		t.Errorf("session = %v", s.Session)
	}

	p := d.prompt(admin, &nexusv1.PromptRequest{SessionId: id, Text: "read hello.txt", AskPermissions: true})
	ask, before := p.until("permission_request")
	call := find(before, "tool_call", "pending")
	if call == nil || call.ToolCallID == "" || ask.ToolCallID != call.ToolCallID {
		t.Fatalf("before the ask: %+v; ask %+v", before, ask)
	}
	perm := ask.Permission
	if perm == nil || perm.RequestID == "" || perm.ToolCall.ToolName != "read_file" || !strings.Contains(perm.ICERC.Command, "hello.txt") ||
		perm.ICERC.Risk.Level == "" || len(perm.Options) != 4 {
		t.Fatalf("permission = %+v", perm)
	}
	_, err = ag.AnswerPermission(admin, &nexusv1.AnswerPermissionRequest{SessionId: id, RequestId: "nope", Answer: "allow_once"})
	wantCode(t, "unknown request id", err, codes.NotFound, "no open permission request")
	_, err = ag.AnswerPermission(admin, &nexusv1.AnswerPermissionRequest{SessionId: id, RequestId: perm.RequestID, Answer: "maybe"})
	wantCode(t, "bad answer", err, codes.InvalidArgument, "allow_once")
	_, err = ag.AnswerPermission(planner, &nexusv1.AnswerPermissionRequest{SessionId: id, RequestId: perm.RequestID, Answer: "allow_once"})
	wantCode(t, "another party's request", err, codes.NotFound, "no open permission request")
	if _, err := ag.AnswerPermission(admin, &nexusv1.AnswerPermissionRequest{SessionId: id, RequestId: perm.RequestID, Answer: "allow_once"}); err != nil {
		t.Fatal(err)
	}
	_, err = ag.AnswerPermission(admin, &nexusv1.AnswerPermissionRequest{SessionId: id, RequestId: perm.RequestID, Answer: "allow_once"})
	wantCode(t, "answered twice", err, codes.NotFound, "already answered")
	res, after, err := p.result()
	if err != nil {
		t.Fatal(err)
	}
	done := find(after, "tool_call_update", "completed")
	msg := find(after, "agent_message_chunk", "")
	if res.StopReason != "end_turn" || res.SessionId != id || done == nil || done.ToolCallID != call.ToolCallID || msg == nil ||
		!strings.Contains(msg.text(), "hello from the workspace") || res.Usage.GetRequests() != 2 {
		t.Errorf("allowed: result %v, updates %+v", res, after)
	}

	// Rejected: the model is told, and the turn goes on to its answer.
	p = d.prompt(admin, &nexusv1.PromptRequest{SessionId: id, Text: "read it again", AskPermissions: true})
	ask, _ = p.until("permission_request")
	if _, err := ag.AnswerPermission(admin, &nexusv1.AnswerPermissionRequest{SessionId: id, RequestId: ask.Permission.RequestID, Answer: "reject_once"}); err != nil {
		t.Fatal(err)
	}
	res, after, err = p.result()
	if err != nil {
		t.Fatal(err)
	}
	msg = find(after, "agent_message_chunk", "")
	if res.StopReason != "end_turn" || find(after, "tool_call_update", "failed") == nil || msg == nil || !strings.Contains(msg.text(), "Declined") {
		t.Errorf("rejected: result %v, updates %+v", res, after)
	}

	// Without ask_permissions the editor is asked, and there is none.
	p = d.prompt(admin, &nexusv1.PromptRequest{SessionId: id, Text: "and again"})
	res, after, err = p.result()
	if err != nil {
		t.Fatal(err)
	}
	if find(after, "permission_request", "") != nil || find(after, "tool_call_update", "failed") == nil {
		t.Errorf("without ask_permissions: %v %+v", res, after)
	}

	// A stream that ends while its request waits: the call does not run,
	// and the request is gone.
	ctx, cancel := context.WithCancel(admin)
	p = d.prompt(ctx, &nexusv1.PromptRequest{SessionId: id, Text: "once more", AskPermissions: true})
	ask, _ = p.until("permission_request")
	cancel()
	if _, _, err := p.result(); status.Code(err) != codes.Canceled {
		t.Errorf("cancelled stream: %v", err)
	}
	for {
		// The turn ends after the stream: wait until the session is free.
		l, err := ag.ListSessions(admin, &nexusv1.ListSessionsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if !l.Sessions[0].Running {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, err = ag.AnswerPermission(admin, &nexusv1.AnswerPermissionRequest{SessionId: id, RequestId: ask.Permission.RequestID, Answer: "allow_once"})
	wantCode(t, "after the stream ended", err, codes.NotFound, "no open permission request")
	calls, err := nexusv1.NewToolManagerClient(d.conn).ListToolCalls(admin, &nexusv1.ListToolCallsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls.ToolCalls {
		if c.ToolCallId == ask.ToolCallID && (c.Status != "error" || c.Error.GetCode() == "") {
			t.Errorf("the call whose ask was abandoned: %v", c)
		}
	}

	// The history replays: prompts, calls and answers.
	l, err := ag.LoadSession(admin, &nexusv1.LoadSessionRequest{SessionId: id})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, u := range l.UpdatesJson {
		var x update
		json.Unmarshal([]byte(u), &x)
		kinds = append(kinds, x.SessionUpdate)
	}
	if l.Session.Title != "read hello.txt" || !strings.HasPrefix(strings.Join(kinds, " "), "user_message_chunk tool_call agent_message_chunk user_message_chunk") {
		t.Errorf("load: %v %v", l.Session, kinds)
	}
}

// TestAgentCancel: Cancel stops a running prompt, whose stream ends with
// stop_reason cancelled; a second prompt meanwhile is refused; a client
// that goes away cancels its turn.
func TestAgentCancel(t *testing.T) {
	d := startAgentDaemon(t)
	ag := nexusv1.NewAgentClient(d.conn)
	admin := d.as(d.admin)
	s, err := ag.NewSession(admin, &nexusv1.NewSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	id := s.Session.SessionId
	if c, err := ag.Cancel(admin, &nexusv1.CancelRequest{SessionId: id}); err != nil || c.Cancelled {
		t.Errorf("cancel with nothing running: %v %v", c, err)
	}
	p := d.prompt(admin, &nexusv1.PromptRequest{SessionId: id, Text: "block"})
	<-d.model.started
	second := d.prompt(admin, &nexusv1.PromptRequest{SessionId: id, Text: "hi"})
	_, _, err = second.result()
	wantCode(t, "a second prompt", err, codes.FailedPrecondition, "already running")
	if c, err := ag.Cancel(admin, &nexusv1.CancelRequest{SessionId: id}); err != nil || !c.Cancelled {
		t.Errorf("cancel: %v %v", c, err)
	}
	<-d.model.ended
	res, _, err := p.result()
	if err != nil || res.StopReason != "cancelled" {
		t.Errorf("cancelled prompt: %v %v", res, err)
	}

	ctx, cancel := context.WithCancel(admin)
	p = d.prompt(ctx, &nexusv1.PromptRequest{SessionId: id, Text: "block"})
	<-d.model.started
	cancel()
	<-d.model.ended // the model's request was cancelled with the stream
	if _, _, err := p.result(); status.Code(err) != codes.Canceled {
		t.Errorf("client gone: %v", err)
	}
}

// TestAgentErrors: the agent's errors arrive as status codes with their
// messages.
func TestAgentErrors(t *testing.T) {
	d := startAgentDaemon(t)
	ag := nexusv1.NewAgentClient(d.conn)
	admin := d.as(d.admin)
	_, err := ag.NewSession(admin, &nexusv1.NewSessionRequest{Profile: "nowhere"})
	wantCode(t, "unknown profile", err, codes.FailedPrecondition, `no llm profile "nowhere"`)
	_, err = ag.NewSession(admin, &nexusv1.NewSessionRequest{Profile: "broken"})
	wantCode(t, "missing key", err, codes.FailedPrecondition, "set NEXUS_TEST_UNSET_KEY")
	_, err = ag.LoadSession(admin, &nexusv1.LoadSessionRequest{SessionId: "no-such-session"})
	wantCode(t, "unknown session", err, codes.NotFound, "no such agent session")
	_, _, err = d.prompt(admin, &nexusv1.PromptRequest{SessionId: "no-such-session", Text: "hi"}).result()
	wantCode(t, "prompt of an unknown session", err, codes.NotFound, "no such agent session")
	_, err = nexusv1.NewAgentClient(d.conn).ListSessions(context.Background(), &nexusv1.ListSessionsRequest{})
	wantCode(t, "no token", err, codes.Unauthenticated, "authorization")

	s, err := ag.NewSession(admin, &nexusv1.NewSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	id := s.Session.SessionId
	_, _, err = d.prompt(admin, &nexusv1.PromptRequest{SessionId: id, Text: "fail"}).result()
	wantCode(t, "model down", err, codes.Unavailable, "the scripted model is down")
	_, _, err = d.prompt(admin, &nexusv1.PromptRequest{SessionId: id, Text: "/nonsense"}).result()
	wantCode(t, "unknown command", err, codes.InvalidArgument, "unknown command /nonsense")

	res, updates, err := d.prompt(admin, &nexusv1.PromptRequest{SessionId: id, Text: "/help"}).result()
	if err != nil || res.StopReason != "end_turn" || find(updates, "command_output", "") == nil ||
		!strings.Contains(find(updates, "command_output", "").text(), "/resume") {
		t.Errorf("/help: %v %+v %v", res, updates, err)
	}
	if res, _, err := d.prompt(admin, &nexusv1.PromptRequest{SessionId: id, Text: "/quit"}).result(); err != nil || !res.Quit {
		t.Errorf("/quit: %v %v", res, err)
	}
	other, err := ag.NewSession(admin, &nexusv1.NewSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if res, _, err := d.prompt(admin, &nexusv1.PromptRequest{SessionId: id, Text: "/resume " + other.Session.SessionId}).result(); err != nil || res.Resume != other.Session.SessionId {
		t.Errorf("/resume: %v %v", res, err)
	}
	if _, err := ag.DeleteSession(admin, &nexusv1.DeleteSessionRequest{SessionId: other.Session.SessionId}); err != nil {
		t.Fatal(err)
	}
	_, err = ag.DeleteSession(admin, &nexusv1.DeleteSessionRequest{SessionId: other.Session.SessionId})
	wantCode(t, "deleted twice", err, codes.NotFound, "no such agent session")

	d.cancel() // the daemon stops: the agent is closed
	for {
		_, err := ag.NewSession(admin, &nexusv1.NewSessionRequest{})
		if err != nil {
			if c := status.Code(err); c != codes.Unavailable {
				t.Errorf("a stopping daemon: %v", err)
			}
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAgentAppIsolation: an app sees only its own sessions, the person
// only theirs; an app's agent is bounded by the app's grants (planner is
// denied read_file: its call fails without asking).
func TestAgentAppIsolation(t *testing.T) {
	d := startAgentDaemon(t)
	ag := nexusv1.NewAgentClient(d.conn)
	admin, planner := d.as(d.admin), d.as(d.appToken("planner"))
	mine, err := ag.NewSession(admin, &nexusv1.NewSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := ag.NewSession(planner, &nexusv1.NewSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if theirs.Session.AppId != "planner" {
		t.Errorf("app session = %v", theirs.Session)
	}
	for _, c := range []struct {
		who  context.Context
		sees string
	}{{admin, mine.Session.SessionId}, {planner, theirs.Session.SessionId}} {
		l, err := ag.ListSessions(c.who, &nexusv1.ListSessionsRequest{})
		if err != nil || len(l.Sessions) != 1 || l.Sessions[0].SessionId != c.sees {
			t.Errorf("list: %v %v, want only %s", l, err, c.sees)
		}
	}
	_, err = ag.LoadSession(planner, &nexusv1.LoadSessionRequest{SessionId: mine.Session.SessionId})
	wantCode(t, "an app loads the person's session", err, codes.NotFound, "no such agent session")
	_, err = ag.Cancel(admin, &nexusv1.CancelRequest{SessionId: theirs.Session.SessionId})
	wantCode(t, "the person cancels an app's session", err, codes.NotFound, "no such agent session")
	_, err = ag.DeleteSession(planner, &nexusv1.DeleteSessionRequest{SessionId: mine.Session.SessionId})
	wantCode(t, "an app deletes the person's session", err, codes.NotFound, "no such agent session")
	_, _, err = d.prompt(planner, &nexusv1.PromptRequest{SessionId: mine.Session.SessionId, Text: "hi"}).result()
	wantCode(t, "an app prompts the person's session", err, codes.NotFound, "no such agent session")

	// An app answers no permission request, not even of its own agent.
	_, _, err = d.prompt(planner, &nexusv1.PromptRequest{SessionId: theirs.Session.SessionId, Text: "read hello.txt", AskPermissions: true}).result()
	wantCode(t, "an app asks to answer its agent's permission requests", err, codes.PermissionDenied, "only the person answers")
	_, _, err = d.prompt(planner, &nexusv1.PromptRequest{SessionId: theirs.Session.SessionId, Text: "read hello.txt", AskElicitation: true}).result()
	wantCode(t, "an app asks to answer its agent's MCP servers' questions", err, codes.PermissionDenied, "only the person answers")
	res, updates, err := d.prompt(planner, &nexusv1.PromptRequest{SessionId: theirs.Session.SessionId, Text: "read hello.txt"}).result()
	if err != nil {
		t.Fatal(err)
	}
	// The app is denied read_file, so its agent is not offered it: the call
	// fails as not offered (one failed tool_call), before any policy.
	failed := find(updates, "tool_call_update", "failed") != nil || find(updates, "tool_call", "failed") != nil
	if res.StopReason != "end_turn" || find(updates, "permission_request", "") != nil || !failed {
		t.Errorf("the app's agent calls a tool the app is denied: %v %+v", res, updates)
	}
}
