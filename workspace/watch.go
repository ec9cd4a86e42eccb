package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is the quiet time of a path before [Watch] reports it, when
// WatchOptions.Debounce is zero.
const DefaultDebounce = 100 * time.Millisecond

// watchBuffer is how many events fsnotify holds while the watcher is busy.
const watchBuffer = 4096

// maxHeldErrors is how many of fsnotify's errors are held for the event loop
// while it is busy; more are counted, not kept.
const maxHeldErrors = 16

// WatchOptions configure [Watch].
type WatchOptions struct {
	// Root is the directory watched, with every directory below it.
	Root string
	// Debounce is how long a path must stay quiet before it is reported
	// (DefaultDebounce when zero): a burst of writes is one report.
	Debounce time.Duration
	// Ignore, when set, leaves out paths (relative to Root, slash-separated)
	// and, for a directory, everything below it: temporary files, say.
	Ignore func(rel string) bool
	// OnChange receives the paths that settled, relative to Root,
	// slash-separated, sorted and each once. A directory created, removed or
	// renamed is reported as its path, and the files found in a new
	// directory as theirs.
	OnChange func(rel []string)
	// OnRescan is called, in place of OnChange, when events were lost and the
	// whole tree must be compared again. When it is nil the paths that were
	// seen are still reported.
	OnRescan func()
	// OnError receives the other errors of the watcher (logged when nil). It
	// is called from the event loop and must not block.
	OnError func(error)
	// OnReady, when set, is called once the watches are in place: what
	// changed before that was not seen (a caller compares the tree itself).
	OnReady func()
	Logger  *slog.Logger
}

// Watch watches the directory tree at opts.Root and reports the paths that
// changed once they have settled, until ctx ends. Changes made before the
// watches are in place are not reported: they are the caller's to compare.
// fsnotify watches are per directory: one is added for every directory at
// start and for every directory created later, never following symlinks.
// OnChange and OnRescan are called from one goroutine, one call at a time;
// events are gathered meanwhile, so a slow callback never holds fsnotify up.
// Watch returns an error only when watching cannot start; when ctx ends it
// waits for the callback in progress, drops the paths that had not settled,
// and returns nil.
func Watch(ctx context.Context, opts WatchOptions) error {
	w, err := newWatcher(opts)
	if err != nil {
		return err
	}
	if opts.OnReady != nil {
		opts.OnReady()
	}
	<-ctx.Done()
	if err := w.close(); err != nil {
		w.opts.OnError(err)
	}
	return nil
}

// watcher is a running Watch.
type watcher struct {
	opts  WatchOptions
	root  string
	fsw   *fsnotify.Watcher
	batch time.Duration // the least time between two flushes
	done  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once
	err   error // of closing fsw

	// Owned by the event loop.
	dirs     map[string]os.FileInfo // watched directories, relative ("" is Root), as when their watch was added
	pending  map[string]time.Time   // path → when it will have settled
	rescanAt time.Time              // zero unless events were lost
	timer    *time.Timer
	armed    bool

	// errMu guards fsnotify's errors, drained by their own goroutine.
	errMu       sync.Mutex
	errs        []error
	errsDropped int
	errOverflow bool
	errReady    chan struct{} // signalled when errs or errOverflow is set

	// outMu guards what is handed to the callback goroutine.
	outMu     sync.Mutex
	out       map[string]bool
	outRescan bool
	outReady  chan struct{} // signalled when out or outRescan is set
}

