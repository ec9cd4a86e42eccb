package workspace

import (
	"bytes"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
)

// gitHookNames are the hooks git and its commands run (githooks(5)): the
// files that count when a hooks directory is the workspace root itself.
var gitHookNames = []string{
	"applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
	"prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge",
	"pre-push", "pre-receive", "update", "proc-receive", "post-receive", "post-update",
	"reference-transaction", "push-to-checkout", "pre-auto-gc", "post-rewrite", "sendemail-validate",
	"fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist", "p4-post-changelist",
	"p4-pre-submit", "post-index-change",
}

// Bounds on reading git's configuration: how deep includes are followed
// (git's own limit), how many files are read, and how large one may be.
const (
	maxGitIncludeDepth = 10
	maxGitConfigFiles  = 32
	maxGitConfigSize   = 1 << 20
)

// gitRepo is the repository git uses in a workspace.
type gitRepo struct {
	// top is the directory that holds .git: the root of the work tree.
	top string
	// gitDir is the repository's own directory (.git, or where a .git file
	// points: a worktree's or a submodule's); common is the directory
	// with the config shared by its worktrees (gitDir's commondir).
	gitDir, common string
}

// findGitRepo finds the repository git would use in ws, as git does: a .git
// (a directory, or a file "gitdir: path") in ws or the nearest directory
// above it.
func findGitRepo(ws string) (gitRepo, bool) {
	for dir := ws; ; {
		dotGit := filepath.Join(dir, ".git")
		if fi, err := os.Stat(dotGit); err == nil {
			r := gitRepo{top: dir, gitDir: dotGit}
			if fi.Mode().IsRegular() {
				gd, ok := readGitFile(dotGit)
				if !ok {
					return gitRepo{}, false
				}
				r.gitDir = gd
			}
			r.common = r.gitDir
			if data, err := os.ReadFile(filepath.Join(r.gitDir, "commondir")); err == nil {
				if c := strings.TrimSpace(string(data)); c != "" {
					r.common = absFrom(r.gitDir, c)
				}
			}
			return r, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return gitRepo{}, false
		}
		dir = parent
	}
}

// readGitFile reads a .git file, "gitdir: path" (relative to the file's
// directory), as worktrees and submodules have.
func readGitFile(path string) (string, bool) {
	data, err := readSmall(path)
	if err != nil {
		return "", false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	gd, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if gd = strings.TrimSpace(gd); !ok || gd == "" {
		return "", false
	}
	return absFrom(filepath.Dir(path), gd), true
}

// gitHookDirs returns the hooks directories git's configuration names
// for the repository of ws (core.hooksPath) that lie in ws, and the
// repository's own directories when a .git file points into ws (but not
// ws/.git itself), as clean slash-separated paths relative to ws (a hooks
// directory "" is ws itself). Every core.hooksPath counts, whichever
// config file sets it (the repository's, its worktree's, the user's, the
// system's, and the files they include, whatever an includeIf's
// condition): one of them is the one git uses. A relative one is relative
// to the root of the work tree (and to core.worktree, when that is set);
// "~/" is the user's home.
func gitHookDirs(ws string) (hooks, repos []string) {
	repo, ok := findGitRepo(ws)
	if !ok {
		return nil, nil
	}
	home, _ := os.UserHomeDir()
	files := []string{filepath.Join(repo.common, "config"), filepath.Join(repo.gitDir, "config.worktree")}
	if f := os.Getenv("GIT_CONFIG_GLOBAL"); f != "" {
		files = append(files, f)
	} else if home != "" {
		xdg := os.Getenv("XDG_CONFIG_HOME")
		if xdg == "" {
			xdg = filepath.Join(home, ".config")
		}
		files = append(files, filepath.Join(xdg, "git", "config"), filepath.Join(home, ".gitconfig"))
	}
	if f := os.Getenv("GIT_CONFIG_SYSTEM"); f != "" {
		files = append(files, f)
	} else {
		files = append(files, "/etc/gitconfig")
	}
	values := readGitConfigs(files, home, "core.hookspath", "core.worktree")
	tops := []string{repo.top}
	for _, wt := range values["core.worktree"] {
		if wt = expandGitPath(wt, home); wt != "" {
			tops = append(tops, absFrom(repo.gitDir, wt))
		}
	}
	add := func(out *[]string, abs string) {
		for _, rel := range relsInside(ws, abs) {
			if !slices.Contains(*out, rel) {
				*out = append(*out, rel)
			}
		}
	}
	for _, hp := range values["core.hookspath"] {
		if hp = expandGitPath(hp, home); hp == "" {
			continue
		}
		if filepath.IsAbs(hp) {
			add(&hooks, hp)
			continue
		}
		for _, top := range tops {
			add(&hooks, filepath.Join(top, hp))
		}
	}
	// A repository directory of its own in the workspace (git init
	// --separate-git-dir, a worktree or a submodule of a repository in
	// it): its hooks, and its config.
	for _, d := range []string{repo.gitDir, repo.common} {
		if d != filepath.Join(ws, ".git") {
			add(&repos, d)
		}
	}
	return hooks, slices.DeleteFunc(repos, func(rel string) bool { return rel == "" || rel == ".git" })
}

// relsInside returns abs relative to ws (slash-separated, "" for ws
// itself) as written and as its symlinks resolve, each when it lies in ws.
func relsInside(ws, abs string) []string {
	if rel, ok := relUnder(ws, abs); ok {
		if real, ok := ResolveInside(ws, rel); ok && real != rel {
			return []string{rel, real}
		}
		return []string{rel}
	}
	// Outside as written: inside only through a symlink, which is rare,
	// so the longer way.
	realWS, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return nil
	}
	if rel, ok := relUnder(realWS, resolveExisting(abs)); ok {
		return []string{rel}
	}
	return nil
}

