package trust

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var hooks = Kind{Label: "hook", Key: "hooks"}

func TestApproveSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trust.json")
	s, err := Open(path, hooks)
	if err != nil {
		t.Fatal(err)
	}
	if s.Trusted("a", "sha256:1") {
		t.Fatal("a missing file trusts something")
	}
	if err := s.Approve("a", "sha256:1", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.Approve("b", "sha256:2", time.Now()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Version int `json:"version"`
		Hooks   []struct{ Name, Pin string }
	}
	if err := json.Unmarshal(data, &f); err != nil || f.Version != 1 || len(f.Hooks) != 2 || f.Hooks[0].Name != "a" {
		t.Fatalf("file %s: %+v, %v", data, f, err)
	}
	again, err := Open(path, hooks)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, pin string
		want      bool
	}{{"a", "sha256:1", true}, {"b", "sha256:2", true}, {"a", "sha256:2", false}, {"c", "sha256:1", false}} {
		if got := again.Trusted(c.name, c.pin); got != c.want {
			t.Errorf("Trusted(%q, %q) = %v, want %v", c.name, c.pin, got, c.want)
		}
	}
	// Another kind's list is not this kind's.
	mcp, err := Open(path, Kind{Label: "MCP", Key: "servers"})
	if err != nil || mcp.Trusted("a", "sha256:1") {
		t.Fatalf("the hooks' approvals read as servers': %v", err)
	}
}

func TestCorruptFile(t *testing.T) {
	for name, content := range map[string]string{
		"not json":   "{not json",
		"no version": `{"hooks":[]}`,
		"no pin":     `{"version":1,"hooks":[{"name":"a"}]}`,
	} {
		path := filepath.Join(t.TempDir(), "trust.json")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(path, hooks); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}
