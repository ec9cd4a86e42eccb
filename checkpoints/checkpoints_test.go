package checkpoints

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools"
)

type env struct {
	t    testing.TB
	ws   string
	defs *state.Definitions
	s    *Store
	opts Options
}

func newEnv(t testing.TB, files map[string]string, configure ...func(*Options)) *env {
	t.Helper()
	ws := t.TempDir()
	e := &env{t: t, ws: ws}
	for p, c := range files {
		e.write(p, c)
	}
	e.open(configure...)
	return e
}

func (e *env) open(configure ...func(*Options)) {
	e.t.Helper()
	defs, err := state.OpenDefinitions(state.DefinitionsOptions{Dir: filepath.Join(e.ws, ".nexus", "definitions"),
		HistoryDir: filepath.Join(e.ws, ".nexus", "history.git")})
	if err != nil {
		e.t.Fatal(err)
	}
	e.opts = Options{Workspace: e.ws, Definitions: defs}
	for _, c := range configure {
		c(&e.opts)
	}
	s, err := Open(e.opts)
	if err != nil {
		defs.Close()
		e.t.Fatal(err)
	}
	e.defs, e.s = defs, s
	e.t.Cleanup(e.close)
}

func (e *env) close() {
	if e.s == nil {
		return
	}
	if err := e.s.Close(); err != nil {
		e.t.Error(err)
	}
	if err := e.defs.Close(); err != nil {
		e.t.Error(err)
	}
	e.s, e.defs = nil, nil
}

func (e *env) reopen() {
	e.close()
	e.open()
}

func (e *env) write(p, content string) {
	e.t.Helper()
	full := filepath.Join(e.ws, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) remove(p string) {
	e.t.Helper()
	if err := os.Remove(filepath.Join(e.ws, filepath.FromSlash(p))); err != nil {
		e.t.Fatal(err)
	}
}

// read returns a file's content, "<absent>" when it is missing.
func (e *env) read(p string) string {
	e.t.Helper()
	data, err := os.ReadFile(filepath.Join(e.ws, filepath.FromSlash(p)))
	if errors.Is(err, os.ErrNotExist) {
		return "<absent>"
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return string(data)
}

func (e *env) want(files map[string]string) {
	e.t.Helper()
	for p, c := range files {
		if got := e.read(p); got != c {
			e.t.Errorf("%s holds %q, want %q", p, got, c)
		}
	}
}

var agent = access.Person("editor").Agent("s1")

// call runs fn as a call that touches what touch says.
func (e *env) call(c tools.Call, touch tools.Touch, party access.Party, fn func()) {
	e.t.Helper()
	end, err := e.s.Begin(context.Background(), c, touch, party)
	if err != nil {
		e.t.Fatal(err)
	}
	fn()
	if end != nil {
		end(nil)
	}
}

func (e *env) list(party access.Party, f Filter) []Checkpoint {
	e.t.Helper()
	cps, err := e.s.List(party, f)
	if err != nil {
		e.t.Fatal(err)
	}
	return cps
}

func person() UndoOptions { return UndoOptions{Party: access.Person("cli")} }

// turn is one agent turn: a write, an edit, and a command that changes a
// third file, deletes a fourth and adds a fifth.
func (e *env) turn(session, turn string) {
	e.call(tools.Call{ID: turn + "-write", ToolName: "write_file", Session: session, Turn: turn},
		tools.Touch{Paths: []string{"new.txt"}}, agent, func() { e.write("new.txt", "written by "+turn) })
	e.call(tools.Call{ID: turn + "-edit", ToolName: "edit_file", Session: session, Turn: turn},
		tools.Touch{Paths: []string{"src/edit.go"}}, agent, func() { e.write("src/edit.go", "package src // edited in "+turn) })
	e.call(tools.Call{ID: turn + "-cmd", ToolName: "execute_command", Session: session, Turn: turn},
		tools.Touch{All: true}, agent, func() {
			e.write("cmd.txt", "changed by the command of "+turn)
			e.remove("gone.txt")
			e.write("out/made.txt", "made")
		})
}

var start = map[string]string{"src/edit.go": "package src", "cmd.txt": "before", "gone.txt": "to be deleted"}

func TestUndoTurnRedo(t *testing.T) {
	e := newEnv(t, start)
	e.turn("s1", "t1")
	e.want(map[string]string{"new.txt": "written by t1", "gone.txt": "<absent>", "out/made.txt": "made"})

	cps := e.list(access.Person("cli"), Filter{})
	if len(cps) != 3 {
		t.Fatalf("%d checkpoints, want 3: %+v", len(cps), cps)
	}
	cmd := cps[0]
	if cmd.ID != "t1-cmd" || cmd.Session != "s1" || cmd.Turn != "t1" || cmd.Author != "agent:s1" || len(cmd.Files) != 3 {
		t.Fatalf("the command's checkpoint: %+v", cmd)
	}
	actions := map[string]string{}
	for _, f := range cmd.Files {
		actions[f.Path] = f.Action
	}
	if actions["cmd.txt"] != Modified || actions["gone.txt"] != Deleted || actions["out/made.txt"] != Added {
		t.Errorf("the command's files: %+v", cmd.Files)
	}
	diffs, err := e.s.Diff(access.Person("cli"), "t1-edit")
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) != 1 || string(diffs[0].Before) != "package src" || diffs[0].Unified == "" {
		t.Errorf("diff of the edit: %+v", diffs)
	}

	res, err := e.s.Undo(context.Background(), Selector{}, person())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Undone) != 3 || len(res.Restored) != 5 || res.Checkpoint == nil || res.Checkpoint.Kind != KindUndo {
		t.Fatalf("undo: %+v", res)
	}
	e.want(start)
	e.want(map[string]string{"new.txt": "<absent>", "out/made.txt": "<absent>"})
	if _, err := os.Stat(filepath.Join(e.ws, "out")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the directory the command made is still there: %v", err)
	}
	for _, cp := range e.list(access.Person("cli"), Filter{Session: "s1", Turn: "t1"}) {
		if cp.Kind == KindCall && cp.UndoneBy != res.Checkpoint.ID {
			t.Errorf("%s is not marked undone: %+v", cp.ID, cp)
		}
	}
	if _, err := e.s.Undo(context.Background(), Selector{}, person()); !errors.Is(err, ErrNotFound) {
		t.Errorf("a second undo: %v, want nothing to undo", err)
	}

	if _, err := e.s.Redo(context.Background(), "", person()); err != nil {
		t.Fatal(err)
	}
	e.want(map[string]string{"new.txt": "written by t1", "gone.txt": "<absent>", "out/made.txt": "made",
		"cmd.txt": "changed by the command of t1", "src/edit.go": "package src // edited in t1"})

	// The undo and the redo are themselves recorded, and survive a reopen.
	e.reopen()
	cps = e.list(access.Person("cli"), Filter{})
	if len(cps) != 5 || cps[0].Kind != KindRedo || cps[1].Kind != KindUndo {
		t.Fatalf("after reopen: %+v", cps)
	}
	for _, cp := range cps[2:] {
		if cp.UndoneBy != "" {
			t.Errorf("%s is undone after its redo: %+v", cp.ID, cp)
		}
	}
	// Undo again after the reopen: the baseline was saved.
	if _, err := e.s.Undo(context.Background(), Selector{Session: "s1"}, person()); err != nil {
		t.Fatal(err)
	}
	e.want(start)
}

