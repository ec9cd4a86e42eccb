// Package state stores definition files with their git history and runtime
// values with their TTLs, and publishes every change on the event bus. Start
// with [OpenDefinitions], and for runtime values the [Runtime] interface:
// [OpenRuntime] (bbolt) or [OpenRedisRuntime] (a shared Redis).
package state

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"golang.org/x/sys/unix"

	"github.com/nexuscocreate/nexus/events"
)

// Authors of commits that do not come from an app.
const (
	AuthorCLI    = "cli"
	AuthorEditor = "editor"
	AuthorDisk   = "disk"
)

// AppAuthor is the commit author of writes by an app.
func AppAuthor(appID string) string { return "app:" + appID }

const authorEmail = "nexus@localhost"

// DefaultMaxFileSize is the largest definition file accepted by default.
const DefaultMaxFileSize = 10 << 20

// ExpectAbsent, as an expected revision, makes a write succeed only when the
// path does not exist.
const ExpectAbsent = "none"

// DefinitionsOptions configure OpenDefinitions. Zero values get defaults.
type DefinitionsOptions struct {
	// Dir is the definitions root; HistoryDir the bare repository. Both are
	// created when missing.
	Dir, HistoryDir string
	// IndexFile is the per-path history index; default
	// HistoryDir/nexus-history.idx.
	IndexFile   string
	Bus         *events.Bus
	MaxFileSize int64
	Logger      *slog.Logger
	Now         func() time.Time
}

// DefinitionChange is published on the bus for every commit, once per path.
type DefinitionChange struct {
	Path     string
	Revision string
	Author   string
	Change   ChangeType
	Message  string
	Time     time.Time
}

// WriteOptions describe who writes and under which condition.
type WriteOptions struct {
	// Author is AppAuthor(id), AuthorCLI, AuthorEditor or AuthorDisk.
	Author string
	// Message is the commit message; a default naming the change is used
	// when it is empty.
	Message string
	// ExpectedRevision, when set, makes the write a compare-and-swap against
	// the path's current revision (or ExpectAbsent).
	ExpectedRevision string
}

// File is the content of a definition file at a revision.
type File struct {
	Content []byte
	// Revision is the commit that last changed the path.
	Revision string
}

// Entry is one entry of a directory listing.
type Entry struct {
	Name string
	Path string
	Dir  bool
	Size int64
}

// HistoryEntry is one commit that changed a path.
type HistoryEntry struct {
	Revision string
	Author   string
	Message  string
	Time     time.Time
	Change   ChangeType
}

type fileState struct {
	blob plumbing.Hash
	size int64
	rev  plumbing.Hash
}

// Definitions is the store of definition files. Every write is one commit,
// durable before it is acknowledged; reads never block on writes.
type Definitions struct {
	dir    string
	root   *os.Root
	repo   *repo
	opts   DefinitionsOptions
	logger *slog.Logger

	// writeMu makes writes one at a time; it is held for a whole write.
	writeMu sync.Mutex

	// mu guards the snapshot of HEAD below.
	mu     sync.RWMutex
	closed bool
	head   plumbing.Hash
	files  map[string]fileState
	trees  map[string][]object.TreeEntry // directory → entries, in git order
	index  *historyIndex

	// stats spares scans the reading of files that did not change.
	stats     *statCache
	firstSave sync.WaitGroup // the stat cache's save after the open
}