// relUnder returns the clean slash-separated path of abs relative to dir,
// when abs is dir or lies below it.
func relUnder(dir, abs string) (string, bool) {
	rel, err := filepath.Rel(dir, filepath.Clean(abs))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	if rel == "." {
		return "", true
	}
	return filepath.ToSlash(rel), true
}

// resolveExisting resolves the symlinks of the longest leading part of abs
// that exists, and appends the rest as written.
func resolveExisting(abs string) string {
	abs = filepath.Clean(abs)
	var rest []string
	for p := abs; ; {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			slices.Reverse(rest)
			return filepath.Join(append([]string{real}, rest...)...)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return abs
		}
		rest = append(rest, filepath.Base(p))
		p = parent
	}
}

// expandGitPath reads a path-valued setting as git does: "~/" and
// "~user/" are home directories, a leading ":(optional)" is dropped. ""
// when it cannot be expanded.
func expandGitPath(v, home string) string {
	v = strings.TrimPrefix(v, ":(optional)")
	if !strings.HasPrefix(v, "~") {
		return v
	}
	name, rest, _ := strings.Cut(v[1:], "/")
	dir := home
	if name != "" {
		u, err := user.Lookup(name)
		if err != nil {
			return ""
		}
		dir = u.HomeDir
	}
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, rest)
}

// absFrom makes p absolute against dir.
func absFrom(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// readSmall reads a file of at most maxGitConfigSize bytes.
func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, 0, 4096)
	for len(buf) <= maxGitConfigSize {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, len(buf))
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			return buf, nil
		}
	}
	return buf[:maxGitConfigSize], nil
}

// readGitConfigs returns the values of keys (lower case "section.name")
// in the git config files, and in the files they include (include.path and
// includeIf.<condition>.path, whatever the condition), in order. Missing
// files are skipped.
func readGitConfigs(files []string, home string, keys ...string) map[string][]string {
	out := map[string][]string{}
	read := 0
	var visit func(path string, depth int)
	visit = func(path string, depth int) {
		if depth > maxGitIncludeDepth || read >= maxGitConfigFiles {
			return
		}
		data, err := readSmall(path)
		if err != nil {
			return
		}
		read++
		parseGitConfig(data, func(section, key, value string) {
			if key == "path" && (section == "include" || section == "includeif") {
				if inc := expandGitPath(value, home); inc != "" {
					visit(absFrom(filepath.Dir(path), inc), depth+1)
				}
				return
			}
			if k := section + "." + key; slices.Contains(keys, k) {
				out[k] = append(out[k], value)
			}
		})
	}
	for _, f := range files {
		visit(f, 0)
	}
	return out
}

