package command

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// asUserEnv makes TestView run as the user it names (uid:gid) in a copy of
// this test binary: the view without root, through a user namespace.
const asUserEnv = "NEXUS_TEST_VIEW_AS_USER"

// TestView runs commands in a view: the hidden directories are empty and
// read-only, the binds are back (read-only ones too), the read-only paths
// cannot be changed, /tmp is the command's own, /proc is its own PID
// namespace's, and the working directory sees the view.
func TestView(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	write := func(rel, content string) {
		p := filepath.Join(ws, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".nexus/run/admin.token", "TOKEN-MARKER\n")
	write(".nexus/definitions/alpha/own.txt", "own\n")
	write(".nexus/definitions/shared/doc.txt", "shared\n")
	write(".nexus/definitions/gamma/secret.txt", "GAMMA-MARKER\n")
	write(".git/HEAD", "ref: refs/heads/main\n")
	write("src/a.txt", "a\n")
	outsideTmp := filepath.Join(os.TempDir(), "nexus-view-test-"+filepath.Base(base))
	os.WriteFile(outsideTmp, []byte("TMP-MARKER\n"), 0o644)
	t.Cleanup(func() { os.Remove(outsideTmp) })
	defs := filepath.Join(ws, ".nexus", "definitions")
	view := &View{
		Hide: []string{filepath.Join(ws, ".nexus"), filepath.Join(ws, "missing")},
		Binds: []Bind{
			{Path: filepath.Join(defs, "alpha"), Writable: true},
			{Path: filepath.Join(defs, "shared")},
			{Path: filepath.Join(defs, "nothing-here")},
		},
		ReadOnly: []string{filepath.Join(ws, ".git"), filepath.Join(ws, ".mcp.json")},
	}
	r := newTestRunner(t, true)
	script := `
cat .nexus/run/admin.token; ls .nexus/definitions; cat .nexus/definitions/gamma/secret.txt
cat .nexus/definitions/alpha/own.txt; echo new > .nexus/definitions/alpha/new.txt && echo wrote-own
cat .nexus/definitions/shared/doc.txt; echo x > .nexus/definitions/shared/doc.txt && echo wrote-shared
touch .nexus/planted && echo wrote-nexus
echo x > .git/HEAD && echo wrote-git
cat ` + outsideTmp + `; echo mine > /tmp/mine && cat /tmp/mine
tr '\0' ' ' < /proc/1/cmdline; echo
echo built > src/b.txt && echo wrote-src
`
	spec := Spec{Shell: script, Dir: ws, Timeout: hangGuard, OutputLimit: 1 << 20, Mode: WorkspaceWrite, Workspace: ws,
		Env: []string{"PATH=/usr/bin:/bin", "TMPDIR=/tmp"}, View: view}
	res, err := r.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	out := res.Stdout + res.Stderr
	for _, leak := range []string{"TOKEN-MARKER", "GAMMA-MARKER", "TMP-MARKER", "wrote-shared", "wrote-nexus", "wrote-git"} {
		if strings.Contains(out, leak) {
			t.Errorf("the command saw or did %q:\n%s", leak, out)
		}
	}
	for _, want := range []string{"own\n", "wrote-own", "shared\n", "mine\n", "wrote-src", "alpha\nshared\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the command's output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, HelperArg) {
		t.Errorf("/proc is not the command's own PID namespace's (its process 1 is not the helper):\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(defs, "alpha", "new.txt")); string(b) != "new\n" {
		t.Errorf("the write into the writable bind did not land: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(defs, "shared", "doc.txt")); string(b) != "shared\n" {
		t.Errorf("the read-only bind changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, ".nexus", "planted")); err == nil {
		t.Error("a file was planted in the hidden .nexus")
	}
	if _, err := os.Stat(filepath.Join(os.TempDir(), "mine")); err == nil {
		t.Error("the command's /tmp is the machine's")
	}
}

// TestViewWithoutRoot runs TestView and TestConfinement as an
// unprivileged user: the helper then makes its mounts in a user namespace
// of that same user.
func TestViewWithoutRoot(t *testing.T) {
	if os.Getenv(asUserEnv) != "" {
		t.Skip("the inner run")
	}
	setpriv, err := exec.LookPath("setpriv")
	if os.Geteuid() != 0 || err != nil {
		t.Skip("needs root and setpriv to become another user")
	}
	// A copy of this test binary that the other user may run.
	dir, err := os.MkdirTemp("", "nexus-view-bin-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "command.test")
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err == nil {
		_, err = io.Copy(dst, src)
		dst.Close()
	}
	src.Close()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin, "-test.run", "^(TestView|TestConfinement)$", "-test.v")
	cmd.Env = append(os.Environ(), asUserEnv+"=65534", "HOME=/nonexistent")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestView") || !strings.Contains(string(out), "--- PASS: TestConfinement") {
		t.Fatalf("TestView and TestConfinement as uid 65534: %v\n%s", err, out)
	}
}
