package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/events"
	"github.com/nexuscocreate/nexus/internal/proctree"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// serverBin returns the path of an installed test MCP server
// (scripts/mcp-servers.sh, run by make test).
func serverBin(t testing.TB, name string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "..", ".cache", "mcp-servers", "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is not installed: run scripts/mcp-servers.sh (make test does): %v", name, err)
	}
	return p
}

type testHub struct {
	*Hub
	m   *tools.Manager
	bus *events.Bus
	ws  string
}

func newTestHub(t testing.TB, opts Options) *testHub {
	t.Helper()
	return newGatedHub(t, opts, func(context.Context, *tools.GateRequest, func(tools.ICERC)) error { return nil })
}

// newGatedHub is a test hub whose manager's calls pass gate.
func newGatedHub(t testing.TB, opts Options, gate tools.Gate) *testHub {
	t.Helper()
	bus := events.New()
	m, err := tools.NewManager(tools.Options{Bus: bus, Gate: gate})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if opts.Workspace == "" {
		opts.Workspace = t.TempDir()
	}
	opts.Tools, opts.Bus = m, bus
	if opts.Logger == nil && testing.Verbose() {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	h := New(opts)
	t.Cleanup(h.Close)
	return &testHub{Hub: h, m: m, bus: bus, ws: opts.Workspace}
}

// applyTrusted applies cfgs as entries the person has already approved:
// what most tests run. trust_test.go covers the approval itself.
func (th *testHub) applyTrusted(cfgs map[string]ServerConfig) {
	for name, cfg := range cfgs {
		if err := th.trust.Approve(name, cfg.Launch().Pin(), time.Now()); err != nil {
			panic(err)
		}
	}
	th.Apply(cfgs)
}

func (th *testHub) waitState(t testing.TB, name, state string) Status {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		for _, st := range th.Servers() {
			if st.Name == name && st.State == state {
				return st
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server %s never became %s: %+v", name, state, th.Servers())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (th *testHub) call(t *testing.T, server, tool, args string) tools.Call {
	t.Helper()
	return th.m.Execute(t.Context(), tools.ExecuteRequest{ServerName: server, ToolName: tool, Arguments: json.RawMessage(args)})
}

func stdio(name, command string, args ...string) ServerConfig {
	return ServerConfig{Name: name, Source: "test", Transport: "stdio", Command: command, Args: args, Enabled: true}
}

// changing runs integration/mcpservers/changing.mjs, installed beside the
// TypeScript SDK it imports.
func changing(t testing.TB) ServerConfig {
	bin := serverBin(t, "mcp-server-everything")
	script := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(bin))), "changing.mjs")
	return stdio("changing", "node", script)
}

func wantCompleted(t *testing.T, c tools.Call, contains string) {
	t.Helper()
	if c.Status != tools.StatusCompleted || !strings.Contains(string(c.ResultJSON), contains) {
		t.Fatalf("%s/%s: status %s, error %+v, result %s; want a result containing %q", c.ServerName, c.ToolName, c.Status, c.Error, c.ResultJSON, contains)
	}
}

func wantError(t *testing.T, c tools.Call, code, contains string) {
	t.Helper()
	if c.Status != tools.StatusError || c.Error == nil || c.Error.Code != code || !strings.Contains(c.Error.Message, contains) {
		t.Fatalf("%s/%s: status %s, error %+v, result %s; want code %s with %q", c.ServerName, c.ToolName, c.Status, c.Error, c.ResultJSON, code, contains)
	}
}