// newWatcher starts watching: when it returns, the watches are in place.
func newWatcher(opts WatchOptions) (*watcher, error) {
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.OnError == nil {
		opts.OnError = func(err error) { opts.Logger.Warn("watching files", "error", err.Error()) }
	}
	root, err := filepath.EvalSymlinks(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", opts.Root, err)
	}
	if info, err := os.Stat(root); err != nil || !info.IsDir() {
		return nil, fmt.Errorf("watch %s: not a directory", opts.Root)
	}
	fsw, err := fsnotify.NewBufferedWatcher(watchBuffer)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", opts.Root, err)
	}
	w := &watcher{
		opts:     opts,
		root:     root,
		fsw:      fsw,
		batch:    max(opts.Debounce/10, time.Millisecond),
		done:     make(chan struct{}),
		dirs:     map[string]os.FileInfo{},
		pending:  map[string]time.Time{},
		timer:    time.NewTimer(time.Hour),
		out:      map[string]bool{},
		outReady: make(chan struct{}, 1),
		errReady: make(chan struct{}, 1),
	}
	w.timer.Stop()
	// Errors are drained from the start: the first watches are added
	// before the loop runs, and an error fsnotify could not send would
	// hold them up (see drainErrors).
	w.wg.Add(1)
	go w.drainErrors()
	if err := w.addTree("", false); err != nil {
		fsw.Close()
		w.wg.Wait()
		return nil, err
	}
	w.wg.Add(2)
	go w.loop()
	go w.deliver()
	return w, nil
}

// close stops watching and waits for the callback in progress.
func (w *watcher) close() error {
	w.once.Do(func() {
		close(w.done)
		w.wg.Wait()
	})
	return w.err
}

func (w *watcher) loop() {
	defer w.wg.Done()
	defer func() { w.err = w.fsw.Close() }()
	for {
		select {
		case <-w.done:
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			w.handle(ev)
		case <-w.errReady:
			w.errMu.Lock()
			errs, dropped, overflow := w.errs, w.errsDropped, w.errOverflow
			w.errs, w.errsDropped, w.errOverflow = nil, 0, false
			w.errMu.Unlock()
			for _, err := range errs {
				w.opts.OnError(err)
			}
			if dropped > 0 {
				w.opts.OnError(fmt.Errorf("%d more errors of the watcher", dropped))
			}
			if overflow {
				if w.rescanAt.IsZero() {
					w.opts.Logger.Warn("file events were lost; the tree will be compared again", "root", w.root)
				}
				w.rescanAt = time.Now().Add(w.opts.Debounce)
				w.arm(w.opts.Debounce)
			}
		case <-w.timer.C:
			w.armed = false
			w.flush(time.Now())
		}
	}
}

// drainErrors takes fsnotify's errors as they come and hands them to the
// loop without ever waiting for it. fsnotify sends some errors while it
// holds the lock that Add and Remove take (when it drops the watch of a
// moved directory that was removed meanwhile), so a loop that read them
// itself, between its calls of Add and Remove, would wait for itself: the
// watcher stopped for good. It ends when fsnotify closes Errors, on close.
func (w *watcher) drainErrors() {
	defer w.wg.Done()
	for err := range w.fsw.Errors {
		switch {
		case errors.Is(err, syscall.EINVAL):
			// fsnotify dropping the watch of a directory that was moved,
			// when the kernel had already dropped it (the directory was
			// removed after its move): nothing was lost.
			continue
		case lostEvents(err):
			w.errMu.Lock()
			w.errOverflow = true
			w.errMu.Unlock()
		default:
			w.errMu.Lock()
			if len(w.errs) < maxHeldErrors {
				w.errs = append(w.errs, err)
			} else {
				w.errsDropped++
			}
			w.errMu.Unlock()
		}
		select {
		case w.errReady <- struct{}{}:
		default: // already signalled
		}
	}
}

func (w *watcher) handle(ev fsnotify.Event) {
	if ev.Name == w.root {
		if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			w.opts.OnError(fmt.Errorf("%s was removed or renamed; changes in it are no longer seen", w.root))
		}
		return
	}
	rel, ok := strings.CutPrefix(ev.Name, w.root+string(filepath.Separator))
	if !ok || ev.Op == fsnotify.Chmod { // a chmod alone changes no content
		return
	}
	rel = filepath.ToSlash(rel)
	if w.opts.Ignore != nil && w.opts.Ignore(rel) {
		return
	}
	if w.dirs[parent(rel)] == nil {
		// From a watch dropped since, which fsnotify had sent already: of
		// a directory moved, removed or replaced (by a symlink, say), so
		// the path it names is not where the change was.
		return
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		w.forget(rel)
	}
	if ev.Has(fsnotify.Create) {
		if info, err := os.Lstat(ev.Name); err == nil && info.IsDir() {
			if err := w.addTree(rel, true); err != nil {
				w.opts.OnError(err)
			}
		}
	}
	w.touch(rel)
}

