package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckDefinitionsRoot: a definitions root that holds .nexus — the
// workspace itself, a directory above it, or a symlink to either — is
// refused; one beside or inside .nexus is not.
func TestCheckDefinitionsRoot(t *testing.T) {
	ws := t.TempDir()
	l := NewLayout(ws)
	if err := os.MkdirAll(filepath.Join(l.Nexus, "definitions"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link-to-ws")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{ws, filepath.Dir(ws), l.Resolve("."), l.Resolve("sub/.."), link} {
		if err := l.CheckDefinitionsRoot(root); err == nil || !strings.Contains(err.Error(), "holds the daemon's own directory") {
			t.Errorf("root %s: %v", root, err)
		}
	}
	for _, root := range []string{l.Resolve(".nexus/definitions"), l.Resolve("definitions"), l.Resolve("../elsewhere"), l.Nexus + "x"} {
		if err := l.CheckDefinitionsRoot(root); err != nil {
			t.Errorf("root %s: %v", root, err)
		}
	}
}
