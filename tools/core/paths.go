package core

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/workspace"
)

// privateDir is the daemon's own directory in the workspace: history,
// runtime values, tokens. Tools never reach into it, except for the
// definitions root when it lies there.
const privateDir = workspace.NexusDir

// maxLinks bounds the symlinks followed in one path, as os.Root does.
const maxLinks = 8

// cleanPath checks a workspace-relative path as a caller gave it and returns
// it in clean form, "" being the workspace root (accepted only when dirOK).
// It refuses and never rewrites: absolute paths, ".." components and NUL
// bytes are errors.
func cleanPath(p string, dirOK bool) (string, error) {
	switch {
	case strings.IndexByte(p, 0) >= 0:
		return "", invalidf("path %q contains a NUL byte", p)
	case strings.HasPrefix(p, "/"), filepath.IsAbs(p), filepath.VolumeName(p) != "":
		return "", invalidf("path %q is absolute; paths are relative to the workspace root", p)
	}
	for c := range strings.SplitSeq(p, "/") {
		if c == ".." {
			return "", invalidf("path %q contains \"..\"; paths must stay inside the workspace", p)
		}
		if err := state.CheckName(c); err != nil {
			return "", invalidf("path %q: %v; paths are slash-separated and relative to the workspace root", p, err)
		}
	}
	clean := path.Clean(p)
	if clean == "." {
		clean = ""
	}
	switch {
	case clean == "" && !dirOK:
		return "", invalidf("path is empty; give a file path relative to the workspace root")
	case strings.HasSuffix(p, "/") && !dirOK:
		return "", invalidf("path %q ends in a slash; give a file path", p)
	}
	return clean, nil
}

// canonical resolves the symlinks of a clean path inside the workspace and
// checks both the path and what it resolves to against the private
// directory.
func (t *Tools) canonical(p string) (string, error) {
	if err := t.checkPrivate(p, p); err != nil {
		return "", err
	}
	canon, err := t.resolve(p)
	if err != nil {
		return "", err
	}
	if err := t.checkPrivate(p, canon); err != nil {
		return "", err
	}
	return canon, nil
}

// checkPrivate refuses a canonical path in the private directory, unless it
// is in the definitions root.
func (t *Tools) checkPrivate(p, canon string) error {
	first, _, _ := strings.Cut(canon, "/")
	if !strings.EqualFold(first, privateDir) || t.inDefinitions(canon) {
		return nil
	}
	through := ""
	if p != canon {
		through = " through a symlink"
	}
	if t.defInside && under(t.defRel, privateDir) {
		return invalidf("path %q leads%s into %s/, the daemon's private state; of it only %s/ is open to tools",
			p, through, privateDir, t.defRel)
	}
	return invalidf("path %q leads%s into %s/, the daemon's private state, which tools may not use", p, through, privateDir)
}

// allow checks that the party may read, or write, the file at canonical
// path canon: outside the definitions root anyone who may call the tool
// may (the policy decided that), inside it the party's access decides (see
// package access).
func (t *Tools) allow(party access.Party, p, canon string, write bool) error {
	if !party.Valid() {
		return tools.Errorf(tools.CodePermissionDenied, "path %q: the call names no acting party", p)
	}
	if !t.inDefinitions(canon) {
		return nil
	}
	if err := party.Definition(t.defPath(canon), write); err != nil {
		return tools.Errorf(tools.CodePermissionDenied, "path %q: %v", p, err)
	}
	return nil
}

// allowDir checks that the party may see the directory at canonical path
// canon: read it, or something below it.
func (t *Tools) allowDir(party access.Party, p, canon string) error {
	if !party.Valid() {
		return tools.Errorf(tools.CodePermissionDenied, "path %q: the call names no acting party", p)
	}
	if t.inDefinitions(canon) && !party.MayList(t.defPath(canon)) {
		return tools.Errorf(tools.CodePermissionDenied, "path %q: %v", p, party.Definition(t.defPath(canon), false))
	}
	return nil
}

