package command

import (
	"fmt"
	"path/filepath"
	"slices"
)

// View is the file system a sandboxed command sees: the machine's, with the
// daemon's state hidden, the parts of it the caller may use shown again, a
// few files read-only, and private temporary directories and /proc. The
// helper builds it in a mount namespace of its own, before Landlock; a
// kernel that cannot make one fails the command ([ErrSandboxUnavailable]).
// Only Linux has it, as only Linux runs the sandboxed modes.
type View struct {
	// Hide are directories the command sees empty and read-only: the
	// workspace's .nexus, the definitions root, the daemon's socket
	// directory, other workspaces' .nexus. Missing ones are skipped.
	Hide []string
	// Binds are files and directories under hidden ones that the command
	// sees again at their own path, writable or read-only.
	Binds []Bind
	// ReadOnly are files and directories the command may read but not
	// change: .git, the editor's task and settings files, the MCP files.
	// Missing ones, and symlinks, are skipped.
	ReadOnly []string
}

// Bind is a file or directory shown again below a hidden directory.
type Bind struct {
	Path     string
	Writable bool
}

func (v *View) validate() error {
	for _, p := range slices.Concat(v.Hide, v.ReadOnly) {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p {
			return fmt.Errorf("command: view path %q is not absolute and clean", p)
		}
	}
	for _, b := range v.Binds {
		if !filepath.IsAbs(b.Path) || filepath.Clean(b.Path) != b.Path {
			return fmt.Errorf("command: view path %q is not absolute and clean", b.Path)
		}
	}
	return nil
}
