package policy

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/workspace"
)

// protectedWrite returns what makes a call's write protected, if anything:
// for a core tool whose kind is edit, delete or move, each string argument
// named "path" or ending in "Path" that is a launcher (see isProtected),
// cleaned ("./", "//", trailing "/" and "." segments go), compared
// case-folded, and, when the policy knows the workspace, also as it
// resolves through the symlinks in it; or, for a core tool, the boolean
// argument "executable" set to true (write_file making a file that runs).
func (p *Policy) protectedWrite(req *Request) (string, bool) {
	d := req.Tool
	if d.ServerName != "" || (d.Kind != tools.KindEdit && d.Kind != tools.KindDelete && d.Kind != tools.KindMove) {
		return "", false
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(req.Args, &args) != nil {
		return "", false
	}
	target, ok := p.launcherWrite(args)
	var exec bool // a program the person, or a tool, may run outside every sandbox
	if json.Unmarshal(args["executable"], &exec) != nil || !exec {
		return target, ok
	}
	if !ok {
		if json.Unmarshal(args["path"], &target) != nil || target == "" {
			target = "the file"
		}
	}
	return target + " (made executable)", true
}

// launcherWrite returns the launcher that a path argument of a call names.
// A path that names a directory holding one (".vscode") counts too: a move
// there would put one in place.
func (p *Policy) launcherWrite(args map[string]json.RawMessage) (string, bool) {
	var launchers []workspace.Launcher
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
		if launchers == nil {
			// Read when a path is there to check: git's config may have
			// changed since the last call.
			launchers = workspace.Launchers(p.workspace)
		}
		if isProtected(launchers, rel) {
			return rel, true
		}
		if p.workspace == "" {
			continue
		}
		if real, ok := workspace.ResolveInside(p.workspace, rel); ok && real != rel && isProtected(launchers, real) {
			return fmt.Sprintf("%s (through a symlink to %s)", rel, real), true
		}
	}
	return "", false
}

// workspaceRelative cleans a path argument to a slash-separated path
// relative to the workspace ("" is the root); an absolute path counts only
// inside the workspace. On Windows "\" separates too, and a path rooted
// without a drive ("/ws/x") is on the current drive.
func (p *Policy) workspaceRelative(raw string) (string, bool) {
	if raw == "" || strings.IndexByte(raw, 0) >= 0 {
		return "", false
	}
	if filepath.IsAbs(raw) || strings.HasPrefix(filepath.ToSlash(raw), "/") || filepath.VolumeName(raw) != "" {
		if p.workspace == "" {
			return "", false
		}
		abs, err := filepath.Abs(raw)
		if err != nil {
			return "", false
		}
		rel, err := filepath.Rel(p.workspace, abs)
		rel = filepath.ToSlash(rel)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return "", false
		}
		raw = rel
	}
	raw = filepath.ToSlash(raw)
	clean := path.Clean(raw)
	if clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", false
	}
	return clean, true
}

// isProtected reports whether a clean workspace-relative path is one of
// the launchers, lies in one that is a directory, or is a directory that
// holds one; or lies in a .git at any depth: a repository nested in the
// workspace runs its hooks when the person commits in it.
func isProtected(launchers []workspace.Launcher, rel string) bool {
	p := strings.ToLower(rel)
	if slices.Contains(strings.Split(p, "/"), ".git") {
		return true
	}
	return slices.ContainsFunc(launchers, func(l workspace.Launcher) bool {
		lp := strings.ToLower(l.Path)
		if dir, ok := strings.CutSuffix(lp, "/"); ok {
			return p == dir || strings.HasPrefix(p, lp) || strings.HasPrefix(dir, p+"/")
		}
		// A directory that holds one counts: a move there would put one in place.
		return lp == p || strings.HasPrefix(lp, p+"/")
	})
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
