//go:build unix

package state

import (
	"io/fs"
	"os"
	"syscall"
)

// linkCount is the number of hard links of a file's lstat info (its
// type differs: uint64 on linux/amd64, uint32 on linux/arm64, uint16 on
// darwin).
func linkCount(info fs.FileInfo) (uint64, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Nlink), true
}

// openLinkCount is linkCount of an open file, whose info is given.
func openLinkCount(_ *os.File, info fs.FileInfo) (uint64, bool) { return linkCount(info) }
