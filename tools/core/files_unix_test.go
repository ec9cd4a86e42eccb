//go:build unix

package core

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/nexuscocreate/nexus/tools"
)

// TestReadFifo: a fifo is refused without blocking, also behind a symlink;
// a test that hung here would time out.
func TestReadFifo(t *testing.T) {
	e := newEnv(t)
	if err := syscall.Mkfifo(filepath.Join(e.ws, "pipe"), 0o644); err != nil {
		t.Skip("no fifos here:", err)
	}
	e.symlink("pipe", "pipelink")
	for _, p := range []string{"pipe", "pipelink"} {
		_, err := e.call("read_file", map[string]any{"path": p})
		wantCode(t, err, tools.CodeInvalidArguments, "not a regular file")
		_, err = e.call("edit_file", map[string]any{"path": p, "oldText": "a", "newText": "b"})
		wantCode(t, err, tools.CodeInvalidArguments, "not a regular file")
		_, err = e.call("write_file", map[string]any{"path": p, "content": "x"})
		wantCode(t, err, tools.CodeInvalidArguments, "not a regular file")
	}
	// The race guard: even opened directly, a fifo does not block.
	_, _, err := e.core.openRegular("pipe", "pipe")
	wantCode(t, err, tools.CodeInvalidArguments, "not a regular file")
	// Search and list pass it by.
	var s searchResult
	e.mustCall("search_files", map[string]any{"pattern": "x"}, &s)
	var l listResult
	e.mustCall("list_directory", map[string]any{"path": ""}, &l)
	found := false
	for _, en := range l.Entries {
		if en.Name == "pipe" {
			found = en.Type == "other"
		}
	}
	if !found {
		t.Errorf("the fifo is not listed as other: %+v", l.Entries)
	}
}
