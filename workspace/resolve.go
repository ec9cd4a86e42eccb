package workspace

import (
	"os"
	"path"
	"path/filepath"
	"strings"
)

// maxResolveLinks bounds the symlinks followed while resolving a path.
const maxResolveLinks = 8

// ResolveInside follows the symlinks of the existing leading components of
// rel (clean, slash-separated) inside the workspace ws and returns the path
// they lead to, relative to ws; ok is false when they lead outside it (the
// core tools refuse such a path) or loop. A link to an absolute path counts
// when the path is in ws as ws is spelled.
func ResolveInside(ws, rel string) (string, bool) {
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
		if links++; links > maxResolveLinks {
			return "", false
		}
		target, err := os.Readlink(filepath.Join(ws, filepath.FromSlash(strings.Join(cur, "/"))))
		if err != nil {
			return "", false
		}
		if filepath.IsAbs(target) {
			r, err := filepath.Rel(ws, filepath.Clean(target))
			r = filepath.ToSlash(r)
			if err != nil || r == ".." || strings.HasPrefix(r, "../") {
				return "", false
			}
			done, target = nil, r
		} else if strings.HasPrefix(filepath.ToSlash(target), "/") || filepath.VolumeName(target) != "" {
			return "", false // rooted on the current drive, or relative to a drive's directory (Windows)
		}
		rest = append(strings.Split(filepath.ToSlash(target), "/"), rest...)
	}
	return path.Join(done...), true
}