// addTree watches the directory rel and every directory below it, never
// through a symlink. With report, it also reports every path it finds: they
// may have been created before their directory was watched. A directory
// below rel that cannot be watched is an OnError; rel itself, or reaching
// the system's limit of watches, is an error.
func (w *watcher) addTree(rel string, report bool) error {
	err := w.addDir(rel, report)
	if errors.Is(err, errSkip) {
		return nil
	}
	return err
}

// errSkip is addDir's answer for a directory not watched and not an error:
// removed or replaced since it was seen.
var errSkip = errors.New("skipped")

// addDir watches the directory rel, lists it, and goes on below it.
//
// inotify follows symlinks, in the last element of a path as in those above
// it, and fsnotify has no IN_DONT_FOLLOW. So the directory is looked at
// (lstat) before its watch is added, and after the watch is added and the
// directory listed, it and every directory above it must still be the
// directories whose watches were added. If one is not, a symlink or
// another directory took its place meanwhile: the watch may be on another
// directory (another app's, or one outside the root) and the listing its,
// so both are dropped. The replacement is an event of a watched parent,
// handled next. What this cannot see is a directory swapped and swapped
// back between the two looks.
func (w *watcher) addDir(rel string, report bool) error {
	path := w.abs(rel)
	fail := func(err error) error {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return errSkip // removed meanwhile; its removal is an event
		case errors.Is(err, syscall.ENOSPC):
			return fmt.Errorf("watch %s: %w (the limit of watches is reached; on Linux raise fs.inotify.max_user_watches)", path, err)
		}
		return fmt.Errorf("watch %s: %w", path, err)
	}
	before, err := os.Lstat(path)
	if err != nil {
		return fail(err)
	}
	if !before.IsDir() {
		return errSkip // a symlink (or a file) in its place since it was seen
	}
	// fsnotify must never be asked to add a path it holds: if the path now
	// leads to a directory it watches under another path (through a
	// symlink put in its place, or after renames), it keeps the path with
	// the watch it drops (backend_inotify.go:280-281, 137-139), and the
	// next Remove of the path dereferences nil (line 106). A path met again
	// is dropped first, with what is below it.
	if w.dirs[rel] != nil {
		w.forget(rel)
	}
	// Watch before listing: a file created from now on is an event, one
	// created before is listed.
	if err := w.fsw.Add(path); err != nil {
		return fail(err)
	}
	w.dirs[rel] = before
	entries, err := os.ReadDir(path)
	if !w.intact(rel) {
		w.forget(rel)
		return errSkip
	}
	if err != nil {
		return fail(err)
	}
	for _, e := range entries {
		r := e.Name()
		if rel != "" {
			r = rel + "/" + r
		}
		if w.opts.Ignore != nil && w.opts.Ignore(r) {
			continue
		}
		if report {
			w.touch(r)
		}
		if !e.IsDir() {
			continue // a symlink's entry is not a directory: it is not followed
		}
		switch err := w.addDir(r, report); {
		case err == nil, errors.Is(err, errSkip):
		case errors.Is(err, syscall.ENOSPC):
			return err
		default:
			w.opts.OnError(err)
		}
	}
	return nil
}

// intact reports whether rel and every directory above it are still the
// directories whose watches were added: none was removed, or replaced by a
// symlink or by another directory.
func (w *watcher) intact(rel string) bool {
	for {
		was := w.dirs[rel]
		now, err := os.Lstat(w.abs(rel))
		if was == nil || err != nil || !now.IsDir() || !os.SameFile(was, now) {
			return false
		}
		if rel == "" {
			return true
		}
		rel = parent(rel)
	}
}

