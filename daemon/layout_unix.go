//go:build unix

package daemon

import (
	"os"
	"strconv"
)

// userName names this user in the shared socket directory: the uid.
func userName() string { return strconv.Itoa(os.Getuid()) }

// restrictSocket makes the socket at path usable by this user alone.
func restrictSocket(path string) error { return os.Chmod(path, 0o600) }
