package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// errLinkOrNotDir is what heldDir.openDir returns for a name that is a
// symlink (a reparse point on Windows) or not a directory.
var errLinkOrNotDir = errors.New("a symlink or not a directory")

// A heldDir is a directory of the definitions root opened one name at a
// time without following a link (nofollow_unix.go, nofollow_windows.go).
// What is done through it lands in that very directory, whatever is
// renamed or swapped for a symlink on the way meanwhile. Its methods take
// one name in the directory, never a path:
//
//	openDir(name) (heldDir, error)     the subdirectory; errLinkOrNotDir for a link or a file
//	mkdir(name) error
//	create(name) (*os.File, error)      a new file, refusing a name that exists (a link included)
//	lstat(name) (fs.FileMode, error)    the type of what is there, not followed
//	openRegular(name) (*os.File, error) for reading; fs.ErrNotExist for a link or a missing name
//	rename(from, to string) error       replacing to
//	remove(name), removeDir(name) error
//	Close() error

// openDir opens the directory dir of the definitions root ("" is the root)
// one name at a time, never following a symlink, and makes the missing
// names when create is set. What is then done through the directory
// (create, rename, remove) lands in that very directory, whatever is
// renamed or swapped for a symlink on the way meanwhile: no race can
// redirect a write into another app's directory. It returns the
// directories it made, outermost first.
func (s *Definitions) openDir(dir string, create bool) (heldDir, []string, error) {
	return openDirIn(s.root, dir, create)
}

// openDirIn is openDir in the directory root.
func openDirIn(root *os.Root, dir string, create bool) (heldDir, []string, error) {
	cur, err := holdRoot(root)
	if err != nil {
		return heldDir{}, nil, err
	}
	var made []string
	var walked string
	for _, name := range splitDirs(dir) {
		walked = joinPath(walked, name)
		next, err := cur.openDir(name)
		if errors.Is(err, fs.ErrNotExist) && create {
			if err = cur.mkdir(name); err == nil || errors.Is(err, fs.ErrExist) {
				if err == nil {
					made = append(made, walked)
				}
				next, err = cur.openDir(name)
			}
		}
		cur.Close()
		switch {
		case errors.Is(err, errLinkOrNotDir):
			return heldDir{}, nil, fmt.Errorf("%w: %q on disk is a symlink or not a directory", ErrInvalid, walked)
		case err != nil:
			return heldDir{}, nil, &os.PathError{Op: "open", Path: walked, Err: err}
		}
		cur = next
	}
	return cur, made, nil
}