// visible reports whether an entry met while listing or searching may
// appear to the party: not the daemon's private state (but the directories
// that lead to the definitions root), and under the definitions root only
// what the party may read, or directories that hold something it may read.
func (t *Tools) visible(party access.Party, e walkEntry) bool {
	first, _, _ := strings.Cut(e.canon, "/")
	if strings.EqualFold(first, privateDir) && !t.inDefinitions(e.canon) {
		return e.info.IsDir() && t.defInside && under(t.defRel, e.canon)
	}
	if !t.inDefinitions(e.canon) {
		return true
	}
	rel := t.defPath(e.canon)
	return party.MayRead(rel) || (e.info.IsDir() && party.MayList(rel))
}

// defPath is the path relative to the definitions root of a canonical path
// in it.
func (t *Tools) defPath(canon string) string {
	switch {
	case t.defRel == "":
		return canon
	case canon == t.defRel:
		return ""
	}
	return canon[len(t.defRel)+1:]
}

// inDefinitions reports whether a canonical path is in the definitions root.
func (t *Tools) inDefinitions(canon string) bool {
	return t.defInside && under(canon, t.defRel)
}

// under reports whether p is dir or lies below it ("" is the root).
func under(p, dir string) bool {
	return dir == "" || p == dir || strings.HasPrefix(p, dir+"/")
}

// resolve follows the symlinks of p the way the kernel would, inside the
// workspace, and returns the canonical path: one without symlinks (up to
// the first component that does not exist yet). A link that is absolute or
// climbs out of the workspace is an error, even as the last component.
func (t *Tools) resolve(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	var done []string // components checked to be directories (or the last one)
	rest := strings.Split(p, "/")
	links := 0
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", invalidf("path %q leads outside the workspace through a symlink", p)
			}
			done = done[:len(done)-1]
			continue
		}
		cur := strings.Join(append(done, name), "/")
		fi, err := t.root.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			// Nothing below exists either: keep the rest as it is.
			done = append(done, name)
			for _, c := range rest {
				switch c {
				case "", ".":
				case "..":
					return "", invalidf("path %q does not exist (a symlink leads to the missing %q)", p, cur)
				default:
					done = append(done, c)
				}
			}
			return strings.Join(done, "/"), nil
		}
		if err != nil {
			return "", fsError("resolve", p, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, name)
			continue
		}
		if links++; links > maxLinks {
			return "", invalidf("path %q goes through more than %d symlinks", p, maxLinks)
		}
		target, err := t.root.Readlink(cur)
		if err != nil {
			return "", fsError("resolve", p, err)
		}
		target = filepath.ToSlash(target) // Windows' links use "\"
		if target == "" || filepath.IsAbs(target) || strings.HasPrefix(target, "/") || filepath.VolumeName(target) != "" {
			return "", invalidf("path %q goes through symlink %q to an absolute path; only relative symlinks inside the workspace are followed", p, cur)
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return strings.Join(done, "/"), nil
}

// verify checks that an open file is the one at the canonical path: the
// kernel's name for it must be that path. A mismatch means a symlink or
// directory was swapped in after the path was checked.
func (t *Tools) verify(f *os.File, p, canon string) error {
	got, err := fdPath(f)
	if err != nil {
		return tools.Errorf(tools.CodeExecutionFailed, "path %q: cannot check the opened file: %v", p, err)
	}
	want := t.abs(canon)
	switch {
	case got == want:
		return nil
	case strings.EqualFold(got, want):
		// A file system that ignores case (macOS, Windows) opened it.
		return invalidf("path %q names the file %q in other letter case; give the name as it is on disk", p, got)
	}
	return tools.Errorf(tools.CodeExecutionFailed, "path %q changed while it was being opened; try again", p)
}

// abs is the absolute path of a canonical path, as the kernel names it.
func (t *Tools) abs(canon string) string {
	return filepath.Join(t.rootReal, filepath.FromSlash(canon))
}

