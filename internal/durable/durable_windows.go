package durable

import (
	"os"

	"golang.org/x/sys/windows"
)

// SyncDir does nothing on Windows, which cannot flush a directory (see
// the package doc): a new name is durable once NTFS commits its journal.
func SyncDir(string) error { return nil }

// SyncRootDir does nothing on Windows (see SyncDir).
func SyncRootDir(*os.Root, string) error { return nil }

// OpenToSync opens the file name of root for writing, which
// FlushFileBuffers needs.
func OpenToSync(root *os.Root, name string) (*os.File, error) {
	return root.OpenFile(name, os.O_WRONLY, 0)
}

// Rename renames from to to, replacing to, and returns once the rename is
// on disk (MOVEFILE_WRITE_THROUGH).
func Rename(from, to string) error {
	f, err := windows.UTF16PtrFromString(from)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	t, err := windows.UTF16PtrFromString(to)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	if err := windows.MoveFileEx(f, t, windows.MOVEFILE_REPLACE_EXISTING|windows.MOVEFILE_WRITE_THROUGH); err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return nil
}
