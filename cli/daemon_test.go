package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

const testToken = "s3cret-admin-token"

// fakeCore is a small CoreFramework that keeps files and values in memory and
// records every request it serves.
type fakeCore struct {
	nexusv1.UnimplementedCoreFrameworkServer

	mu       sync.Mutex
	requests []proto.Message
	files    map[string]string // path → content
	revs     map[string]string // path → revision
	values   map[string]string // namespace/key → value
	commits  int
}

var _ nexusv1.CoreFrameworkServer = (*fakeCore)(nil)

func (f *fakeCore) record(req proto.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, req)
}

// last returns the last request recorded.
func (f *fakeCore) last() proto.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) == 0 {
		return nil
	}
	return f.requests[len(f.requests)-1]
}

func (f *fakeCore) GetDefinitionFileContent(_ context.Context, req *nexusv1.GetDefinitionFileContentRequest) (*nexusv1.GetDefinitionFileContentResponse, error) {
	f.record(req)
	f.mu.Lock()
	defer f.mu.Unlock()
	content, ok := f.files[req.GetPath()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "definition %q not found", req.GetPath())
	}
	return &nexusv1.GetDefinitionFileContentResponse{Content: content, Revision: f.revs[req.GetPath()]}, nil
}

func (f *fakeCore) SetDefinitionFileContent(_ context.Context, req *nexusv1.SetDefinitionFileContentRequest) (*nexusv1.SetDefinitionFileContentResponse, error) {
	f.record(req)
	f.mu.Lock()
	defer f.mu.Unlock()
	if exp := req.GetExpectedRevision(); exp != "" && exp != f.revs[req.GetPath()] {
		return nil, status.Errorf(codes.Aborted, "definition %q: conflict: last changed by %s", req.GetPath(), f.revs[req.GetPath()])
	}
	f.commits++
	rev := fmt.Sprintf("%040x", f.commits)
	f.files[req.GetPath()] = req.GetContent()
	f.revs[req.GetPath()] = rev
	return &nexusv1.SetDefinitionFileContentResponse{Revision: rev}, nil
}

// historyPage is a page of the history of every path: two pages of one
// entry each.
func historyPage(token string) (*nexusv1.GetDefinitionFileHistoryResponse, bool) {
	switch token {
	case "":
		return &nexusv1.GetDefinitionFileHistoryResponse{
			Entries: []*nexusv1.HistoryEntry{{
				Revision:  "0123456789abcdef0123456789abcdef01234567",
				Author:    "cli",
				Message:   "second\n\nwith a body",
				Timestamp: timestamppb.New(time.Date(2025, 6, 2, 10, 0, 0, 0, time.UTC)),
				Change:    nexusv1.ChangeType_MODIFIED,
			}},
			NextPageToken: "page2",
		}, true
	case "page2":
		return &nexusv1.GetDefinitionFileHistoryResponse{
			Entries: []*nexusv1.HistoryEntry{{
				Revision:  "fedcba9876543210fedcba9876543210fedcba98",
				Author:    "app:planner",
				Message:   "first\x1b[2K\rcommit\u202e", // an app's message, hostile
				Timestamp: timestamppb.New(time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC)),
				Change:    nexusv1.ChangeType_ADDED,
			}},
		}, true
	}
	return nil, false
}

func (f *fakeCore) GetDefinitionFileHistory(_ context.Context, req *nexusv1.GetDefinitionFileHistoryRequest) (*nexusv1.GetDefinitionFileHistoryResponse, error) {
	f.record(req)
	page, ok := historyPage(req.GetPageToken())
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "bad page token %q", req.GetPageToken())
	}
	return page, nil
}

func (f *fakeCore) ListDefinitionDirectory(_ context.Context, req *nexusv1.ListDefinitionDirectoryRequest) (*nexusv1.ListDefinitionDirectoryResponse, error) {
	f.record(req)
	return &nexusv1.ListDefinitionDirectoryResponse{Entries: []*nexusv1.DefinitionEntry{
		{Name: "agents", Path: "agents", Type: nexusv1.EntryType_DIRECTORY},
		{Name: "main.yaml", Path: "agents/main.yaml", Type: nexusv1.EntryType_FILE, Size: 1234},
	}}, nil
}