// openRegular opens the regular file at canonical path canon for reading,
// without blocking on a fifo or touching a device.
func (t *Tools) openRegular(p, canon string) (*os.File, fs.FileInfo, error) {
	if canon == "" {
		return nil, nil, invalidf("path %q is a directory, not a file", p)
	}
	fi, err := t.root.Lstat(canon)
	if err != nil {
		return nil, nil, fsError("open", p, err)
	}
	if err := regular(p, fi); err != nil {
		return nil, nil, err
	}
	f, err := t.root.OpenFile(canon, os.O_RDONLY|openFileFlags, 0)
	if err != nil {
		return nil, nil, fsError("open", p, err)
	}
	if fi, err = f.Stat(); err != nil {
		f.Close()
		return nil, nil, fsError("stat", p, err)
	}
	if err := regular(p, fi); err != nil {
		f.Close()
		return nil, nil, err
	}
	if err := singleLink(p, f, fi); err != nil {
		f.Close()
		return nil, nil, err
	}
	if err := t.verify(f, p, canon); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// regular refuses anything but a regular file.
func regular(p string, fi fs.FileInfo) error {
	switch {
	case fi.Mode().IsRegular():
		return nil
	case fi.IsDir():
		return invalidf("path %q is a directory, not a file", p)
	default:
		return invalidf("path %q is not a regular file (%s)", p, fileType(fi.Mode()))
	}
}

// singleLink refuses a file with more than one hard link: another name of
// it may lie where the caller may not reach (a token in .nexus/run, another
// app's definition), and a hard link carries no trace of where it points.
// f is the open file, or nil (see linkCount).
func singleLink(p string, f *os.File, fi fs.FileInfo) error {
	if n, ok := linkCount(f, fi); ok && n > 1 {
		return tools.Errorf(tools.CodePermissionDenied,
			"file %q has %d hard links; files with more than one are refused, since another of their names may be out of the caller's reach", p, n)
	}
	return nil
}

// openDir opens the directory at canonical path canon.
func (t *Tools) openDir(p, canon string) (*os.File, error) {
	name := canon
	if name == "" {
		name = "."
	}
	fi, err := t.root.Lstat(name)
	if err != nil {
		return nil, fsError("open", p, err)
	}
	if !fi.IsDir() {
		return nil, invalidf("path %q is not a directory", p)
	}
	d, err := t.root.OpenFile(name, os.O_RDONLY|openDirFlags, 0)
	if err != nil {
		return nil, fsError("open", p, err)
	}
	if err := t.verify(d, p, canon); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// openParent opens the directory at canonical path dir as a root of its
// own, creating the missing directories on the way when create is set.
// Every step is verified, so nothing is created outside the directories
// the canonical path names.
func (t *Tools) openParent(p, dir string, create bool) (*os.Root, error) {
	cur, err := t.root.OpenRoot(".")
	if err != nil {
		return nil, fsError("open", p, err)
	}
	if dir == "" {
		return cur, nil
	}
	parts := strings.Split(dir, "/")
	for i, name := range parts {
		if create {
			if err := cur.Mkdir(name, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				cur.Close()
				return nil, fsError("create directory for", p, err)
			}
		}
		next, err := cur.OpenRoot(name)
		cur.Close()
		if err != nil {
			return nil, fsError("open directory of", p, err)
		}
		d, err := next.Open(".")
		if err == nil {
			err = t.verify(d, p, strings.Join(parts[:i+1], "/"))
			d.Close()
		}
		if err != nil {
			next.Close()
			return nil, err
		}
		cur = next
	}
	return cur, nil
}

// fsError turns an error of the file system into a tool error naming the
// path as the caller gave it.
func fsError(op, p string, err error) error {
	var te *tools.Error
	if errors.As(err, &te) {
		return te
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return invalidf("no such file or directory: %q", p)
	case errors.Is(err, syscall.ENOTDIR):
		return invalidf("path %q: a parent of it is not a directory", p)
	case errors.Is(err, syscall.ELOOP):
		return invalidf("path %q goes through too many symlinks", p)
	case err.Error() == "path escapes from parent":
		// os.Root refused to follow a symlink out of the workspace.
		return invalidf("path %q leads outside the workspace through a symlink", p)
	case errors.Is(err, fs.ErrPermission):
		return tools.Errorf(tools.CodeExecutionFailed, "%s %q: permission denied", op, p)
	}
	return tools.Errorf(tools.CodeExecutionFailed, "%s %q: %v", op, p, err)
}

func invalidf(format string, args ...any) *tools.Error {
	return tools.Errorf(tools.CodeInvalidArguments, format, args...)
}

// fileType names the type of a file mode as list_directory does.
func fileType(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	}
	return "other"
}

// displayPath joins a directory and a name as shown to callers.
func displayPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
