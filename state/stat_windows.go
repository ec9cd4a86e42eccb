package state

import (
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

// changeTimeAndInode is not in the info Windows gives a directory walk
// (no change time, no file index): the stat cache is off, and every scan
// reads every file.
func changeTimeAndInode(fs.FileInfo) (ctime int64, ino uint64, ok bool) {
	return 0, 0, false
}

// linkCount is not in the info of a directory walk on Windows; see
// openLinkCount.
func linkCount(fs.FileInfo) (uint64, bool) { return 0, false }

// openLinkCount asks the file system for the number of hard links of an
// open file.
func openLinkCount(f *os.File, _ fs.FileInfo) (uint64, bool) {
	var d windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(windows.Handle(f.Fd()), &d); err != nil {
		return 0, false
	}
	return uint64(d.NumberOfLinks), true
}