func (f *fakeCore) GetRuntimeValue(_ context.Context, req *nexusv1.GetRuntimeValueRequest) (*nexusv1.GetRuntimeValueResponse, error) {
	f.record(req)
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.values[namespace(req.GetAppId(), req.GetNamespace())+"/"+req.GetKey()]
	return &nexusv1.GetRuntimeValueResponse{Found: ok, Value: v}, nil
}

func (f *fakeCore) SetRuntimeValue(_ context.Context, req *nexusv1.SetRuntimeValueRequest) (*nexusv1.SetRuntimeValueResponse, error) {
	f.record(req)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.values[namespace(req.GetAppId(), req.GetNamespace())+"/"+req.GetKey()] = req.GetValue()
	return &nexusv1.SetRuntimeValueResponse{}, nil
}

func (f *fakeCore) DeleteRuntimeValue(_ context.Context, req *nexusv1.DeleteRuntimeValueRequest) (*nexusv1.DeleteRuntimeValueResponse, error) {
	f.record(req)
	f.mu.Lock()
	defer f.mu.Unlock()
	k := namespace(req.GetAppId(), req.GetNamespace()) + "/" + req.GetKey()
	_, ok := f.values[k]
	delete(f.values, k)
	return &nexusv1.DeleteRuntimeValueResponse{Deleted: ok}, nil
}

func (f *fakeCore) LogMessage(_ context.Context, req *nexusv1.LogMessageRequest) (*nexusv1.LogMessageResponse, error) {
	f.record(req)
	return &nexusv1.LogMessageResponse{Success: true}, nil
}

func namespace(app, ns string) string {
	if ns != "" {
		return ns
	}
	return app
}

// checkToken is the fake's auth: the admin bearer token or UNAUTHENTICATED.
func checkToken(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if got := md.Get("authorization"); len(got) != 1 || got[0] != "Bearer "+testToken {
		return nil, status.Error(codes.Unauthenticated, "invalid token")
	}
	return handler(ctx, req)
}

