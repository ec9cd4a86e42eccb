package integration

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// The security matrix: every door × every protected target × each caller,
// against the real nexusd. A cell is a call that must not reveal a marker
// the target holds, must not change the target, or, for the cells that
// must keep working, must succeed.

const securityConfig = `# CONFIG-MARKER
apps:
  - id: alpha
    grants:
      definitions: {read: ["shared/**"]}
      tools: {allow: [read_file, write_file, edit_file, list_directory, search_files, execute_command]}
  - id: beta
  - id: gamma
`

// target is something no caller but the ones named may read or change.
type target struct {
	name string
	// path is workspace-relative, or absolute for targets outside it.
	path string
	// marker is a string only the target holds ("" when it is only
	// checked for changes).
	marker string
	// personReads: the person may read it (another app's definition).
	personReads bool
}

type secEnv struct {
	t        *testing.T
	d        *daemon
	ws       string
	callers  map[string]context.Context
	targets  []target
	writable []string // workspace-relative files no command may change
}

func newSecEnv(t *testing.T) *secEnv {
	ws := newWorkspace(t, securityConfig)
	write := func(rel, content string) {
		p := filepath.Join(ws, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".nexus/definitions/alpha/own.txt", "alpha's own\n")
	write(".nexus/definitions/gamma/secret.txt", "GAMMA-SECRET-MARKER\n")
	write(".nexus/definitions/shared/doc.md", "SHARED-DOC\n")
	write("src/main.txt", "source\n")
	write(".git/hooks/README", "hooks\n")
	write(".git/HEAD", "ref: refs/heads/main\n")
	write(".vscode/settings.json", "{}\n")
	write(".vscode/mcp.json", `{"servers": {}}`+"\n")
	write(".mcp.json", `{"mcpServers": {}}`+"\n")
	// An MCP server's OAuth tokens, as the hub keeps them (0600 in 0700).
	if err := os.MkdirAll(filepath.Join(ws, ".nexus", "mcp-auth"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".nexus", "mcp-auth", "remote.json"),
		[]byte(`{"version":1,"server":"remote","accessToken":"MCP-TOKEN-MARKER"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// Another workspace with a running daemon, outside the temporary
	// directories: its .nexus is hidden because it is in the registry.
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(home, ".cache", "nexus"), 0o755)
	ws2, err := os.MkdirTemp(filepath.Join(home, ".cache", "nexus"), "security-ws2-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(ws2) })
	d2 := startDaemon(t, ws2)
	d2.stop()
	d2 = startDaemon(t, ws2)

	t.Setenv("NEXUS_TEST_SECRET", "ENV-SECRET-MARKER")
	// With TLS on TCP, so that the generated certificate's key is there.
	d := startDaemon(t, ws, "--grpc-addr", "127.0.0.1:0")
	e := &secEnv{t: t, d: d, ws: ws, callers: map[string]context.Context{
		"alpha": as(d.appToken("alpha")), "beta": as(d.appToken("beta")), "person": as(d.admin),
	}}
	if _, err := d.framework().SetRuntimeValue(as(d.admin), &nexusv1.SetRuntimeValueRequest{AppId: "gamma", Key: "k", Value: "RUNTIME-MARKER"}); err != nil {
		t.Fatal(err)
	}
	// A call whose arguments go into the audit log.
	e.tool("person", "get_current_time", `{"timezone": "UTC"}`)
	e.targets = []target{
		{name: "another app's definition", path: ".nexus/definitions/gamma/secret.txt", marker: "GAMMA-SECRET-MARKER", personReads: true},
		{name: "admin token", path: ".nexus/run/admin.token", marker: d.admin},
		{name: "another app's token", path: ".nexus/run/apps/gamma.token", marker: d.appToken("gamma")},
		{name: "config.yaml", path: ".nexus/config.yaml", marker: "CONFIG-MARKER"},
		{name: "runtime.db", path: ".nexus/runtime.db", marker: "RUNTIME-MARKER"},
		{name: "audit log", path: ".nexus/audit/toolcalls.jsonl", marker: "get_current_time"},
		{name: "history ref", path: ".nexus/history.git/refs/heads/main"},
		{name: "daemon.json", path: ".nexus/run/daemon.json", marker: d.info.GRPCAddress},
		{name: "the TLS key", path: ".nexus/tls/key.pem", marker: tlsKeyLine(t, ws)},
		{name: "an MCP server's OAuth tokens", path: ".nexus/mcp-auth/remote.json", marker: "MCP-TOKEN-MARKER"},
		{name: "another workspace's admin token", path: filepath.Join(ws2, ".nexus", "run", "admin.token"), marker: d2.admin},
		{name: "the daemon's environment", path: fmt.Sprintf("/proc/%d/environ", d.info.PID), marker: "ENV-SECRET-MARKER"},
	}
	e.writable = []string{".git/hooks/README", ".git/HEAD", ".vscode/settings.json", ".vscode/mcp.json", ".mcp.json",
		".nexus/config.yaml", ".nexus/definitions/gamma/secret.txt", ".nexus/run/admin.token", ".nexus/run/apps/gamma.token",
		".nexus/mcp-auth/remote.json", ".nexus/tls/key.pem"}
	return e
}

// tlsKeyLine is a line of the base64 of the generated TLS key.
func tlsKeyLine(t *testing.T, ws string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ws, ".nexus", "tls", "key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	if len(lines) < 2 || len(lines[1]) < 32 {
		t.Fatalf("key.pem:\n%s", data)
	}
	return lines[1]
}

func (e *secEnv) tool(caller, name, args string) *nexusv1.ExecuteToolResponse {
	e.t.Helper()
	r, err := e.d.framework().ExecuteTool(e.callers[caller], &nexusv1.ExecuteToolRequest{ToolName: name, ArgumentsJson: args})
	if err != nil {
		e.t.Fatalf("%s %s as %s: %v", name, args, caller, err)
	}
	return r
}

// sh runs a command line as the caller and returns its output and stderr.
func (e *secEnv) sh(caller, script string) (string, *nexusv1.ExecuteToolResponse) {
	e.t.Helper()
	args, _ := json.Marshal(map[string]any{"command": script})
	r := e.tool(caller, "execute_command", string(args))
	return r.OutputJson + r.Message, r
}

func jsonArgs(kv ...any) string {
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func (e *secEnv) hashes() map[string]string {
	out := map[string]string{}
	for _, rel := range e.writable {
		b, err := os.ReadFile(filepath.Join(e.ws, rel))
		if err != nil {
			out[rel] = "missing"
			continue
		}
		out[rel] = fmt.Sprintf("%x", sha256.Sum256(b))
	}
	return out
}

func TestSecurityMatrix(t *testing.T) {
	e := newSecEnv(t)
	before := e.hashes()
	callers := []string{"alpha", "beta", "person"}

	// Reading doors: none may reveal the marker, but the person's reads of
	// another app's definition.
	for _, tg := range e.targets {
		if tg.marker == "" {
			continue
		}
		rel := !filepath.IsAbs(tg.path)
		dir, base := filepath.Dir(tg.path), filepath.Base(tg.path)
		for _, c := range callers {
			want := c == "person" && tg.personReads
			check := func(door, out string) {
				t.Helper()
				if got := strings.Contains(out, tg.marker); got != want {
					t.Errorf("%s × %s × %s: revealed=%v, want %v\n%.400s", door, tg.name, c, got, want, out)
				}
			}
			checkName := func(door, out string) {
				t.Helper()
				if !want && strings.Contains(out, base) {
					t.Errorf("%s × %s × %s: the name %q leaked\n%.400s", door, tg.name, c, base, out)
				}
			}
			out, _ := e.sh(c, "cat "+tg.path)
			check("cat", out)
			out, _ = e.sh(c, "grep -r "+tg.marker+" "+dir)
			check("grep -r", out)
			out, _ = e.sh(c, "cp -r "+dir+" copy_"+c+" && grep -r "+tg.marker+" copy_"+c+"; rm -rf copy_"+c)
			check("cp -r", out)
			if tg.name != "the daemon's environment" {
				out, _ = e.sh(c, "ls -la "+dir)
				checkName("ls", out)
				out, _ = e.sh(c, "find "+dir+" -name "+base)
				checkName("find", out)
			}
			// A link planted by one call and used by the next.
			e.sh(c, "rm -f hard_"+c+" soft_"+c+"; ln "+tg.path+" hard_"+c+"; ln -s "+tg.path+" soft_"+c)
			for _, l := range []string{"hard_" + c, "soft_" + c} {
				r := e.tool(c, "read_file", jsonArgs("path", l))
				out, _ = e.sh(c, "cat "+l)
				if l == "soft_"+c && rel && want {
					continue // the person may follow a link to what it may read
				}
				// A hard link is never read: read_file refuses files with
				// more than one, and commands cannot make one across the
				// mount of the definitions root.
				if strings.Contains(r.OutputJson, tg.marker) || strings.Contains(out, tg.marker) {
					t.Errorf("a planted %s link × %s × %s revealed the marker:\n%.400s\n%.400s", l[:4], tg.name, c, r.OutputJson, out)
				}
			}
			if !rel {
				continue
			}
			r := e.tool(c, "read_file", jsonArgs("path", tg.path))
			check("read_file", r.OutputJson)
			r = e.tool(c, "search_files", jsonArgs("path", dir, "pattern", tg.marker))
			check("search_files", r.OutputJson)
			r = e.tool(c, "list_directory", jsonArgs("path", dir, "recursive", true))
			checkName("list_directory", r.OutputJson)
			r = e.tool(c, "list_directory", jsonArgs("path", ".nexus", "recursive", true))
			checkName("list_directory of .nexus", r.OutputJson)
		}
	}

	// Writing doors: nothing protected changes, whoever calls.
	for _, rel := range e.writable {
		for _, c := range callers {
			if c == "person" && rel == ".nexus/definitions/gamma/secret.txt" {
				continue // the person may change every app's definitions
			}
			e.sh(c, "echo x >> "+rel)
			e.sh(c, "mv "+rel+" moved_"+c+"; mv moved_"+c+" "+rel)
			e.sh(c, "rm -f "+rel)
			e.sh(c, "ln -sf /etc/passwd "+rel)
			e.tool(c, "write_file", jsonArgs("path", rel, "content", "x"))
			e.tool(c, "edit_file", jsonArgs("path", rel, "oldText", "{", "newText", "x"))
		}
	}
	e.sh("alpha", "mkdir -p .git/hooks; echo 'echo pwned' > .git/hooks/pre-commit")
	e.sh("person", "echo 'echo pwned' > .git/hooks/post-checkout")
	e.tool("person", "write_file", jsonArgs("path", ".git/hooks/pre-push", "content", "echo pwned"))
	e.tool("alpha", "write_file", jsonArgs("path", ".vscode/tasks.json", "content", "{}"))
	after := e.hashes()
	for rel, h := range before {
		if after[rel] != h {
			t.Errorf("%s changed (%s → %s)", rel, h, after[rel])
		}
	}
	for _, hook := range []string{"pre-commit", "post-checkout", "pre-push"} {
		if _, err := os.Stat(filepath.Join(e.ws, ".git", "hooks", hook)); err == nil {
			t.Errorf(".git/hooks/%s was written", hook)
		}
	}
	if _, err := os.Stat(filepath.Join(e.ws, ".vscode", "tasks.json")); err == nil {
		t.Error(".vscode/tasks.json was written by an app's tool call")
	}

	// The daemon's socket is out of reach of every command.
	for _, c := range callers {
		out, _ := e.sh(c, "ls -la .nexus/run/ "+filepath.Dir(strings.TrimPrefix(e.d.info.GRPCAddress, "unix://"))+"; test -S "+
			strings.TrimPrefix(e.d.info.GRPCAddress, "unix://")+" && echo SOCKET-REACHABLE")
		if strings.Contains(out, "SOCKET-REACHABLE") || strings.Contains(out, "nexusd.sock") {
			t.Errorf("the daemon's socket is visible to %s's commands:\n%s", c, out)
		}
	}
}

// TestSecurityAllowedCells: what the callers may do still works.
func TestSecurityAllowedCells(t *testing.T) {
	e := newSecEnv(t)
	ok := func(what string, r *nexusv1.ExecuteToolResponse, want string) {
		t.Helper()
		if !r.Success || !strings.Contains(r.OutputJson, want) {
			t.Errorf("%s: success=%v %s %s; want output with %q", what, r.Success, r.ErrorCode, r.Message+r.OutputJson, want)
		}
	}
	// An app reads and writes its own definitions through write_file and
	// its commands, and reads what it is granted.
	ok("alpha write_file own", e.tool("alpha", "write_file", jsonArgs("path", ".nexus/definitions/alpha/new.txt", "content", "made by alpha\n")), "revision")
	ok("alpha read_file own", e.tool("alpha", "read_file", jsonArgs("path", ".nexus/definitions/alpha/new.txt")), "made by alpha")
	ok("alpha read_file granted", e.tool("alpha", "read_file", jsonArgs("path", ".nexus/definitions/shared/doc.md")), "SHARED-DOC")
	_, r := e.sh("alpha", "cat .nexus/definitions/alpha/own.txt .nexus/definitions/shared/doc.md && echo cmd > .nexus/definitions/alpha/cmd.txt && cat .nexus/definitions/alpha/cmd.txt")
	ok("alpha commands in its own and granted definitions", r, "SHARED-DOC")
	_, r = e.sh("alpha", "echo x > .nexus/definitions/shared/doc.md")
	if strings.Contains(r.OutputJson, `"exitCode":0`) {
		t.Errorf("alpha wrote a definition it may only read: %s", r.OutputJson)
	}
	r = e.tool("alpha", "list_directory", jsonArgs("path", ".nexus/definitions"))
	ok("alpha lists the definitions root", r, `"alpha"`)
	if strings.Contains(r.OutputJson, "gamma") || strings.Contains(r.OutputJson, "beta") {
		t.Errorf("alpha's listing shows other apps: %s", r.OutputJson)
	}
	// Commands build in the workspace and their own temporary directory.
	for _, c := range []string{"alpha", "person"} {
		_, r = e.sh(c, `set -e; t=$(mktemp); echo built > "$t"; cp "$t" src/out_`+c+`.txt; cat src/main.txt src/out_`+c+`.txt; echo TMPDIR=$TMPDIR`)
		ok(c+" builds in the workspace", r, "built")
		ok(c+" has its own TMPDIR", r, "TMPDIR=/tmp")
	}
	// The person reads every app's definitions, by tool and by command.
	ok("person read_file another app's", e.tool("person", "read_file", jsonArgs("path", ".nexus/definitions/gamma/secret.txt")), "GAMMA-SECRET-MARKER")
	_, r = e.sh("person", "cat .nexus/definitions/gamma/secret.txt")
	ok("person cat another app's", r, "GAMMA-SECRET-MARKER")
	// Network is off by default.
	_, r = e.sh("person", "cat < /dev/tcp/127.0.0.1/1 2>&1; ip link 2>/dev/null | grep -c UP; echo done")
	ok("network off", r, "done")
}

// TestSecurityGRPCDoors: every RPC that takes a definition path, for another
// app's file: apps are refused (PERMISSION_DENIED, nothing changes), the
// person is not.
func TestSecurityGRPCDoors(t *testing.T) {
	e := newSecEnv(t)
	fw := e.d.framework()
	const p = "/gamma/secret.txt"
	head := func() string {
		r, err := fw.GetDefinitionFileHistory(as(e.d.admin), &nexusv1.GetDefinitionFileHistoryRequest{Path: p, Limit: 1})
		if err != nil || len(r.Entries) == 0 {
			t.Fatalf("history: %v", err)
		}
		return r.Entries[0].Revision
	}
	rev := head()
	changes := 0
	doors := map[string]func(ctx context.Context) error{
		"GetDefinitionFileContent": func(ctx context.Context) error {
			_, err := fw.GetDefinitionFileContent(ctx, &nexusv1.GetDefinitionFileContentRequest{Path: p})
			return err
		},
		"GetDefinitionFileHistory": func(ctx context.Context) error {
			_, err := fw.GetDefinitionFileHistory(ctx, &nexusv1.GetDefinitionFileHistoryRequest{Path: p})
			return err
		},
		"GetDefinitionFileDiff": func(ctx context.Context) error {
			_, err := fw.GetDefinitionFileDiff(ctx, &nexusv1.GetDefinitionFileDiffRequest{Path: p, FromRevision: rev})
			return err
		},
		"ListDefinitionDirectory": func(ctx context.Context) error {
			_, err := fw.ListDefinitionDirectory(ctx, &nexusv1.ListDefinitionDirectoryRequest{Path: "/gamma"})
			return err
		},
		"WatchDefinitions": func(ctx context.Context) error {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			s, err := fw.WatchDefinitions(ctx, &nexusv1.WatchDefinitionsRequest{PathPrefix: "/gamma"})
			if err != nil {
				return err
			}
			if _, err := s.Header(); err != nil {
				return err
			}
			// A refused watch ends at once; an accepted one sees a change.
			changes++
			if _, err := fw.SetDefinitionFileContent(as(e.d.admin), &nexusv1.SetDefinitionFileContentRequest{Path: "/gamma/other.txt", Content: fmt.Sprint(changes)}); err != nil {
				t.Fatal(err)
			}
			_, err = s.Recv()
			return err
		},
		"SetDefinitionFileContent": func(ctx context.Context) error {
			_, err := fw.SetDefinitionFileContent(ctx, &nexusv1.SetDefinitionFileContentRequest{Path: p, Content: "GAMMA-SECRET-MARKER\n", ExpectedRevision: rev})
			return err
		},
		"ApplyDefinitionDiff": func(ctx context.Context) error {
			_, err := fw.ApplyDefinitionDiff(ctx, &nexusv1.ApplyDefinitionDiffRequest{Path: p, ExpectedRevision: rev,
				Diff: "--- a/gamma/secret.txt\n+++ b/gamma/secret.txt\n@@ -1 +1 @@\n-GAMMA-SECRET-MARKER\n+GAMMA-SECRET-MARKER\n"})
			return err
		},
		"RestoreDefinitionFile": func(ctx context.Context) error {
			_, err := fw.RestoreDefinitionFile(ctx, &nexusv1.RestoreDefinitionFileRequest{Path: p, Revision: rev, ExpectedRevision: "stale"})
			return err
		},
		"DeleteDefinitionFile": func(ctx context.Context) error {
			_, err := fw.DeleteDefinitionFile(ctx, &nexusv1.DeleteDefinitionFileRequest{Path: p, ExpectedRevision: "stale"})
			return err
		},
	}
	for name, call := range doors {
		for _, c := range []string{"alpha", "beta"} {
			if err := call(e.callers[c]); !strings.Contains(fmt.Sprint(err), "PermissionDenied") {
				t.Errorf("%s × another app's definition × %s: %v, want PermissionDenied", name, c, err)
			}
		}
		err := call(e.callers["person"])
		if strings.Contains(fmt.Sprint(err), "PermissionDenied") {
			t.Errorf("%s × another app's definition × person: %v", name, err)
		}
	}
	// The root listing of an app shows its own directory and what leads to
	// its grants, no other app's.
	r, err := fw.ListDefinitionDirectory(e.callers["alpha"], &nexusv1.ListDefinitionDirectoryRequest{Path: "/", Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range r.Entries {
		if strings.HasPrefix(en.Path, "/gamma") || strings.HasPrefix(en.Path, "/beta") {
			t.Errorf("alpha's listing of the root shows %s", en.Path)
		}
	}
	if got := head(); got != rev {
		t.Errorf("a refused call changed the history: %s → %s", rev, got)
	}
}

// TestSecurityRenameRace: an app's directory swapped for a symlink to
// another app's, over and over, while the app writes into it through both
// doors: no write lands in the other app's directory, no temporary file is
// left there, and the daemon lives on (a bounded number of rounds).
func TestSecurityRenameRace(t *testing.T) {
	e := newSecEnv(t)
	defs := filepath.Join(e.ws, ".nexus", "definitions")
	sub := filepath.Join(defs, "alpha", "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	const rounds = 300
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range rounds {
			os.Rename(sub, sub+".old")
			os.Symlink("../gamma", sub)
			os.Remove(sub)
			os.Rename(sub+".old", sub)
		}
	}()
	fw := e.d.framework()
	for i := 0; ; i++ {
		select {
		case <-done:
		default:
			content := fmt.Sprintf("write %d\n", i)
			fw.SetDefinitionFileContent(e.callers["alpha"], &nexusv1.SetDefinitionFileContentRequest{Path: "sub/f.txt", Content: content})
			e.tool("alpha", "write_file", jsonArgs("path", ".nexus/definitions/alpha/sub/g.txt", "content", content))
			continue
		}
		break
	}
	des, err := os.ReadDir(filepath.Join(defs, "gamma"))
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		if de.Name() != "secret.txt" {
			t.Errorf("a write of alpha landed in gamma's directory: %s", de.Name())
		}
	}
	// The daemon is alive and its history readable.
	if _, err := fw.GetDefinitionFileContent(e.callers["person"], &nexusv1.GetDefinitionFileContentRequest{Path: "/gamma/secret.txt"}); err != nil {
		t.Fatalf("after the race: %v\n%s", err, e.d.stderr)
	}
}

// TestSecurityEditorDoors: the editor is the person. Its definition methods
// reach only the definitions root, its tool calls nothing of .nexus/, and a
// write to .git or an MCP file is asked of the editor even though the
// person's calls are allowed by default.
func TestSecurityEditorDoors(t *testing.T) {
	ws := newWorkspace(t, securityConfig)
	os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755)
	e := startEditor(t, ws)
	res := e.initialize(os.Getpid())
	tok, err := os.ReadFile(res.Nexus.AdminTokenFile)
	if err != nil {
		t.Fatal(err)
	}
	admin := strings.TrimSpace(string(tok))
	for _, m := range []string{"get", "set", "delete", "history", "list"} {
		for _, p := range []string{"../run/admin.token", "/../run/admin.token", "../../.nexus/run/admin.token"} {
			params := map[string]any{"path": p, "content": "x"}
			if err := e.call("nexus/definitions/"+m, params, nil); err == nil || err.Code != -32602 {
				t.Errorf("nexus/definitions/%s %q: %v, want -32602", m, p, err)
			}
		}
	}
	type toolOut struct {
		Success    bool   `json:"success"`
		ErrorCode  string `json:"errorCode"`
		Message    string `json:"message"`
		OutputJSON string `json:"outputJson"`
	}
	run := func(tool string, args map[string]any) toolOut {
		var out toolOut
		e.mustCall("nexus/tools/execute", map[string]any{"toolName": tool, "arguments": args}, &out)
		return out
	}
	for _, out := range []toolOut{
		run("read_file", map[string]any{"path": ".nexus/run/admin.token"}),
		run("search_files", map[string]any{"path": ".nexus", "pattern": "."}),
		run("execute_command", map[string]any{"command": "cat .nexus/run/admin.token; cat /proc/*/environ"}),
	} {
		if strings.Contains(out.OutputJSON+out.Message, admin) {
			t.Errorf("an editor tool call reached .nexus/run: %+v", out)
		}
	}
	// The write asks the editor (which allows it once here): the person
	// decides, never an allow rule.
	out := run("write_file", map[string]any{"path": ".git/hooks/pre-commit", "content": "echo hook\n"})
	asked := false
	e.mu.Lock()
	for _, r := range e.requests {
		asked = asked || (r.method == "nexus/requestPermission" && strings.Contains(string(r.params), "pre-commit"))
	}
	e.mu.Unlock()
	if !asked || !out.Success {
		t.Errorf("write_file .git/hooks/pre-commit from the editor: asked %v, %+v", asked, out)
	}
}

// TestSecuritySandboxModes: read-only hides .nexus as workspace-write does
// and writes nowhere; off runs the person's commands unconfined and no
// app's.
func TestSecuritySandboxModes(t *testing.T) {
	for _, mode := range []string{"read-only", "off"} {
		t.Run(mode, func(t *testing.T) {
			ws := newWorkspace(t, securityConfig+"tools:\n  sandbox: "+mode+"\n")
			os.MkdirAll(filepath.Join(ws, "src"), 0o755)
			d := startDaemon(t, ws)
			e := &secEnv{t: t, d: d, ws: ws, callers: map[string]context.Context{"alpha": as(d.appToken("alpha")), "person": as(d.admin)}}
			out, _ := e.sh("person", "cat .nexus/run/admin.token; echo x > src/new.txt && echo wrote")
			switch mode {
			case "read-only":
				if strings.Contains(out, d.admin) || strings.Contains(out, "wrote") {
					t.Errorf("read-only: the person's command read the token or wrote: %s", out)
				}
				if _, r := e.sh("alpha", "ls"); !r.Success {
					t.Errorf("read-only: alpha's command did not run: %s %s", r.ErrorCode, r.Message)
				}
			case "off":
				if !strings.Contains(out, "wrote") {
					t.Errorf("off: the person's command did not run unconfined: %s", out)
				}
				if _, r := e.sh("alpha", "ls"); r.Success || r.ErrorCode != "permission_denied" || !strings.Contains(r.Message, "sandbox is off") {
					t.Errorf("off: alpha's command: %v %s %s", r.Success, r.ErrorCode, r.Message)
				}
			}
		})
	}
}

// TestSecurityDefinitionsRootHoldingNexus: a definitions root that holds
// .nexus ("." or above the workspace) is refused at start, naming the key:
// the tokens, history and sessions would otherwise be definition files,
// readable by tool calls and committed to the history.
func TestSecurityDefinitionsRootHoldingNexus(t *testing.T) {
	for _, root := range []string{".", ".."} {
		ws := newWorkspace(t, "definitions:\n  root: \""+root+"\"\n")
		out, err := exec.Command(filepath.Join(binDir, "nexusd"), "--workspace", ws).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "invalid configuration") || !strings.Contains(string(out), "holds the daemon's own directory") {
			t.Errorf("root %q: nexusd %v\n%s", root, err, out)
		}
		if _, err := os.Stat(filepath.Join(ws, ".nexus", "history.git")); err == nil {
			t.Errorf("root %q: a history was made before the refusal", root)
		}
	}
}
