package state

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// reconcileDisk commits, authored "disk", what changed under the root while
// no daemon was running, and removes the temporary files of writes that never
// finished. It runs during open, before the store serves.
func (s *Definitions) reconcileDisk() error {
	onDisk := map[string]diskFile{}
	if err := s.scanDisk("", onDisk, true); err != nil {
		return fmt.Errorf("scan definitions root: %w", err)
	}
	if err := s.recoverWorkingFiles(onDisk); err != nil {
		return err
	}
	s.stats.keepOnly(onDisk)
	if err := s.record([]string{""}, onDisk, syncOpen); err != nil {
		return err
	}
	// Sizes of the files that were not written: from disk when unchanged
	// there, from their blobs otherwise.
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, f := range s.files {
		if f.size >= 0 {
			continue
		}
		if d, ok := onDisk[p]; ok && d.blob == f.blob {
			f.size = d.size
		} else if data, err := s.repo.readBlob(f.blob); err == nil {
			f.size = int64(len(data))
		}
		s.files[p] = f
	}
	return nil
}

// SyncFromDisk records edits made on disk while the store serves, as a file
// watcher reports them: paths are relative to the definitions root,
// slash-separated. Each file whose content on disk differs from HEAD is one
// commit authored [AuthorDisk], and each file in HEAD that is gone from disk
// is one deletion. A path that is a directory, on disk or in HEAD, stands for
// every file below it, so a directory created, removed or moved is recorded
// whole. Content equal to HEAD is no change: the store's own writes, seen on
// disk, are not recorded twice.
//
// Unusable names, entries that are not regular files (a symlink counts as
// absent), files over the size limit and content that is not UTF-8 text are
// logged and skipped; a path that cannot be read does not stop the others,
// and the errors are joined.
func (s *Definitions) SyncFromDisk(paths []string) error {
	onDisk := map[string]diskFile{}
	var tops []string
	var errs []error
	for _, p := range paths {
		if _, err := CleanPath(p); err != nil {
			s.logger.Warn("ignoring a change on disk with an unusable name", "path", p, "reason", err.Error())
			continue
		}
		if err := s.scanDisk(p, onDisk, false); err != nil {
			errs = append(errs, fmt.Errorf("definition %q on disk: %w", p, err))
			continue
		}
		tops = append(tops, p)
	}
	return errors.Join(append(errs, s.record(tops, onDisk, syncWatch))...)
}

// Rescan compares the whole definitions root with HEAD and records every
// difference as [Definitions.SyncFromDisk] does. It is for when edits may
// have been missed, as when a file watcher lost events, and is safe to call
// while the store serves.
func (s *Definitions) Rescan() error {
	onDisk := map[string]diskFile{}
	if err := s.scanDisk("", onDisk, false); err != nil {
		return fmt.Errorf("scan definitions root: %w", err)
	}
	s.stats.keepOnly(onDisk)
	return s.record([]string{""}, onDisk, syncRescan)
}

// IsTempName reports whether a path relative to the definitions root
// (slash-separated) is one of the store's temporary files or below one: a
// file watcher ignores them, as SyncFromDisk does.
func IsTempName(rel string) bool {
	for c := range strings.SplitSeq(rel, "/") {
		if strings.HasPrefix(c, tmpPrefix) {
			return true
		}
	}
	return false
}

// syncReason is why the disk is compared with HEAD; it words the commits.
type syncReason int

const (
	syncOpen   syncReason = iota // at open, for what changed while stopped
	syncWatch                    // a watcher saw the paths change
	syncRescan                   // the whole tree, after lost events
)

// message is the commit message of a change found on disk; verb is
// "created", "edited" or "deleted".
func (r syncReason) message(verb, path string) string {
	switch r {
	case syncOpen:
		return "disk: " + path + " changed while nexusd was not running"
	case syncRescan:
		return "disk: " + verb + " " + path + " (found by a rescan)"
	}
	return "disk: " + verb + " " + path
}

// diskFile is a definition file as a scan found it on disk. The blob is zero
// for a file over the size limit, which is not read.
type diskFile struct {
	blob plumbing.Hash
	size int64
}

// scanDisk adds to onDisk the files at or below top ("" for the root) as
// they are on disk, without following symlinks. Temporary names are skipped
// (removed with removeDebris, when no write can be in progress) and unusable
// names are logged and skipped. A file or directory that disappears during
// the scan is absent.
func (s *Definitions) scanDisk(top string, onDisk map[string]diskFile, removeDebris bool) error {
	start := "."
	if top != "" {
		if ok, err := s.realDirOnDisk(parentDir(top)); err != nil || !ok {
			return err
		}
		seen := time.Now()
		info, err := s.root.Lstat(top)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if !info.IsDir() {
			return s.scanFile(top, info, seen, onDisk)
		}
		start = top
	}
	return fs.WalkDir(s.root.FS(), start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while scanning
			}
			return err
		}
		if p == "." {
			return nil
		}
		skip := func() error {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(d.Name(), tmpPrefix) {
			if removeDebris {
				s.root.RemoveAll(p) // debris of a write that never finished
			}
			return skip()
		}
		if _, perr := CleanPath(p); perr != nil {
			s.logger.Warn("ignoring a definition file with an unusable name", "path", p, "reason", perr.Error())
			return skip()
		}
		if d.IsDir() {
			return nil
		}
		seen := time.Now()
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		return s.scanFile(p, info, seen, onDisk)
	})
}

