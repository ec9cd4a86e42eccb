package command

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// lookPathIn finds the program to execute like cmd.exe does, but for the
// current directory, which it does not search: in the PATH of env, trying
// the extensions of its PATHEXT; a relative path with a separator in dir.
func lookPathIn(dir, file string, env []string) (string, error) {
	exts := []string{".com", ".exe", ".bat", ".cmd"}
	var path string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "PATHEXT":
			exts = nil
			for e := range strings.SplitSeq(strings.ToLower(v), ";") {
				if e != "" && e[0] == '.' {
					exts = append(exts, e)
				}
			}
		case "PATH":
			path = v
		}
	}
	if strings.ContainsAny(file, `:\/`) {
		if !filepath.IsAbs(file) {
			file = filepath.Join(dir, file)
		}
		return findExecutable(file, exts)
	}
	for d := range strings.SplitSeq(path, ";") {
		if d = strings.Trim(d, `"`); d == "" || !filepath.IsAbs(d) {
			continue
		}
		if p, err := findExecutable(filepath.Join(d, file), exts); err == nil {
			return p, nil
		}
	}
	return "", errNotFound{}
}

// findExecutable is file if it names a file, else file with the first
// extension of exts that does.
func findExecutable(file string, exts []string) (string, error) {
	if filepath.Ext(file) != "" && isFile(file) {
		return file, nil
	}
	for _, e := range exts {
		if isFile(file + e) {
			return file + e, nil
		}
	}
	return "", errNotFound{}
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// errNotFound is a program that is in no directory of PATH.
type errNotFound struct{}

func (errNotFound) Error() string { return "command not found" }

func (errNotFound) Is(target error) bool { return target == fs.ErrNotExist }
