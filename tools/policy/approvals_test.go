package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/workspace"
)

func TestApprovalsPersist(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run", "nested")
	path := filepath.Join(dir, "approvals.json")
	a, err := OpenApprovals(path)
	if err != nil {
		t.Fatalf("missing file: %v", err)
	}
	if l := a.List(); len(l) != 0 {
		t.Fatalf("missing file gives %+v", l)
	}
	t1 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	t2 := t1.Add(time.Hour)
	ls := Scope{Command: []string{"ls"}}
	notes := Scope{Path: "notes.md"}
	for _, ap := range []Approval{
		{AppID: "planner", Tool: "write_file", Scope: notes, DefinitionHash: "h1", Allow: true, Time: t1},
		{AppID: "planner", Tool: "create_issue", Server: "github", DefinitionHash: "h2", Time: t1},
		{AppID: "", Tool: "execute_command", Scope: ls, DefinitionHash: "h3", Allow: true, Time: t1},
		{AppID: "planner", Tool: "write_file", Scope: notes, DefinitionHash: "h4", Time: t2}, // replaces the first
	} {
		if err := a.Remember(ap); err != nil {
			t.Fatal(err)
		}
	}
	want := []Approval{
		{AppID: "", Tool: "execute_command", Scope: ls, DefinitionHash: "h3", Allow: true, Time: t1.UTC()},
		{AppID: "planner", Tool: "write_file", Scope: notes, DefinitionHash: "h4", Allow: false, Time: t2.UTC()},
		{AppID: "planner", Tool: "create_issue", Server: "github", DefinitionHash: "h2", Allow: false, Time: t1.UTC()},
	}
	if got := a.List(); !reflect.DeepEqual(got, want) {
		t.Errorf("List = %+v\nwant %+v", got, want)
	}

	b, err := OpenApprovals(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.List(); !reflect.DeepEqual(got, want) {
		t.Errorf("after reopen List = %+v\nwant %+v", got, want)
	}
	for _, c := range []struct {
		app, tool, server, hash string
		call                    Scope
		allow, found            bool
	}{
		{"planner", "write_file", "", "h4", notes, false, true},
		{"planner", "write_file", "", "h1", notes, false, false}, // the replaced answer is gone
		{"planner", "write_file", "", "h4", Scope{Path: "other.md"}, false, false},
		{"planner", "create_issue", "github", "h2", Scope{}, false, true},
		{"planner", "create_issue", "", "h2", Scope{}, false, false}, // another server
		{"other", "create_issue", "github", "h2", Scope{}, false, false},
		{"", "execute_command", "", "h3", ls, true, true},
		{"", "execute_command", "", "h3", Scope{Command: []string{"ls", "-la"}}, false, false},
		{"", "execute_command", "", "changed", ls, false, false},
	} {
		ap, found := b.Lookup(c.app, c.tool, c.server, c.hash, c.call, true)
		if ap.Allow != c.allow || found != c.found {
			t.Errorf("Lookup(%q, %q, %q, %q, %+v) = %v, %v; want %v, %v", c.app, c.tool, c.server, c.hash, c.call, ap.Allow, found, c.allow, c.found)
		}
	}

	n, err := b.Revoke("planner", "create_issue", "github")
	if err != nil || n != 1 {
		t.Fatalf("Revoke = %v, %v", n, err)
	}
	n, err = b.Revoke("planner", "create_issue", "github")
	if err != nil || n != 0 {
		t.Fatalf("second Revoke = %v, %v", n, err)
	}
	c, err := OpenApprovals(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.List(); !reflect.DeepEqual(got, want[:2]) {
		t.Errorf("after revoke and reopen List = %+v", got)
	}

	if err := workspace.CheckPrivate(path); err != nil {
		t.Error(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the approvals file (no temp files)", len(entries))
	}
}

func TestApprovalsRemembersNothingOnError(t *testing.T) {
	dir := t.TempDir()
	a, err := OpenApprovals(filepath.Join(dir, "approvals.json"))
	if err != nil {
		t.Fatal(err)
	}
	for name, ap := range map[string]Approval{
		"no tool":                 {AppID: "a", DefinitionHash: "h"},
		"no hash":                 {AppID: "a", Tool: "t"},
		"broad":                   {Tool: "execute_command", Scope: Scope{Broad: true}, DefinitionHash: "h"},
		"command without scope":   {Tool: "execute_command", DefinitionHash: "h"},
		"file tool without scope": {Tool: "read_file", DefinitionHash: "h"},
		"MCP tool with a path":    {Tool: "t", Server: "s", Scope: Scope{Path: "x"}, DefinitionHash: "h"},
		"command with a path":     {Tool: "execute_command", Scope: Scope{Path: "x"}, DefinitionHash: "h"},
		"path and directory":      {Tool: "read_file", Scope: Scope{Path: "x", Directory: "y"}, DefinitionHash: "h"},
		"unclean path":            {Tool: "read_file", Scope: Scope{Path: "./x"}, DefinitionHash: "h"},
		"path outside":            {Tool: "read_file", Scope: Scope{Path: "../x"}, DefinitionHash: "h"},
		"empty command":           {Tool: "execute_command", Scope: Scope{Command: []string{}}, DefinitionHash: "h"},
	} {
		if err := a.Remember(ap); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// A directory in the file's place makes the rename fail.
	if err := os.Mkdir(filepath.Join(dir, "approvals.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := a.Remember(Approval{AppID: "a", Tool: "t", DefinitionHash: "h", Allow: true, Time: time.Now()}); err == nil {
		t.Fatal("write over a directory: no error")
	}
	if _, found := a.Lookup("a", "t", "", "h", Scope{}, true); found {
		t.Error("an answer that was not written is remembered")
	}
}

func TestApprovalsCorrupt(t *testing.T) {
	for name, content := range map[string]string{
		"not json":      "{not json",
		"truncated":     `{"version":1,"approvals":[{"appId":"a"`,
		"wrong version": `{"version":3,"approvals":[]}`,
		"v1 with scope": `{"version":1,"approvals":[{"tool":"execute_command","command":["ls"],"definitionHash":"h","time":"2026-01-01T00:00:00Z"}]}`,
		"v2 no scope":   `{"version":2,"approvals":[{"tool":"execute_command","definitionHash":"h","time":"2026-01-01T00:00:00Z"}]}`,
		"v2 repeated":   `{"version":2,"approvals":[{"tool":"t","definitionHash":"h","time":"2026-01-01T00:00:00Z"},{"tool":"t","definitionHash":"g","time":"2026-01-01T00:00:00Z"}]}`,
		"v2 bad path":   `{"version":2,"approvals":[{"tool":"read_file","path":"/etc/passwd","definitionHash":"h","time":"2026-01-01T00:00:00Z"}]}`,
		"no version":    `{"approvals":[]}`,
		"no tool":       `{"version":1,"approvals":[{"appId":"a","definitionHash":"h","allow":true,"time":"2026-01-01T00:00:00Z"}]}`,
		"no hash":       `{"version":1,"approvals":[{"appId":"a","tool":"t","allow":true,"time":"2026-01-01T00:00:00Z"}]}`,
		"unknown field": `{"version":1,"approvals":[],"extra":1}`,
		"bad time":      `{"version":1,"approvals":[{"tool":"t","definitionHash":"h","time":"yesterday"}]}`,
		"trailing data": `{"version":1,"approvals":[]} {}`,
		"empty":         ``,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "approvals.json")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			a, err := OpenApprovals(path)
			if err == nil {
				t.Fatalf("no error; approvals %+v", a.List())
			}
			if !errors.Is(err, ErrCorruptApprovals) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not wrap ErrCorruptApprovals or name the file", err)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "approvals.json")
	if err := os.WriteFile(path, []byte(`{"version":1,"approvals":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenApprovals(path); err != nil {
		t.Errorf("empty list: %v", err)
	}
}

func TestApprovalsConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "approvals.json")
	a, err := OpenApprovals(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			tool := fmt.Sprintf("tool%d", i)
			for j := range 5 {
				if err := a.Remember(Approval{AppID: "app", Tool: tool, DefinitionHash: fmt.Sprint(j), Allow: true, Time: time.Now()}); err != nil {
					t.Error(err)
				}
				a.Lookup("app", tool, "", fmt.Sprint(j), Scope{}, true)
				a.List()
			}
			if i%2 == 0 {
				if _, err := a.Revoke("app", tool, ""); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	b, err := OpenApprovals(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(b.List()); got != 4 {
		t.Errorf("after reopen %d approvals, want 4", got)
	}
	for i := 1; i < 8; i += 2 {
		if ap, found := b.Lookup("app", fmt.Sprintf("tool%d", i), "", "4", Scope{}, true); !ap.Allow || !found {
			t.Errorf("tool%d: %v %v", i, ap.Allow, found)
		}
	}
}
