package core

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// preview runs a tool's Preview as the policy would before it asks.
func (e *env) preview(name string, args any) ([]tools.ProposedChange, error) {
	e.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.byName[name].Preview(context.Background(), e.inv, raw)
}

func TestPreviewWrite(t *testing.T) {
	e := newEnv(t)
	e.file("notes.md", "one\ntwo\n")

	got, err := e.preview("write_file", map[string]any{"path": "./notes.md", "content": "one\n2\n"})
	if err != nil || len(got) != 1 {
		t.Fatalf("preview: %v %+v", err, got)
	}
	c := got[0]
	if c.Path != "notes.md" || c.Action != tools.ChangeModified || c.Before == nil || *c.Before != "one\ntwo\n" ||
		c.After == nil || *c.After != "one\n2\n" || c.Binary || c.Truncated || c.BeforeSHA256 != sha256Hex([]byte("one\ntwo\n")) {
		t.Errorf("modified: %+v", c)
	}
	if !strings.Contains(c.Diff, "--- a/notes.md\n+++ b/notes.md\n") || !strings.Contains(c.Diff, "-two\n+2\n") {
		t.Errorf("diff of a modified file:\n%s", c.Diff)
	}
	if e.read("notes.md") != "one\ntwo\n" {
		t.Error("a preview wrote the file")
	}

	got, err = e.preview("write_file", map[string]any{"path": "new/plan.md", "content": "hello\n"})
	if err != nil || len(got) != 1 || got[0].Action != tools.ChangeAdded || got[0].Before != nil || got[0].BeforeSHA256 != "" ||
		!strings.Contains(got[0].Diff, "--- /dev/null\n+++ b/new/plan.md\n") || !strings.Contains(got[0].Diff, "+hello\n") {
		t.Fatalf("added: %v %+v", err, got)
	}
	if e.read("new") != "" {
		t.Error("a preview made a directory")
	}

	got, err = e.preview("write_file", map[string]any{"path": "blob.bin", "content": "a\x00b"})
	if err != nil || !got[0].Binary || got[0].After != nil || !strings.Contains(got[0].Diff, "Binary files") {
		t.Errorf("binary: %v %+v", err, got)
	}

	big := strings.Repeat("x\n", tools.MaxPreviewContent)
	got, err = e.preview("write_file", map[string]any{"path": "big.txt", "content": big})
	if err != nil || !got[0].Truncated || got[0].After != nil || got[0].Diff != "" {
		t.Errorf("over MaxPreviewContent: %v %+v", err, got[0].Truncated)
	}

	// What the handler would refuse, the preview refuses the same way.
	_, err = e.preview("write_file", map[string]any{"path": "../outside/secret.txt", "content": "x"})
	_, herr := e.call("write_file", map[string]any{"path": "../outside/secret.txt", "content": "x"})
	if err == nil || herr == nil || err.Error() != herr.Error() {
		t.Errorf("outside the workspace: preview %v, handler %v", err, herr)
	}
}

func TestPreviewEdit(t *testing.T) {
	e := newEnv(t)
	e.file("a.go", "package a\n\nfunc A() {}\n")
	got, err := e.preview("edit_file", map[string]any{"path": "a.go", "oldText": "func A() {}", "newText": "func B() {}"})
	if err != nil || len(got) != 1 || got[0].Action != tools.ChangeModified || *got[0].After != "package a\n\nfunc B() {}\n" ||
		!strings.Contains(got[0].Diff, "-func A() {}\n+func B() {}\n") {
		t.Fatalf("edit: %v %+v", err, got)
	}
	_, err = e.preview("edit_file", map[string]any{"path": "a.go", "oldText": "nowhere", "newText": "x"})
	wantCode(t, err, tools.CodeInvalidArguments, "oldText not found")
	_, err = e.preview("edit_file", map[string]any{"path": "missing.go", "oldText": "x", "newText": "y"})
	_, herr := e.call("edit_file", map[string]any{"path": "missing.go", "oldText": "x", "newText": "y"})
	if err == nil || herr == nil || err.Error() != herr.Error() {
		t.Errorf("a missing file: preview %v, handler %v", err, herr)
	}
}

