package core

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/tools"
)

// TestEscapes is the escape corpus: every path that leads outside the
// workspace or into .nexus/ is refused by every file tool with
// invalid_arguments, and nothing outside (or private) is read or changed.
func TestEscapes(t *testing.T) {
	e := newEnv(t)
	e.file("sub/ok.txt", "fine\n")
	e.file(".nexus/run/f.txt", "private\n")
	e.symlink("../outside/secret.txt", "rel-link")
	e.symlink(filepath.Join(e.outside, "secret.txt"), "abs-link")
	e.symlink(filepath.Join(e.ws, "sub", "ok.txt"), "abs-inside-link") // absolute, even to inside: refused
	e.symlink("../outside/dir", "dir-link")
	e.symlink(filepath.Join(e.outside, "dir"), "abs-dir-link")
	e.symlink("../ws-evil/secret.txt", "evil-link")
	e.symlink("../ws-evil", "evil-dir-link")
	e.symlink("../../outside/secret.txt", "sub/deep-link")
	e.symlink("../outside/new.txt", "dangling-out")
	e.symlink("../outside/newdir/x", "dangling-dir-out")
	e.symlink(".nexus/run/admin.token", "tok-link")
	e.symlink("../.nexus/run/admin.token", "sub/tok-link")
	e.symlink(".nexus", "nexus-link")
	e.symlink(".nexus/history.git", "hist-link")
	e.symlink(".nexus/run", "run-link")
	e.symlink("loop2", "loop1")
	e.symlink("loop1", "loop2")
	e.symlink("sub/../..", "up-link")

	paths := []struct {
		path string
		msg  string // a fragment of the message
	}{
		{"../outside/secret.txt", `".."`},
		{"../ws-evil/secret.txt", `".."`},
		{"sub/../../outside/secret.txt", `".."`},
		{"sub/..", `".."`},
		{"..", `".."`},
		{"/etc/passwd", "absolute"},
		{filepath.Join(e.outside, "secret.txt"), "absolute"},
		{filepath.Join(e.evil, "secret.txt"), "absolute"},
		{filepath.Join(e.ws, "sub", "ok.txt"), "absolute"},
		{"sub/ok\x00.txt", "NUL"},
		{"\x00", "NUL"},
		{".nexus/run/admin.token", ".nexus/"},
		{".nexus/history.git/HEAD", ".nexus/"},
		{".nexus/runtime.db", ".nexus/"},
		{".nexus/config.yaml", ".nexus/"},
		{".nexus/run/f.txt", ".nexus/"},
		{".nexus/", ".nexus/"},
		{".NEXUS/run/admin.token", ".nexus/"},
		{"./.nexus/run/admin.token", ".nexus/"},
		{"rel-link", "outside the workspace"},
		{"abs-link", "absolute path"},
		{"abs-inside-link", "absolute path"},
		{"dir-link/inner.txt", "outside the workspace"},
		{"dir-link/new.txt", "outside the workspace"},
		{"abs-dir-link/inner.txt", "absolute path"},
		{"evil-link", "outside the workspace"},
		{"evil-dir-link/secret.txt", "outside the workspace"},
		{"sub/deep-link", "outside the workspace"},
		{"dangling-out", "outside the workspace"},
		{"dangling-dir-out", "outside the workspace"},
		{"tok-link", "through a symlink into .nexus/"},
		{"sub/tok-link", "through a symlink into .nexus/"},
		{"nexus-link/run/admin.token", "through a symlink into .nexus/"},
		{"hist-link/HEAD", "through a symlink into .nexus/"},
		{"run-link/f.txt", "through a symlink into .nexus/"},
		{"loop1", "symlinks"},
		{"up-link/outside/secret.txt", "outside the workspace"},
	}
	before := snapshot(t, e.guarded()...)
	for _, tt := range paths {
		calls := []struct {
			tool string
			args map[string]any
		}{
			{"read_file", map[string]any{"path": tt.path}},
			{"read_file", map[string]any{"path": tt.path, "startLine": 1, "endLine": 1}},
			{"write_file", map[string]any{"path": tt.path, "content": "pwned\n"}},
			{"edit_file", map[string]any{"path": tt.path, "oldText": "secret", "newText": "pwned"}},
			{"edit_file", map[string]any{"path": tt.path, "oldText": "admin", "newText": "pwned"}},
			{"list_directory", map[string]any{"path": tt.path}},
			{"list_directory", map[string]any{"path": tt.path, "recursive": true}},
			{"search_files", map[string]any{"path": tt.path, "pattern": "."}},
			{"search_files", map[string]any{"path": tt.path, "glob": "*"}},
		}
		for _, c := range calls {
			out, err := e.call(c.tool, c.args)
			if err == nil {
				t.Errorf("%s %q succeeded: %s", c.tool, tt.path, out)
				continue
			}
			var te *tools.Error
			if !errors.As(err, &te) || te.Code != tools.CodeInvalidArguments || !strings.Contains(te.Message, tt.msg) {
				t.Errorf("%s %q: error %v; want invalid_arguments mentioning %q", c.tool, tt.path, err, tt.msg)
			}
			if strings.Contains(err.Error(), "secret\n") || strings.Contains(err.Error(), "admin-token") {
				t.Errorf("%s %q: the error leaks content: %v", c.tool, tt.path, err)
			}
		}
		if _, err := e.core.dir(access.Person("cli"), tt.path); err == nil {
			t.Errorf("Dir %q succeeded", tt.path)
		}
	}
	sameSnapshot(t, before, snapshot(t, e.guarded()...))
	if _, err := os.Lstat(filepath.Join(e.outside, "new.txt")); err == nil {
		t.Error("a write through a dangling link created a file outside")
	}
}

