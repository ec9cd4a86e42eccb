package workspace

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// watchFiles starts WatchFiles on files and returns a channel that gets a
// value for each OnChange.
func watchFiles(t *testing.T, loaded string, files ...string) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	changes := make(chan struct{}, 100)
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- WatchFiles(ctx, FileWatchOptions{
			Files:    files,
			Loaded:   loaded,
			Debounce: 50 * time.Millisecond,
			OnChange: func() { changes <- struct{}{} },
			OnError:  func(err error) { t.Errorf("watcher error: %v", err) },
			OnReady:  func() { close(ready) },
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("WatchFiles: %v", err)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("WatchFiles: %v", err)
	}
	return changes
}

// awaitChange waits for a change to be reported, and then for the
// reports to stop, so that the next one is the next event's.
func awaitChange(t *testing.T, changes <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-changes:
	case <-time.After(20 * time.Second):
		t.Fatalf("no change reported after %s", what)
	}
	for {
		select {
		case <-changes:
		case <-time.After(200 * time.Millisecond):
			return
		}
	}
}

// quiet checks that nothing is reported for a while after an event that
// must not be: a change reported later than that would go unseen, but one
// reported at all is a failure.
func quiet(t *testing.T, changes <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-changes:
		t.Errorf("a change was reported after %s", what)
	case <-time.After(300 * time.Millisecond):
	}
}

func TestWatchFilesSaveIsOneChange(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	writeFile(t, file, "a: 1\n")
	changes := watchFiles(t, "", file)

	// An editor's save: a temporary file written, then renamed over.
	tmp := filepath.Join(dir, ".config.yaml.swp")
	writeFile(t, tmp, "a: 2\n")
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changes:
	case <-time.After(20 * time.Second):
		t.Fatal("no change reported after a save")
	}
	quiet(t, changes, "the save was reported")

	writeFile(t, filepath.Join(dir, "other.yaml"), "b: 1\n")
	quiet(t, changes, "a write of another file in the directory")

	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	awaitChange(t, changes, "the file's removal")
}

func TestWatchFilesDirectoryCreatedLater(t *testing.T) {
	root := t.TempDir()
	vscode := filepath.Join(root, ".vscode")
	changes := watchFiles(t, "", filepath.Join(root, ".mcp.json"), filepath.Join(vscode, "mcp.json"))

	// The directory is created after the start, with the file soon in it.
	if err := os.Mkdir(vscode, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(vscode, "mcp.json"), "{}")
	awaitChange(t, changes, "a new directory with the file")
	// The new directory is watched: a later edit is seen.
	writeFile(t, filepath.Join(vscode, "mcp.json"), `{"servers": {}}`)
	awaitChange(t, changes, "an edit in the new directory")

	// Removed with its file, then created again: both are seen.
	if err := os.RemoveAll(vscode); err != nil {
		t.Fatal(err)
	}
	awaitChange(t, changes, "the directory's removal")
	if err := os.Mkdir(vscode, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(vscode, "mcp.json"), "{}")
	awaitChange(t, changes, "the directory created again")
	writeFile(t, filepath.Join(vscode, "mcp.json"), `{"servers": {}}`)
	awaitChange(t, changes, "an edit in the directory created again")
}

// An edit made after the caller read the files and before the watches
// were in place is reported once they are.
func TestWatchFilesEditBeforeTheWatch(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "new", "b.json")
	writeFile(t, a, "{}")
	loaded := SnapshotFiles([]string{a, b})
	quiet(t, watchFiles(t, loaded, a, b), "a start with the files as loaded")

	writeFile(t, b, "{}") // created, in a new directory
	awaitChange(t, watchFiles(t, loaded, a, b), "a file created before the watch")

	loaded = SnapshotFiles([]string{a, b})
	writeFile(t, a, `{"x": 1}`)
	awaitChange(t, watchFiles(t, loaded, a, b), "a file edited before the watch")
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	write(t, filepath.Dir(p), filepath.Base(p), content)
}