// startFake serves a fakeCore on a unix socket and writes the daemon.json of
// a workspace that points to it. It returns the workspace and the fake.
func startFake(t *testing.T) (string, *fakeCore) {
	t.Helper()
	ws := t.TempDir()
	sockDir, err := os.MkdirTemp("", "nexus-cli") // short: a socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "grpc.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	fake := &fakeCore{files: map[string]string{}, revs: map[string]string{}, values: map[string]string{}}
	srv := grpc.NewServer(grpc.UnaryInterceptor(checkToken))
	nexusv1.RegisterCoreFrameworkServer(srv, fake)
	go srv.Serve(l)
	t.Cleanup(srv.Stop)

	token := filepath.Join(ws, ".nexus", "run", "admin.token")
	writeDaemonJSON(t, ws, daemonInfo{
		PID:            os.Getpid(),
		Version:        "test",
		Workspace:      ws,
		GRPCAddress:    "unix://" + sock,
		AdminTokenFile: token,
	})
	if err := os.WriteFile(token, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return ws, fake
}

// mustRun runs Main and fails the test unless it exits 0.
func mustRun(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	r := run(t, stdin, args...)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("nexus %s: exit %d, stderr %q", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

func TestDefinitions(t *testing.T) {
	ws, fake := startFake(t)
	nx := func(args ...string) []string { return append([]string{"--workspace", ws}, args...) }

	// set from stdin, then get it back raw.
	rev := mustRun(t, "kind: agent\nname: main", nx("def", "set", "agents/main.yaml", "-m", "first version")...)
	wantRev := fmt.Sprintf("%040x", 1)
	if rev != wantRev+"\n" {
		t.Errorf("def set printed %q; want %q", rev, wantRev+"\n")
	}
	set := fake.last().(*nexusv1.SetDefinitionFileContentRequest)
	if set.GetPath() != "agents/main.yaml" || set.GetContent() != "kind: agent\nname: main" || set.GetCommitMessage() != "first version" || set.GetAppId() != "" {
		t.Errorf("def set sent %v", set)
	}
	if got := mustRun(t, "", nx("def", "get", "agents/main.yaml")...); got != "kind: agent\nname: main" {
		t.Errorf("def get printed %q", got)
	}

	// set from --file with --expect and --app.
	file := filepath.Join(t.TempDir(), "new.yaml")
	if err := os.WriteFile(file, []byte("v2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "", nx("def", "--app", "planner", "set", "agents/main.yaml", "--file", file, "--expect", wantRev)...)
	set = fake.last().(*nexusv1.SetDefinitionFileContentRequest)
	if set.GetContent() != "v2\n" || set.GetExpectedRevision() != wantRev || set.GetAppId() != "planner" {
		t.Errorf("def set --file sent %v", set)
	}

	// a stale --expect is the daemon's ABORTED, with its message and code.
	r := run(t, "x", nx("def", "set", "agents/main.yaml", "--expect", wantRev)...)
	if want := fmt.Sprintf("nexus: definition %q: conflict: last changed by %040x (aborted)\n", "agents/main.yaml", 2); r.code != 1 || r.stderr != want {
		t.Errorf("stale --expect: got %+v; want exit 1 and %q", r, want)
	}

	// a missing file is NOT_FOUND.
	r = run(t, "", nx("def", "get", "nope.yaml")...)
	if want := "nexus: definition \"nope.yaml\" not found (not_found)\n"; r.code != 1 || r.stderr != want || r.stdout != "" {
		t.Errorf("def get of a missing file: got %+v; want exit 1 and %q", r, want)
	}

	// --json is one object with the camelCase names.
	out := mustRun(t, "", nx("--json", "def", "get", "agents/main.yaml", "--rev", "abc")...)
	var got map[string]string
	if err := json.Unmarshal([]byte(out), &got); err != nil || !strings.HasSuffix(out, "}\n") || strings.Count(out, "\n") != 1 {
		t.Fatalf("def get --json printed %q (%v)", out, err)
	}
	if want := map[string]string{"content": "v2\n", "revision": fmt.Sprintf("%040x", 2)}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("def get --json = %v; want %v", got, want)
	}
	if get := fake.last().(*nexusv1.GetDefinitionFileContentRequest); get.GetRevision() != "abc" {
		t.Errorf("def get --rev sent %v", get)
	}

	out = mustRun(t, "", nx("def", "ls", "-r")...)
	wantLs := "TYPE  SIZE  PATH\ndir   -     agents\nfile  1234  agents/main.yaml\n"
	if out != wantLs {
		t.Errorf("def ls printed\n%s\nwant\n%s", out, wantLs)
	}
	if ls := fake.last().(*nexusv1.ListDefinitionDirectoryRequest); !ls.GetRecursive() {
		t.Errorf("def ls -r sent %v", ls)
	}
}

func TestDefinitionHistory(t *testing.T) {
	ws, fake := startFake(t)
	date := func(y, m, d, h int) string {
		return time.Date(y, time.Month(m), d, h, 0, 0, 0, time.UTC).Local().Format(time.RFC3339)
	}

	out := mustRun(t, "", "--workspace", ws, "def", "log", "agents/main.yaml", "--limit", "1")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "REVISION") || strings.Fields(lines[0])[4] != "MESSAGE" {
		t.Fatalf("def log printed\n%s", out)
	}
	if want := []string{"0123456789ab", date(2025, 6, 2, 10), "cli", "modified", "second"}; strings.Join(strings.Fields(lines[1]), " ") != strings.Join(want, " ") {
		t.Errorf("def log row = %q; want the fields %q", lines[1], want)
	}
	if h := fake.last().(*nexusv1.GetDefinitionFileHistoryRequest); h.GetLimit() != 1 || h.GetPath() != "agents/main.yaml" {
		t.Errorf("def log sent %v", h)
	}

	out = mustRun(t, "", "--workspace", ws, "def", "log", "agents/main.yaml", "--all")
	lines = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[2]), " ") != "fedcba987654 "+date(2025, 6, 1, 9)+" app:planner added first\\x1b[2K\\rcommit\\u202e" {
		t.Fatalf("def log --all printed\n%s", out)
	}
	// the columns line up.
	if strings.Index(lines[1], "modified") != strings.Index(lines[2], "added") {
		t.Errorf("def log --all: columns are not aligned:\n%s", out)
	}

	out = mustRun(t, "", "--workspace", ws, "--json", "def", "log", "agents/main.yaml", "--all")
	lines = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("def log --all --json printed %d lines; want one a page:\n%s", len(lines), out)
	}
	var page struct {
		Entries []struct {
			Revision, Author, Message, Timestamp, Change string
		}
		NextPageToken string
	}
	if err := json.Unmarshal([]byte(lines[0]), &page); err != nil {
		t.Fatal(err)
	}
	if page.NextPageToken != "page2" || len(page.Entries) != 1 || page.Entries[0].Change != "MODIFIED" || page.Entries[0].Timestamp != "2025-06-02T10:00:00Z" {
		t.Errorf("def log --json first page = %+v", page)
	}
}

