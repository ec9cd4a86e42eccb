//go:build unix

package command

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// lookPathIn finds the program to execute like execvp does, in the PATH
// of env (the helper's own environment is not the command's), a relative
// path in dir ("": the current directory, the helper's being the
// command's).
func lookPathIn(dir, file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		p := inDir(dir, file)
		return p, executable(p)
	}
	path, ok := "", false
	for _, kv := range env {
		if v, found := strings.CutPrefix(kv, "PATH="); found {
			path, ok = v, true
			break
		}
	}
	if !ok {
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	var firstErr error = syscall.ENOENT
	for d := range strings.SplitSeq(path, ":") {
		if d == "" {
			d = "."
		}
		p := inDir(dir, d+"/"+file)
		err := executable(p)
		if err == nil {
			return p, nil
		}
		if firstErr == syscall.ENOENT && !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ENOTDIR) {
			firstErr = err
		}
	}
	if firstErr == syscall.ENOENT {
		return "", errNotFound{}
	}
	return "", firstErr
}

// inDir is p, relative to dir when p is relative and dir is set.
func inDir(dir, p string) string {
	if dir == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// errNotFound is a program that is in no directory of PATH.
type errNotFound struct{}

func (errNotFound) Error() string        { return "command not found" }
func (errNotFound) Is(target error) bool { return target == syscall.ENOENT || target == fs.ErrNotExist }

func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return pe.Err
		}
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return syscall.EACCES
	}
	return nil
}
