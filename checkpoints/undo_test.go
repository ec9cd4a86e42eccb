package checkpoints

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools"
)

func TestUndoConflictThenForce(t *testing.T) {
	e := newEnv(t, start)
	e.turn("s1", "t1")
	// A later call of another session changes one file, the person another.
	e.call(tools.Call{ID: "later", ToolName: "write_file", Session: "s2", Turn: "u1"},
		tools.Touch{Paths: []string{"new.txt"}}, agent, func() { e.write("new.txt", "rewritten later") })
	e.write("cmd.txt", "edited by the person")

	res, err := e.s.Undo(context.Background(), Selector{Session: "s1", Turn: "t1"}, person())
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("undo over changed files: %v, want a conflict", err)
	}
	if len(res.Conflicts) != 2 || res.Checkpoint != nil || len(res.Restored) != 0 {
		t.Fatalf("result: %+v", res)
	}
	reasons := map[string]string{}
	for _, c := range res.Conflicts {
		reasons[c.Path] = c.Reason
	}
	if !strings.Contains(reasons["new.txt"], "later (write_file)") || !strings.Contains(reasons["cmd.txt"], "outside the recorded calls") {
		t.Errorf("conflicts: %+v", res.Conflicts)
	}
	// Nothing was changed.
	e.want(map[string]string{"new.txt": "rewritten later", "cmd.txt": "edited by the person", "gone.txt": "<absent>"})

	o := person()
	o.Force = true
	res, err = e.s.Undo(context.Background(), Selector{Session: "s1", Turn: "t1"}, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Restored) != 5 || len(res.Conflicts) != 2 {
		t.Fatalf("forced: %+v", res)
	}
	e.want(start)
	// The redo puts back what the undo found, the person's edit included.
	if _, err := e.s.Redo(context.Background(), res.Checkpoint.ID[:10], person()); err != nil {
		t.Fatal(err)
	}
	e.want(map[string]string{"new.txt": "rewritten later", "cmd.txt": "edited by the person", "gone.txt": "<absent>"})
	// The person's edit after the redo is theirs, not the redo's.
	e.write("new.txt", "the person's again")
	res, _ = e.s.Undo(context.Background(), Selector{Call: "later"}, person())
	if len(res.Conflicts) != 1 || !strings.Contains(res.Conflicts[0].Reason, "outside the recorded calls, after redo") {
		t.Errorf("an edit after a redo: %+v", res.Conflicts)
	}
}

func TestUndoCallAndErrors(t *testing.T) {
	e := newEnv(t, start)
	e.turn("s1", "t1")
	if _, err := e.s.Undo(context.Background(), Selector{Call: "t1-e"}, person()); err != nil {
		t.Fatal(err)
	}
	e.want(map[string]string{"src/edit.go": "package src", "new.txt": "written by t1"})
	if _, err := e.s.Undo(context.Background(), Selector{Call: "t1-edit"}, person()); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "already undone") {
		t.Errorf("undo of an undone call: %v", err)
	}
	if _, err := e.s.Undo(context.Background(), Selector{Call: "t1-"}, person()); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("an ambiguous prefix: %v", err)
	}
	if _, err := e.s.Undo(context.Background(), Selector{Call: "nope"}, person()); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown id: %v", err)
	}
	if _, err := e.s.Undo(context.Background(), Selector{Session: "s9"}, person()); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown session: %v", err)
	}
}

