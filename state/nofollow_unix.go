//go:build unix

package state

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// syncWorkingFilesLater: a working file stays open after its rename, for
// the checkpointer to sync (see durableWrite).
const syncWorkingFilesLater = true

// heldDir holds a directory descriptor: every call is an *at system call
// relative to it, with O_NOFOLLOW.
type heldDir struct{ f *os.File }

func holdRoot(root *os.Root) (heldDir, error) {
	f, err := root.Open(".")
	return heldDir{f}, err
}

func (d heldDir) Close() error { return d.f.Close() }

func (d heldDir) fd() int { return int(d.f.Fd()) }

func (d heldDir) openDir(name string) (heldDir, error) {
	for {
		fd, err := unix.Openat(d.fd(), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		switch {
		case err == unix.EINTR:
			continue
		case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
			return heldDir{}, errLinkOrNotDir
		case err != nil:
			return heldDir{}, err
		}
		return heldDir{os.NewFile(uintptr(fd), name)}, nil
	}
}

func (d heldDir) mkdir(name string) error { return unix.Mkdirat(d.fd(), name, 0o755) }

func (d heldDir) create(name string) (*os.File, error) {
	fd, err := unix.Openat(d.fd(), name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, &os.PathError{Op: "create", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

func (d heldDir) lstat(name string) (fs.FileMode, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return 0, nil
	case unix.S_IFDIR:
		return fs.ModeDir, nil
	case unix.S_IFLNK:
		return fs.ModeSymlink, nil
	}
	return fs.ModeIrregular, nil
}

// openRegular opens name for reading without blocking on a fifo or making
// a terminal the controlling one; a symlink is fs.ErrNotExist.
func (d heldDir) openRegular(name string) (*os.File, error) {
	fd, err := unix.Openat(d.fd(), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ELOOP):
		return nil, fs.ErrNotExist
	case err != nil:
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

func (d heldDir) rename(from, to string) error {
	if err := unix.Renameat(d.fd(), from, d.fd(), to); err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return nil
}

func (d heldDir) remove(name string) error { return unix.Unlinkat(d.fd(), name, 0) }

func (d heldDir) removeDir(name string) error { return unix.Unlinkat(d.fd(), name, unix.AT_REMOVEDIR) }