// reviewManager is a manager with the core file tools behind the real
// policy, which asks ask about every write.
func reviewManager(t *testing.T, e *env, ask policy.AskFunc) *tools.Manager {
	t.Helper()
	var approvers policy.Approvers
	approvers.Set(policy.Approver{Who: access.Person("editor"), Ask: ask})
	p := policy.New(policy.Rules{Tools: map[string]policy.Decision{"write_file": policy.Ask, "edit_file": policy.Ask}}, nil)
	m, err := tools.NewManager(tools.Options{Gate: p.Gate(&approvers, time.Minute, nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	for _, tl := range e.core.List() {
		if err := m.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func exec(m *tools.Manager, tool string, args any) tools.Call {
	raw, _ := json.Marshal(args)
	return m.Execute(context.Background(), tools.ExecuteRequest{ToolName: tool, Arguments: raw, Party: access.Person("cli")})
}

// TestShownIsWhatRuns: the person is asked with the change computed by
// Nexus; a file changed between the question and the answer is not
// written, whatever the answer; an unchanged one gets exactly what was
// shown.
func TestShownIsWhatRuns(t *testing.T) {
	e := newEnv(t)
	e.file("notes.md", "draft\n")
	var meddle func()
	var shown []tools.ProposedChange
	m := reviewManager(t, e, func(_ context.Context, call tools.Call, rec policy.ICERC) (policy.Answer, error) {
		shown = rec.Changes
		if len(call.ICERC.Changes) != len(shown) || len(shown) > 0 && (call.ICERC.Changes[0].After != nil || call.ICERC.Changes[0].Diff != shown[0].Diff) {
			t.Errorf("the call asked about carries %+v: the diffs, not the contents, which the record carries once", call.ICERC.Changes)
		}
		if meddle != nil {
			meddle() // the person, or anyone, changes the file while the question is open
		}
		return policy.AllowOnce, nil
	})

	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		meddle     func()
		file, want string
	}{
		{"write over an edit", "write_file", map[string]any{"path": "notes.md", "content": "agent\n"},
			func() { e.file("notes.md", "person\n") }, "notes.md", "person\n"},
		{"edit over an edit", "edit_file", map[string]any{"path": "notes.md", "oldText": "person", "newText": "agent"},
			func() { e.file("notes.md", "person\nmore\n") }, "notes.md", "person\nmore\n"},
		{"new file made meanwhile", "write_file", map[string]any{"path": "fresh.md", "content": "agent\n"},
			func() { e.file("fresh.md", "person\n") }, "fresh.md", "person\n"},
	} {
		meddle = tc.meddle
		c := exec(m, tc.tool, tc.args)
		if c.Error == nil || !strings.Contains(c.Error.Message, "changed after the person was shown the change; nothing was written") {
			t.Errorf("%s: the call should be refused: %+v", tc.name, c.Error)
		}
		if got := e.read(tc.file); got != tc.want {
			t.Errorf("%s: the file holds %q, want the person's %q", tc.name, got, tc.want)
		}
		if len(shown) != 1 || shown[0].Path != tc.file {
			t.Errorf("%s: the question carried %+v", tc.name, shown)
		}
	}

	meddle = nil
	c := exec(m, "edit_file", map[string]any{"path": "notes.md", "oldText": "more", "newText": "agent"})
	if c.Status != tools.StatusCompleted || e.read("notes.md") != *shown[0].After || *shown[0].After != "person\nagent\n" {
		t.Errorf("undisturbed: %+v, file %q, shown %+v", c.Error, e.read("notes.md"), shown)
	}
	if c.ICERC == nil || len(c.ICERC.Changes) != 1 || c.ICERC.Changes[0].After != nil || !strings.Contains(c.ICERC.Changes[0].Diff, "+agent") {
		t.Errorf("the call keeps the diff, not the contents: %+v", c.ICERC)
	}

	// A preview that fails does not stop the question: it says why.
	var details []string
	m = reviewManager(t, e, func(_ context.Context, _ tools.Call, rec policy.ICERC) (policy.Answer, error) {
		details, shown = rec.Risk.Details, rec.Changes
		return policy.AllowOnce, nil
	})
	c = exec(m, "edit_file", map[string]any{"path": "notes.md", "oldText": "absent", "newText": "x"})
	if len(shown) != 0 || !strings.Contains(strings.Join(details, "\n"), "no diff of the change can be shown: oldText not found") ||
		c.Error == nil || !strings.Contains(c.Error.Message, "oldText not found") {
		t.Errorf("failed preview: shown %+v, details %q, call %+v", shown, details, c.Error)
	}
}