func TestScanSkips(t *testing.T) {
	e := newEnv(t, map[string]string{".gitignore": "build/\n*.log\n!keep.log\n", "sub/.gitignore": "tmp.txt\n", "a.txt": "a"},
		func(o *Options) { o.MaxFileSize = 100 })
	e.call(tools.Call{ID: "cmd", ToolName: "execute_command", Session: "s1", Turn: "t1"}, tools.Touch{All: true}, agent, func() {
		e.write("build/out.bin", "x")
		e.write("x.log", "ignored")
		e.write("keep.log", "kept")
		e.write("sub/tmp.txt", "ignored below")
		e.write("big.txt", strings.Repeat("b", 200))
		e.write(".nexus/private", "never looked at")
		e.write(".git/HEAD", "never looked at")
		if err := os.Symlink("a.txt", filepath.Join(e.ws, "link")); err != nil {
			t.Fatal(err)
		}
	})
	cps := e.list(access.Person("cli"), Filter{})
	if len(cps) != 1 {
		t.Fatalf("checkpoints: %+v", cps)
	}
	cp := cps[0]
	if len(cp.Files) != 1 || cp.Files[0].Path != "keep.log" || cp.Files[0].Action != Added {
		t.Errorf("files: %+v", cp.Files)
	}
	skipped := map[string]string{}
	for _, s := range cp.Skipped {
		skipped[s.Path] = s.Reason
	}
	want := map[string]string{
		"build":       "ignored (.gitignore)",
		"x.log":       "ignored (.gitignore)",
		"sub/tmp.txt": "ignored (.gitignore)",
		"big.txt":     "over the size cap (checkpoints.maxFileSize, 100 bytes): 200 bytes",
		"link":        "not a regular file (a symlink)",
	}
	for p, r := range want {
		if skipped[p] != r {
			t.Errorf("skipped %s: %q, want %q", p, skipped[p], r)
		}
	}
	if len(cp.Skipped) != len(want) {
		t.Errorf("skipped: %+v", cp.Skipped)
	}

	// An unchanged workspace: no checkpoint, and no file read.
	e.call(tools.Call{ID: "cmd2", ToolName: "execute_command", Session: "s1", Turn: "t2"}, tools.Touch{All: true}, agent, func() {})
	if n := len(e.list(access.Person("cli"), Filter{})); n != 1 {
		t.Errorf("%d checkpoints after a command that changed nothing", n)
	}
}

func TestPersonNotRecorded(t *testing.T) {
	e := newEnv(t, start)
	e.call(tools.Call{ID: "mine", ToolName: "write_file"}, tools.Touch{Paths: []string{"new.txt"}}, access.Person("cli"),
		func() { e.write("new.txt", "mine") })
	if n := len(e.list(access.Person("cli"), Filter{})); n != 0 {
		t.Errorf("the person's own call made %d checkpoints", n)
	}
}

