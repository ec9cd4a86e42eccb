//go:build unix

package core

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/nexuscocreate/nexus/tools"
)

// mode is the permission bits of a file of the workspace.
func (e *env) mode(rel string) fs.FileMode {
	e.t.Helper()
	fi, err := os.Stat(filepath.Join(e.ws, rel))
	if err != nil {
		e.t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestWriteDropsTheExecutableBit: write_file and edit_file never keep or
// give an executable bit, unless write_file is asked for it; a new file
// follows the umask.
func TestWriteDropsTheExecutableBit(t *testing.T) {
	umask := syscall.Umask(0o022)
	defer syscall.Umask(umask)
	e := newEnv(t)
	e.file("run.sh", "#!/bin/sh\necho old\n")
	os.Chmod(filepath.Join(e.ws, "run.sh"), 0o755)
	e.file("private.sh", "#!/bin/sh\n")
	os.Chmod(filepath.Join(e.ws, "private.sh"), 0o700)
	e.file("edit.sh", "#!/bin/sh\necho old\n")
	os.Chmod(filepath.Join(e.ws, "edit.sh"), 0o775)
	e.file("plain.txt", "x\n")
	os.Chmod(filepath.Join(e.ws, "plain.txt"), 0o640)

	e.mustCall("write_file", map[string]any{"path": "run.sh", "content": "#!/bin/sh\necho new\n"}, nil)
	e.mustCall("write_file", map[string]any{"path": "private.sh", "content": "#!/bin/sh\necho new\n"}, nil)
	e.mustCall("edit_file", map[string]any{"path": "edit.sh", "oldText": "old", "newText": "new"}, nil)
	e.mustCall("write_file", map[string]any{"path": "new.sh", "content": "#!/bin/sh\n"}, nil)
	e.mustCall("write_file", map[string]any{"path": "plain.txt", "content": "y\n", "executable": false}, nil)
	for rel, want := range map[string]fs.FileMode{"run.sh": 0o644, "private.sh": 0o600, "edit.sh": 0o664, "new.sh": 0o644, "plain.txt": 0o640} {
		if got := e.mode(rel); got != want {
			t.Errorf("%s: mode %v, want %v", rel, got, want)
		}
	}

	// Asked for: x where r is.
	e.mustCall("write_file", map[string]any{"path": "plain.txt", "content": "#!/bin/sh\n", "executable": true}, nil)
	e.mustCall("write_file", map[string]any{"path": "private.sh", "content": "#!/bin/sh\n", "executable": true}, nil)
	e.mustCall("write_file", map[string]any{"path": "bin/tool", "content": "#!/bin/sh\n", "executable": true}, nil)
	for rel, want := range map[string]fs.FileMode{"plain.txt": 0o750, "private.sh": 0o700, "bin/tool": 0o755} {
		if got := e.mode(rel); got != want {
			t.Errorf("executable %s: mode %v, want %v", rel, got, want)
		}
	}

	// The umask holds for a new file, executable or not.
	syscall.Umask(0o077)
	e.mustCall("write_file", map[string]any{"path": "masked.sh", "content": "x", "executable": true}, nil)
	e.mustCall("write_file", map[string]any{"path": "masked.txt", "content": "x"}, nil)
	for rel, want := range map[string]fs.FileMode{"masked.sh": 0o700, "masked.txt": 0o600} {
		if got := e.mode(rel); got != want {
			t.Errorf("umask 077 %s: mode %v, want %v", rel, got, want)
		}
	}

	// Definition files are kept in their history without one.
	_, err := e.call("write_file", map[string]any{"path": ".nexus/definitions/planner/run.sh", "content": "x", "executable": true})
	wantCode(t, err, tools.CodeInvalidArguments, "definitions root", "executable")
}

// TestExecutableBitThroughTheEditor: a write or an edit through the
// editor's files leaves the file on disk without an executable bit, or
// with one when asked.
func TestExecutableBitThroughTheEditor(t *testing.T) {
	e, cf, real := clientEnv(t)
	ctx := tools.WithClientFiles(context.Background(), cf)
	e.file("run.sh", "#!/bin/sh\necho old\n")
	os.Chmod(filepath.Join(e.ws, "run.sh"), 0o755)
	e.file("edit.sh", "#!/bin/sh\necho old\n")
	os.Chmod(filepath.Join(e.ws, "edit.sh"), 0o755)
	cf.files[filepath.Join(real, "edit.sh")] = "#!/bin/sh\necho old\n"
	e.file("tool", "#!/bin/sh\n")

	call := func(name string, args map[string]any) {
		t.Helper()
		if _, err := e.callWith(ctx, name, args); err != nil {
			t.Fatalf("%s %v: %v", name, args, err)
		}
	}
	call("write_file", map[string]any{"path": "run.sh", "content": "#!/bin/sh\necho new\n"})
	call("edit_file", map[string]any{"path": "edit.sh", "oldText": "old", "newText": "new"})
	call("write_file", map[string]any{"path": "tool", "content": "#!/bin/sh\n", "executable": true})
	for rel, want := range map[string]fs.FileMode{"run.sh": 0o644, "edit.sh": 0o644, "tool": 0o755} {
		if got := e.mode(rel); got != want {
			t.Errorf("%s: mode %v, want %v", rel, got, want)
		}
	}
	// A new file the editor keeps unsaved: fine, unless it was to be executable.
	call("write_file", map[string]any{"path": "unsaved.txt", "content": "x"})
	_, err := e.callWith(ctx, "write_file", map[string]any{"path": "unsaved.sh", "content": "x", "executable": true})
	wantCode(t, err, tools.CodeExecutionFailed, "has not saved it to disk")
}
