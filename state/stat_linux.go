package state

import (
	"io/fs"
	"syscall"
)

func changeTimeAndInode(info fs.FileInfo) (ctime int64, ino uint64, ok bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return st.Ctim.Nano(), st.Ino, true
}
