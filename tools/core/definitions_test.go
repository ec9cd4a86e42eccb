package core

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools"
)

// lastCommit returns the newest history entry of a definition path.
func (e *env) lastCommit(rel string) state.HistoryEntry {
	e.t.Helper()
	h, _, err := e.defs.History(rel, 1, "")
	if err != nil {
		e.t.Fatalf("history of %s: %v", rel, err)
	}
	return h[0]
}

func TestWriteDefinitions(t *testing.T) {
	e := newEnv(t)
	const p = ".nexus/definitions/planner/plan.yaml"

	var w writeResult
	e.mustCall("write_file", map[string]any{"path": p, "content": "steps: 1\n"}, &w)
	if !w.Created || w.Revision == "" || w.BytesWritten != 9 || w.Path != p {
		t.Errorf("first write: %+v", w)
	}
	c := e.lastCommit("planner/plan.yaml")
	if c.Author != "app:planner" || c.Revision != w.Revision || strings.TrimSpace(c.Message) != "write_file "+p || c.Change != state.Added {
		t.Errorf("commit %+v; want author app:planner, revision %s, message write_file %s, added", c, w.Revision, p)
	}
	if got := e.read(p); got != "steps: 1\n" {
		t.Errorf("working file holds %q", got)
	}

	e.inv = &tools.Invocation{Author: state.AuthorEditor}
	e.mustCall("write_file", map[string]any{"path": p, "content": "steps: 2\n"}, &w)
	if w.Created || w.Revision == "" {
		t.Errorf("second write: %+v", w)
	}
	if c := e.lastCommit("planner/plan.yaml"); c.Author != "editor" || c.Revision != w.Revision {
		t.Errorf("commit %+v; want author editor", c)
	}

	// Another app may not touch it; an app granted it may.
	e.inv = &tools.Invocation{AppID: "coder", Author: state.AppAuthor("coder")}
	_, err := e.call("edit_file", map[string]any{"path": p, "oldText": "2", "newText": "3"})
	wantCode(t, err, tools.CodePermissionDenied, `app "coder" may not write "/planner/plan.yaml"`)
	e.inv = &tools.Invocation{Party: access.ForApp(&access.App{ID: "coder", Write: []string{"planner/**"}})}
	var ed editResult
	e.mustCall("edit_file", map[string]any{"path": p, "oldText": "2", "newText": "3"}, &ed)
	if ed.Revision == "" || ed.Revision == w.Revision || ed.Replacements != 1 {
		t.Errorf("edit: %+v", ed)
	}
	c = e.lastCommit("planner/plan.yaml")
	if c.Author != "app:coder" || strings.TrimSpace(c.Message) != "edit_file "+p || c.Revision != ed.Revision {
		t.Errorf("edit commit %+v", c)
	}
	f, err := e.defs.Get("planner/plan.yaml", "")
	if err != nil || string(f.Content) != "steps: 3\n" {
		t.Errorf("store holds %q, %v", f.Content, err)
	}

	// A symlink in the workspace leading into the definitions root is a
	// definition write too.
	e.symlink(".nexus/definitions", "defs")
	e.mustCall("write_file", map[string]any{"path": "defs/coder/x.md", "content": "# x\n"}, &w)
	if c := e.lastCommit("coder/x.md"); c.Author != "app:coder" || c.Revision != w.Revision {
		t.Errorf("write through a symlink: commit %+v, result %+v", c, w)
	}
	// Reads and listings of the definitions root work.
	var r readResult
	e.mustCall("read_file", map[string]any{"path": "defs/coder/x.md"}, &r)
	if r.Content != "# x\n" {
		t.Errorf("read %+v", r)
	}
	var l listResult
	e.mustCall("list_directory", map[string]any{"path": ".nexus/definitions", "recursive": true}, &l)
	var paths []string
	for _, en := range l.Entries {
		paths = append(paths, en.Path)
	}
	if strings.Join(paths, " ") != ".nexus/definitions/coder .nexus/definitions/coder/x.md .nexus/definitions/planner .nexus/definitions/planner/plan.yaml" {
		t.Errorf("listing: %v", paths)
	}
	var s searchResult
	e.mustCall("search_files", map[string]any{"path": ".nexus/definitions", "pattern": "steps"}, &s)
	if len(s.Matches) != 1 || s.Matches[0].Path != p {
		t.Errorf("search: %+v", s)
	}
}