// parseGitConfig calls each for every variable of a git config file, in
// order, with the section and the name in lower case (the subsection is
// left out) and the value unquoted; a variable without "=" is "true".
// Lines it cannot read are skipped, as far as their end.
func parseGitConfig(data []byte, each func(section, key, value string)) {
	p := gitConfigParser{s: data}
	section := ""
	for {
		p.skip(" \t\r\n")
		if p.eof() {
			return
		}
		switch c := p.s[p.i]; {
		case c == '#' || c == ';':
			p.skipLine()
		case c == '[':
			if s, ok := p.header(); ok {
				section = s
			} else {
				p.skipLine()
			}
		case isGitKeyByte(c):
			start := p.i
			for !p.eof() && isGitKeyByte(p.s[p.i]) {
				p.i++
			}
			key := strings.ToLower(string(p.s[start:p.i]))
			p.skip(" \t")
			switch {
			case p.eof() || p.s[p.i] == '\n' || p.s[p.i] == '\r' || p.s[p.i] == '#' || p.s[p.i] == ';':
				each(section, key, "true")
			case p.s[p.i] == '=':
				p.i++
				each(section, key, p.value())
			default:
				p.skipLine()
			}
		default:
			p.skipLine()
		}
	}
}

type gitConfigParser struct {
	s []byte
	i int
}

func (p *gitConfigParser) eof() bool { return p.i >= len(p.s) }

func (p *gitConfigParser) skip(set string) {
	for !p.eof() && strings.IndexByte(set, p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *gitConfigParser) skipLine() {
	if j := bytes.IndexByte(p.s[p.i:], '\n'); j >= 0 {
		p.i += j + 1
		return
	}
	p.i = len(p.s)
}

// header reads "[section]", "[section "subsection"]" or the old
// "[section.subsection]" and returns the section in lower case.
func (p *gitConfigParser) header() (string, bool) {
	p.i++ // [
	start := p.i
	for !p.eof() && (isGitKeyByte(p.s[p.i]) || p.s[p.i] == '.') {
		p.i++
	}
	name, _, _ := strings.Cut(string(p.s[start:p.i]), ".")
	p.skip(" \t")
	if !p.eof() && p.s[p.i] == '"' {
		for p.i++; !p.eof() && p.s[p.i] != '"' && p.s[p.i] != '\n'; p.i++ {
			if p.s[p.i] == '\\' {
				p.i++
			}
		}
		if p.eof() || p.s[p.i] != '"' {
			return "", false
		}
		p.i++
	}
	if p.eof() || p.s[p.i] != ']' || name == "" {
		return "", false
	}
	p.i++
	return strings.ToLower(name), true
}

// value reads a value up to the end of its line (or a comment outside
// quotes): quotes removed, the escapes \\ \" \n \t \b read, a backslash at
// the end of a line joining the next, whitespace outside quotes trimmed at
// both ends.
func (p *gitConfigParser) value() string {
	var b strings.Builder
	quoted := false
	keep := 0 // b's length up to the last byte that is not trailing whitespace
	for ; !p.eof(); p.i++ {
		c := p.s[p.i]
		switch {
		case c == '\n' && !quoted:
			p.i++
			return b.String()[:keep]
		case c == '\n':
			return b.String() // an unterminated quote ends with its line
		case (c == '#' || c == ';') && !quoted:
			p.skipLine()
			return b.String()[:keep]
		case c == '"':
			quoted = !quoted
			keep = b.Len()
		case c == '\\' && p.i+1 < len(p.s):
			p.i++
			switch e := p.s[p.i]; e {
			case '\n':
			case '\r':
				if p.i+1 < len(p.s) && p.s[p.i+1] == '\n' {
					p.i++
				}
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'b':
				b.WriteByte('\b')
			default:
				b.WriteByte(e)
			}
			keep = b.Len()
		case (c == ' ' || c == '\t' || c == '\r') && !quoted:
			if b.Len() > 0 {
				b.WriteByte(c)
			}
		default:
			b.WriteByte(c)
			keep = b.Len()
		}
	}
	return b.String()[:keep]
}

func isGitKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}
