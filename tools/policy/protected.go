package policy

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/workspace"
)

// protectedWrite returns the protected path a call writes, if any: for a
// core tool whose kind is edit, delete or move, each string argument named
// "path" or ending in "Path", cleaned ("./", "//", trailing "/" and "."
// segments go), compared case-folded, and, when the policy knows the
// workspace, also as it resolves through the symlinks in it. A path that
// names a directory holding a protected file (".vscode") counts too: a
// move there would put one in place.
func (p *Policy) protectedWrite(req *Request) (string, bool) {
	d := req.Tool
	if d.ServerName != "" || (d.Kind != tools.KindEdit && d.Kind != tools.KindDelete && d.Kind != tools.KindMove) {
		return "", false
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(req.Args, &args) != nil {
		return "", false
	}
	for _, k := range sortedKeys(args) {
		if k != "path" && !strings.HasSuffix(k, "Path") {
			continue
		}
		var raw string
		if json.Unmarshal(args[k], &raw) != nil {
			continue
		}
		rel, ok := p.workspaceRelative(raw)
		if !ok {
			continue
		}
		if isProtected(rel) {
			return rel, true
		}
		if p.workspace == "" {
			continue
		}
		if real, ok := resolveInWorkspace(p.workspace, rel); ok && real != rel && isProtected(real) {
			return fmt.Sprintf("%s (through a symlink to %s)", rel, real), true
		}
	}
	return "", false
}

// workspaceRelative cleans a path argument to a slash-separated path
// relative to the workspace ("" is the root); an absolute path counts only
// inside the workspace.
func (p *Policy) workspaceRelative(raw string) (string, bool) {
	if raw == "" || strings.IndexByte(raw, 0) >= 0 {
		return "", false
	}
	if strings.HasPrefix(raw, "/") {
		if p.workspace == "" {
			return "", false
		}
		rel, err := filepath.Rel(p.workspace, filepath.Clean(raw))
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return "", false
		}
		raw = filepath.ToSlash(rel)
	}
	clean := path.Clean(raw)
	if clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", false
	}
	return clean, true
}

// isProtected reports whether a clean workspace-relative path is in .git,
// is one of the protected files, or is a directory that holds one.
func isProtected(rel string) bool {
	p := strings.ToLower(rel)
	return slices.ContainsFunc(workspace.Launchers(), func(l string) bool {
		if dir, ok := strings.CutSuffix(l, "/"); ok {
			return p == dir || strings.HasPrefix(p, l)
		}
		// A directory that holds one counts: a move there would put one in place.
		return l == p || strings.HasPrefix(l, p+"/")
	})
}

// maxProtectedLinks bounds the symlinks followed while resolving a path.
const maxProtectedLinks = 8

// resolveInWorkspace follows the symlinks of the existing leading
// components of rel inside the workspace and returns the path they lead to,
// relative to the workspace; ok is false when they lead outside it (the
// core tools refuse such a path) or loop.
func resolveInWorkspace(ws, rel string) (string, bool) {
	var done []string
	rest := strings.Split(rel, "/")
	for links := 0; len(rest) > 0; {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", false
			}
			done = done[:len(done)-1]
			continue
		}
		cur := append(done[:len(done):len(done)], name)
		fi, err := os.Lstat(filepath.Join(ws, filepath.FromSlash(strings.Join(cur, "/"))))
		if err != nil {
			// Not there (yet): the rest is taken as written.
			return path.Join(append(cur, rest...)...), true
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			done = cur
			continue
		}
		if links++; links > maxProtectedLinks {
			return "", false
		}
		target, err := os.Readlink(filepath.Join(ws, filepath.FromSlash(strings.Join(cur, "/"))))
		if err != nil {
			return "", false
		}
		if filepath.IsAbs(target) {
			r, err := filepath.Rel(ws, filepath.Clean(target))
			if err != nil || r == ".." || strings.HasPrefix(r, "../") {
				return "", false
			}
			done, target = nil, r
		}
		rest = append(strings.Split(filepath.ToSlash(target), "/"), rest...)
	}
	return path.Join(done...), true
}

// protectedVerdict is the decision on a write to a protected path: ask,
// whatever the allow rules or a remembered allow say; a deny from the
// configured levels or a remembered reject_always still denies.
func (p *Policy) protectedVerdict(req *Request, target string, v Verdict) Verdict {
	if v.Decision == Deny {
		return v
	}
	if p.store != nil {
		if r := p.remembered(req, Verdict{Decision: Ask}); r.Remembered && r.Decision == Deny {
			return r
		}
	}
	return Verdict{
		Decision:  Ask,
		Reason:    fmt.Sprintf("a write to %s always asks, whatever the rules allow (%s)", target, v.Reason),
		Protected: target,
	}
}

// absOrEmpty returns dir made absolute, or "" for "".
func absOrEmpty(dir string) string {
	if dir == "" {
		return ""
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	return abs
}