func TestDefinitionRestoredThroughHistory(t *testing.T) {
	e := newEnv(t, nil)
	if _, err := e.defs.Set("notes.md", []byte("v1"), state.WriteOptions{Author: "cli"}); err != nil {
		t.Fatal(err)
	}
	p := ".nexus/definitions/notes.md"
	e.call(tools.Call{ID: "defw", ToolName: "write_file", Session: "s1", Turn: "t1"}, tools.Touch{Paths: []string{p}}, agent, func() {
		if _, err := e.defs.Set("notes.md", []byte("v2"), state.WriteOptions{Author: "agent:s1"}); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := e.s.Undo(context.Background(), Selector{}, person()); err != nil {
		t.Fatal(err)
	}
	f, err := e.defs.Get("notes.md", "")
	if err != nil || string(f.Content) != "v1" {
		t.Fatalf("notes.md after undo: %q, %v", f.Content, err)
	}
	h, _, err := e.defs.History("notes.md", 1, "")
	if err != nil || len(h) != 1 || h[0].Author != "cli" || !strings.HasPrefix(h[0].Message, "undo ") {
		t.Errorf("the undo's commit: %+v %v", h, err)
	}
}

func TestAppSeesItsOwn(t *testing.T) {
	e := newEnv(t, start)
	a, b := access.ForApp(&access.App{ID: "a"}), access.ForApp(&access.App{ID: "b"})
	e.call(tools.Call{ID: "by-a", ToolName: "write_file"}, tools.Touch{Paths: []string{"a.txt"}}, a, func() { e.write("a.txt", "a") })
	e.call(tools.Call{ID: "by-b", ToolName: "write_file"}, tools.Touch{Paths: []string{"b.txt"}}, b, func() { e.write("b.txt", "b") })
	cps := e.list(a, Filter{})
	if len(cps) != 1 || cps[0].ID != "by-a" || cps[0].Session != "app:a" {
		t.Fatalf("app a sees %+v", cps)
	}
	if _, err := e.s.Get(a, "by-b"); !errors.Is(err, ErrNotFound) {
		t.Errorf("app a gets b's checkpoint: %v", err)
	}
	if _, err := e.s.Undo(context.Background(), Selector{Call: "by-b"}, UndoOptions{Party: a}); !errors.Is(err, ErrNotFound) {
		t.Errorf("app a undoes b's call: %v", err)
	}
	// Only the person forces an undo over what changed since.
	e.write("a.txt", "the person's")
	if _, err := e.s.Undo(context.Background(), Selector{Call: "by-a"}, UndoOptions{Party: a, Force: true}); !errors.Is(err, access.ErrDenied) {
		t.Errorf("app a forces an undo: %v", err)
	}
	e.want(map[string]string{"a.txt": "the person's"})
	e.write("a.txt", "a")
	// Its last "turn" is its last call.
	if _, err := e.s.Undo(context.Background(), Selector{}, UndoOptions{Party: a}); err != nil {
		t.Fatal(err)
	}
	e.want(map[string]string{"a.txt": "<absent>", "b.txt": "b"})
}

// TestBaselineRefresh: what the person changes between two commands is
// taken into the baseline, not recorded against the next command; a
// write_file that runs while a command runs is recorded once, by itself.
func TestBaselineRefresh(t *testing.T) {
	e := newEnv(t, start)
	e.call(tools.Call{ID: "c1", ToolName: "execute_command", Session: "s1", Turn: "t1"}, tools.Touch{All: true}, agent, func() {
		e.write("cmd.txt", "by c1")
	})
	e.write("gone.txt", "the person's edit")
	e.write("mine.txt", "the person's new file")
	var endWrite func(error)
	e.call(tools.Call{ID: "c2", ToolName: "execute_command", Session: "s1", Turn: "t2"}, tools.Touch{All: true}, agent, func() {
		e.write("cmd.txt", "by c2")
		var err error
		endWrite, err = e.s.Begin(context.Background(), tools.Call{ID: "w", ToolName: "write_file", Session: "s1", Turn: "t2"},
			tools.Touch{Paths: []string{"new.txt"}}, agent)
		if err != nil {
			t.Fatal(err)
		}
		e.write("new.txt", "by w")
	})
	endWrite(nil)
	cps := e.list(access.Person("cli"), Filter{})
	files := map[string][]string{}
	for _, cp := range cps {
		for _, f := range cp.Files {
			files[cp.ID] = append(files[cp.ID], f.Path)
		}
	}
	if len(cps) != 3 || strings.Join(files["c2"], ",") != "cmd.txt" || strings.Join(files["w"], ",") != "new.txt" {
		t.Fatalf("checkpoints: %v", files)
	}
	// A later command sees nothing of the write: the baseline has it.
	e.call(tools.Call{ID: "c3", ToolName: "execute_command", Session: "s1", Turn: "t3"}, tools.Touch{All: true}, agent, func() {})
	if n := len(e.list(access.Person("cli"), Filter{})); n != 3 {
		t.Errorf("%d checkpoints after a command that changed nothing", n)
	}
	// Undoing the turn leaves the person's files alone.
	if _, err := e.s.Undo(context.Background(), Selector{}, person()); err != nil {
		t.Fatal(err)
	}
	e.want(map[string]string{"cmd.txt": "by c1", "new.txt": "<absent>", "gone.txt": "the person's edit", "mine.txt": "the person's new file"})
}

// TestUnreadable: a file or a directory the daemon may not read is listed
// as skipped when it changes; the scan goes on.
func TestUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every file")
	}
	e := newEnv(t, start)
	e.call(tools.Call{ID: "c1", ToolName: "execute_command", Session: "s1", Turn: "t1"}, tools.Touch{All: true}, agent, func() {
		e.write("secret/key", "k")
		e.write("locked.txt", "l")
		e.write("cmd.txt", "by c1")
		if err := os.Chmod(filepath.Join(e.ws, "secret"), 0o000); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(e.ws, "locked.txt"), 0o000); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { os.Chmod(filepath.Join(e.ws, "secret"), 0o755) })
	cp := e.list(access.Person("cli"), Filter{})[0]
	skipped := map[string]string{}
	for _, s := range cp.Skipped {
		skipped[s.Path] = s.Reason
	}
	if len(cp.Files) != 1 || skipped["secret"] != "not a regular file (a directory Nexus may not read)" ||
		skipped["locked.txt"] != "not a regular file (a file Nexus may not read)" {
		t.Errorf("files %+v, skipped %v", cp.Files, skipped)
	}
}

func TestMaxFiles(t *testing.T) {
	e := newEnv(t, start, func(o *Options) { o.MaxFiles = 2 })
	e.call(tools.Call{ID: "c1", ToolName: "execute_command", Session: "s1", Turn: "t1"}, tools.Touch{All: true}, agent, func() {
		e.write("cmd.txt", "by c1")
	})
	cps := e.list(access.Person("cli"), Filter{})
	if len(cps) != 1 || len(cps[0].Files) != 0 || len(cps[0].Skipped) != 1 ||
		cps[0].Skipped[0].Reason != "the workspace has more than 2 files (checkpoints.maxFiles): a command's changes are not compared" {
		t.Fatalf("checkpoints: %+v", cps)
	}
}

