package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

const twoApps = `
apps:
  - id: planner
    grants:
      definitions:
        read: ["shared/**"]
        write: ["shared/plans/*.md"]
      runtime: [team]
  - id: coder
`

func code(err error) codes.Code { return status.Code(err) }

func TestIdentityAndAddressing(t *testing.T) {
	ws := newWorkspace(t, twoApps)
	d := startDaemon(t, ws)
	cf := d.framework()
	planner, coder := as(d.appToken("planner")), as(d.appToken("coder"))
	admin := as(d.admin)

	// An app's paths are relative to its own root.
	set, err := cf.SetDefinitionFileContent(planner, &nexusv1.SetDefinitionFileContentRequest{
		AppId: "planner", Path: "brief.md", Content: "# Brief\n", CommitMessage: "first brief"})
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, ".nexus/definitions/planner/brief.md")); string(data) != "# Brief\n" {
		t.Errorf("working file = %q", data)
	}
	if got := git(t, ws, "log", "-1", "--format=%an|%s|%H"); got != "app:planner|first brief|"+set.Revision+"\n" {
		t.Errorf("commit = %q", got)
	}
	// The admin sees it from the definitions root; the empty appId of an
	// app token means its own app.
	got, err := cf.GetDefinitionFileContent(admin, &nexusv1.GetDefinitionFileContentRequest{Path: "planner/brief.md"})
	if err != nil || got.Content != "# Brief\n" || got.Revision != set.Revision {
		t.Fatalf("admin get = %v, %v", got, err)
	}
	if _, err := cf.GetDefinitionFileContent(planner, &nexusv1.GetDefinitionFileContentRequest{Path: "brief.md"}); err != nil {
		t.Errorf("empty appId with an app token: %v", err)
	}
	// Grants: planner may write shared/plans/*.md and read shared/**.
	if _, err := cf.SetDefinitionFileContent(admin, &nexusv1.SetDefinitionFileContentRequest{Path: "shared/team.md", Content: "team"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cf.GetDefinitionFileContent(planner, &nexusv1.GetDefinitionFileContentRequest{AppId: "planner", Path: "/shared/team.md"}); err != nil {
		t.Errorf("granted read: %v", err)
	}
	if _, err := cf.SetDefinitionFileContent(planner, &nexusv1.SetDefinitionFileContentRequest{AppId: "planner", Path: "/shared/plans/p1.md", Content: "p"}); err != nil {
		t.Errorf("granted write: %v", err)
	}
	list, err := cf.ListDefinitionDirectory(planner, &nexusv1.ListDefinitionDirectoryRequest{AppId: "planner", Path: "/shared", Recursive: true})
	if err != nil || len(list.Entries) != 3 || list.Entries[0].Path != "/shared/plans" || list.Entries[2].Path != "/shared/team.md" {
		t.Errorf("list /shared = %v, %v", list, err)
	}
	own, err := cf.ListDefinitionDirectory(planner, &nexusv1.ListDefinitionDirectoryRequest{AppId: "planner"})
	if err != nil || len(own.Entries) != 1 || own.Entries[0].Path != "brief.md" || own.Entries[0].Size != 8 {
		t.Errorf("list own root = %v, %v", own, err)
	}

	denied := []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"no token", func() error {
			_, err := cf.GetDefinitionFileContent(context.Background(), &nexusv1.GetDefinitionFileContentRequest{Path: "x"})
			return err
		}, codes.Unauthenticated},
		{"wrong token", func() error {
			_, err := cf.GetDefinitionFileContent(as("not-a-token"), &nexusv1.GetDefinitionFileContentRequest{Path: "x"})
			return err
		}, codes.Unauthenticated},
		{"token of another app", func() error {
			_, err := cf.GetDefinitionFileContent(coder, &nexusv1.GetDefinitionFileContentRequest{AppId: "planner", Path: "brief.md"})
			return err
		}, codes.PermissionDenied},
		{"another app's files", func() error {
			_, err := cf.GetDefinitionFileContent(coder, &nexusv1.GetDefinitionFileContentRequest{AppId: "coder", Path: "/planner/brief.md"})
			return err
		}, codes.PermissionDenied},
		{"write beyond the grant", func() error {
			_, err := cf.SetDefinitionFileContent(planner, &nexusv1.SetDefinitionFileContentRequest{Path: "/shared/team.md", Content: "x"})
			return err
		}, codes.PermissionDenied},
		{"unknown app for the admin", func() error {
			_, err := cf.GetDefinitionFileContent(admin, &nexusv1.GetDefinitionFileContentRequest{AppId: "ghost", Path: "x"})
			return err
		}, codes.NotFound},
		{"another app's namespace", func() error {
			_, err := cf.GetRuntimeValue(coder, &nexusv1.GetRuntimeValueRequest{Namespace: "planner", Key: "k"})
			return err
		}, codes.PermissionDenied},
		{"runtime without namespace for the admin", func() error {
			_, err := cf.GetRuntimeValue(admin, &nexusv1.GetRuntimeValueRequest{Key: "k"})
			return err
		}, codes.InvalidArgument},
		{"a tool call in another app's name", func() error {
			_, err := cf.ExecuteTool(coder, &nexusv1.ExecuteToolRequest{ToolName: "get_current_time", RequestingAppId: "planner"})
			return err
		}, codes.PermissionDenied},
	}
	for _, c := range denied {
		if err := c.call(); code(err) != c.want {
			t.Errorf("%s: %v, want %s", c.name, err, c.want)
		}
	}
	// The granted namespace works.
	if _, err := cf.SetRuntimeValue(planner, &nexusv1.SetRuntimeValueRequest{Namespace: "team", Key: "k", Value: "v"}); err != nil {
		t.Errorf("granted namespace: %v", err)
	}
	// Health needs no token.
	if _, err := healthpb.NewHealthClient(d.conn).Check(context.Background(), &healthpb.HealthCheckRequest{Service: "nexus.v1.CoreFramework"}); err != nil {
		t.Errorf("health: %v", err)
	}
}