func TestEverythingOverStdio(t *testing.T) {
	t.Setenv("NEXUS_TEST_SECRET", "must-not-leak")
	th := newTestHub(t, Options{})
	cfg := stdio("everything", serverBin(t, "mcp-server-everything"))
	cfg.Env = map[string]string{"GIVEN": "given-value"}
	sub := th.bus.Subscribe(func(ev any) bool { _, ok := ev.(Status); return ok }, 0)
	defer sub.Close()
	th.applyTrusted(map[string]ServerConfig{"everything": cfg})
	st := th.waitState(t, "everything", StateReady)
	// Every status change is an event: starting, then ready with its tools.
	var seen []string
	for len(seen) == 0 || seen[len(seen)-1] != StateReady {
		ev := (<-sub.C).(Status)
		if ev.Name != "everything" {
			t.Fatalf("event of %q", ev.Name)
		}
		if len(seen) == 0 || seen[len(seen)-1] != ev.State {
			seen = append(seen, ev.State)
		}
		if ev.State == StateReady && ev.Tools != st.Tools {
			t.Errorf("ready event with %d tools, status says %d", ev.Tools, st.Tools)
		}
	}
	if strings.Join(seen, ",") != "starting,ready" {
		t.Errorf("status events %v", seen)
	}
	if st.Tools < 10 || st.PID == 0 || st.Transport != "stdio" {
		t.Fatalf("status %+v", st)
	}
	if defs := th.m.List("everything"); len(defs) != st.Tools || defs[0].ServerName != "everything" {
		t.Fatalf("%d tools registered, status says %d", len(defs), st.Tools)
	}
	wantCompleted(t, th.call(t, "everything", "echo", `{"message":"hello"}`), "Echo: hello")
	wantCompleted(t, th.call(t, "everything", "get-sum", `{"a":2,"b":40}`), "42")
	// Schema validation happens before the server sees the call.
	wantError(t, th.call(t, "everything", "get-sum", `{"a":"two","b":40}`), tools.CodeInvalidArguments, "type")
	wantError(t, th.call(t, "everything", "no-such-tool", `{}`), tools.CodeUnknownTool, "no tool of server")

	// Structured content is kept.
	c := th.call(t, "everything", "get-structured-content", `{"location":"Chicago"}`)
	wantCompleted(t, c, `"structuredContent":{`)

	// An image is written to the blob directory and referred to by path.
	c = th.call(t, "everything", "get-tiny-image", `{}`)
	wantCompleted(t, c, `"blob":".nexus/mcp/blobs/`)
	var res struct {
		Content []struct{ Type, MimeType, Blob string }
	}
	json.Unmarshal(c.ResultJSON, &res)
	var blob string
	for _, item := range res.Content {
		if item.Type == "image" {
			blob = item.Blob
		}
	}
	if data, err := os.ReadFile(filepath.Join(th.ws, blob)); err != nil || !strings.HasPrefix(string(data), "\x89PNG") {
		t.Fatalf("image blob %q: %v", blob, err)
	}

	// The server's environment is explicit: its own variables, never the
	// daemon's whole environment.
	c = th.call(t, "everything", "get-env", `{}`)
	wantCompleted(t, c, "given-value")
	if strings.Contains(string(c.ResultJSON), "must-not-leak") {
		t.Fatal("the daemon's environment leaked to the server")
	}
}