func TestDefinitionErrors(t *testing.T) {
	e := newEnv(t)
	const p = ".nexus/definitions/planner/plan.yaml"
	e.mustCall("write_file", map[string]any{"path": p, "content": "a a\n"}, nil)
	head := e.defs.Head()

	tests := []struct {
		name string
		tool string
		args map[string]any
		inv  *tools.Invocation
		code string
		msg  string
	}{
		{"edit missing", "edit_file", map[string]any{"path": ".nexus/definitions/planner/none.yaml", "oldText": "a", "newText": "b"}, nil,
			tools.CodeInvalidArguments, "no such file"},
		{"edit not found", "edit_file", map[string]any{"path": p, "oldText": "zzz", "newText": "b"}, nil,
			tools.CodeInvalidArguments, "oldText not found"},
		{"edit ambiguous", "edit_file", map[string]any{"path": p, "oldText": "a", "newText": "b"}, nil,
			tools.CodeInvalidArguments, "occurs 2 times"},
		{"the root", "write_file", map[string]any{"path": ".nexus/definitions", "content": "x"}, &tools.Invocation{Author: "cli"},
			tools.CodeInvalidArguments, "definitions root"},
		{"another app's", "write_file", map[string]any{"path": ".nexus/definitions/coder/x.yaml", "content": "x"}, nil,
			tools.CodePermissionDenied, `app "planner" may not write "/coder/x.yaml"`},
		{"a .git name", "write_file", map[string]any{"path": ".nexus/definitions/planner/.git/config", "content": "x"}, nil,
			tools.CodeInvalidArguments, ".git"},
		{"too large", "write_file", map[string]any{"path": p, "content": strings.Repeat("x", state.DefaultMaxFileSize+1)}, nil,
			tools.CodeInvalidArguments, "too large"},
		{"no one", "write_file", map[string]any{"path": p, "content": "x"}, &tools.Invocation{},
			tools.CodePermissionDenied, "names no acting party"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.inv = &tools.Invocation{AppID: "planner", Author: "app:planner"}
			if tt.inv != nil {
				e.inv = tt.inv
			}
			_, err := e.call(tt.tool, tt.args)
			wantCode(t, err, tt.code, tt.msg)
		})
	}
	if e.defs.Head() != head {
		t.Error("a failed call committed")
	}

	// Without a store, writes under the definitions root fail; reads work.
	e2 := newEnv(t, func(c *Config) { c.Definitions = nil })
	e2.inv = &tools.Invocation{Author: "cli"}
	e2.file(".nexus/definitions/a/x.yaml", "x\n")
	_, err := e2.call("write_file", map[string]any{"path": ".nexus/definitions/a/y.yaml", "content": "y"})
	wantCode(t, err, tools.CodeExecutionFailed, "no definitions store")
	_, err = e2.call("edit_file", map[string]any{"path": ".nexus/definitions/a/x.yaml", "oldText": "x", "newText": "y"})
	wantCode(t, err, tools.CodeExecutionFailed, "no definitions store")
	e2.mustCall("read_file", map[string]any{"path": ".nexus/definitions/a/x.yaml"}, nil)
}

// TestDefinitionsElsewhere: with the definitions root outside .nexus/, in
// the workspace, writes there are definitions and .nexus/ is all private.
func TestDefinitionsElsewhere(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	defs, err := state.OpenDefinitions(state.DefinitionsOptions{
		Dir:        filepath.Join(ws, "defs"),
		HistoryDir: filepath.Join(ws, ".nexus", "history.git"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer defs.Close()
	c, err := New(Config{Workspace: ws, Definitions: defs, DefinitionsDir: filepath.Join(ws, "defs")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e := &env{t: t, ws: ws, defs: defs, core: c, byName: map[string]tools.Tool{},
		inv: &tools.Invocation{Author: state.AuthorCLI}}
	for _, tl := range c.List() {
		e.byName[tl.Name] = tl
	}
	var w writeResult
	e.mustCall("write_file", map[string]any{"path": "defs/app/a.yaml", "content": "a\n"}, &w)
	if h := e.lastCommit("app/a.yaml"); h.Author != "cli" || h.Revision != w.Revision {
		t.Errorf("commit %+v", h)
	}
	_, err = e.call("list_directory", map[string]any{"path": ".nexus"})
	wantCode(t, err, tools.CodeInvalidArguments, "which tools may not use")
}
