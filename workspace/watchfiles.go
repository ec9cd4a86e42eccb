package workspace

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// FileWatchOptions configure [WatchFiles].
type FileWatchOptions struct {
	// Files are the files watched, by absolute path. They need not exist.
	Files []string
	// Debounce is how long the files must stay quiet before OnChange is
	// called: an editor's save (write, rename, chmod) is one call.
	Debounce time.Duration
	// OnChange is called once the files have settled after a change: one
	// of them was created, written, renamed or removed, or events may have
	// been lost. It is called from the watching goroutine.
	OnChange func()
	// OnError receives the watcher's errors; events may have been lost,
	// and OnChange follows. It may be nil.
	OnError func(error)
	// OnReady, when set, is called once the watches are in place.
	OnReady func()
	// Loaded, when set, is the [SnapshotFiles] of the files taken when
	// the caller read them. If they differ from it once the watches are
	// in place, OnChange is called: an edit made before the watches were
	// in place is not missed.
	Loaded string
}

// SnapshotFiles returns a digest of the contents of files, a missing or
// unreadable file counting as such: two snapshots are equal when the files
// are. Callers take one before they read the files, so that an edit made
// after it is found by comparing a later snapshot with it.
func SnapshotFiles(files []string) string {
	h := sha256.New()
	for _, f := range files {
		data, err := os.ReadFile(f)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			fmt.Fprintf(h, "%q missing\n", f)
		case err != nil:
			fmt.Fprintf(h, "%q unreadable: %v\n", f, err)
		default:
			fmt.Fprintf(h, "%q %d\n", f, len(data))
			h.Write(data)
		}
	}
	return string(h.Sum(nil))
}

// WatchFiles watches a few files, such as configuration files, and calls
// opts.OnChange when they change, until ctx ends. It watches the files'
// directories rather than the files, so that a file created later, or
// replaced by a rename as editors save, is seen; a directory that does not
// exist yet is watched once it is created in a watched directory (the
// workspace root, for .vscode/mcp.json beside .mcp.json). It returns an
// error only when watching cannot start.
func WatchFiles(ctx context.Context, opts FileWatchOptions) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	watched := map[string]bool{}
	watchDirs := func() {
		for _, f := range opts.Files {
			dir := filepath.Dir(f)
			if !watched[dir] && w.Add(dir) == nil {
				watched[dir] = true
			}
		}
	}
	// fsnotify may send an error while it holds the lock that Add and
	// Remove take (see watcher.drainErrors): its errors are read by a
	// goroutine of their own, never by the loop that calls them. It ends
	// when the watcher is closed.
	errs := make(chan error, maxHeldErrors)
	go func() {
		for err := range w.Errors {
			if errors.Is(err, syscall.EINVAL) {
				continue // a moved directory's watch the kernel had dropped already
			}
			select {
			case errs <- err:
			default: // the loop has errors to handle already, and reacts the same
			}
		}
	}()
	watchDirs()
	if opts.OnReady != nil {
		opts.OnReady()
	}
	var settle <-chan time.Time
	if opts.Loaded != "" && SnapshotFiles(opts.Files) != opts.Loaded {
		settle = time.After(0)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Has(fsnotify.Create) && !watched[ev.Name] {
				if info, err := os.Stat(ev.Name); err == nil && info.IsDir() {
					// Perhaps a directory of the files, with one already in it.
					watchDirs()
					if watched[ev.Name] {
						settle = time.After(opts.Debounce)
					}
				}
			}
			if ev.Has(fsnotify.Remove|fsnotify.Rename) && watched[ev.Name] {
				// A watched directory went, and its watch with it, and so
				// did the files in it; it is watched again if it returns.
				delete(watched, ev.Name)
				w.Remove(ev.Name)
				settle = time.After(opts.Debounce)
			}
			if slices.Contains(opts.Files, ev.Name) {
				settle = time.After(opts.Debounce)
			}
		case err := <-errs:
			if opts.OnError != nil {
				opts.OnError(err)
			}
			settle = time.After(opts.Debounce)
		case <-settle:
			settle = nil
			opts.OnChange()
		}
	}
}