func TestProgressTimeoutAndCancel(t *testing.T) {
	var logs syncBuffer
	th := newTestHub(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ev := stdio("everything", serverBin(t, "mcp-server-everything"))
	ch := changing(t)
	ch.CallTimeout = 700 * time.Millisecond
	th.applyTrusted(map[string]ServerConfig{"everything": ev, "changing": ch})
	th.waitState(t, "everything", StateReady)
	th.waitState(t, "changing", StateReady)

	// Progress notifications become the call's progress.
	var progress []float64
	c := th.m.Execute(t.Context(), tools.ExecuteRequest{ServerName: "everything", ToolName: "trigger-long-running-operation",
		Arguments: json.RawMessage(`{"duration":0.4,"steps":4}`), OnUpdate: func(c tools.Call) {
			if c.Progress != nil && c.Status == tools.StatusRunning {
				progress = append(progress, c.Progress.Progress)
			}
		}})
	wantCompleted(t, c, "Long running operation completed")
	// The last notification may come after the result: the SDK delivers
	// notifications apart from responses.
	if len(progress) < 3 || !slices.IsSorted(progress) || progress[0] != 1 {
		t.Fatalf("progress updates %v, want 1, 2, 3 (and maybe 4)", progress)
	}

	// The per-server call timeout, with notifications/cancelled to the server.
	c = th.call(t, "changing", "sleep", `{"ms":30000}`)
	wantError(t, c, tools.CodeTimeout, "did not finish in time")
	logs.waitFor(t, "sleep cancelled")

	// Cancel by id.
	ids := make(chan string, 1)
	done := make(chan tools.Call, 1)
	go func() {
		done <- th.m.Execute(t.Context(), tools.ExecuteRequest{ServerName: "everything", ToolName: "trigger-long-running-operation",
			Arguments: json.RawMessage(`{"duration":30,"steps":30}`), OnUpdate: func(c tools.Call) {
				if c.Status == tools.StatusRunning {
					ids <- c.ID
				}
			}})
	}()
	th.m.Cancel(<-ids)
	wantError(t, <-done, tools.CodeCancelled, "cancelled")
	wantCompleted(t, th.call(t, "everything", "echo", `{"message":"still there"}`), "still there")
}

func TestServerKilledMidCall(t *testing.T) {
	th := newTestHub(t, Options{})
	th.applyTrusted(map[string]ServerConfig{"changing": changing(t)})
	st := th.waitState(t, "changing", StateReady)
	done := make(chan tools.Call, 1)
	running := make(chan struct{})
	go func() {
		done <- th.m.Execute(t.Context(), tools.ExecuteRequest{ServerName: "changing", ToolName: "sleep",
			Arguments: json.RawMessage(`{"ms":60000}`), OnUpdate: func(c tools.Call) {
				if c.Status == tools.StatusRunning {
					close(running)
				}
			}})
	}()
	<-running
	time.Sleep(100 * time.Millisecond) // the request is at the server
	killed := time.Now()
	if p, err := os.FindProcess(st.PID); err != nil {
		t.Fatal(err)
	} else if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	c := <-done
	t.Logf("the call ended %v after the kill", time.Since(killed).Round(time.Millisecond))
	wantError(t, c, tools.CodeServerUnavailable, "ended during the call")
	// It comes back, and the next call works.
	deadline := time.Now().Add(30 * time.Second)
	for {
		st2 := th.statusOf("changing")
		if st2.State == StateReady && st2.PID != st.PID {
			if st2.Restarts != 1 {
				t.Errorf("restarts %d, want 1", st2.Restarts)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not back: %+v", st2)
		}
		time.Sleep(20 * time.Millisecond)
	}
	wantCompleted(t, th.call(t, "changing", "greet", `{"name":"again"}`), "hello again")
}

func (th *testHub) statusOf(name string) Status {
	for _, st := range th.Servers() {
		if st.Name == name {
			return st
		}
	}
	return Status{}
}

func TestMissingCommandLeavesOthersAlone(t *testing.T) {
	th := newTestHub(t, Options{MaxRestarts: 1})
	th.applyTrusted(map[string]ServerConfig{
		"ghost":      stdio("ghost", "/nonexistent/mcp-server-ghost"),
		"everything": stdio("everything", serverBin(t, "mcp-server-everything")),
	})
	th.waitState(t, "everything", StateReady)
	st := th.waitState(t, "ghost", StateFailed)
	for _, want := range []string{`starting "/nonexistent/mcp-server-ghost"`, "no such file or directory", "gave up after 2 attempts"} {
		if !strings.Contains(st.Error, want) {
			t.Errorf("ghost's error %q does not say %q", st.Error, want)
		}
	}
	wantError(t, th.call(t, "ghost", "anything", `{}`), tools.CodeUnknownTool, "ghost")
	wantCompleted(t, th.call(t, "everything", "echo", `{"message":"fine"}`), "fine")
	// A restart asked for by the person tries again (and fails again).
	if err := th.Restart("ghost"); err != nil {
		t.Fatal(err)
	}
	th.waitState(t, "ghost", StateFailed)
}

func TestToolListChangesAndDefinitionPins(t *testing.T) {
	var logs syncBuffer
	th := newTestHub(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	th.applyTrusted(map[string]ServerConfig{"changing": changing(t)})
	th.waitState(t, "changing", StateReady)

	// notifications/tools/list_changed refreshes the list.
	wantCompleted(t, th.call(t, "changing", "add", `{}`), "added")
	waitTool(t, th.m, "changing", "added", true)
	wantCompleted(t, th.call(t, "changing", "added", `{}`), "I was added")
	wantCompleted(t, th.call(t, "changing", "remove", `{}`), "removed")
	waitTool(t, th.m, "changing", "added", false)

	// A changed description is a new definition, with a new hash: answers
	// remembered for the old one do not apply to it, and the change is logged.
	before, _ := th.m.Lookup("greet", "changing")
	wantCompleted(t, th.call(t, "changing", "change", `{}`), "version 2")
	deadline := time.Now().Add(10 * time.Second)
	for {
		after, _ := th.m.Lookup("greet", "changing")
		if strings.Contains(after.Description, "version 2") {
			if policy.DefinitionHash(after) == policy.DefinitionHash(before) {
				t.Fatal("the changed definition has the same hash")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("greet is still %q", after.Description)
		}
		time.Sleep(10 * time.Millisecond)
	}
	logs.waitFor(t, "MCP tool definition changed: remembered answers for it no longer apply")
}

func waitTool(t *testing.T, m *tools.Manager, server, name string, present bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := m.Lookup(name, server); ok == present {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("tool %s/%s present=%v never came", server, name, present)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestErrorsAndOutputLimit(t *testing.T) {
	th := newTestHub(t, Options{OutputLimit: 4096})
	th.applyTrusted(map[string]ServerConfig{"changing": changing(t)})
	th.waitState(t, "changing", StateReady)
	c := th.call(t, "changing", "fail", `{}`)
	wantError(t, c, tools.CodeExecutionFailed, "MCP tool changing/fail reported an error: it went wrong on purpose")
	if !strings.Contains(string(c.ResultJSON), `"isError":true`) {
		t.Errorf("the error's result is %s", c.ResultJSON)
	}
	c = th.call(t, "changing", "big", `{"bytes":100000}`)
	wantError(t, c, tools.CodeOutputLimit, "over the limit of 4096")
	var cut struct {
		Content       []struct{ Text string }
		Truncated     bool
		OriginalBytes int
	}
	if err := json.Unmarshal(c.ResultJSON, &cut); err != nil || !cut.Truncated || len(cut.Content[0].Text) != 2048 || cut.OriginalBytes < 100000 {
		t.Fatalf("cut result %s (%v)", c.ResultJSON, err)
	}
	wantCompleted(t, th.call(t, "changing", "big", `{"bytes":100}`), "xxxx")
}

func TestFilesystemAndMemory(t *testing.T) {
	th := newTestHub(t, Options{})
	files := filepath.Join(th.ws, "files")
	os.MkdirAll(files, 0o755)
	os.WriteFile(filepath.Join(files, "note.txt"), []byte("a note for the filesystem server\n"), 0o644)
	mem := stdio("memory", serverBin(t, "mcp-server-memory"))
	mem.Env = map[string]string{"MEMORY_FILE_PATH": filepath.Join(th.ws, "memory.jsonl")}
	th.applyTrusted(map[string]ServerConfig{
		"filesystem": stdio("filesystem", serverBin(t, "mcp-server-filesystem"), files),
		"memory":     mem,
	})
	th.waitState(t, "filesystem", StateReady)
	th.waitState(t, "memory", StateReady)
	wantCompleted(t, th.call(t, "filesystem", "list_directory", `{"path":"`+files+`"}`), "note.txt")
	wantCompleted(t, th.call(t, "filesystem", "read_text_file", `{"path":"`+filepath.Join(files, "note.txt")+`"}`), "a note for the filesystem server")
	c := th.call(t, "filesystem", "read_text_file", `{"path":"/etc/hostname"}`)
	if c.Status != tools.StatusError {
		t.Fatalf("the filesystem server read outside its directory: %s", c.ResultJSON)
	}
	wantCompleted(t, th.call(t, "memory", "create_entities", `{"entities":[{"name":"Nexus","entityType":"project","observations":["a daemon"]}]}`), "Nexus")
	wantCompleted(t, th.call(t, "memory", "read_graph", `{}`), "a daemon")
}

func TestResourcesAndPrompts(t *testing.T) {
	th := newTestHub(t, Options{})
	th.applyTrusted(map[string]ServerConfig{"everything": stdio("everything", serverBin(t, "mcp-server-everything")), "memory": stdio("memory", serverBin(t, "mcp-server-memory"))})
	th.waitState(t, "everything", StateReady)
	th.waitState(t, "memory", StateReady)
	person := th.As(access.Person("cli"))
	rs, err := person.Resources(t.Context(), "")
	if err != nil || len(rs) == 0 {
		t.Fatalf("resources: %v %v", rs, err)
	}
	servers := map[string]bool{}
	for _, r := range rs {
		servers[r.Server] = true
		if r.Server == "memory" && r.URI != "memory://knowledge-graph" {
			t.Errorf("memory's resource: %+v", r)
		}
	}
	if !servers["everything"] || !servers["memory"] {
		t.Errorf("resources from %v", servers)
	}
	data, err := person.ReadResource(t.Context(), "everything", rs[0].URI)
	if err != nil || !strings.Contains(string(data), rs[0].URI) {
		t.Fatalf("read %s: %s %v", rs[0].URI, data, err)
	}
	ps, err := person.Prompts(t.Context(), "everything")
	if err != nil || len(ps) == 0 {
		t.Fatalf("prompts: %v %v", ps, err)
	}
	out, err := person.GetPrompt(t.Context(), "everything", "simple-prompt", nil)
	if err != nil || !strings.Contains(string(out), "messages") {
		t.Fatalf("simple-prompt: %s %v", out, err)
	}
	if _, err := person.Resources(t.Context(), "nope"); !errors.Is(err, ErrUnknownServer) {
		t.Fatalf("resources of an unknown server: %v", err)
	}
	// Each read was a call, by the person, of the server's read tools.
	calls := th.m.Calls(tools.CallFilter{})
	var got []string
	for _, c := range calls {
		got = append(got, fmt.Sprintf("%s/%s %s %s", c.ServerName, c.ToolName, c.Author, c.Status))
	}
	slices.Sort(got)
	want := []string{"everything/mcp_prompt cli completed", "everything/mcp_resource cli completed"}
	if !slices.Equal(got, want) {
		t.Fatalf("calls %q, want %q", got, want)
	}
}

// TestReadsDecidedByPolicy: an app denied a server's tools is denied its
// resources and prompts, which it is not shown either; each refused read
// is a call that says why.
func TestReadsDecidedByPolicy(t *testing.T) {
	pol := policy.New(policy.Rules{Apps: map[string]policy.AppRules{
		"denied":  {Deny: []string{"everything/*"}},
		"prompts": {Deny: []string{"everything/mcp_resource"}},
	}}, nil)
	th := newGatedHub(t, Options{}, pol.Gate(&policy.Approvers{}, time.Minute, nil))
	th.applyTrusted(map[string]ServerConfig{"everything": stdio("everything", serverBin(t, "mcp-server-everything")),
		"memory": stdio("memory", serverBin(t, "mcp-server-memory"))})
	th.waitState(t, "everything", StateReady)
	th.waitState(t, "memory", StateReady)
	denied := th.As(access.ForApp(&access.App{ID: "denied"}))

	if _, err := denied.ReadResource(t.Context(), "everything", "demo://resource/static/document/architecture.md"); !IsDenied(err) ||
		!strings.Contains(err.Error(), `app "denied" denies "everything/mcp_resource" (by "everything/*")`) {
		t.Fatalf("read: %v", err)
	}
	if _, err := denied.GetPrompt(t.Context(), "everything", "simple-prompt", nil); !IsDenied(err) {
		t.Fatalf("prompt: %v", err)
	}
	if _, err := denied.Resources(t.Context(), "everything"); !IsDenied(err) {
		t.Fatalf("resources of everything: %v", err)
	}
	if _, err := denied.Subscribe(t.Context(), "everything", "demo://resource/static/document/architecture.md"); !IsDenied(err) {
		t.Fatalf("subscribe: %v", err)
	}
	rs, err := denied.Resources(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Server != "memory" {
			t.Fatalf("a resource of a denied server is listed: %+v", r)
		}
	}
	if len(rs) == 0 {
		t.Fatal("memory's resource is not listed")
	}
	if ps, err := denied.Prompts(t.Context(), ""); err != nil || slices.ContainsFunc(ps, func(p Prompt) bool { return p.Server == "everything" }) {
		t.Fatalf("prompts: %v %v", ps, err)
	}
	calls := th.m.Calls(tools.CallFilter{AppID: "denied"})
	if len(calls) != 2 {
		t.Fatalf("%d calls, want the two refused reads: %+v", len(calls), calls)
	}
	for _, c := range calls {
		if c.Error == nil || c.Error.Code != tools.CodePermissionDenied || c.ServerName != "everything" || c.Author != "app:denied" {
			t.Errorf("call %+v", c)
		}
	}

	// "everything/mcp_resource" names resource reads alone.
	prompts := th.As(access.ForApp(&access.App{ID: "prompts"}))
	if _, err := prompts.GetPrompt(t.Context(), "everything", "simple-prompt", nil); err != nil {
		t.Fatalf("prompt: %v", err)
	}
	if _, err := prompts.ReadResource(t.Context(), "everything", "demo://resource/static/document/architecture.md"); !IsDenied(err) {
		t.Fatalf("read: %v", err)
	}
}

func TestLazyAndApply(t *testing.T) {
	th := newTestHub(t, Options{})
	lazy := changing(t)
	lazy.Lazy = true
	th.applyTrusted(map[string]ServerConfig{"changing": lazy})
	if st := th.statusOf("changing"); st.State != StateDisabled || !st.Lazy {
		t.Fatalf("lazy server before use: %+v", st)
	}
	// The first call starts it.
	wantCompleted(t, th.call(t, "changing", "greet", `{"name":"lazy"}`), "hello lazy")
	th.waitState(t, "changing", StateReady)

	// Changed configuration: restarted; removed: its tools go.
	ev := stdio("everything", serverBin(t, "mcp-server-everything"))
	th.applyTrusted(map[string]ServerConfig{"everything": ev})
	th.waitState(t, "everything", StateReady)
	if _, ok := th.m.Lookup("greet", "changing"); ok {
		t.Fatal("a removed server's tool is still registered")
	}
	if len(th.Servers()) != 1 {
		t.Fatalf("servers %+v", th.Servers())
	}
	pid := th.statusOf("everything").PID
	ev2 := ev
	ev2.Env = map[string]string{"X": "1"}
	th.applyTrusted(map[string]ServerConfig{"everything": ev2})
	st := th.waitState(t, "everything", StateReady)
	if st.PID == pid {
		t.Fatal("a changed server was not restarted")
	}
	th.applyTrusted(map[string]ServerConfig{"everything": ev2})
	if st2 := th.statusOf("everything"); st2.PID != st.PID {
		t.Fatal("an unchanged server was restarted")
	}
}

// syncBuffer is a log sink tests can wait on.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.mu.Lock()
		ok := strings.Contains(b.buf.String(), s)
		b.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log never said %q", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startHTTPEverything runs server-everything over Streamable HTTP on a
// loopback port and returns its endpoint.
func startHTTPEverything(t *testing.T) string {
	t.Helper()
	url, _ := startHTTPEverythingProc(t)
	return url
}

// startHTTPEverythingProc is startHTTPEverything that also returns the
// server's process tree.
func startHTTPEverythingProc(t *testing.T) (string, *proctree.Tree) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(serverBin(t, "mcp-server-everything"), "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	if testing.Verbose() {
		cmd.Stderr = os.Stderr
	}
	tree, err := proctree.Start(cmd, proctree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tree.Kill()
		cmd.Wait()
		tree.Release()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything never listened on %s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "http://" + addr + "/mcp", tree
}

func TestEverythingOverStreamableHTTP(t *testing.T) {
	url := startHTTPEverything(t)
	th := newTestHub(t, Options{})
	th.applyTrusted(map[string]ServerConfig{"web": {Name: "web", Source: "test", Transport: "http", URL: url, Enabled: true,
		Headers: map[string]string{"X-Nexus-Test": "1"}}})
	st := th.waitState(t, "web", StateReady)
	if st.Tools < 10 || st.Transport != "http" || st.PID != 0 {
		t.Fatalf("status %+v", st)
	}
	wantCompleted(t, th.call(t, "web", "echo", `{"message":"over http"}`), "Echo: over http")
	var progress int
	c := th.m.Execute(t.Context(), tools.ExecuteRequest{ServerName: "web", ToolName: "trigger-long-running-operation",
		Arguments: json.RawMessage(`{"duration":0.3,"steps":3}`), OnUpdate: func(c tools.Call) {
			if c.Progress != nil && c.Status == tools.StatusRunning {
				progress++
			}
		}})
	wantCompleted(t, c, "completed")
	if progress < 2 {
		t.Errorf("%d progress updates over HTTP", progress)
	}
	ps, err := th.Prompts(t.Context(), "web")
	if err != nil || len(ps) == 0 {
		t.Fatalf("prompts over HTTP: %v %v", ps, err)
	}
}

func TestNothingListens(t *testing.T) {
	th := newTestHub(t, Options{MaxRestarts: 1, StartupTimeout: 2 * time.Second})
	th.applyTrusted(map[string]ServerConfig{"void": {Name: "void", Source: "test", Transport: "http", URL: "http://127.0.0.1:9/mcp", Enabled: true}})
	st := th.waitState(t, "void", StateFailed)
	if !strings.Contains(st.Error, "connecting to http://127.0.0.1:9/mcp") {
		t.Fatalf("error %q", st.Error)
	}
}

func TestWatchAppliesEdits(t *testing.T) {
	ws := t.TempDir()
	th := newTestHub(t, Options{Workspace: ws})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go th.Watch(ctx, nil)
	time.Sleep(100 * time.Millisecond) // the watch is in place
	write := func(rel, text string) {
		p := filepath.Join(ws, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	trust := func(name string) {
		t.Helper()
		th.waitState(t, name, StatePendingApproval)
		if _, err := th.Trust(thePerson, name, ""); err != nil {
			t.Fatal(err)
		}
	}
	ev := serverBin(t, "mcp-server-everything")
	// A new file, in a directory that did not exist when the watch began:
	// its server waits for the person, then starts.
	write(".vscode/mcp.json", `{"servers": {"everything": {"type": "stdio", "command": "`+ev+`"}}}`)
	trust("everything")
	th.waitState(t, "everything", StateReady)
	pid := th.statusOf("everything").PID
	// An unrelated server added in another file leaves it alone.
	write(".mcp.json", `{"mcpServers": {"memory": {"command": "`+serverBin(t, "mcp-server-memory")+`"}}}`)
	trust("memory")
	th.waitState(t, "memory", StateReady)
	if th.statusOf("everything").PID != pid {
		t.Fatal("an unchanged server was restarted")
	}
	// A broken file is not applied; the servers go on.
	write(".mcp.json", `{"mcpServers": {`)
	time.Sleep(3 * watchDebounce)
	if st := th.statusOf("memory"); st.State != StateReady {
		t.Fatalf("memory after a broken edit: %+v", st)
	}
	// Removed from the file: stopped, its tools gone.
	write(".mcp.json", `{}`)
	deadline := time.Now().Add(10 * time.Second)
	for th.statusOf("memory").Name != "" {
		if time.Now().After(deadline) {
			t.Fatal("memory was not removed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if defs := th.m.List("memory"); len(defs) != 0 {
		t.Fatalf("memory's tools are still there: %d", len(defs))
	}
}
