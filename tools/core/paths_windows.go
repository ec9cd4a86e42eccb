package core

import (
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/windows"
)

// openFileFlags: Windows opens no fifo nor terminal by a file's name
// below the workspace (devices are refused by os.Root).
const openFileFlags = 0

// openDirFlags: none; openDir checked the directory with Lstat and
// verify checks the open handle.
const openDirFlags = 0

// linkCount asks the file system for the number of hard links of an open
// file; without one (f nil) it is not known.
func linkCount(f *os.File, _ fs.FileInfo) (uint64, bool) {
	if f == nil {
		return 0, false
	}
	var d windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(windows.Handle(f.Fd()), &d); err != nil {
		return 0, false
	}
	return uint64(d.NumberOfLinks), true
}

// The flags of GetFinalPathNameByHandle: the long names of the
// components, and the volume as a drive letter.
const (
	fileNameNormalized = 0x0
	volumeNameDOS      = 0x0
)

// fdPath asks the file system for the final path of an open file
// (GetFinalPathNameByHandle), with the long names of its components, as
// a drive path (C:\...) or a share (\\server\share\...).
func fdPath(f *os.File) (string, error) {
	h := windows.Handle(f.Fd())
	buf := make([]uint16, windows.MAX_PATH)
	for {
		n, err := windows.GetFinalPathNameByHandle(h, &buf[0], uint32(len(buf)), fileNameNormalized|volumeNameDOS)
		if err != nil {
			return "", &os.PathError{Op: "GetFinalPathNameByHandle", Path: f.Name(), Err: err}
		}
		if int(n) < len(buf) {
			p := windows.UTF16ToString(buf[:n])
			if rest, ok := strings.CutPrefix(p, `\\?\UNC\`); ok {
				return `\\` + rest, nil
			}
			return strings.TrimPrefix(p, `\\?\`), nil
		}
		buf = make([]uint16, n)
	}
}