func TestBadInputOverGRPC(t *testing.T) {
	ws := newWorkspace(t, twoApps+"definitions:\n  maxFileSize: 1MiB\n")
	d := startDaemon(t, ws)
	cf := d.framework()
	planner := as(d.appToken("planner"))
	outside := filepath.Join(filepath.Dir(ws), "outside-"+filepath.Base(ws))
	os.MkdirAll(outside, 0o755)
	os.MkdirAll(filepath.Join(ws, ".nexus/definitions/planner"), 0o755)
	os.Symlink(outside, filepath.Join(ws, ".nexus/definitions/planner/out"))
	os.Symlink("../../../..", filepath.Join(ws, ".nexus/definitions/planner/up"))
	first, err := cf.SetDefinitionFileContent(planner, &nexusv1.SetDefinitionFileContentRequest{Path: "doc.md", Content: "a\nb\n"})
	if err != nil {
		t.Fatal(err)
	}
	headBefore := git(t, ws, "rev-parse", "HEAD")

	for _, p := range []string{"../coder/x", "..", "/../x", "a/../../x", "", "a//b", "./a", "nul\x00", "out/x.md", "up/x.md", ".git/config", "/etc/passwd"} {
		_, err := cf.SetDefinitionFileContent(planner, &nexusv1.SetDefinitionFileContentRequest{Path: p, Content: "x"})
		want := codes.InvalidArgument
		if p == "/etc/passwd" {
			want = codes.PermissionDenied // root-addressed etc/passwd is outside the app's grants
		}
		if code(err) != want {
			t.Errorf("set %q: %v, want %s", p, err, want)
		}
	}
	big := strings.Repeat("x", 1<<20+1)
	if _, err := cf.SetDefinitionFileContent(planner, &nexusv1.SetDefinitionFileContentRequest{Path: "big.md", Content: big}); code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "limit") {
		t.Errorf("oversized: %v", err)
	}
	if _, err := cf.ApplyDefinitionDiff(planner, &nexusv1.ApplyDefinitionDiffRequest{Path: "doc.md", Diff: "@@ -1 +1 @@\n-zzz\n+y\n"}); code(err) != codes.FailedPrecondition {
		t.Errorf("diff that does not apply: %v", err)
	}
	if _, err := cf.ApplyDefinitionDiff(planner, &nexusv1.ApplyDefinitionDiffRequest{Path: "doc.md", Diff: "garbage"}); code(err) != codes.InvalidArgument {
		t.Errorf("diff that does not parse: %v", err)
	}
	if _, err := cf.SetDefinitionFileContent(planner, &nexusv1.SetDefinitionFileContentRequest{Path: "doc.md", Content: "c", ExpectedRevision: strings.Repeat("a", 40)}); code(err) != codes.Aborted {
		t.Errorf("stale expectedRevision: %v", err)
	}
	if _, err := cf.GetDefinitionFileContent(planner, &nexusv1.GetDefinitionFileContentRequest{Path: "missing.md"}); code(err) != codes.NotFound {
		t.Errorf("missing: %v", err)
	}
	if _, err := cf.GetDefinitionFileHistory(planner, &nexusv1.GetDefinitionFileHistoryRequest{Path: "doc.md", PageToken: "bogus"}); code(err) != codes.InvalidArgument {
		t.Errorf("bad page token: %v", err)
	}
	if _, err := cf.SetRuntimeValue(planner, &nexusv1.SetRuntimeValueRequest{Key: "", Value: "v"}); code(err) != codes.InvalidArgument {
		t.Errorf("empty key: %v", err)
	}
	if _, err := cf.SetRuntimeValue(planner, &nexusv1.SetRuntimeValueRequest{Key: "k", Value: "v", TtlSeconds: -1}); code(err) != codes.InvalidArgument {
		t.Errorf("negative ttl: %v", err)
	}
	if got := git(t, ws, "rev-parse", "HEAD"); got != headBefore {
		t.Errorf("bad input moved HEAD")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("a write escaped the root: %v", entries)
	}
	doc, err := cf.GetDefinitionFileContent(planner, &nexusv1.GetDefinitionFileContentRequest{Path: "doc.md"})
	if err != nil || doc.Content != "a\nb\n" || doc.Revision != first.Revision {
		t.Errorf("doc after bad input = %v, %v", doc, err)
	}
	if out := git(t, ws, "fsck", "--strict", "--no-dangling"); out != "" {
		t.Errorf("git fsck: %s", out)
	}
}