// TestCallDiff: a call's diff by its whole id, its first files and how
// many more; none for a call that changed nothing, a prefix, an undo's
// id, or an app that is not the call's.
func TestCallDiff(t *testing.T) {
	e := newEnv(t, start)
	e.turn("s1", "t1")
	e.call(tools.Call{ID: "t1-same", ToolName: "write_file", Session: "s1", Turn: "t1"},
		tools.Touch{Paths: []string{"new.txt"}}, agent, func() { e.write("new.txt", "written by t1") })
	diffs, more, err := e.s.CallDiff(agent, "t1-cmd", DiffLimits{Files: 2})
	if err != nil || len(diffs) != 2 || more != 1 || diffs[0].Unified == "" {
		t.Fatalf("CallDiff(t1-cmd, 2) = %+v, %d, %v", diffs, more, err)
	}
	if diffs, more, err := e.s.CallDiff(agent, "t1-edit", DiffLimits{Content: 10}); err != nil || len(diffs) != 1 || more != 0 ||
		string(diffs[0].Before) != "package src" || diffs[0].Unified != "" {
		t.Errorf("CallDiff(t1-edit), content over 10 bytes: %+v, %d, %v (want its contents, no diff)", diffs, more, err)
	}
	res, err := e.s.Undo(context.Background(), Selector{}, person())
	if err != nil {
		t.Fatal(err)
	}
	app := access.ForApp(&access.App{ID: "a"})
	for _, c := range []struct {
		party access.Party
		id    string
	}{{agent, "t1-same"}, {agent, "t1-ed"}, {agent, res.Checkpoint.ID}, {app, "t1-edit"}} {
		if _, _, err := e.s.CallDiff(c.party, c.id, DiffLimits{}); !errors.Is(err, ErrNotFound) {
			t.Errorf("CallDiff(%s, %s) = %v, want ErrNotFound", c.party.Author(), c.id, err)
		}
	}
}
