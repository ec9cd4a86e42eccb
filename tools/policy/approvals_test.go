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
	for _, r := range []struct {
		app, tool, server, hash string
		allow                   bool
		when                    time.Time
	}{
		{"planner", "write_file", "", "h1", true, t1},
		{"planner", "create_issue", "github", "h2", false, t1},
		{"", "execute_command", "", "h3", true, t1},
		{"planner", "write_file", "", "h4", false, t2}, // replaces the first
	} {
		if err := a.Remember(r.app, r.tool, r.server, r.hash, r.allow, r.when); err != nil {
			t.Fatal(err)
		}
	}
	want := []Approval{
		{AppID: "", Tool: "execute_command", DefinitionHash: "h3", Allow: true, Time: t1.UTC()},
		{AppID: "planner", Tool: "write_file", DefinitionHash: "h4", Allow: false, Time: t2.UTC()},
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
		allow, found            bool
	}{
		{"planner", "write_file", "", "h4", false, true},
		{"planner", "write_file", "", "h1", false, false}, // the replaced answer is gone
		{"planner", "create_issue", "github", "h2", false, true},
		{"planner", "create_issue", "", "h2", false, false}, // another server
		{"other", "create_issue", "github", "h2", false, false},
		{"", "execute_command", "", "h3", true, true},
		{"", "execute_command", "", "changed", false, false},
	} {
		allow, found := b.Lookup(c.app, c.tool, c.server, c.hash)
		if allow != c.allow || found != c.found {
			t.Errorf("Lookup(%q, %q, %q, %q) = %v, %v; want %v, %v", c.app, c.tool, c.server, c.hash, allow, found, c.allow, c.found)
		}
	}

	ok, err := b.Revoke("planner", "create_issue", "github")
	if err != nil || !ok {
		t.Fatalf("Revoke = %v, %v", ok, err)
	}
	ok, err = b.Revoke("planner", "create_issue", "github")
	if err != nil || ok {
		t.Fatalf("second Revoke = %v, %v", ok, err)
	}
	c, err := OpenApprovals(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.List(); !reflect.DeepEqual(got, want[:2]) {
		t.Errorf("after revoke and reopen List = %+v", got)
	}

	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", fi.Mode().Perm())
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
	if err := a.Remember("a", "", "", "h", true, time.Now()); err == nil {
		t.Error("no tool: no error")
	}
	if err := a.Remember("a", "t", "", "", true, time.Now()); err == nil {
		t.Error("no hash: no error")
	}
	// A directory in the file's place makes the rename fail.
	if err := os.Mkdir(filepath.Join(dir, "approvals.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := a.Remember("a", "t", "", "h", true, time.Now()); err == nil {
		t.Fatal("write over a directory: no error")
	}
	if _, found := a.Lookup("a", "t", "", "h"); found {
		t.Error("an answer that was not written is remembered")
	}
}

func TestApprovalsCorrupt(t *testing.T) {
	for name, content := range map[string]string{
		"not json":      "{not json",
		"truncated":     `{"version":1,"approvals":[{"appId":"a"`,
		"wrong version": `{"version":2,"approvals":[]}`,
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
				if err := a.Remember("app", tool, "", fmt.Sprint(j), true, time.Now()); err != nil {
					t.Error(err)
				}
				a.Lookup("app", tool, "", fmt.Sprint(j))
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
		if allow, found := b.Lookup("app", fmt.Sprintf("tool%d", i), "", "4"); !allow || !found {
			t.Errorf("tool%d: %v %v", i, allow, found)
		}
	}
}