func TestHistoryAndDiffMatchGit(t *testing.T) {
	ws := newWorkspace(t, "")
	d := startDaemon(t, ws)
	cf := d.framework()
	admin := as(d.admin)
	var revs []string
	for i := range 25 {
		content := fmt.Sprintf("title: v%d\nsteps:\n  - one\n  - two %d\n", i, i*i)
		r, err := cf.SetDefinitionFileContent(admin, &nexusv1.SetDefinitionFileContentRequest{Path: "flows/main.yaml", Content: content})
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, r.Revision)
		if _, err := cf.SetDefinitionFileContent(admin, &nexusv1.SetDefinitionFileContentRequest{Path: fmt.Sprintf("flows/other%d.yaml", i%3), Content: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	token := ""
	for {
		page, err := cf.GetDefinitionFileHistory(admin, &nexusv1.GetDefinitionFileHistoryRequest{Path: "flows/main.yaml", Limit: 7, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Entries {
			got = append(got, e.Revision)
		}
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	want := strings.Fields(git(t, ws, "log", "--format=%H", "--", "flows/main.yaml"))
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("paged history differs from git log:\n%v\n%v", got, want)
	}
	for _, pair := range [][2]int{{0, 1}, {3, 17}, {0, 24}} {
		diff, err := cf.GetDefinitionFileDiff(admin, &nexusv1.GetDefinitionFileDiffRequest{Path: "flows/main.yaml", FromRevision: revs[pair[0]], ToRevision: revs[pair[1]]})
		if err != nil {
			t.Fatal(err)
		}
		if g := git(t, ws, "diff", "--abbrev=7", revs[pair[0]], revs[pair[1]], "--", "flows/main.yaml"); diff.Diff != g {
			t.Errorf("diff %v:\n%s\ngit:\n%s", pair, diff.Diff, g)
		}
	}
	// Restore writes the old content as a new commit.
	restored, err := cf.RestoreDefinitionFile(admin, &nexusv1.RestoreDefinitionFileRequest{Path: "flows/main.yaml", Revision: revs[2]})
	if err != nil {
		t.Fatal(err)
	}
	if g := git(t, ws, "show", restored.Revision+":flows/main.yaml"); g != restored.Content || !strings.Contains(g, "v2\n") {
		t.Errorf("restored content %q, git shows %q", restored.Content, g)
	}
}

func TestWatchStreams(t *testing.T) {
	ws := newWorkspace(t, twoApps)
	d := startDaemon(t, ws)
	cf := d.framework()
	planner := as(d.appToken("planner"))
	ctx, cancel := context.WithCancel(planner)
	defer cancel()
	defs, err := cf.WatchDefinitions(ctx, &nexusv1.WatchDefinitionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := cf.WatchRuntimeValues(ctx, &nexusv1.WatchRuntimeValuesRequest{Prefix: "job/"})
	if err != nil {
		t.Fatal(err)
	}
	// The headers say the watches are in place.
	if _, err := defs.Header(); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Header(); err != nil {
		t.Fatal(err)
	}
	// A write from the admin to another app's root must not reach planner.
	admin := as(d.admin)
	if _, err := cf.SetDefinitionFileContent(admin, &nexusv1.SetDefinitionFileContentRequest{AppId: "coder", Path: "x.md", Content: "c"}); err != nil {
		t.Fatal(err)
	}
	w, err := cf.SetDefinitionFileContent(planner, &nexusv1.SetDefinitionFileContentRequest{Path: "w.md", Content: "w"})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := defs.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if ev.Path != "w.md" || ev.Revision != w.Revision || ev.Author != "app:planner" || ev.Change != nexusv1.ChangeType_ADDED {
		t.Errorf("definition event = %v", ev)
	}
	cf.SetRuntimeValue(planner, &nexusv1.SetRuntimeValueRequest{Key: "other", Value: "no"})
	cf.SetRuntimeValue(planner, &nexusv1.SetRuntimeValueRequest{Key: "job/1", Value: "yes", TtlSeconds: 1})
	for _, want := range []string{"set", "expired"} {
		ev, err := rt.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Key != "job/1" || ev.Change != want || ev.Namespace != "planner" {
			t.Errorf("runtime event = %v, want %s of job/1", ev, want)
		}
	}
	got, err := cf.GetRuntimeValue(planner, &nexusv1.GetRuntimeValueRequest{Key: "job/1"})
	if err != nil || got.Found {
		t.Errorf("expired value still visible: %v %v", got, err)
	}
}

func TestConcurrentWritersOverGRPC(t *testing.T) {
	ws := newWorkspace(t, "")
	d := startDaemon(t, ws)
	cf := d.framework()
	admin := as(d.admin)
	if _, err := cf.SetDefinitionFileContent(admin, &nexusv1.SetDefinitionFileContentRequest{Path: "shared.yaml", Content: "start"}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	landed := map[string]string{}
	aborted := 0
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Go(func() {
			for i := range 4 {
				cur, err := cf.GetDefinitionFileContent(admin, &nexusv1.GetDefinitionFileContentRequest{Path: "shared.yaml"})
				if err != nil {
					t.Error(err)
					return
				}
				content := fmt.Sprintf("writer %02d write %d\n", w, i)
				r, err := cf.SetDefinitionFileContent(admin, &nexusv1.SetDefinitionFileContentRequest{Path: "shared.yaml", Content: content, ExpectedRevision: cur.Revision})
				mu.Lock()
				switch code(err) {
				case codes.OK:
					landed[r.Revision] = content
				case codes.Aborted:
					aborted++
				default:
					t.Errorf("write: %v", err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(landed)+aborted != 128 || len(landed) == 0 {
		t.Fatalf("%d landed + %d aborted != 128", len(landed), aborted)
	}
	revs := strings.Fields(git(t, ws, "log", "--format=%H", "--", "shared.yaml"))
	if len(revs) != len(landed)+1 {
		t.Errorf("git log has %d commits, %d writes landed", len(revs), len(landed))
	}
	for rev, content := range landed {
		if g := git(t, ws, "show", rev+":shared.yaml"); g != content {
			t.Errorf("%s holds %q, want %q (torn or lost)", rev, g, content)
		}
	}
	// Stopped first: packs merging in the background may retire a pack
	// that fsck listed, as git repack may.
	d.stop()
	if out := git(t, ws, "fsck", "--strict", "--no-dangling"); out != "" {
		t.Errorf("git fsck: %s", out)
	}
}

func TestSecondDaemonAndCleanStop(t *testing.T) {
	ws := newWorkspace(t, "")
	d := startDaemon(t, ws)
	_, stderr, exit := runNexusd(t, "--workspace", ws)
	if exit != 1 || !strings.Contains(stderr, fmt.Sprintf("another nexusd (pid %d) is already running", d.cmd.Process.Pid)) {
		t.Errorf("second daemon: exit %d, %q", exit, stderr)
	}
	// In-flight writes finish on SIGTERM: every acknowledged write is there
	// after a restart.
	cf := d.framework()
	admin := as(d.admin)
	var acked sync.Map
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				r, err := cf.SetDefinitionFileContent(admin, &nexusv1.SetDefinitionFileContentRequest{Path: fmt.Sprintf("w%d", w), Content: fmt.Sprint(i)})
				if err != nil {
					return
				}
				acked.Store(r.Revision, fmt.Sprintf("w%d=%d", w, i))
			}
		})
	}
	time.Sleep(50 * time.Millisecond) // let the writers get going; not an assertion
	d.stop()
	wg.Wait()
	if _, err := os.Stat(filepath.Join(ws, ".nexus/run/daemon.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("daemon.json left behind: %v", err)
	}
	d2 := startDaemon(t, ws)
	cf2 := d2.framework()
	n := 0
	acked.Range(func(k, v any) bool {
		n++
		path, content, _ := strings.Cut(v.(string), "=")
		got, err := cf2.GetDefinitionFileContent(as(d2.admin), &nexusv1.GetDefinitionFileContentRequest{Path: path, Revision: k.(string)})
		if err != nil || got.Content != content {
			t.Errorf("acknowledged write %s lost: %v %v", v, got, err)
		}
		return true
	})
	if n == 0 {
		t.Error("no write was acknowledged before the stop")
	}
}

func runNexusd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "nexusd"), args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	exit := 0
	if ee, ok := err.(interface{ ExitCode() int }); ok {
		exit = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), exit
}

func TestInvalidConfigRefusesToStart(t *testing.T) {
	ws := newWorkspace(t, "definitions:\n  maxFileSize: lots\napps:\n  - id: a\n    colour: red\n")
	_, stderr, exit := runNexusd(t, "--workspace", ws)
	if exit != 1 || !strings.Contains(stderr, "config.yaml:2:") || !strings.Contains(stderr, "config.yaml:5:") || !strings.Contains(stderr, `"colour"`) {
		t.Errorf("exit %d, stderr:\n%s", exit, stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, ".nexus/run/daemon.json")); err == nil {
		t.Error("daemon.json written by a daemon that refused to start")
	}
}

func TestLongWorkspacePathUsesShortSocket(t *testing.T) {
	ws := filepath.Join(t.TempDir(), strings.Repeat("long-directory-name/", 6))
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	d := startDaemon(t, ws)
	sock := strings.TrimPrefix(d.info.GRPCAddress, "unix://")
	if len(sock) >= 108 || strings.HasPrefix(sock, ws) {
		t.Errorf("socket %s (%d bytes)", sock, len(sock))
	}
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode: %v %v", fi, err)
	}
	di, err := os.Stat(filepath.Dir(sock))
	if err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("socket dir mode: %v %v", di, err)
	}
	if _, err := d.framework().SetRuntimeValue(as(d.admin), &nexusv1.SetRuntimeValueRequest{Namespace: "n", Key: "k", Value: "v"}); err != nil {
		t.Error(err)
	}
}

func TestTCPAndReflection(t *testing.T) {
	ws := newWorkspace(t, "")
	d := startDaemon(t, ws, "--grpc-addr", "127.0.0.1:0", "--insecure-tcp")
	var info struct{ GRPCTCPAddress string }
	data, _ := os.ReadFile(filepath.Join(ws, ".nexus/run/daemon.json"))
	if err := json.Unmarshal(data, &info); err != nil || !strings.HasPrefix(info.GRPCTCPAddress, "127.0.0.1:") {
		t.Fatalf("daemon.json tcp address: %q %v", info.GRPCTCPAddress, err)
	}
	conn, err := grpc.NewClient(info.GRPCTCPAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cf := nexusv1.NewCoreFrameworkClient(conn)
	if _, err := cf.SetRuntimeValue(as(d.admin), &nexusv1.SetRuntimeValueRequest{Namespace: "n", Key: "k", Value: "over tcp"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cf.GetRuntimeValue(context.Background(), &nexusv1.GetRuntimeValueRequest{Namespace: "n", Key: "k"}); code(err) != codes.Unauthenticated {
		t.Errorf("tcp without a token: %v", err)
	}
	// Reflection lists the services, so grpcurl works without .proto files.
	stream, err := reflectionpb.NewServerReflectionClient(d.conn).ServerReflectionInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.Name)
	}
	for _, want := range []string{"nexus.v1.CoreFramework", "nexus.v1.ToolManager", "grpc.health.v1.Health"} {
		if !slices.Contains(names, want) {
			t.Errorf("reflection lists %v, missing %s", names, want)
		}
	}
}

func TestWatchPrefixIsADirectory(t *testing.T) {
	ws := newWorkspace(t, twoApps)
	d := startDaemon(t, ws)
	cf := d.framework()
	admin := as(d.admin)
	ctx, cancel := context.WithCancel(admin)
	defer cancel()
	w, err := cf.WatchDefinitions(ctx, &nexusv1.WatchDefinitionsRequest{PathPrefix: "docs"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Header(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"docsx/a.md", "docs.md", "docs/in.md"} {
		if _, err := cf.SetDefinitionFileContent(admin, &nexusv1.SetDefinitionFileContentRequest{Path: p, Content: p}); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := w.Recv()
	if err != nil || ev.Path != "docs/in.md" {
		t.Errorf("first event = %v, %v; want docs/in.md only", ev, err)
	}
}
