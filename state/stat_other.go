//go:build unix && !linux && !darwin

package state

import "io/fs"

// changeTimeAndInode is not known here: every scan reads every file.
func changeTimeAndInode(fs.FileInfo) (ctime int64, ino uint64, ok bool) {
	return 0, 0, false
}
