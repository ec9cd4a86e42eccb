package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
)

// Registry is the list of this user's workspaces that have had a daemon:
// one file per workspace, named by a hash of its path and holding it, in
// $XDG_STATE_HOME/nexus/workspaces (~/.local/state/nexus/workspaces). A
// command of one workspace sees the .nexus of every other one empty, its
// tokens included.
type Registry struct{ dir string }

// DefaultRegistry is the registry of the current user.
func DefaultRegistry() Registry {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return Registry{}
		}
		base = filepath.Join(home, ".local", "state")
	}
	return Registry{dir: filepath.Join(base, "nexus", "workspaces")}
}

// Add records the workspace ws (absolute).
func (r Registry) Add(ws string) error {
	if r.dir == "" {
		return nil
	}
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(ws))
	name := filepath.Join(r.dir, hex.EncodeToString(sum[:12]))
	if b, err := os.ReadFile(name); err == nil && string(b) == ws+"\n" {
		return nil
	}
	return WriteFileAtomic(name, []byte(ws+"\n"))
}

// List returns the recorded workspaces that still have a .nexus directory,
// and forgets the others.
func (r Registry) List() []string {
	if r.dir == "" {
		return nil
	}
	des, err := os.ReadDir(r.dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, de := range des {
		name := filepath.Join(r.dir, de.Name())
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		ws := strings.TrimSuffix(string(b), "\n")
		if fi, err := os.Lstat(filepath.Join(ws, NexusDir)); err != nil || !fi.IsDir() {
			if os.IsNotExist(err) {
				os.Remove(name)
			}
			continue
		}
		out = append(out, ws)
	}
	return out
}
