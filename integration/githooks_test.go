package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// workGit runs the git CLI as the person does, in the workspace's own
// repository, with no user or system config of the machine's.
func workGit(t *testing.T, ws string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=person", "GIT_AUTHOR_EMAIL=p@example.com", "GIT_COMMITTER_NAME=person", "GIT_COMMITTER_EMAIL=p@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestSecurityGitHooksOutsideGit is issue 24's break 9: in a repository
// with core.hooksPath = .githooks, an app allowed write_file and
// execute_command rewrote .githooks/pre-commit (its executable bit kept)
// and appended to it from a command, and the person's next git commit ran
// both payloads. Now the hooks directory git's config names, and .husky,
// are asked about for tool writes (denied with no editor attached) and
// read-only for commands; the list follows the config when it changes;
// and a core tool's write never keeps an executable bit.
func TestSecurityGitHooksOutsideGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ws := newWorkspace(t, `apps:
  - id: alpha
    grants:
      tools: {allow: [read_file, write_file, edit_file, execute_command]}
`)
	hook := "#!/bin/sh\nexit 0\n"
	for _, f := range []string{".githooks/pre-commit", ".husky/pre-commit", "tools/run.sh"} {
		p := filepath.Join(ws, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(hook), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	workGit(t, ws, "init", "-q")
	workGit(t, ws, "config", "core.hooksPath", ".githooks")

	d := startDaemon(t, ws)
	alpha, person := as(d.appToken("alpha")), as(d.admin)
	call := func(caller string, name string, args string) *nexusv1.ExecuteToolResponse {
		t.Helper()
		ctx := alpha
		if caller == "person" {
			ctx = person
		}
		r, err := d.framework().ExecuteTool(ctx, &nexusv1.ExecuteToolRequest{ToolName: name, ArgumentsJson: args})
		if err != nil {
			t.Fatalf("%s %s as %s: %v", name, args, caller, err)
		}
		return r
	}
	payload := "touch " + filepath.Join(ws, "PWNED") + "\n"

	// Tool writes: asked, and with no editor attached, denied.
	for _, c := range []struct{ caller, path string }{
		{"alpha", ".githooks/pre-commit"},
		{"alpha", "./.githooks//pre-push"},
		{"alpha", ".husky/pre-commit"},
		{"person", ".githooks/pre-commit"},
	} {
		r := call(c.caller, "write_file", jsonArgs("path", c.path, "content", hook+payload))
		if r.Success || r.ErrorCode != "permission_denied" || !strings.Contains(r.Message, "needs approval") {
			t.Errorf("write_file %s as %s: success=%v %s %s; want it asked, and denied with no editor", c.path, c.caller, r.Success, r.ErrorCode, r.Message)
		}
	}
	// Commands: read-only, whatever they try.
	for _, script := range []string{
		"echo '" + strings.TrimSpace(payload) + "' >> .githooks/pre-commit",
		"echo '" + strings.TrimSpace(payload) + "' >> .husky/pre-commit",
		"rm -rf .githooks; mkdir .githooks; printf '#!/bin/sh\\n" + strings.TrimSpace(payload) + "\\n' > .githooks/pre-commit; chmod +x .githooks/pre-commit",
		"mv .githooks gone; mkdir -p .githooks && cp gone/pre-commit .githooks/ && echo '" + strings.TrimSpace(payload) + "' >> .githooks/pre-commit",
		"printf '" + strings.TrimSpace(payload) + "\\n' > .githooks/post-commit; chmod +x .githooks/post-commit",
	} {
		call("alpha", "execute_command", jsonArgs("command", script))
	}
	for _, f := range []string{".githooks/pre-commit", ".husky/pre-commit"} {
		if b, err := os.ReadFile(filepath.Join(ws, f)); err != nil || string(b) != hook {
			t.Errorf("%s changed: %q %v", f, b, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(ws, ".githooks", "post-commit")); err == nil {
		t.Error("a command made .githooks/post-commit")
	}

	// The config changes (the person's own act): the new hooks directory,
	// missing until now, is protected at once.
	workGit(t, ws, "config", "core.hooksPath", "ci/hooks")
	call("alpha", "execute_command", jsonArgs("command", "mkdir -p ci/hooks && printf '#!/bin/sh\\n"+strings.TrimSpace(payload)+"\\n' > ci/hooks/pre-commit && chmod +x ci/hooks/pre-commit"))
	if r := call("alpha", "write_file", jsonArgs("path", "ci/hooks/pre-commit", "content", hook+payload)); r.Success {
		t.Error("write_file ci/hooks/pre-commit after core.hooksPath changed: it ran without asking")
	}
	if _, err := os.Lstat(filepath.Join(ws, "ci", "hooks", "pre-commit")); err == nil {
		t.Error("ci/hooks/pre-commit was written after core.hooksPath named it")
	}
	workGit(t, ws, "config", "core.hooksPath", ".githooks")

	// The executable bit: a write over an executable file drops it; asking
	// for it is asked of the person (denied with no editor).
	if r := call("alpha", "write_file", jsonArgs("path", "tools/run.sh", "content", hook+payload)); !r.Success {
		t.Fatalf("write_file tools/run.sh: %s %s", r.ErrorCode, r.Message)
	}
	if fi, err := os.Stat(filepath.Join(ws, "tools", "run.sh")); err != nil || fi.Mode().Perm()&0o111 != 0 {
		t.Errorf("tools/run.sh after write_file: %v %v; want no executable bit", fi.Mode(), err)
	}
	r := call("alpha", "write_file", jsonArgs("path", "tools/new.sh", "content", hook, "executable", true))
	if r.Success || r.ErrorCode != "permission_denied" || !strings.Contains(r.Message, "needs approval") {
		t.Errorf("write_file executable: true: success=%v %s %s; want it asked, and denied with no editor", r.Success, r.ErrorCode, r.Message)
	}

	// The person's next commit runs no payload.
	workGit(t, ws, "commit", "-q", "--allow-empty", "-m", "after the attacks")
	if _, err := os.Lstat(filepath.Join(ws, "PWNED")); err == nil {
		t.Error("the person's git commit ran a payload")
	}
}