func TestRuntime(t *testing.T) {
	ws, fake := startFake(t)
	nx := func(args ...string) []string { return append([]string{"--workspace", ws}, args...) }

	if out := mustRun(t, "", nx("rt", "set", "greeting", "hello world", "--app", "planner", "--ttl", "1m30s")...); out != "" {
		t.Errorf("rt set printed %q", out)
	}
	set := fake.last().(*nexusv1.SetRuntimeValueRequest)
	if set.GetAppId() != "planner" || set.GetKey() != "greeting" || set.GetValue() != "hello world" || set.GetTtlSeconds() != 90 || set.GetNamespace() != "" {
		t.Errorf("rt set sent %v", set)
	}
	if out := mustRun(t, "", nx("rt", "--app", "planner", "get", "greeting")...); out != "hello world" {
		t.Errorf("rt get printed %q", out)
	}
	if out := mustRun(t, "", nx("--json", "rt", "get", "greeting", "--app", "planner")...); out != `{"found":true,"value":"hello world"}`+"\n" {
		t.Errorf("rt get --json printed %q", out)
	}

	r := run(t, "", nx("rt", "get", "nope", "--app", "planner")...)
	if want := "nexus: key \"nope\" not found in namespace \"planner\"\n"; r.code != 1 || r.stderr != want || r.stdout != "" {
		t.Errorf("rt get of a missing key: got %+v; want exit 1 and %q", r, want)
	}
	r = run(t, "", nx("rt", "get", "greeting", "--app", "planner", "--namespace", "shared")...)
	if want := "nexus: key \"greeting\" not found in namespace \"shared\"\n"; r.code != 1 || r.stderr != want {
		t.Errorf("rt get --namespace: got %+v; want exit 1 and %q", r, want)
	}

	if out := mustRun(t, "", nx("rt", "rm", "greeting", "--app", "planner")...); out != "deleted\n" {
		t.Errorf("rt rm printed %q", out)
	}
	if out := mustRun(t, "", nx("rt", "rm", "greeting", "--app", "planner")...); out != "not found\n" {
		t.Errorf("rt rm again printed %q", out)
	}
}

func TestLogMessage(t *testing.T) {
	ws, fake := startFake(t)
	mustRun(t, "", "--workspace", ws, "log", "build", "finished", "--level", "warn", "--app", "planner",
		"--task", "t1", "--request", "r1", "--context", "step=3", "--context", "query=a=b")
	got := fake.last().(*nexusv1.LogMessageRequest)
	want := &nexusv1.LogMessageRequest{
		Level: "warn", Message: "build finished", AppId: "planner", TaskId: "t1", RequestId: "r1",
		Context: map[string]string{"step": "3", "query": "a=b"},
	}
	if !proto.Equal(got, want) {
		t.Errorf("log sent %v; want %v", got, want)
	}
}

func TestUnauthenticated(t *testing.T) {
	ws, _ := startFake(t)
	var info daemonInfo
	b, err := os.ReadFile(filepath.Join(ws, ".nexus", "run", "daemon.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(info.AdminTokenFile, []byte("wrong"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"def", "get", "a.yaml"}, {"--json", "rt", "ls", "--app", "a"}} {
		r := run(t, "", append([]string{"--workspace", ws}, args...)...)
		if want := "nexus: invalid token (unauthenticated)\n"; r.code != 1 || r.stderr != want || r.stdout != "" {
			t.Errorf("nexus %s with a wrong token: got %+v; want exit 1 and %q", strings.Join(args, " "), r, want)
		}
	}
}

// TestUnreachable: only gRPC's own failure to dial the socket means no
// daemon; an UNAVAILABLE the daemon returns (its Redis is down) is its answer.
func TestUnreachable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial unix /ws/.nexus/run/nexusd.sock: connect: connection refused"`), true},
		{status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial unix /ws/.nexus/run/nexusd.sock: connect: no such file or directory"`), true},
		{status.Error(codes.Unavailable, `get runtime key "k" in namespace "app": redis at 127.0.0.1:6379 is unreachable (dial tcp 127.0.0.1:6379: connect: connection refused): store unavailable`), false},
		{status.Error(codes.NotFound, "connection refused while dialing"), false},
	} {
		if got := unreachable(tc.err); got != tc.want {
			t.Errorf("unreachable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