// TestWholeTreeStaysInside: recursive listing and searching of the root
// never show what lies outside or in .nexus/.
func TestWholeTreeStaysInside(t *testing.T) {
	e := newEnv(t)
	e.file("a.txt", "needle\n")
	e.file(".nexus/run/f.txt", "needle private\n")
	e.write(filepath.Join(e.outside, "needle.txt"), "needle outside\n")
	e.symlink("../outside", "out")
	e.symlink(e.outside, "abs-out")
	e.symlink(".nexus/run", "run-link")
	e.symlink("../ws-evil", "evil")
	var s searchResult
	e.mustCall("search_files", map[string]any{"pattern": "needle"}, &s)
	if len(s.Matches) != 1 || s.Matches[0].Path != "a.txt" {
		t.Errorf("matches %+v, want a.txt only", s.Matches)
	}
	e.mustCall("search_files", map[string]any{"glob": "*"}, &s)
	for _, f := range s.Files {
		if f != "a.txt" {
			t.Errorf("glob found %q", f)
		}
	}
	var l listResult
	e.mustCall("list_directory", map[string]any{"path": "", "recursive": true}, &l)
	for _, en := range l.Entries {
		if strings.Contains(en.Path, "/") {
			t.Errorf("listed below the top: %+v", en)
		}
	}
}

// TestSibling: /ws-evil beside /ws shares the workspace's name as a prefix
// and is still outside.
func TestSibling(t *testing.T) {
	if _, ok := relInside("/a/ws", "/a/ws-evil"); ok {
		t.Error("/a/ws-evil counts as inside /a/ws")
	}
	if _, ok := relInside("/a/ws", "/a/ws-evil/defs"); ok {
		t.Error("/a/ws-evil/defs counts as inside /a/ws")
	}
	if rel, ok := relInside("/a/ws", "/a/ws/.nexus/definitions"); !ok || rel != ".nexus/definitions" {
		t.Errorf("relInside = %q, %v", rel, ok)
	}
	if rel, ok := relInside("/a/ws/", "/a/ws"); !ok || rel != "" {
		t.Errorf("relInside of the root = %q, %v", rel, ok)
	}
	e := newEnv(t, func(c *Config) { c.DefinitionsDir = filepath.Join(filepath.Dir(c.Workspace), "ws-evil") })
	if e.core.defInside {
		t.Error("the definitions root ws-evil counts as inside ws")
	}
	before := snapshot(t, e.guarded()...)
	for _, p := range []string{"../ws-evil/secret.txt", e.evil + "/secret.txt", e.ws + "-evil/secret.txt"} {
		_, err := e.call("read_file", map[string]any{"path": p})
		wantCode(t, err, tools.CodeInvalidArguments)
		_, err = e.call("write_file", map[string]any{"path": p, "content": "x"})
		wantCode(t, err, tools.CodeInvalidArguments)
	}
	sameSnapshot(t, before, snapshot(t, e.guarded()...))
}

// TestVerify: a file opened at another path than the one checked (what a
// swap between the check and the open produces) is refused.
func TestVerify(t *testing.T) {
	e := newEnv(t)
	e.file("a.txt", "a")
	e.file("b.txt", "b")
	f, err := e.core.root.Open("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := e.core.verify(f, "a.txt", "a.txt"); err != nil {
		t.Errorf("verify of the right path: %v", err)
	}
	wantCode(t, e.core.verify(f, "b.txt", "b.txt"), tools.CodeExecutionFailed, "changed while it was being opened")
}
