package core

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/command"
)

// TestLauncherPathsFollowGitConfig: what a command sees read-only follows
// the repository's core.hooksPath, and a missing hooks directory is made
// first when the command may write the workspace.
func TestLauncherPathsFollowGitConfig(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, ".gitconfig"))
	t.Setenv("GIT_CONFIG_SYSTEM", filepath.Join(home, "system-gitconfig"))
	e := newEnv(t)
	root := e.core.rootReal
	e.file(".git/config", "[core]\n\thooksPath = .githooks\n")
	e.file(".vscode/launch.json", "{}")

	paths := func(mode command.Mode) []string {
		t.Helper()
		ro, err := e.core.launcherPaths(mode)
		if err != nil {
			t.Fatal(err)
		}
		return ro
	}
	ro := paths(command.ReadOnly)
	for _, rel := range []string{".git", ".githooks", ".husky", ".vscode", ".idea", ".envrc", ".mcp.json"} {
		if !slices.Contains(ro, filepath.Join(root, rel)) {
			t.Errorf("%s is not read-only for commands: %q", rel, ro)
		}
	}
	if slices.ContainsFunc(ro, func(p string) bool { return filepath.Base(p) == ".nexus" || filepath.Dir(p) != root }) {
		t.Errorf("read-only paths %q: none in .nexus, none below another", ro)
	}
	if _, err := os.Lstat(filepath.Join(e.ws, ".githooks")); err == nil {
		t.Error("the hooks directory was made for a command that may not write")
	}
	paths(command.WorkspaceWrite)
	if fi, err := os.Lstat(filepath.Join(e.ws, ".githooks")); err != nil || !fi.IsDir() {
		t.Errorf("the missing hooks directory was not made: %v", err)
	}

	// The config changes: so does the list, at the next command.
	e.file(".git/config", "[core]\n\thooksPath = ci/git-hooks\n")
	ro = paths(command.WorkspaceWrite)
	if !slices.Contains(ro, filepath.Join(root, "ci", "git-hooks")) || slices.Contains(ro, filepath.Join(root, ".githooks")) {
		t.Errorf("after the config changed: %q", ro)
	}
	// Through a symlink to outside the workspace: nothing to make.
	e.symlink(e.outside, "ext")
	e.file(".git/config", "[core]\n\thooksPath = ext/hooks\n")
	paths(command.WorkspaceWrite)
	if _, err := os.Lstat(filepath.Join(e.outside, "hooks")); err == nil {
		t.Error("a hooks directory was made outside the workspace")
	}
	// A hooks directory that cannot be made: the command does not run.
	e.file("blocked", "a file where a directory should be")
	e.file(".git/config", "[core]\n\thooksPath = blocked/hooks\n")
	if _, err := e.core.launcherPaths(command.WorkspaceWrite); err == nil {
		t.Error("a hooks directory that cannot be made was let through")
	} else {
		wantCode(t, err, tools.CodeSandboxUnavailable, "blocked/hooks", "core.hooksPath")
	}
}