// OpenDefinitions opens (or creates) the store. It recovers from a torn
// previous run, checks the history index against the repository, and commits
// as "disk" the files that changed on disk while no daemon was running.
func OpenDefinitions(opts DefinitionsOptions) (*Definitions, error) {
	if opts.MaxFileSize <= 0 {
		opts.MaxFileSize = DefaultMaxFileSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.IndexFile == "" {
		opts.IndexFile = filepath.Join(opts.HistoryDir, "nexus-history.idx")
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("definitions root: %w", err)
	}
	root, err := os.OpenRoot(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("definitions root: %w", err)
	}
	r, err := openRepo(opts.HistoryDir)
	if err != nil {
		root.Close()
		return nil, err
	}
	s := &Definitions{dir: opts.Dir, root: root, repo: r, opts: opts, logger: opts.Logger,
		stats: newStatCache(filepath.Join(opts.HistoryDir, "nexus-stat.cache"))}
	if err := s.load(); err != nil {
		r.close()
		root.Close()
		return nil, err
	}
	s.firstSave.Go(s.saveStats)
	return s, nil
}

func (s *Definitions) load() error {
	s.index = newHistoryIndex(s.opts.IndexFile)
	rewrite, err := s.index.load()
	if err != nil {
		return fmt.Errorf("history index: %w", err)
	}
	head, err := s.recoverHead()
	if err != nil {
		return err
	}
	caught, err := s.index.catchUp(s.repo, head)
	if err != nil {
		return err
	}
	if rewrite || caught {
		if err := s.index.rewriteFile(); err != nil {
			return fmt.Errorf("history index: %w", err)
		}
	}
	s.head = head
	s.files = map[string]fileState{}
	s.trees = map[string][]object.TreeEntry{"": nil}
	if !head.IsZero() {
		c, err := s.repo.readCommit(head)
		if err != nil {
			return err
		}
		if err := s.loadTree(c.TreeHash, ""); err != nil {
			return err
		}
	}
	for p, ps := range s.index.byPath {
		if f, ok := s.files[p]; ok {
			f.rev = s.index.commits[ps[len(ps)-1]].hash
			s.files[p] = f
		}
	}
	return s.reconcileDisk()
}

// recoverHead returns the commit the branch points to. When the ref is
// missing, empty, garbage, or points to an incomplete commit (a torn write
// by another tool, a lost file system journal), it goes back through the
// reflog to the newest complete commit and points the ref there.
func (s *Definitions) recoverHead() (plumbing.Hash, error) {
	head, err := s.repo.readRef()
	if err == nil && head.IsZero() && len(s.repo.reflog()) == 0 {
		return head, nil // a new repository
	}
	if err == nil && !head.IsZero() {
		// A commit the index records was complete: the index is appended
		// only after the commit's objects were synced and the ref moved.
		if n := len(s.index.commits); n > 0 && s.index.commits[n-1].hash == head {
			return head, nil
		}
		if err = s.repo.commitComplete(head); err == nil {
			return head, nil
		}
	}
	if err == nil {
		err = errors.New("the ref is missing")
	}
	for _, h := range s.repo.reflog() {
		if s.repo.commitComplete(h) == nil {
			s.logger.Warn("history ref was damaged; recovered to the last complete commit",
				"problem", err.Error(), "commit", h.String())
			now := s.opts.Now().Unix()
			if _, werr := s.repo.writeRef(plumbing.ZeroHash, h, "nexusd", "recover: "+err.Error(), now); werr != nil {
				return plumbing.ZeroHash, werr
			}
			return h, nil
		}
	}
	return plumbing.ZeroHash, fmt.Errorf("history repository %s is damaged (%v) and its reflog holds no complete commit; inspect it with git fsck", s.repo.dir, err)
}

func (s *Definitions) loadTree(h plumbing.Hash, dir string) error {
	t, err := s.repo.readTree(h)
	if err != nil {
		return err
	}
	entries := make([]object.TreeEntry, 0, len(t.Entries))
	for _, e := range t.Entries {
		p := joinPath(dir, e.Name)
		switch e.Mode {
		case filemode.Dir:
			if err := s.loadTree(e.Hash, p); err != nil {
				return err
			}
		case filemode.Regular, filemode.Executable, filemode.Deprecated:
			s.files[p] = fileState{blob: e.Hash, size: -1}
		default:
			continue // symlinks and submodules are not definition files
		}
		entries = append(entries, e)
	}
	s.trees[dir] = entries
	return nil
}

// reconcileDisk commits, authored "disk", what changed under the root while
// no daemon was running, and removes the temporary files of writes that never
// finished. It runs during open, before the store serves.
func (s *Definitions) reconcileDisk() error {
	onDisk := map[string]diskFile{}
	if err := s.scanDisk("", onDisk, true); err != nil {
		return fmt.Errorf("scan definitions root: %w", err)
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
// again, and compared, with writeMu held, so a write of the store in
// progress finishes first.
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

	var errs []error
	for _, p := range order {
		err := s.syncPath(p, why)
		switch {
		case err == nil:
		case errors.Is(err, ErrClosed):
			return err
		case errors.Is(err, ErrInvalid), errors.Is(err, ErrTooLarge):
			s.logger.Warn("cannot record a change made on disk", "path", p, "reason", err.Error())
		default:
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// syncPath commits path as it is on disk now, if that differs from HEAD.
func (s *Definitions) syncPath(path string, why syncReason) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	content, present, err := s.readDisk(path)
	if err != nil {
		return err
	}
	s.mu.RLock()
	_, tracked := s.files[path]
	s.mu.RUnlock()
	verb := "edited"
	switch {
	case !present && !tracked:
		return nil
	case !present:
		verb = "deleted"
	case !tracked:
		verb = "created"
	}
	if present {
		if err := s.checkContent(path, content); err != nil {
			return err
		}
	}
	w := WriteOptions{Author: AuthorDisk, Message: why.message(verb, path)}
	_, err = s.commitLocked(path, content, !present, w, false)
	return err
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
	fd, err := unix.Openat(int(d.Fd()), baseName(path), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ELOOP):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("definition %q on disk: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("definition %q on disk: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return nil, false, nil
	}
	if err := singleLink(path, info); err != nil {
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
func singleLink(path string, info fs.FileInfo) error {
	if n, ok := linkCount(info); ok && n > 1 {
		return fmt.Errorf("%w: definition %q on disk has %d hard links; files with more than one are not recorded, since their other names may lie anywhere", ErrInvalid, path, n)
	}
	return nil
}

// Close waits for the write in progress and closes the store.
func (s *Definitions) Close() error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.firstSave.Wait()
	s.saveStats()
	return errors.Join(s.repo.close(), s.root.Close())
}

// Head returns the newest commit, or "" when there is none.
func (s *Definitions) Head() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.head.IsZero() {
		return ""
	}
	return s.head.String()
}

// Get returns a file at HEAD (rev "") or at a revision.
func (s *Definitions) Get(path, rev string) (File, error) {
	path, err := CleanPath(path)
	if err != nil {
		return File{}, err
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return File{}, ErrClosed
	}
	var blob, frev plumbing.Hash
	if rev == "" {
		f, ok := s.files[path]
		if !ok {
			s.mu.RUnlock()
			return File{}, fmt.Errorf("definition %q: %w", path, ErrNotFound)
		}
		blob, frev = f.blob, f.rev
		s.mu.RUnlock()
	} else {
		pos, err := s.resolveLocked(rev)
		if err != nil {
			s.mu.RUnlock()
			return File{}, err
		}
		at, ok := s.changeAtLocked(path, pos)
		s.mu.RUnlock()
		if !ok {
			return File{}, fmt.Errorf("definition %q at %s: %w", path, shortRev(rev), ErrNotFound)
		}
		frev = at
		if blob, err = s.blobAt(at, path); err != nil {
			return File{}, err
		}
	}
	data, err := s.repo.readBlob(blob)
	if err != nil {
		return File{}, fmt.Errorf("definition %q: %w", path, err)
	}
	return File{Content: data, Revision: frev.String()}, nil
}

// resolveLocked finds a revision (a full hash or a unique prefix of at least
// four hex digits) among the commits of the branch.
func (s *Definitions) resolveLocked(rev string) (int, error) {
	rev = strings.ToLower(strings.TrimSpace(rev))
	if len(rev) < 4 || len(rev) > 40 || strings.Trim(rev, "0123456789abcdef") != "" {
		return 0, fmt.Errorf("%w: revision %q is not a commit hash", ErrInvalid, rev)
	}
	if len(rev) == 40 {
		if p, ok := s.index.pos[plumbing.NewHash(rev)]; ok {
			return p, nil
		}
		return 0, fmt.Errorf("revision %s: %w", rev, ErrNotFound)
	}
	found := -1
	for i, c := range s.index.commits {
		if strings.HasPrefix(c.hash.String(), rev) {
			if found >= 0 {
				return 0, fmt.Errorf("%w: revision %q is ambiguous", ErrInvalid, rev)
			}
			found = i
		}
	}
	if found < 0 {
		return 0, fmt.Errorf("revision %s: %w", rev, ErrNotFound)
	}
	return found, nil
}

// changeAtLocked returns the commit that last changed path at or before
// position pos, if the path existed there.
func (s *Definitions) changeAtLocked(path string, pos int) (plumbing.Hash, bool) {
	ps := s.index.byPath[path]
	i := sort.SearchInts(ps, pos+1) - 1
	if i < 0 {
		return plumbing.ZeroHash, false
	}
	rec := s.index.commits[ps[i]]
	for _, c := range rec.changes {
		if c.path == path && c.change == Deleted {
			return plumbing.ZeroHash, false
		}
	}
	return rec.hash, true
}

// blobAt finds the blob of path in the tree of a commit.
func (s *Definitions) blobAt(commit plumbing.Hash, path string) (plumbing.Hash, error) {
	c, err := s.repo.readCommit(commit)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	h := c.TreeHash
	parts := strings.Split(path, "/")
	for i, name := range parts {
		t, err := s.repo.readTree(h)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		found := false
		for _, e := range t.Entries {
			if e.Name == name && (e.Mode == filemode.Dir) == (i < len(parts)-1) {
				h, found = e.Hash, true
				break
			}
		}
		if !found {
			return plumbing.ZeroHash, fmt.Errorf("definition %q at %s: %w", path, shortRev(commit.String()), ErrNotFound)
		}
	}
	return h, nil
}

// Set writes a file as one commit and returns the new revision. Writing the
// content a file already has is not a change: no commit is made and the
// current revision is returned.
func (s *Definitions) Set(path string, content []byte, w WriteOptions) (string, error) {
	path, err := CleanPath(path)
	if err != nil {
		return "", err
	}
	if err := s.checkContent(path, content); err != nil {
		return "", err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.checkExpected(path, w.ExpectedRevision); err != nil {
		return "", err
	}
	if w.Message == "" {
		w.Message = "set " + path
	}
	rev, err := s.commitLocked(path, content, false, w, true)
	return rev.String(), err
}

// ApplyDiff applies a unified diff of one file to its current content and
// commits the result.
func (s *Definitions) ApplyDiff(path, diff string, w WriteOptions) (string, []byte, error) {
	path, err := CleanPath(path)
	if err != nil {
		return "", nil, err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.checkExpected(path, w.ExpectedRevision); err != nil {
		return "", nil, err
	}
	var cur []byte
	s.mu.RLock()
	f, exists := s.files[path]
	s.mu.RUnlock()
	if exists {
		if cur, err = s.repo.readBlob(f.blob); err != nil {
			return "", nil, err
		}
	}
	content, deleted, err := applyPatch(path, cur, exists, diff)
	if err != nil {
		return "", nil, err
	}
	if w.Message == "" {
		w.Message = "apply diff to " + path
	}
	if !deleted {
		if err := s.checkContent(path, content); err != nil {
			return "", nil, err
		}
	}
	rev, err := s.commitLocked(path, content, deleted, w, true)
	if err != nil {
		return "", nil, err
	}
	return rev.String(), content, nil
}

// applyPatch applies a diff of one file. A diff without file headers (only
// hunks) is taken to be of this file.
func applyPatch(path string, cur []byte, exists bool, diff string) ([]byte, bool, error) {
	if strings.TrimSpace(diff) == "" {
		return nil, false, fmt.Errorf("%w: the diff is empty", ErrInvalid)
	}
	if !strings.Contains(diff, "\n--- ") && !strings.HasPrefix(diff, "--- ") {
		diff = "--- a/" + path + "\n+++ b/" + path + "\n" + diff
	}
	files, _, err := gitdiff.Parse(strings.NewReader(diff))
	if err != nil {
		return nil, false, fmt.Errorf("%w: the diff cannot be parsed: %v", ErrInvalid, err)
	}
	if len(files) != 1 {
		return nil, false, fmt.Errorf("%w: the diff must change exactly one file, it changes %d", ErrInvalid, len(files))
	}
	file := files[0]
	if file.IsBinary {
		return nil, false, fmt.Errorf("%w: binary diffs are not supported", ErrInvalid)
	}
	if file.IsNew && exists {
		return nil, false, fmt.Errorf("definition %q: %w: the diff creates the file, which already exists", path, ErrPatch)
	}
	if !file.IsNew && !exists && len(file.TextFragments) > 0 && file.TextFragments[0].OldLines > 0 {
		return nil, false, fmt.Errorf("definition %q: %w", path, ErrNotFound)
	}
	var out bytes.Buffer
	if err := gitdiff.Apply(&out, bytes.NewReader(cur), file); err != nil {
		return nil, false, fmt.Errorf("definition %q: %w: %v", path, ErrPatch, err)
	}
	return out.Bytes(), file.IsDelete, nil
}

// Delete removes a file as one commit.
func (s *Definitions) Delete(path string, w WriteOptions) (string, error) {
	path, err := CleanPath(path)
	if err != nil {
		return "", err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.checkExpected(path, w.ExpectedRevision); err != nil {
		return "", err
	}
	s.mu.RLock()
	_, ok := s.files[path]
	s.mu.RUnlock()
	if !ok {
		return "", fmt.Errorf("definition %q: %w", path, ErrNotFound)
	}
	if w.Message == "" {
		w.Message = "delete " + path
	}
	rev, err := s.commitLocked(path, nil, true, w, true)
	return rev.String(), err
}

// Restore writes the content path had at rev as a new commit.
func (s *Definitions) Restore(path, rev string, w WriteOptions) (string, []byte, error) {
	old, err := s.Get(path, rev)
	if err != nil {
		return "", nil, err
	}
	if w.Message == "" {
		w.Message = fmt.Sprintf("restore %s to %s", path, shortRev(old.Revision))
	}
	nrev, err := s.Set(path, old.Content, w)
	if err != nil {
		return "", nil, err
	}
	return nrev, old.Content, nil
}

func (s *Definitions) checkContent(path string, content []byte) error {
	if int64(len(content)) > s.opts.MaxFileSize {
		return fmt.Errorf("definition %q: %w: content is %d bytes, over the limit of %d (definitions.maxFileSize)",
			path, ErrTooLarge, len(content), s.opts.MaxFileSize)
	}
	if !utf8.Valid(content) {
		return fmt.Errorf("%w: definition %q: content is not valid UTF-8 text", ErrInvalid, path)
	}
	return nil
}

// checkExpected is called with writeMu held.
func (s *Definitions) checkExpected(path, expected string) error {
	if expected == "" {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	f, exists := s.files[path]
	if expected == ExpectAbsent {
		if exists {
			return fmt.Errorf("definition %q: %w: expected it not to exist, it is at %s", path, ErrConflict, shortRev(f.rev.String()))
		}
		return nil
	}
	pos, err := s.resolveLocked(expected)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return fmt.Errorf("definition %q: %w: expected revision %s is not in the history", path, ErrConflict, shortRev(expected))
		}
		return err
	}
	want := s.index.commits[pos].hash
	var cur plumbing.Hash
	if ps := s.index.byPath[path]; len(ps) > 0 {
		cur = s.index.commits[ps[len(ps)-1]].hash
	}
	if cur != want {
		now := "it does not exist"
		if exists {
			now = "it is at " + shortRev(cur.String())
		}
		return fmt.Errorf("definition %q: %w: expected revision %s, %s", path, ErrConflict, shortRev(want.String()), now)
	}
	return nil
}

// commitLocked makes one commit that sets (or deletes) one path, with
// writeMu held. The working file and every object are durable before the
// branch moves, and the branch is durable before it returns, in three
// rounds of fsyncs:
//
//	temp files (working file, objects, ref lock) → fsync all in parallel →
//	rename working file and objects into place → fsync their directories →
//	rename the lock over the ref → fsync refs/heads.
//
// A crash before the ref moves leaves the old history intact; a working file
// already renamed is then found on the next open and committed as "disk".
func (s *Definitions) commitLocked(path string, content []byte, del bool, w WriteOptions, writeDisk bool) (plumbing.Hash, error) {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return plumbing.ZeroHash, ErrClosed
	}
	cur, exists := s.files[path]
	head := s.head
	s.mu.RUnlock()

	var blob pendingObject
	if !del {
		blob = encodeBlob(content)
		if exists && cur.blob == blob.hash {
			return cur.rev, nil // same content: nothing to commit
		}
	}
	if err := s.checkShape(path, del); err != nil {
		return plumbing.ZeroHash, err
	}
	trees, objs, rootHash, err := s.buildTrees(path, blob.hash, del)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if !del {
		objs = append(objs, blob)
	}
	now := s.opts.Now().UTC().Truncate(time.Second)
	sig := object.Signature{Name: w.Author, Email: authorEmail, When: now}
	msg := w.Message
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: rootHash}
	if !head.IsZero() {
		c.ParentHashes = []plumbing.Hash{head}
	}
	commit, err := encodeCommit(c)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	objs = append(objs, commit)

	dw := newDurableWrite(s.root)
	if writeDisk {
		if err := s.stageWorkingFile(dw, path, content, del); err != nil {
			dw.abort()
			return plumbing.ZeroHash, err
		}
	}
	if err := s.repo.stageObjects(dw, objs); err != nil {
		dw.abort()
		return plumbing.ZeroHash, fmt.Errorf("write history objects: %w", err)
	}
	if err := s.repo.stageRef(dw, commit.hash); err != nil {
		dw.abort()
		return plumbing.ZeroHash, err
	}
	if err := dw.finish(); err != nil {
		os.Remove(filepath.Join(s.repo.dir, branchRef+".lock"))
		return plumbing.ZeroHash, fmt.Errorf("write definition %q: %w", path, err)
	}
	reflogErr, err := s.repo.commitRef(head, commit.hash, w.Author, w.Message, now.Unix())
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if reflogErr != nil {
		s.logger.Warn("reflog not appended; recovery from a damaged ref will not reach this commit", "error", reflogErr.Error())
	}

	change := Modified
	switch {
	case del:
		change = Deleted
	case !exists:
		change = Added
	}
	rec := &commitRecord{hash: commit.hash, parent: head, when: now, author: w.Author, message: msg,
		changes: []pathChange{{path, change}}}
	s.mu.Lock()
	s.head = commit.hash
	for dir, entries := range trees {
		if entries == nil && dir != "" {
			delete(s.trees, dir)
		} else {
			s.trees[dir] = entries
		}
	}
	if del {
		delete(s.files, path)
	} else {
		s.files[path] = fileState{blob: blob.hash, size: int64(len(content)), rev: commit.hash}
	}
	s.index.add(rec)
	s.mu.Unlock()
	if err := s.index.appendFile(rec); err != nil {
		s.logger.Warn("history index not saved; it is rebuilt on the next start", "error", err.Error())
	}
	if s.opts.Bus != nil {
		s.opts.Bus.Publish(DefinitionChange{Path: path, Revision: commit.hash.String(), Author: w.Author,
			Change: change, Message: msg, Time: now})
	}
	return commit.hash, nil
}

// checkShape refuses a file where a directory is, or under a file.
func (s *Definitions) checkShape(path string, del bool) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if _, isDir := s.trees[path]; isDir && !del {
		return fmt.Errorf("%w: %q is a directory", ErrInvalid, path)
	}
	for d := parentDir(path); d != ""; d = parentDir(d) {
		if _, isFile := s.files[d]; isFile {
			return fmt.Errorf("%w: %q is a file, so %q cannot be created under it", ErrInvalid, d, path)
		}
	}
	return nil
}

// buildTrees returns the new entries of every directory on the way from
// path to the root, the tree objects to write, and the new root tree.
func (s *Definitions) buildTrees(path string, blob plumbing.Hash, del bool) (map[string][]object.TreeEntry, []pendingObject, plumbing.Hash, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	changed := map[string][]object.TreeEntry{}
	var objs []pendingObject
	name, dir := baseName(path), parentDir(path)
	entry := object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: blob}
	remove := del
	for {
		entries := replaceEntry(s.trees[dir], entry, remove)
		if len(entries) == 0 && dir != "" {
			changed[dir] = nil
			remove = true
			entry = object.TreeEntry{Name: baseName(dir), Mode: filemode.Dir}
		} else {
			t, err := encodeTree(entries)
			if err != nil {
				return nil, nil, plumbing.ZeroHash, err
			}
			changed[dir] = entries
			objs = append(objs, t)
			if dir == "" {
				return changed, objs, t.hash, nil
			}
			remove = false
			entry = object.TreeEntry{Name: baseName(dir), Mode: filemode.Dir, Hash: t.hash}
		}
		dir = parentDir(dir)
		if entry.Name == "" {
			break
		}
	}
	return nil, nil, plumbing.ZeroHash, errors.New("unreachable")
}

// replaceEntry returns a copy of entries with e set (or removed), in git's
// order: by name, directories compared as if their names ended in "/".
func replaceEntry(entries []object.TreeEntry, e object.TreeEntry, remove bool) []object.TreeEntry {
	out := make([]object.TreeEntry, 0, len(entries)+1)
	for _, x := range entries {
		if x.Name != e.Name {
			out = append(out, x)
		}
	}
	if !remove {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return treeKey(out[i]) < treeKey(out[j]) })
	return out
}

func treeKey(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}

// stageWorkingFile prepares the file under the definitions root: a temporary
// file beside it for a write, or a removal for a delete. It refuses paths
// that go through symlinks or where a directory or file is in the way, and
// works through the descriptor of the file's directory (see openDir), so
// that a symlink or rename swapped in meanwhile cannot redirect it.
func (s *Definitions) stageWorkingFile(dw *durableWrite, path string, content []byte, del bool) error {
	dir, base := parentDir(path), baseName(path)
	d, made, err := s.openDir(dir, !del)
	if del && errors.Is(err, fs.ErrNotExist) {
		return nil // nothing on disk to remove
	}
	if err != nil {
		if errors.Is(err, ErrInvalid) {
			return fmt.Errorf("%w: definition %q: %v", ErrInvalid, path, errors.Unwrap(err))
		}
		return fmt.Errorf("definition %q: %w", path, err)
	}
	dw.open = append(dw.open, d)
	if st, err := lstatAt(d, base); err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%w: definition %q on disk is not a regular file", ErrInvalid, path)
	}
	if del {
		dw.rootRemoves = append(dw.rootRemoves, dirRemove{dir: d, name: base, path: path})
		dw.rootDirs[dir] = true
		return nil
	}
	if len(made) > 0 {
		// Sync the new directories and the one that gained the first of them.
		for _, m := range made {
			dw.rootDirs[m] = true
		}
		dw.rootDirs[parentDir(made[0])] = true
	}
	tmp := tmpPrefix + randomHex(8)
	f, err := createAt(d, tmp)
	if err != nil {
		return fmt.Errorf("definition %q: %w", path, err)
	}
	dw.files = append(dw.files, f)
	dw.rootRenames = append(dw.rootRenames, dirRename{dir: d, from: tmp, to: base})
	dw.rootDirs[dir] = true
	if _, err := f.Write(content); err != nil {
		return fmt.Errorf("definition %q: %w", path, err)
	}
	return nil
}

