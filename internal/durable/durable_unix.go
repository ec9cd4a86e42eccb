//go:build unix

package durable

import "os"

// SyncDir fsyncs the directory dir, so that the names created, renamed or
// removed in it are durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// SyncRootDir is SyncDir of the directory name of root.
func SyncRootDir(root *os.Root, name string) error {
	d, err := root.Open(name)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// OpenToSync opens the file name of root so that its Sync flushes it.
func OpenToSync(root *os.Root, name string) (*os.File, error) { return root.Open(name) }

// Rename renames from to to, replacing to; SyncDir of to's directory then
// makes it durable.
func Rename(from, to string) error { return os.Rename(from, to) }
