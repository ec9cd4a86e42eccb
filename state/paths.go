package state

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// tmpPrefix starts the names of the store's temporary files. Paths with a
// component that starts with it are reserved.
const tmpPrefix = ".nexus-tmp-"

const (
	maxPathLen      = 4096
	maxComponentLen = 255
)

// CleanPath checks a definition path relative to the definitions root and
// returns it unchanged when it is acceptable. It refuses, with [ErrInvalid],
// empty paths and components, ".", "..", absolute paths, NUL bytes, invalid
// UTF-8, ".git" components and the store's reserved temporary names: it never
// rewrites a suspicious path into an acceptable one.
func CleanPath(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("%w: path is empty", ErrInvalid)
	}
	if err := checkPath(p); err != nil {
		return "", err
	}
	return p, nil
}

// CleanDir is CleanPath for a directory: the empty path is the root, and a
// trailing "/" is allowed.
func CleanDir(p string) (string, error) {
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return "", nil
	}
	if err := checkPath(p); err != nil {
		return "", err
	}
	return p, nil
}

func checkPath(p string) error {
	switch {
	case len(p) > maxPathLen:
		return fmt.Errorf("%w: path is %d bytes long, over the limit of %d", ErrInvalid, len(p), maxPathLen)
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("%w: path %q contains a NUL byte", ErrInvalid, p)
	case !utf8.ValidString(p):
		return fmt.Errorf("%w: path %q is not valid UTF-8", ErrInvalid, p)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("%w: path %q is absolute", ErrInvalid, p)
	}
	for c := range strings.SplitSeq(p, "/") {
		switch {
		case c == "":
			return fmt.Errorf("%w: path %q has an empty name", ErrInvalid, p)
		case c == "." || c == "..":
			return fmt.Errorf("%w: path %q contains %q", ErrInvalid, p, c)
		case len(c) > maxComponentLen:
			return fmt.Errorf("%w: path %q has a name over %d bytes", ErrInvalid, p, maxComponentLen)
		case strings.EqualFold(c, ".git"):
			return fmt.Errorf("%w: path %q contains .git, which git does not allow in a tree", ErrInvalid, p)
		case strings.HasPrefix(c, tmpPrefix):
			return fmt.Errorf("%w: path %q uses the reserved prefix %s", ErrInvalid, p, tmpPrefix)
		}
		if err := CheckName(c); err != nil {
			return fmt.Errorf("%w: path %q: %v", ErrInvalid, p, err)
		}
	}
	return nil
}

// parentDir returns the directory of p ("" for the root).
func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// baseName returns the last component of p.
func baseName(p string) string {
	return p[strings.LastIndexByte(p, '/')+1:]
}

// joinPath joins a directory and a name, the root being "".
func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// underDir reports whether p is dir itself or lies below it.
func underDir(p, dir string) bool {
	return dir == "" || p == dir || strings.HasPrefix(p, dir+"/")
}

// Address resolves a definition path as a caller wrote it into a path
// relative to the definitions root. Callers address paths from a base
// directory (an app's root, or "" for the definitions root itself); a
// leading "/" addresses the definitions root whatever the base. With dir,
// the path is a directory and "" is the base itself.
func Address(base, p string, dir bool) (string, error) {
	abs := strings.HasPrefix(p, "/")
	rel := strings.TrimPrefix(p, "/")
	var err error
	if dir {
		rel, err = CleanDir(rel)
	} else {
		rel, err = CleanPath(rel)
	}
	if err != nil {
		return "", err
	}
	if abs || base == "" {
		return rel, nil
	}
	if rel == "" {
		return base, nil
	}
	return base + "/" + rel, nil
}

// Display writes a path relative to the definitions root the way a caller
// with the given base addresses it: absolute (with a leading "/") when the
// caller's request was, else relative to the base where it lies below it.
func Display(base, full string, abs bool) string {
	switch {
	case abs:
		return "/" + full
	case base == "":
		return full
	case full == base:
		return ""
	}
	if rel, ok := strings.CutPrefix(full, base+"/"); ok {
		return rel
	}
	return full
}
