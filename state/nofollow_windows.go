//go:build windows

package state

import (
	"io/fs"
	"os"
)

// syncWorkingFilesLater is false on Windows: a file held open (without
// FILE_SHARE_DELETE, as Go opens files) cannot be replaced by a rename, so
// the next write of the same definition would fail with "Access denied".
// A working file is synced and closed before its rename, as the history's
// files are, which costs a flush per write.
const syncWorkingFilesLater = false

// heldDir holds a directory as an os.Root, whose calls go through its
// handle (NtCreateFile relative to it) and refuse to leave it. os.Root
// follows a symlink or junction that stays inside, so openDir and
// openRegular look at the name first (Lstat: a reparse point is not a
// directory nor a regular file) and, once it is open, check that the
// handle is of the very file they looked at (volume and file index): a
// link swapped in between is refused.
type heldDir struct{ r *os.Root }

func holdRoot(root *os.Root) (heldDir, error) {
	r, err := root.OpenRoot(".")
	return heldDir{r}, err
}

func (d heldDir) Close() error { return d.r.Close() }

// plainDir reports whether an Lstat result is a directory that is no
// reparse point (symlink, junction, mount point, cloud placeholder).
func plainDir(fi fs.FileInfo) bool {
	return fi.IsDir() && fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) == 0
}

func (d heldDir) openDir(name string) (heldDir, error) {
	before, err := d.r.Lstat(name)
	if err != nil {
		return heldDir{}, err
	}
	if !plainDir(before) {
		return heldDir{}, errLinkOrNotDir
	}
	sub, err := d.r.OpenRoot(name)
	if err != nil {
		return heldDir{}, err
	}
	after, err := sub.Stat(".")
	if err != nil || !os.SameFile(before, after) {
		sub.Close()
		return heldDir{}, errLinkOrNotDir
	}
	return heldDir{sub}, nil
}

func (d heldDir) mkdir(name string) error { return d.r.Mkdir(name, 0o755) }

// create makes a new file: CREATE_NEW fails on any name that exists, a
// link included, so nothing is followed.
func (d heldDir) create(name string) (*os.File, error) {
	return d.r.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
}

func (d heldDir) lstat(name string) (fs.FileMode, error) {
	fi, err := d.r.Lstat(name)
	if err != nil {
		return 0, err
	}
	if fi.Mode()&fs.ModeIrregular != 0 || (fi.IsDir() && !plainDir(fi)) {
		return fs.ModeIrregular, nil
	}
	return fi.Mode().Type(), nil
}

func (d heldDir) openRegular(name string) (*os.File, error) {
	before, err := d.r.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !before.Mode().IsRegular() {
		return nil, fs.ErrNotExist
	}
	f, err := d.r.Open(name)
	if err != nil {
		return nil, err
	}
	after, err := f.Stat()
	if err != nil || !os.SameFile(before, after) {
		f.Close()
		return nil, fs.ErrNotExist
	}
	return f, nil
}

// rename replaces to (FILE_RENAME_REPLACE_IF_EXISTS, with POSIX semantics
// where the file system has them).
func (d heldDir) rename(from, to string) error { return d.r.Rename(from, to) }

func (d heldDir) remove(name string) error { return d.r.Remove(name) }

func (d heldDir) removeDir(name string) error { return d.r.Remove(name) }
