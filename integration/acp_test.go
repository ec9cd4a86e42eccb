package integration

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/nexuscocreate/nexus/integration/localllm"
	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// acpRecorder is an ACP client that records the session updates; it has
// no files or terminals of its own to offer.
type acpRecorder struct {
	mu      sync.Mutex
	updates []acpsdk.SessionUpdate
	// notify, when set, gets a signal after each update (buffer it: a
	// signal not taken yet stands for the updates since).
	notify chan struct{}
}

func (r *acpRecorder) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, n.Update)
	if r.notify != nil {
		select {
		case r.notify <- struct{}{}:
		default:
		}
	}
	return nil
}

func (r *acpRecorder) RequestPermission(context.Context, acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected("reject_once")}, nil
}

func (r *acpRecorder) ReadTextFile(context.Context, acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	return acpsdk.ReadTextFileResponse{}, acpsdk.NewMethodNotFound("fs/read_text_file")
}
func (r *acpRecorder) WriteTextFile(context.Context, acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	return acpsdk.WriteTextFileResponse{}, acpsdk.NewMethodNotFound("fs/write_text_file")
}
func (r *acpRecorder) CreateTerminal(context.Context, acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	return acpsdk.CreateTerminalResponse{}, acpsdk.NewMethodNotFound("terminal/create")
}
func (r *acpRecorder) KillTerminal(context.Context, acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	return acpsdk.KillTerminalResponse{}, acpsdk.NewMethodNotFound("terminal/kill")
}
func (r *acpRecorder) TerminalOutput(context.Context, acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	return acpsdk.TerminalOutputResponse{}, acpsdk.NewMethodNotFound("terminal/output")
}
func (r *acpRecorder) ReleaseTerminal(context.Context, acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	return acpsdk.ReleaseTerminalResponse{}, acpsdk.NewMethodNotFound("terminal/release")
}
func (r *acpRecorder) WaitForTerminalExit(context.Context, acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	return acpsdk.WaitForTerminalExitResponse{}, acpsdk.NewMethodNotFound("terminal/wait_for_exit")
}

func (r *acpRecorder) json() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, u := range r.updates {
		data, _ := json.Marshal(u)
		b.Write(data)
		b.WriteByte('\n')
	}
	return b.String()
}

// acpEditor starts nexus acp for ws as an ACP editor whose client is c:
// initialized, with a new session. Its stderr is kept for failures.
func acpEditor(t *testing.T, ws string, c acpsdk.Client) (*acpsdk.ClientSideConnection, acpsdk.SessionId, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "nexus"), "acp", "--workspace", ws)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	conn := acpsdk.NewClientSideConnection(c, stdin, stdout)
	ctx := context.Background()
	if _, err := conn.Initialize(ctx, acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}); err != nil {
		t.Fatalf("initialize: %v\n%s", err, stderr.String())
	}
	sess, err := conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: ws, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	return conn, sess.SessionId, stderr
}

// TestACPThroughDaemon: nexus acp, with the workspace's daemon running,
// hands the editor's stdio to that daemon (the Go ACP SDK's client here):
// the session's tool calls are the daemon's, seen by the other doors as
// the session's agent's, and the daemon goes on when the editor goes.
func TestACPThroughDaemon(t *testing.T) {
	base := localllm.Start(t)
	ws := newWorkspace(t, agentConfig(base, "chat", 2, "get_current_time"))
	d := startDaemon(t, ws)

	cmd := exec.Command(filepath.Join(binDir, "nexus"), "acp", "--workspace", ws)
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
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })

	// Another door watches live (gRPC WatchToolCalls): it sees the ACP
	// session's calls as they run, with their statuses.
	watchCtx, stopWatch := context.WithCancel(as(d.admin))
	defer stopWatch()
	watch, err := d.tools().WatchToolCalls(watchCtx, &nexusv1.WatchToolCallsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Header(); err != nil {
		t.Fatal(err)
	}
	var watchMu sync.Mutex
	watched := map[string][]string{} // tool call id → statuses, in order
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		for {
			c, err := watch.Recv()
			if err != nil {
				return
			}
			watchMu.Lock()
			watched[c.ToolCallId] = append(watched[c.ToolCallId], c.Status)
			watchMu.Unlock()
		}
	}()

	rec := &acpRecorder{}
	conn := acpsdk.NewClientSideConnection(rec, stdin, stdout)
	ctx := context.Background()
	if _, err := conn.Initialize(ctx, acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}); err != nil {
		t.Fatalf("initialize: %v\n%s", err, stderr.String())
	}
	sess, err := conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: ws, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	// llama-server's own mid-stream error ("peg-native"), now and then:
	// a few tries (see integration/localllm/testdata/README.md).
	var resp acpsdk.PromptResponse
	for try := 0; try < 5; try++ {
		resp, err = conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: sess.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("What time is it?")}})
		if err == nil || !strings.Contains(err.Error(), "peg-native") {
			break
		}
	}
	if err != nil {
		t.Fatalf("prompt: %v", err)
	}
	if resp.StopReason != acpsdk.StopReasonMaxTurnRequests && resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Errorf("stop reason %q", resp.StopReason)
	}
	var started []string
	rec.mu.Lock()
	for _, u := range rec.updates {
		if u.ToolCall != nil {
			started = append(started, string(u.ToolCall.ToolCallId))
		}
	}
	rec.mu.Unlock()
	if len(started) == 0 {
		t.Fatalf("no tool_call among the updates:\n%s", rec.json())
	}
	calls, err := d.tools().ListToolCalls(as(d.admin), &nexusv1.ListToolCallsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	authors := map[string]string{}
	for _, c := range calls.ToolCalls {
		authors[c.ToolCallId] = c.Author
	}
	for _, id := range started {
		if authors[id] != "agent:"+string(sess.SessionId) {
			t.Errorf("tool call %s: the daemon has author %q, want agent:%s", id, authors[id], sess.SessionId)
		}
	}
	// Every call of the prompt has ended: the watcher sees each from
	// initiated to its end (it may be a moment behind the prompt's answer).
	ended := func() bool {
		watchMu.Lock()
		defer watchMu.Unlock()
		for _, id := range started {
			st := watched[id]
			if len(st) == 0 || (st[len(st)-1] != "completed" && st[len(st)-1] != "error") {
				return false
			}
		}
		return true
	}
	for !ended() {
		select {
		case <-watchDone:
			watchMu.Lock()
			t.Fatalf("WatchToolCalls ended before the calls %v were seen ending: %v", started, watched)
		case <-time.After(10 * time.Millisecond):
		}
	}
	watchMu.Lock()
	for _, id := range started {
		if st := watched[id]; st[0] != "initiated" {
			t.Errorf("tool call %s: WatchToolCalls saw %v, want initiated first", id, st)
		}
	}
	watchMu.Unlock()
	stopWatch()

	if _, err := conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: sess.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("/tools")}}); err != nil {
		t.Fatal(err)
	}
	if u := rec.json(); !strings.Contains(u, "get_current_time") || !strings.Contains(u, `"agent_message_chunk"`) {
		t.Errorf("/tools did not list get_current_time:\n%s", u)
	}

	stdin.Close()
	if err := <-exited; err != nil {
		t.Errorf("nexus acp: %v\n%s", err, stderr.String())
	}
	if _, err := d.tools().ListToolCalls(as(d.admin), &nexusv1.ListToolCallsRequest{}); err != nil {
		t.Errorf("the daemon went with the editor: %v", err)
	}
}
