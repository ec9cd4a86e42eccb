package state

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/nexuscocreate/nexus/internal/durable"
)

// durableWrite collects temporary files that must reach the disk together:
// finish syncs them all in parallel (the file system batches the journal
// commits), renames them into place, and syncs the directories that changed.
// Until finish returns, none of the final names is guaranteed to be durable.
//
// The working files of a group of writes (lazy, and the directories of the
// root) are the exception: place and syncPlaced rename them with the rest
// but leave their syncs to the checkpointer (checkpoint.go), because the
// history the group commits is what makes the writes durable. finish syncs
// them too.
type durableWrite struct {
	files   []*os.File
	lazy    []*os.File // renamed by place, synced later
	renames []rename
	dirs    map[string]bool
	// cleanup are files that abort removes besides the renames' sources.
	cleanup []string
	// Renames and removals inside the definitions root go through the
	// descriptors of their directories (opened without following links),
	// so that they cannot land anywhere else.
	root        *os.Root
	rootRenames []dirRename
	rootRemoves []dirRemove // files to remove, then their emptied directories
	rootDirs    map[string]bool
	// open are the directories to close at the end.
	open []heldDir
}

// dirRename renames from to to in dir.
type dirRename struct {
	dir      heldDir
	from, to string
}

// dirRemove removes name from dir; path is its path in the root.
type dirRemove struct {
	dir  heldDir
	name string
	path string
}

type rename struct{ from, to string }

func newDurableWrite(root *os.Root) *durableWrite {
	return &durableWrite{dirs: map[string]bool{}, root: root, rootDirs: map[string]bool{}}
}

// merge moves o's files, renames, removals and directories to w, after
// w's own; o is empty afterwards.
func (w *durableWrite) merge(o *durableWrite) {
	w.files = append(w.files, o.files...)
	w.lazy = append(w.lazy, o.lazy...)
	w.renames = append(w.renames, o.renames...)
	w.cleanup = append(w.cleanup, o.cleanup...)
	w.rootRenames = append(w.rootRenames, o.rootRenames...)
	w.rootRemoves = append(w.rootRemoves, o.rootRemoves...)
	w.open = append(w.open, o.open...)
	for d := range o.dirs {
		w.dirs[d] = true
	}
	for d := range o.rootDirs {
		w.rootDirs[d] = true
	}
	*o = durableWrite{dirs: map[string]bool{}, root: o.root, rootDirs: map[string]bool{}}
}

// abort closes and removes every temporary file.
func (w *durableWrite) abort() {
	for _, f := range slices.Concat(w.files, w.lazy) {
		f.Close()
	}
	w.files, w.lazy = nil, nil
	for _, r := range w.renames {
		os.Remove(r.from)
	}
	for _, p := range w.cleanup {
		os.Remove(p)
	}
	for _, r := range w.rootRenames {
		r.dir.remove(r.from)
	}
	w.closeDirs()
}

func (w *durableWrite) closeDirs() {
	for _, f := range w.open {
		f.Close()
	}
	w.open = nil
}

// finish makes everything durable, the working files and their
// directories included.
func (w *durableWrite) finish() error {
	if err := w.place(); err != nil {
		return err
	}
	if err := w.syncPlaced(); err != nil {
		return err
	}
	files, dirs := w.takeLazy()
	return syncLazy(w.root, files, dirs)
}

// place syncs the temporary files (not the lazy ones) in parallel, renames
// them all into place and makes the removals: the first half of finish.
// The new names are not durable until syncPlaced has synced their
// directories, and the root's until the lazy syncs. On an error, w is
// aborted.
func (w *durableWrite) place() error {
	if err := parallel(len(w.files), func(i int) error { return w.files[i].Sync() }); err != nil {
		w.abort()
		return err
	}
	var closeErr error
	for _, f := range w.files {
		if err := f.Close(); err != nil && closeErr == nil {
			closeErr = err
		}
	}
	w.files = nil
	if closeErr != nil {
		w.abort()
		return closeErr
	}
	for _, r := range w.renames {
		if err := os.Rename(r.from, r.to); err != nil {
			w.abort()
			return err
		}
	}
	// The working files in parallel: they are distinct paths, mostly in
	// directories of their own, whose locks the kernel takes apart.
	if err := parallel(len(w.rootRenames), func(i int) error {
		r := w.rootRenames[i]
		return r.dir.rename(r.from, r.to)
	}); err != nil {
		w.abort()
		return err
	}
	for _, r := range w.rootRemoves {
		if err := r.dir.remove(r.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			w.closeDirs()
			return &os.PathError{Op: "remove", Path: r.path, Err: err}
		}
		// Remove the directories the removal emptied; the first that is not
		// empty stops it. Its parent gains a changed entry.
		for d := parentDir(r.path); d != ""; d = parentDir(d) {
			if w.removeDir(d) != nil {
				break
			}
			w.rootDirs[parentDir(d)] = true
			delete(w.rootDirs, d)
		}
	}
	return nil
}

// syncPlaced syncs, in parallel, the directories outside the root that
// place changed, and closes the directories it holds: the second half of
// finish. The root's directories are left to the lazy syncs.
func (w *durableWrite) syncPlaced() error {
	defer w.closeDirs()
	dirs := slices.Collect(maps.Keys(w.dirs))
	return parallel(len(dirs), func(i int) error { return syncDirs(dirs[i]) })
}

// takeLazy hands over the working files that place renamed and the root's
// directories that changed, for syncLazy; w no longer has them.
func (w *durableWrite) takeLazy() (files []*os.File, dirs []string) {
	files, dirs = w.lazy, slices.Collect(maps.Keys(w.rootDirs))
	w.lazy, w.rootDirs = nil, map[string]bool{}
	return files, dirs
}

// syncLazy syncs working files and directories of the root in parallel,
// and closes the files. A directory removed meanwhile needs no sync.
func syncLazy(root *os.Root, files []*os.File, dirs []string) error {
	err := parallel(len(files)+len(dirs), func(i int) error {
		if i < len(files) {
			return files[i].Sync()
		}
		if err := syncRootDir(root, dirs[i-len(files)]); !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
	for _, f := range files {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// removeDir removes the empty directory d of the root through its
// parent's descriptor.
func (w *durableWrite) removeDir(d string) error {
	parent, _, err := openDirIn(w.root, parentDir(d), false)
	if err != nil {
		return err
	}
	defer parent.Close()
	return parent.removeDir(baseName(d))
}

// parallel runs fn(0..n-1) concurrently and returns the first error.
func parallel(n int, fn func(int) error) error {
	if n == 0 {
		return nil
	}
	if n == 1 {
		return fn(0)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = fn(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// syncDirs fsyncs directories, so that the names created in them are
// durable (nothing on Windows: see package durable).
func syncDirs(dirs ...string) error {
	for _, d := range dirs {
		if err := durable.SyncDir(d); err != nil {
			return err
		}
	}
	return nil
}

func syncRootDir(root *os.Root, dir string) error {
	if dir == "" {
		dir = "."
	}
	return durable.SyncRootDir(root, dir)
}

// writeFileSync writes a file through a temporary name and renames it into
// place after syncing it.
func writeFileSync(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = durable.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
