//go:build unix

package workspace

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// MakePrivateDir makes dir, and the missing directories above it, and
// leaves it usable by this user alone: mode 0700 (on Windows, an ACL).
func MakePrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}

// makeNexusDir makes .nexus (0755: the config is readable by all, what
// is secret lies in private directories below it).
func makeNexusDir(dir string) error { return os.MkdirAll(dir, 0o755) }

// CheckPrivateDir refuses a dir that is not a directory of this user,
// mode 0700 (on Windows, owned by this user), or is a symlink.
func CheckPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || fi.Mode().Perm() != 0o700 || !ok || st.Uid != uint32(os.Getuid()) {
		return fmt.Errorf("%s must be a directory of this user with mode 0700", dir)
	}
	return nil
}

// CheckPrivate refuses a path that is not a file (mode 0600) or directory
// (mode 0700) of this user, or is a symlink; on Windows, one whose owner
// is not this user or whose ACL grants anyone else.
func CheckPrivate(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	want := fs.FileMode(0o600)
	if fi.IsDir() {
		want = 0o700
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.Mode().IsRegular() && !fi.IsDir() || fi.Mode().Perm() != want || !ok || st.Uid != uint32(os.Getuid()) {
		return fmt.Errorf("%s must be of this user with mode %04o, it is %v", path, want, fi.Mode())
	}
	return nil
}

// createPrivateTemp creates a new file in dir, named pattern with its
// "*" replaced, readable by this user alone (0600).
func createPrivateTemp(dir, pattern string) (*os.File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}