func splitDirs(dir string) []string {
	if dir == "" {
		return nil
	}
	return strings.Split(dir, "/")
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// List lists a directory: its direct entries, or every file and directory
// below it when recursive. Paths are relative to the definitions root.
func (s *Definitions) List(dir string, recursive bool) ([]Entry, error) {
	dir, err := CleanDir(dir)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	if _, isFile := s.files[dir]; isFile {
		return nil, fmt.Errorf("%w: %q is a file, not a directory", ErrInvalid, dir)
	}
	entries := []Entry{}
	if recursive {
		for d := range s.trees {
			if d != dir && underDir(d, dir) {
				entries = append(entries, Entry{Name: baseName(d), Path: d, Dir: true})
			}
		}
		for p, f := range s.files {
			if underDir(p, dir) {
				entries = append(entries, Entry{Name: baseName(p), Path: p, Size: f.size})
			}
		}
	} else {
		for _, e := range s.trees[dir] {
			p := joinPath(dir, e.Name)
			if e.Mode == filemode.Dir {
				entries = append(entries, Entry{Name: e.Name, Path: p, Dir: true})
			} else if f, ok := s.files[p]; ok {
				entries = append(entries, Entry{Name: e.Name, Path: p, Size: f.size})
			}
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	return entries, nil
}

// DefaultHistoryLimit is the page size of History when none is given.
const DefaultHistoryLimit = 100

// History returns the commits that changed path, newest first, a page at a
// time. pageToken is "" for the first page, then the token of the page before.
func (s *Definitions) History(path string, limit int, pageToken string) ([]HistoryEntry, string, error) {
	path, err := CleanPath(path)
	if err != nil {
		return nil, "", err
	}
	if limit <= 0 {
		limit = DefaultHistoryLimit
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, "", ErrClosed
	}
	ps := s.index.byPath[path]
	if len(ps) == 0 {
		return nil, "", fmt.Errorf("definition %q has no history: %w", path, ErrNotFound)
	}
	i := len(ps) - 1
	if pageToken != "" {
		p, ok := plumbing.Hash{}, plumbing.IsHash(pageToken)
		if ok {
			p = plumbing.NewHash(pageToken)
		}
		pos, found := s.index.pos[p]
		if !ok || !found {
			return nil, "", fmt.Errorf("%w: page token %q is not one this history gave out", ErrInvalid, pageToken)
		}
		i = sort.SearchInts(ps, pos+1) - 1
	}
	var out []HistoryEntry
	for ; i >= 0 && len(out) < limit; i-- {
		rec := s.index.commits[ps[i]]
		e := HistoryEntry{Revision: rec.hash.String(), Author: rec.author, Message: rec.message, Time: rec.when}
		for _, c := range rec.changes {
			if c.path == path {
				e.Change = c.change
			}
		}
		out = append(out, e)
	}
	next := ""
	if i >= 0 {
		next = s.index.commits[ps[i]].hash.String()
	}
	return out, next, nil
}

// Diff returns the unified diff of path between two revisions (to "" is the
// newest), as `git diff from to -- path` prints it, with display as the name
// in the headers (path when empty).
func (s *Definitions) Diff(path, display, from, to string) (string, error) {
	path, err := CleanPath(path)
	if err != nil {
		return "", err
	}
	if from == "" {
		return "", fmt.Errorf("%w: fromRevision is required", ErrInvalid)
	}
	if display == "" {
		display = path
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return "", ErrClosed
	}
	fromPos, err := s.resolveLocked(from)
	if err != nil {
		s.mu.RUnlock()
		return "", err
	}
	toPos := len(s.index.commits) - 1
	if to != "" {
		if toPos, err = s.resolveLocked(to); err != nil {
			s.mu.RUnlock()
			return "", err
		}
	}
	ca, okA := s.changeAtLocked(path, fromPos)
	cb, okB := s.changeAtLocked(path, toPos)
	s.mu.RUnlock()
	if !okA && !okB {
		return "", fmt.Errorf("definition %q exists at neither revision: %w", path, ErrNotFound)
	}
	a, err := s.side(ca, okA, path)
	if err != nil {
		return "", err
	}
	b, err := s.side(cb, okB, path)
	if err != nil {
		return "", err
	}
	packs := s.repo.openPackIndexes()
	defer closePackIndexes(packs)
	abbrev := func(h plumbing.Hash) string { return s.repo.abbrev(h, packs) }
	return unifiedDiff(display, a, b, abbrev), nil
}

func (s *Definitions) side(commit plumbing.Hash, ok bool, path string) (side, error) {
	if !ok {
		return side{}, nil
	}
	h, err := s.blobAt(commit, path)
	if err != nil {
		return side{}, err
	}
	data, err := s.repo.readBlob(h)
	if err != nil {
		return side{}, err
	}
	return side{exists: true, hash: h, content: data}, nil
}

func shortRev(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