// parent returns the directory of the relative path rel ("" for the root).
func parent(rel string) string {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return ""
	}
	return rel[:i]
}

// abs returns the path of rel.
func (w *watcher) abs(rel string) string {
	return filepath.Join(w.root, filepath.FromSlash(rel))
}

// forget drops the watches of rel and of the directories below it, if it
// was a directory. A removed directory loses its watch by itself, but a
// renamed one keeps it, and the watches below it would go on reporting
// the old paths.
func (w *watcher) forget(rel string) {
	if w.dirs[rel] == nil {
		return // a file, or a directory not watched, so none below it is
	}
	for d := range w.dirs {
		if within(d, rel) {
			w.fsw.Remove(w.abs(d)) // already gone when removed
			delete(w.dirs, d)
		}
	}
}

// within reports whether the relative path p is dir or below it; every path
// is within the root, "".
func within(p, dir string) bool {
	return dir == "" || p == dir || strings.HasPrefix(p, dir+"/")
}

// touch marks rel as changed now.
func (w *watcher) touch(rel string) {
	w.pending[rel] = time.Now().Add(w.opts.Debounce)
	w.arm(w.opts.Debounce)
}

// arm makes the timer fire within d. Every path settles a whole Debounce
// after its last event, so an armed timer is never late for a new one.
func (w *watcher) arm(d time.Duration) {
	if !w.armed {
		w.timer.Reset(d)
		w.armed = true
	}
}

// flush hands the paths that settled by now to the callback goroutine, and
// arms the timer for the next ones, at least batch later so that paths
// settling close together go in one call.
func (w *watcher) flush(now time.Time) {
	var due []string
	var next time.Time
	for p, at := range w.pending {
		if !at.After(now) {
			due = append(due, p)
			delete(w.pending, p)
		} else if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	rescan := false
	if !w.rescanAt.IsZero() {
		if !w.rescanAt.After(now) {
			rescan = true
			w.rescanAt = time.Time{}
			w.rewatch()
		} else if next.IsZero() || w.rescanAt.Before(next) {
			next = w.rescanAt
		}
	}
	if len(due) > 0 || rescan {
		w.outMu.Lock()
		for _, p := range due {
			w.out[p] = true
		}
		w.outRescan = w.outRescan || rescan
		w.outMu.Unlock()
		select {
		case w.outReady <- struct{}{}:
		default: // already signalled
		}
	}
	if !next.IsZero() {
		w.arm(max(next.Sub(now), w.batch))
	}
}

// rewatch watches the tree again after lost events. Which directories were
// removed, moved or replaced meanwhile is not known (a new directory may
// even have the inode number of a removed one), so every watch is dropped
// and added again: addTree drops the root's, and with it every other,
// before it adds it. The comparison of the whole tree that follows covers
// what changed in between.
func (w *watcher) rewatch() {
	if err := w.addTree("", false); err != nil {
		w.opts.OnError(err)
	}
}

// deliver calls the callbacks with what flush handed over.
func (w *watcher) deliver() {
	defer w.wg.Done()
	for {
		select {
		case <-w.done:
			return
		case <-w.outReady:
		}
		w.outMu.Lock()
		paths := slices.Sorted(maps.Keys(w.out))
		rescan := w.outRescan
		clear(w.out)
		w.outRescan = false
		w.outMu.Unlock()
		switch {
		case rescan && w.opts.OnRescan != nil:
			// The comparison of the whole tree covers the paths too: they
			// settled before it starts.
			w.opts.OnRescan()
		case len(paths) > 0 && w.opts.OnChange != nil:
			w.opts.OnChange(paths)
		}
	}
}

// lostEvents reports whether an error of fsnotify says that events were
// lost: the kernel's queue overflowed (inotify), or, on Windows, the
// ReadDirectoryChangesW buffer held less than it announced, which fsnotify
// reports with a message of its own, not ErrEventOverflow.
func lostEvents(err error) bool {
	return errors.Is(err, fsnotify.ErrEventOverflow) || strings.Contains(err.Error(), "events have likely been missed")
}
