package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// isolateGit keeps the user's and the system's git config out of a test:
// HOME, the global config and the system config are the test's own.
func isolateGit(t *testing.T) (home string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	home = t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, ".gitconfig"))
	t.Setenv("GIT_CONFIG_SYSTEM", filepath.Join(home, "system-gitconfig"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "")
	return home
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// launcherPaths returns the paths of the launchers of ws.
func launcherPaths(ws string) []string {
	var out []string
	for _, l := range Launchers(ws) {
		out = append(out, l.Path)
	}
	return out
}

// covered reports whether the launchers of ws cover the workspace-relative
// path rel: it is one, or lies in one that is a directory.
func covered(ws, rel string) bool {
	return slices.ContainsFunc(Launchers(ws), func(l Launcher) bool {
		return l.Path == rel || strings.HasSuffix(l.Path, "/") && strings.HasPrefix(rel+"/", l.Path)
	})
}

// TestLaunchersFollowGitConfig: the hooks directory that git itself
// reports (git rev-parse --git-path hooks) is a launcher for every way of
// setting core.hooksPath, and follows a change of the config at once.
func TestLaunchersFollowGitConfig(t *testing.T) {
	home := isolateGit(t)
	tests := []struct {
		name string
		// setup makes the repository in ws (and anything else) and returns
		// the directory to ask git in.
		setup func(t *testing.T, ws string) string
		// want is the hooks directory, relative to ws.
		want string
	}{
		{"relative", func(t *testing.T, ws string) string {
			git(t, ws, "init", "-q")
			git(t, ws, "config", "core.hooksPath", ".githooks")
			return ws
		}, ".githooks"},
		{"nested with a trailing slash", func(t *testing.T, ws string) string {
			git(t, ws, "init", "-q")
			git(t, ws, "config", "core.hooksPath", "scripts/git-hooks/")
			return ws
		}, "scripts/git-hooks"},
		{"dot segments", func(t *testing.T, ws string) string {
			git(t, ws, "init", "-q")
			git(t, ws, "config", "core.hooksPath", "./tools/../hooks")
			return ws
		}, "hooks"},
		{"absolute inside", func(t *testing.T, ws string) string {
			git(t, ws, "init", "-q")
			git(t, ws, "config", "core.hooksPath", filepath.Join(ws, "ci", "hooks"))
			return ws
		}, "ci/hooks"},
		{"home", func(t *testing.T, ws string) string {
			git(t, ws, "init", "-q")
			rel, _ := filepath.Rel(home, ws)
			git(t, ws, "config", "core.hooksPath", "~/"+filepath.ToSlash(rel)+"/h")
			return ws
		}, "h"},
		{"husky", func(t *testing.T, ws string) string {
			git(t, ws, "init", "-q")
			git(t, ws, "config", "core.hooksPath", ".husky/_")
			return ws
		}, ".husky/_"},
		{"quoted with a comment", func(t *testing.T, ws string) string {
			git(t, ws, "init", "-q")
			appendFile(t, filepath.Join(ws, ".git", "config"), "[CORE]\n\tHooksPath = \"my hooks\" ; the team's\n")
			return ws
		}, "my hooks"},
		{"a section header with the key on its line", func(t *testing.T, ws string) string {
			git(t, ws, "init", "-q")
			appendFile(t, filepath.Join(ws, ".git", "config"), "[core] hookspath = h2 # x\n")
			return ws
		}, "h2"},
		{"continued line", func(t *testing.T, ws string) string {
			git(t, ws, "init", "-q")
			appendFile(t, filepath.Join(ws, ".git", "config"), "[core]\n\thooksPath = gh\\\nooks\n")
			return ws
		}, "ghooks"},
		{"included", func(t *testing.T, ws string) string {
			git(t, ws, "init", "-q")
			os.WriteFile(filepath.Join(ws, ".git", "extra.config"), []byte("[core]\n\thooksPath = inc-hooks\n"), 0o644)
			git(t, ws, "config", "include.path", "extra.config")
			return ws
		}, "inc-hooks"},
		{"includeIf", func(t *testing.T, ws string) string {
			git(t, ws, "init", "-q")
			os.WriteFile(filepath.Join(home, "work.config"), []byte("[core]\n\thooksPath = work-hooks\n"), 0o644)
			git(t, ws, "config", "includeIf.gitdir:"+ws+"/.path", filepath.Join(home, "work.config"))
			return ws
		}, "work-hooks"},
		{"global", func(t *testing.T, ws string) string {
			git(t, ws, "init", "-q")
			os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[core]\n\thooksPath = global-hooks\n"), 0o644)
			t.Cleanup(func() { os.Remove(filepath.Join(home, ".gitconfig")) })
			return ws
		}, "global-hooks"},
		{"worktree", func(t *testing.T, ws string) string {
			// ws is a worktree of a repository elsewhere: its .git is a file.
			main := t.TempDir()
			git(t, main, "init", "-q")
			git(t, main, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x")
			git(t, main, "config", "core.hooksPath", "wt-hooks")
			os.Remove(ws)
			git(t, main, "worktree", "add", "-q", ws)
			return ws
		}, "wt-hooks"},
		{"separate git dir inside", func(t *testing.T, ws string) string {
			git(t, ws, "init", "-q", "--separate-git-dir", filepath.Join(ws, "gitdata"))
			return ws
		}, "gitdata/hooks"},
		{"workspace below the work tree", func(t *testing.T, ws string) string {
			top := filepath.Dir(ws)
			git(t, top, "init", "-q")
			git(t, top, "config", "core.hooksPath", filepath.Base(ws)+"/hooks")
			return ws
		}, "hooks"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := filepath.Join(t.TempDir(), "ws")
			os.Mkdir(ws, 0o755)
			dir := tc.setup(t, ws)
			hooks := git(t, dir, "rev-parse", "--path-format=absolute", "--git-path", "hooks")
			realWS, _ := filepath.EvalSymlinks(ws)
			rel, err := filepath.Rel(realWS, resolveExisting(hooks))
			if err != nil || filepath.ToSlash(rel) != tc.want {
				t.Fatalf("git runs hooks from %s (%s relative to the workspace), the test wants %s", hooks, rel, tc.want)
			}
			for _, p := range []string{tc.want, tc.want + "/pre-commit"} {
				if !covered(ws, p) {
					t.Errorf("%s is not a launcher: %q", p, launcherPaths(ws))
				}
			}
		})
	}
}

// TestLaunchersChangeWithTheConfig: the list is the config as it is now.
func TestLaunchersChangeWithTheConfig(t *testing.T) {
	isolateGit(t)
	ws := t.TempDir()
	if covered(ws, ".githooks/pre-commit") {
		t.Fatal("a launcher before the repository exists")
	}
	git(t, ws, "init", "-q")
	git(t, ws, "config", "core.hooksPath", ".githooks")
	if !covered(ws, ".githooks/pre-commit") {
		t.Fatalf("after git config: %q", launcherPaths(ws))
	}
	git(t, ws, "config", "core.hooksPath", "other")
	if covered(ws, ".githooks/pre-commit") || !covered(ws, "other/pre-commit") {
		t.Fatalf("after a change: %q", launcherPaths(ws))
	}
	git(t, ws, "config", "--unset", "core.hooksPath")
	if covered(ws, "other/pre-commit") {
		t.Fatalf("after --unset: %q", launcherPaths(ws))
	}
}

// TestLaunchersFixedAndOutside: the fixed launchers are always there;
// a hooks directory outside the workspace, or the daemon's own null one,
// adds nothing; the workspace root as the hooks directory lists the hook
// files, not the whole workspace; a hooks directory reached through a
// symlink counts as written and as it resolves.
func TestLaunchersFixedAndOutside(t *testing.T) {
	home := isolateGit(t)
	fixed := launcherPaths("")
	for _, p := range []string{".git/", ".husky/", ".vscode/tasks.json", ".mcp.json"} {
		if !slices.Contains(fixed, p) {
			t.Errorf("fixed launchers %q lack %s", fixed, p)
		}
	}
	ws := t.TempDir()
	git(t, ws, "init", "-q")
	for _, hp := range []string{"/dev/null", filepath.Join(home, "hooks"), "../elsewhere", "~/hooks"} {
		git(t, ws, "config", "core.hooksPath", hp)
		if got := launcherPaths(ws); !reflect.DeepEqual(got, fixed) {
			t.Errorf("core.hooksPath %s: %q, want the fixed ones alone", hp, got)
		}
	}

	git(t, ws, "config", "core.hooksPath", ".")
	got := launcherPaths(ws)
	if slices.Contains(got, "/") || slices.Contains(got, "") || !slices.Contains(got, "pre-commit") || !slices.Contains(got, "post-checkout") {
		t.Errorf("core.hooksPath . (the root): %q", got)
	}

	os.MkdirAll(filepath.Join(ws, "real", "hooks"), 0o755)
	os.Symlink("real", filepath.Join(ws, "link"))
	git(t, ws, "config", "core.hooksPath", "link/hooks")
	for _, p := range []string{"link/hooks/pre-commit", "real/hooks/pre-commit"} {
		if !covered(ws, p) {
			t.Errorf("through a symlink: %s is not a launcher: %q", p, launcherPaths(ws))
		}
	}
	for _, l := range Launchers(ws) {
		if want := l.Path == "link/hooks/" || l.Path == "real/hooks/"; l.HooksDir != want {
			t.Errorf("%s: HooksDir %v", l.Path, l.HooksDir)
		}
	}
}

func TestParseGitConfig(t *testing.T) {
	const cfg = `# a comment
; another
[core]
	repositoryformatversion = 0
	bare
	HooksPath = "  spaced  "  # trailing comment
[Core "sub"] hooksPath=sub ; same line
[core.Old]
	hookspath = old\tone
[remote "o\"rigin"]
	url = x
[include]
	path = a\\b
garbage line ]
[broken
	hooksPath = after-broken
	key = "unterminated
	hooksPath = "semi;colon" "#hash"
`
	var got []string
	parseGitConfig([]byte(cfg), func(section, key, value string) {
		got = append(got, section+"."+key+"="+value)
	})
	want := []string{
		"core.repositoryformatversion=0", "core.bare=true", "core.hookspath=  spaced  ",
		"core.hookspath=sub", "core.hookspath=old\tone", "remote.url=x", "include.path=a\\b",
		"include.hookspath=after-broken", "include.key=unterminated",
		"include.hookspath=semi;colon #hash",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parsed\n%q\nwant\n%q", got, want)
	}
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkLaunchers is what every protected-path check and every command
// pays to read git's config again.
func BenchmarkLaunchers(b *testing.B) {
	home := b.TempDir()
	b.Setenv("HOME", home)
	b.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, ".gitconfig"))
	b.Setenv("GIT_CONFIG_SYSTEM", filepath.Join(home, "system-gitconfig"))
	ws := b.TempDir()
	os.MkdirAll(filepath.Join(ws, ".git"), 0o755)
	os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n\thooksPath = .githooks\n[remote \"origin\"]\n\turl = git@example.com:x/y.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n"), 0o644)
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = x\n\temail = x@example.com\n"), 0o644)
	for b.Loop() {
		if len(Launchers(ws)) < 10 {
			b.Fatal("no hooks directory")
		}
	}
}
