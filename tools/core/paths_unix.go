//go:build unix

package core

import (
	"io/fs"
	"os"
	"syscall"
)

// openFileFlags keep an open for reading from blocking on a fifo or making
// a terminal the controlling one.
const openFileFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY

// openDirFlags make an open fail on anything but a directory.
const openDirFlags = syscall.O_DIRECTORY

// linkCount is the number of hard links of a file, from its stat.
func linkCount(_ *os.File, fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Nlink), true
}