func TestExecutableBitRestored(t *testing.T) {
	e := newEnv(t, map[string]string{"run.sh": "#!/bin/sh\n"})
	if err := os.Chmod(filepath.Join(e.ws, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.call(tools.Call{ID: "c1", ToolName: "execute_command", Session: "s1", Turn: "t1"}, tools.Touch{All: true}, agent, func() {
		if err := os.Chmod(filepath.Join(e.ws, "run.sh"), 0o644); err != nil {
			t.Fatal(err)
		}
		e.write("run.sh", "#!/bin/sh\necho changed\n")
	})
	if _, err := e.s.Undo(context.Background(), Selector{}, person()); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(e.ws, "run.sh"))
	if err != nil || info.Mode().Perm() != 0o755 {
		t.Errorf("run.sh after undo: %v %v", info.Mode(), err)
	}
	e.want(map[string]string{"run.sh": "#!/bin/sh\n"})
}

// TestWatchedBetweenCommands: where a command's Begin skips its scan
// (nothing changed since the last, as inotify says), what the person
// changes in a directory the last command made is still the person's.
func TestWatchedBetweenCommands(t *testing.T) {
	e := newEnv(t, start)
	cmd := func(id string, fn func()) {
		e.call(tools.Call{ID: id, ToolName: "execute_command", Session: "s1", Turn: id}, tools.Touch{All: true}, agent, fn)
	}
	cmd("c1", func() { e.write("made/a.txt", "by c1") })
	e.write("made/b.txt", "the person's")
	e.write("src/edit.go", "the person's edit")
	cmd("c2", func() { e.write("cmd.txt", "by c2") })
	cmd("c3", func() {})
	e.write("made/a.txt", "the person's again")
	cmd("c4", func() { e.write("cmd.txt", "by c4") })
	for _, cp := range e.list(access.Person("cli"), Filter{}) {
		if cp.ID == "c1" {
			continue
		}
		if len(cp.Files) != 1 || cp.Files[0].Path != "cmd.txt" {
			t.Errorf("%s recorded %+v", cp.ID, cp.Files)
		}
	}
}

// TestPathThroughSymlink: a named path through a symlink is listed as
// skipped, its target never read nor restored.
func TestPathThroughSymlink(t *testing.T) {
	outside := t.TempDir()
	e := newEnv(t, nil)
	if err := os.Symlink(outside, filepath.Join(e.ws, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "f.txt"), filepath.Join(e.ws, "f.txt")); err != nil {
		t.Fatal(err)
	}
	e.call(tools.Call{ID: "w", ToolName: "write_file", Session: "s1", Turn: "t1"}, tools.Touch{Paths: []string{"out/x.txt", "f.txt"}}, agent, func() {
		if err := os.WriteFile(filepath.Join(outside, "x.txt"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(outside, "f.txt"), []byte("f"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	// Nothing the call could see changed (the links are as they were).
	if cps := e.list(access.Person("cli"), Filter{}); len(cps) != 0 {
		t.Errorf("checkpoints: %+v", cps)
	}
	st, err := e.s.readPath("out/x.txt")
	if err != nil || st.skip != "not a regular file (under the symlink out)" {
		t.Errorf("out/x.txt: %+v %v", st, err)
	}
	st, err = e.s.readPath("f.txt")
	if err != nil || st.skip != "not a regular file (a symlink)" {
		t.Errorf("f.txt: %+v %v", st, err)
	}
}

// TestUndoNeverThroughSymlink: a directory a checkpoint's file was in that
// is a symlink now (here, made by a later command, into .nexus/) is a
// conflict that even a forced undo leaves alone: nothing is written or
// removed through it.
func TestUndoNeverThroughSymlink(t *testing.T) {
	e := newEnv(t, nil)
	e.call(tools.Call{ID: "add", ToolName: "write_file", Session: "s1", Turn: "t1"},
		tools.Touch{Paths: []string{"d/x.txt"}}, agent, func() { e.write("d/x.txt", "added") })
	if err := os.RemoveAll(filepath.Join(e.ws, "d")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".nexus", filepath.Join(e.ws, "d")); err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(e.ws, ".nexus", "x.txt")
	if err := os.WriteFile(kept, []byte("the daemon's"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := person()
	o.Force = true
	res, err := e.s.Undo(context.Background(), Selector{Call: "add"}, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Conflicts) != 1 || !strings.Contains(res.Conflicts[0].Reason, "cannot be restored through a symlink") || len(res.Restored) != 0 {
		t.Errorf("a forced undo through a symlink: %+v", res)
	}
	if b, err := os.ReadFile(kept); err != nil || string(b) != "the daemon's" {
		t.Errorf(".nexus/x.txt after the undo: %q %v", b, err)
	}
}
