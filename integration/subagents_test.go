package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// subagentModel plays the agent and its subagent, told apart by the
// system prompt: the agent calls task (the reviewer, on notes.txt), the
// subagent reads notes.txt and reports; it keeps the requests' bodies.
// With hold, the subagent's first request waits until its client goes.
type subagentModel struct {
	hold bool
	// write makes the subagent write out.txt rather than read notes.txt.
	write bool

	mu     sync.Mutex
	bodies [][]byte
	// childAsked is closed at the subagent's first request; childGone when
	// a held request's client went away.
	childAsked, childGone chan struct{}
}

func newSubagentModel(hold bool) *subagentModel {
	return &subagentModel{hold: hold, childAsked: make(chan struct{}), childGone: make(chan struct{})}
}

// chatRequest is what the test reads of a chat completions request.
type chatRequest struct {
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

func (r chatRequest) system() string {
	var b strings.Builder
	for _, m := range r.Messages {
		if m.Role == "system" || m.Role == "developer" {
			var s string
			json.Unmarshal(m.Content, &s)
			b.WriteString(s)
		}
	}
	return b.String()
}

func (r chatRequest) child() bool {
	return strings.Contains(r.system(), "a subagent of the Nexus agent")
}

func (r chatRequest) tools() []string {
	var names []string
	for _, t := range r.Tools {
		names = append(names, t.Function.Name)
	}
	return names
}

func (r chatRequest) last() (role, content string) {
	if len(r.Messages) == 0 {
		return "", ""
	}
	m := r.Messages[len(r.Messages)-1]
	json.Unmarshal(m.Content, &content)
	return m.Role, content
}

func (m *subagentModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req chatRequest
	if r.URL.Path != "/v1/chat/completions" || json.Unmarshal(body, &req) != nil {
		http.Error(w, "not a chat completions request", http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.bodies = append(m.bodies, body)
	first := req.child() && !isClosed(m.childAsked)
	if first {
		close(m.childAsked)
	}
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	call := func(name, args string) {
		a, _ := json.Marshal(args)
		io.WriteString(w, chatDelta(fmt.Sprintf(`{"tool_calls":[{"index":0,"id":"call_%s","type":"function","function":{"name":%q,"arguments":%s}}]}`, name, name, a), "")+
			chatDelta(`{}`, "tool_calls"))
	}
	say := func(text string) {
		c, _ := json.Marshal(text)
		io.WriteString(w, chatDelta(fmt.Sprintf(`{"content":%s}`, c), "stop"))
	}
	role, _ := req.last()
	switch {
	case req.child() && first && m.hold:
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(m.childGone)
	case req.child() && role != "tool" && m.write:
		call("write_file", `{"path":"out.txt","content":"written by the reviewer"}`)
	case req.child() && role != "tool":
		call("read_file", `{"path":"notes.txt"}`)
	case req.child():
		say("notes.txt says hello")
	case role != "tool":
		call("task", `{"agent":"reviewer","prompt":"Read notes.txt and report"}`)
	default:
		say("The reviewer reported.")
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (m *subagentModel) requests(t *testing.T) []chatRequest {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []chatRequest
	for _, b := range m.bodies {
		var r chatRequest
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// subagentWorkspace is a workspace whose model is m, with the brief
// agents/reviewer.md (offered tools) and notes.txt.
func subagentWorkspace(t *testing.T, m *subagentModel, tools string) string {
	t.Helper()
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	ws := newWorkspace(t, fmt.Sprintf("llm:\n  provider: openai-compatible\n  api: chat\n  baseURL: %s/v1\n  model: scripted\nagent:\n  maxSteps: 5\n", srv.URL))
	agents := filepath.Join(ws, ".nexus", "definitions", "agents")
	if err := os.MkdirAll(agents, 0o755); err != nil {
		t.Fatal(err)
	}
	brief := "---\nname: reviewer\ndescription: Reviews a file and reports\ntools: [" + tools + "]\n---\nYou review files and report in one line.\n"
	if err := os.WriteFile(filepath.Join(agents, "reviewer.md"), []byte(brief), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("hello"), 0o644)
	return ws
}

// promptUpdate is what the test reads of an update of the Prompt stream.
type promptUpdate struct {
	SessionUpdate    string `json:"sessionUpdate"`
	ToolCallID       string `json:"toolCallId"`
	ParentToolCallID string `json:"parentToolCallId"`
	Title            string `json:"title"`
	Status           string `json:"status"`
}

// adminPrompt starts a gRPC Agent session of the daemon's admin and sends
// it text (asking in the stream when ask); it returns the session and the
// Prompt stream.
func adminPrompt(t *testing.T, d *daemon, text string, ask bool) (string, nexusv1.Agent_PromptClient) {
	t.Helper()
	ag := nexusv1.NewAgentClient(d.conn)
	s, err := ag.NewSession(as(d.admin), &nexusv1.NewSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	id := s.Session.SessionId
	return id, promptStream(t, d, id, text, ask)
}

func promptStream(t *testing.T, d *daemon, id, text string, ask bool) nexusv1.Agent_PromptClient {
	t.Helper()
	stream, err := nexusv1.NewAgentClient(d.conn).Prompt(as(d.admin), &nexusv1.PromptRequest{SessionId: id, Text: text, AskPermissions: ask})
	if err != nil {
		t.Fatal(err)
	}
	return stream
}

// drain reads a Prompt stream to its result, giving each update's JSON to
// each (when set); it returns the stop reason.
func drain(t *testing.T, stream nexusv1.Agent_PromptClient, each func(update []byte)) string {
	t.Helper()
	for {
		r, err := stream.Recv()
		if err != nil {
			t.Fatalf("the Prompt stream ended before its result: %v", err)
		}
		if r.Result != nil {
			return r.Result.StopReason
		}
		if each != nil {
			each([]byte(r.UpdateJson))
		}
	}
}

// TestSubagentTask: the model's task call starts a child session whose
// request carries the brief and only its tools; the child's read_file is a
// Nexus call of the parent's agent, seen by WatchToolCalls in the
// parent's session and turn, and in the Prompt stream under the task's call; the
// child's answer is the task's result in the parent's next request.
func TestSubagentTask(t *testing.T) {
	m := newSubagentModel(false)
	ws := subagentWorkspace(t, m, "read_file")
	d := startDaemon(t, ws)
	ctx, cancel := context.WithCancel(as(d.admin))
	defer cancel()
	watch, err := d.tools().WatchToolCalls(ctx, &nexusv1.WatchToolCallsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Header(); err != nil {
		t.Fatal(err)
	}
	id, stream := adminPrompt(t, d, "Have notes.txt reviewed.", false)
	var updates []promptUpdate
	stop := drain(t, stream, func(b []byte) {
		var u promptUpdate
		json.Unmarshal(b, &u)
		updates = append(updates, u)
	})
	if stop != "end_turn" {
		t.Errorf("stop reason %q", stop)
	}

	reqs := m.requests(t)
	if len(reqs) != 4 || reqs[0].child() || !reqs[1].child() || !reqs[2].child() || reqs[3].child() {
		t.Fatalf("%d model requests, want the agent's, the subagent's two, the agent's", len(reqs))
	}
	if !slices.Contains(reqs[0].tools(), "task") {
		t.Errorf("the agent was offered %v, without task", reqs[0].tools())
	}
	child := reqs[1]
	if sys := child.system(); !strings.Contains(sys, "You review files and report in one line.") || strings.Contains(sys, "You are the Nexus agent") {
		t.Errorf("the subagent's system prompt is not its brief:\n%s", sys)
	}
	if got := child.tools(); !slices.Equal(got, []string{"read_file"}) {
		t.Errorf("the subagent was offered %v, want only read_file", got)
	}
	if role, got := child.last(); role != "user" || got != "Read notes.txt and report" {
		t.Errorf("the subagent was asked %s %q", role, got)
	}
	if role, content := reqs[3].last(); role != "tool" || content != "notes.txt says hello" {
		t.Errorf("the agent's next request ends with %s %q, want the subagent's answer as the task's result", role, content)
	}

	var read *nexusv1.ToolCall
	for read == nil {
		c, err := watch.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if c.ToolName == "read_file" && c.Status == "completed" {
			read = c
		}
	}
	if read.Author != "agent:"+id || read.TaskId != id || read.Session != id || read.Turn != "1" {
		t.Errorf("WatchToolCalls saw the subagent's read_file by %q in task %q, session %q, turn %q; want the parent's agent:%s, its session and turn 1",
			read.Author, read.TaskId, read.Session, read.Turn, id)
	}
	i := slices.IndexFunc(updates, func(u promptUpdate) bool {
		return u.SessionUpdate == "tool_call" && strings.HasPrefix(u.Title, "Subagent reviewer")
	})
	j := slices.IndexFunc(updates, func(u promptUpdate) bool { return u.SessionUpdate == "tool_call" && u.ToolCallID == read.ToolCallId })
	if i < 0 || j < 0 || updates[j].ParentToolCallID != updates[i].ToolCallID || !strings.HasPrefix(updates[j].Title, "reviewer: ") {
		t.Errorf("the Prompt stream does not show the read_file under the task's call: %+v", updates)
	}
}

// TestSubagentCancel: the parent's cancel reaches a subagent waiting for
// its model: its request ends, and the prompt stops cancelled.
func TestSubagentCancel(t *testing.T) {
	m := newSubagentModel(true)
	ws := subagentWorkspace(t, m, "read_file")
	d := startDaemon(t, ws)
	id, stream := adminPrompt(t, d, "Have notes.txt reviewed.", false)
	<-m.childAsked
	if r, err := nexusv1.NewAgentClient(d.conn).Cancel(as(d.admin), &nexusv1.CancelRequest{SessionId: id}); err != nil || !r.Cancelled {
		t.Fatalf("Cancel = %v, %v", r, err)
	}
	<-m.childGone // the subagent's model request was cut
	if stop := drain(t, stream, nil); stop != "cancelled" {
		t.Errorf("stop reason %q, want cancelled", stop)
	}
}

// TestSubagentAsksAndUndoes: a subagent's write_file is asked of the
// person as its parent's would be (in the parent's Prompt stream, as the
// parent's agent), and /undo of the parent's turn undoes it.
func TestSubagentAsksAndUndoes(t *testing.T) {
	m := newSubagentModel(false)
	m.write = true
	ws := subagentWorkspace(t, m, "write_file")
	d := startDaemon(t, ws)
	ag := nexusv1.NewAgentClient(d.conn)
	id, stream := adminPrompt(t, d, "Have out.txt written.", true)
	asked := 0
	drain(t, stream, func(b []byte) {
		var u struct {
			SessionUpdate string `json:"sessionUpdate"`
			Permission    *struct {
				RequestID string `json:"requestId"`
				Call      struct {
					ToolName string `json:"toolName"`
					Author   string `json:"author"`
				} `json:"toolCall"`
			} `json:"permission"`
		}
		if json.Unmarshal(b, &u) != nil || u.SessionUpdate != "permission_request" || u.Permission == nil {
			return
		}
		asked++
		if u.Permission.Call.ToolName != "write_file" || u.Permission.Call.Author != "agent:"+id {
			t.Errorf("asked about %+v, want the subagent's write_file as agent:%s", u.Permission.Call, id)
		}
		if _, err := ag.AnswerPermission(as(d.admin), &nexusv1.AnswerPermissionRequest{SessionId: id, RequestId: u.Permission.RequestID, Answer: "allow_once"}); err != nil {
			t.Error(err)
		}
	})
	if asked != 1 {
		t.Errorf("the person was asked %d times, want once", asked)
	}
	out := filepath.Join(ws, "out.txt")
	if b, err := os.ReadFile(out); err != nil || string(b) != "written by the reviewer" {
		t.Fatalf("out.txt = %q, %v", b, err)
	}
	drain(t, promptStream(t, d, id, "/undo", false), nil)
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("after /undo of the turn, out.txt is still there (%v): the subagent's write was not recorded under the parent's turn", err)
	}
}

// callRecorder is an ACP editor that passes on each tool_call it is sent.
type callRecorder struct {
	*acpRecorder
	calls chan *acpsdk.SessionUpdateToolCall
}

func (r *callRecorder) SessionUpdate(ctx context.Context, n acpsdk.SessionNotification) error {
	if n.Update.ToolCall != nil {
		r.calls <- n.Update.ToolCall
	}
	return r.acpRecorder.SessionUpdate(ctx, n)
}

// TestSubagentACP: an ACP editor sees the task's call, then the
// subagent's read_file as a tool call of the same session whose _meta
// names the task's call and whose title names the subagent.
func TestSubagentACP(t *testing.T) {
	m := newSubagentModel(false)
	ws := subagentWorkspace(t, m, "read_file")
	startDaemon(t, ws)
	rec := &callRecorder{acpRecorder: &acpRecorder{}, calls: make(chan *acpsdk.SessionUpdateToolCall, 16)}
	conn, sessionID, stderr := acpEditor(t, ws, rec)
	if _, err := conn.Prompt(context.Background(), acpsdk.PromptRequest{SessionId: sessionID, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("Have notes.txt reviewed.")}}); err != nil {
		t.Fatalf("prompt: %v\n%s", err, stderr.String())
	}
	// The updates are notifications: they may come after the answer.
	task := <-rec.calls
	if !strings.HasPrefix(task.Title, "Subagent reviewer: ") || task.Meta != nil {
		t.Errorf("the first tool call %+v, want the task's", task)
	}
	read := <-rec.calls
	meta, _ := read.Meta["nexus"].(map[string]any)
	if read.Kind != "read" || !strings.HasPrefix(read.Title, "reviewer: ") || meta["parentToolCallId"] != string(task.ToolCallId) {
		t.Errorf("the subagent's call %+v (_meta %v), want a read titled reviewer: under %s", read, read.Meta, task.ToolCallId)
	}
}
