//go:build !linux

package checkpoints

import (
	"errors"
	"io/fs"
	"os"
)

// readDir lists a directory with each entry's lstat.
func readDir(dir string) ([]dirEntry, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make([]dirEntry, 0, len(entries))
	for _, de := range entries {
		info, err := de.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, dirEntry{name: de.Name(), st: statOf(info)})
	}
	return out, nil
}
