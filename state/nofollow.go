package state

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// openDir opens the directory dir of the definitions root ("" is the root)
// one name at a time, never following a symlink, and makes the missing
// names when create is set. What is then done through the descriptor
// (create, rename, remove) lands in that very directory, whatever is
// renamed or swapped for a symlink on the way meanwhile: no race can
// redirect a write into another app's directory. It returns the
// directories it made, outermost first.
func (s *Definitions) openDir(dir string, create bool) (*os.File, []string, error) {
	return openDirIn(s.root, dir, create)
}

// openDirIn is openDir in the directory root.
func openDirIn(root *os.Root, dir string, create bool) (*os.File, []string, error) {
	cur, err := root.Open(".")
	if err != nil {
		return nil, nil, err
	}
	var made []string
	var walked string
	for _, name := range splitDirs(dir) {
		walked = joinPath(walked, name)
		fd, err := openDirAt(cur, name)
		if errors.Is(err, unix.ENOENT) && create {
			if err = unix.Mkdirat(int(cur.Fd()), name, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				if err == nil {
					made = append(made, walked)
				}
				fd, err = openDirAt(cur, name)
			}
		}
		cur.Close()
		switch {
		case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
			return nil, nil, fmt.Errorf("%w: %q on disk is a symlink or not a directory", ErrInvalid, walked)
		case err != nil:
			return nil, nil, &os.PathError{Op: "open", Path: walked, Err: err}
		}
		cur = os.NewFile(uintptr(fd), walked)
	}
	return cur, made, nil
}

func openDirAt(dir *os.File, name string) (int, error) {
	for {
		fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// createAt creates a new file name in the open directory dir, refusing to
// follow a symlink.
func createAt(dir *os.File, name string) (*os.File, error) {
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, &os.PathError{Op: "create", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// lstatAt is lstat of name in the open directory dir.
func lstatAt(dir *os.File, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return st, err
}