// scanFile adds a file to onDisk, given its lstat info taken at seen: its
// blob id is the stat cache's when the stat vouches for it, else the file
// is read.
func (s *Definitions) scanFile(p string, info fs.FileInfo, seen time.Time, onDisk map[string]diskFile) error {
	if !info.Mode().IsRegular() {
		s.logger.Warn("ignoring a definitions entry that is not a regular file", "path", p, "type", info.Mode().Type().String())
		return nil
	}
	if n, ok := linkCount(info); info.Size() > s.opts.MaxFileSize || (ok && n > 1) {
		onDisk[p] = diskFile{size: info.Size()} // refused, with a warning, when recorded
		return nil
	}
	key, keyed := statKeyOf(info)
	if keyed {
		if blob, ok := s.stats.lookup(p, key); ok {
			onDisk[p] = diskFile{blob: blob, size: info.Size()}
			return nil
		}
	}
	data, err := s.root.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	f := diskFile{blob: blobHash(data), size: int64(len(data))}
	if keyed {
		s.stats.store(p, key, seen, f.blob)
	}
	onDisk[p] = f
	return nil
}

// saveStats writes the stat cache for the next open, when it changed.
func (s *Definitions) saveStats() {
	if err := s.stats.save(); err != nil {
		s.logger.Warn("the stat cache of the definitions root was not saved: the next start reads every file", "error", err.Error())
	}
}

// realDirOnDisk reports whether every component of dir is a directory on
// disk, none a symlink.
func (s *Definitions) realDirOnDisk(dir string) (bool, error) {
	var walked string
	for _, d := range splitDirs(dir) {
		walked = joinPath(walked, d)
		info, err := s.root.Lstat(walked)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if !info.IsDir() {
			return false, nil
		}
	}
	return true, nil
}

// record commits the differences between the files a scan found on disk and
// HEAD, at or below the scanned tops: deletions first, so that a file can
// take the place of a directory and the other way round. Each path is read
// again, and compared, by the committer (see syncOp), so a write of the
// store in progress finishes first.
func (s *Definitions) record(tops []string, onDisk map[string]diskFile, why syncReason) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	var present []string
	for p, f := range onDisk {
		if cur, ok := s.files[p]; !ok || cur.blob != f.blob {
			present = append(present, p)
		}
	}
	gone := map[string]bool{}
	for _, top := range tops {
		if _, isDir := s.trees[top]; isDir {
			for p := range s.files {
				if _, ok := onDisk[p]; !ok && underDir(p, top) {
					gone[p] = true
				}
			}
		} else if _, ok := s.files[top]; ok {
			if _, ok := onDisk[top]; !ok {
				gone[top] = true
			}
		}
	}
	s.mu.RUnlock()
	sort.Strings(present)
	order := append(slices.Sorted(maps.Keys(gone)), present...)

	// Queued together, so that they share the committer's rounds.
	ops := make([]*writeOp, len(order))
	for i, p := range order {
		ops[i] = s.syncOp(p, why)
		s.enqueue(ops[i])
	}
	var errs []error
	closed := false
	for i, op := range ops {
		<-op.done
		switch err := op.err; {
		case err == nil:
		case errors.Is(err, ErrClosed):
			closed = true
		case errors.Is(err, ErrInvalid), errors.Is(err, ErrTooLarge):
			s.logger.Warn("cannot record a change made on disk", "path", order[i], "reason", err.Error())
		default:
			errs = append(errs, err)
		}
	}
	if closed {
		return ErrClosed
	}
	return errors.Join(errs...)
}

// syncOp is the write that commits path as it is on disk when the
// committer comes to it, if that differs from HEAD. The committer reads the
// file between groups, when no write of the store is under way on disk.
func (s *Definitions) syncOp(path string, why syncReason) *writeOp {
	return &writeOp{path: path, w: WriteOptions{Author: AuthorDisk}, plan: func(d *draft, w *WriteOptions) (commitOptions, error) {
		content, present, err := s.readDisk(path)
		if err != nil {
			return commitOptions{}, err
		}
		_, tracked := d.file(path)
		verb := "edited"
		switch {
		case !present && !tracked:
			return commitOptions{}, errNoChange
		case !present:
			verb = "deleted"
		case !tracked:
			verb = "created"
		}
		if present {
			if err := s.checkContent(path, content); err != nil {
				return commitOptions{}, err
			}
		}
		w.Message = why.message(verb, path)
		return commitOptions{content: content, delete: !present, fromDisk: true}, nil
	}}
}

// readDisk reads a definition file from disk. It is absent when missing, not
// a regular file, or below a symlink or a file. It is read through the
// descriptor of its directory, opened without following links (see
// openDir). A file with more than one hard link is refused: its other name
// may be anywhere, a token in .nexus/run included.
func (s *Definitions) readDisk(path string) ([]byte, bool, error) {
	d, _, err := s.openDir(parentDir(path), false)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrInvalid) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("definition %q on disk: %w", path, err)
	}
	defer d.Close()
	f, err := d.openRegular(baseName(path))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("definition %q on disk: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("definition %q on disk: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return nil, false, nil
	}
	if err := singleLink(path, f, info); err != nil {
		return nil, false, err
	}
	if info.Size() > s.opts.MaxFileSize {
		return nil, false, fmt.Errorf("definition %q: %w: the file on disk is %d bytes, over the limit of %d (definitions.maxFileSize)",
			path, ErrTooLarge, info.Size(), s.opts.MaxFileSize)
	}
	data, err := io.ReadAll(io.LimitReader(f, s.opts.MaxFileSize+1))
	if err != nil {
		return nil, false, fmt.Errorf("definition %q on disk: %w", path, err)
	}
	return data, true, nil
}

// singleLink refuses a file with more than one hard link.
func singleLink(path string, f *os.File, info fs.FileInfo) error {
	if n, ok := openLinkCount(f, info); ok && n > 1 {
		return fmt.Errorf("%w: definition %q on disk has %d hard links; files with more than one are not recorded, since their other names may lie anywhere", ErrInvalid, path, n)
	}
	return nil
}
