package checkpoints

import (
	"io/fs"

	"github.com/nexuscocreate/nexus/state"
)

// fileStat is what a scan needs of a file's lstat.
type fileStat struct {
	mode  fs.FileMode
	size  int64
	key   state.FileKey
	keyed bool // the system gives a change time and an inode
}

func statOf(info fs.FileInfo) fileStat {
	key, ok := state.FileKeyOf(info)
	return fileStat{mode: info.Mode(), size: info.Size(), key: key, keyed: ok}
}

// dirEntry is one entry of a directory, with its lstat.
type dirEntry struct {
	name string
	st   fileStat
}
