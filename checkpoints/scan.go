package checkpoints

import (
	"bufio"
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/nexuscocreate/nexus/internal/bytesize"
	"github.com/nexuscocreate/nexus/state"
)

// The baseline. A call that may change any file (a command) has the
// workspace compared before and after it runs: its files as the last scan
// saw them (the baseline: path → content, as a blob of the history, and
// stat) against what they are now. Every content of the baseline is in
// the history repository before a command runs, so that what it changes
// or deletes can be restored. A file whose stat is what the baseline
// recorded is not read (a stat cache, as git's index is): a scan of an
// unchanged workspace reads no content. An entry whose change time is
// not older than racyMargin before the scan that recorded it is read
// again by the next scan ("racily clean" in git: a write in the same tick
// of the file system's clock leaves the stat as it was).
//
// The baseline is refreshed before a command runs, silently (what changed
// since the last scan is the person's, or a call's that recorded it
// itself), and compared after: what differs is the command's. When calls
// overlap, a change goes with the first call whose scan sees it; a call
// that names its paths (write_file) claims them while it runs, so that a
// command's scan leaves them to it, and updates the baseline for them
// when it ends.
//
// The baseline is saved in .nexus/checkpoints-baseline (not synced: a lost
// or damaged file is a first scan again, which reads every file).

// Racy margins: see above. Linux's, Windows' and macOS's file systems
// stamp files from a clock that ticks at least every 10 ms; FAT's and some
// network file systems' by the second or two, which the scan detects (no
// file of the first scan has a fraction of a second) and then uses the
// definitions' stat cache's margin.
const (
	racyMargin       = int64(50 * time.Millisecond)
	coarseRacyMargin = int64(2 * time.Second)
)

const baselineVersion = 1

// Kinds of baseline entry.
const (
	entryFile    = iota // a regular file within the size cap: its content is stored
	entryIgnored        // a file or a directory that .gitignore ignores
	entryLarge          // a regular file over the size cap
	entryOther          // a symlink or a special file
)

// baseEntry is one entry of the baseline.
type baseEntry struct {
	Key  state.FileKey
	Seen int64 // when the scan that recorded it began, in Unix nanoseconds
	Kind uint8
	Blob string // entryFile's content
	Exec bool
	What string // entryOther's type: "a symlink", "a named pipe"...
}

// same reports whether two entries say the same of a path.
func (e baseEntry) same(o baseEntry) bool {
	if e.Kind != o.Kind {
		return false
	}
	if e.Kind == entryFile {
		return e.Blob == o.Blob && e.Exec == o.Exec
	}
	return e.Key == o.Key
}

// scanner keeps the baseline.
type scanner struct {
	s    *Store
	file string

	ready    chan struct{} // closed once the first baseline is built
	done     chan struct{} // closed by stop
	stopOnce sync.Once

	// mu guards the baseline and the claims, and serialises scans. Take
	// it with lock and unlock, which apply the settles queued meanwhile.
	mu     sync.Mutex
	base   map[string]baseEntry
	claims map[string]int // paths of the calls that name theirs, running
	dirty  bool           // not saved since it changed
	margin int64          // the racy margin (see above)
	fine   bool           // a file has a fraction of a second in its time
	watch  *watcher       // nil without inotify
	// current: the baseline was the workspace when the watcher's queue
	// was last drained (a whole scan, watching what it walked).
	current bool

	// settleMu guards settles: paths to refresh in the baseline, then to
	// release, queued by whoever could not take mu at once (the
	// recorder, which a command's end holding mu may be waiting for).
	settleMu sync.Mutex
	settles  []settle
}

// settle is paths to release, refreshed first unless the change was not
// recorded.
type settle struct {
	paths   []string
	refresh bool
}

// lock takes mu and applies the queued settles.
func (sc *scanner) lock() {
	sc.mu.Lock()
	sc.applySettles()
}

// unlock applies the queued settles and releases mu; settles queued
// meanwhile are applied too, unless someone else holds mu by then (who
// applies them).
func (sc *scanner) unlock() {
	for {
		sc.applySettles()
		sc.mu.Unlock()
		sc.settleMu.Lock()
		more := len(sc.settles) > 0
		sc.settleMu.Unlock()
		if !more || !sc.mu.TryLock() {
			return
		}
	}
}

// settleAndRelease refreshes the baseline for paths a call or an undo
// changed and recorded, and releases their claims: now when mu is free,
// else when its holder releases it.
func (sc *scanner) settleAndRelease(paths []string) { sc.queueSettle(settle{paths, true}) }

// releaseLater releases claims, without a refresh, without waiting for mu.
func (sc *scanner) releaseLater(paths []string) { sc.queueSettle(settle{paths, false}) }

func (sc *scanner) queueSettle(st settle) {
	sc.settleMu.Lock()
	sc.settles = append(sc.settles, st)
	sc.settleMu.Unlock()
	if sc.mu.TryLock() {
		sc.unlock()
	}
}

// applySettles applies the queued settles. The caller holds mu.
func (sc *scanner) applySettles() {
	sc.settleMu.Lock()
	settles := sc.settles
	sc.settles = nil
	sc.settleMu.Unlock()
	for _, st := range settles {
		select {
		case <-sc.ready:
			if !st.refresh {
				break
			}
			if err := sc.refresh(st.paths); err != nil {
				sc.s.logger.Warn("checkpoints baseline not refreshed", "error", err.Error())
			}
		default: // the first scan, under way, sees them
		}
		sc.release(st.paths)
	}
}

func newScanner(s *Store) *scanner {
	return &scanner{s: s, file: filepath.Join(s.opts.Workspace, ".nexus", "checkpoints-baseline"),
		ready: make(chan struct{}), done: make(chan struct{}), claims: map[string]int{}, margin: coarseRacyMargin,
		watch: newWatcher(s.opts.Workspace)}
}

// start loads the baseline, or builds the first one.
func (sc *scanner) start() {
	sc.lock()
	defer sc.unlock()
	defer close(sc.ready) // before unlock, which refreshes what settled meanwhile
	if base, ok := sc.load(); ok {
		sc.base = base
		return
	}
	res, err := sc.walk(map[string]baseEntry{})
	if err == nil && !res.tooMany {
		err = sc.store(res)
	}
	if err != nil {
		sc.s.logger.Warn("workspace not scanned; the next command scans it", "error", err.Error())
		return
	}
	sc.base = res.entries
	if res.tooMany {
		sc.base = map[string]baseEntry{} // its contents were not stored
	}
	sc.dirty = true
	if err := sc.saveLocked(); err != nil {
		sc.s.logger.Warn("checkpoints baseline not saved; the next start scans the workspace again", "error", err.Error())
	}
}

func (sc *scanner) stop() { sc.stopOnce.Do(func() { close(sc.done) }) }

// wait waits for the first baseline. The caller then takes mu.
func (sc *scanner) wait(ctx context.Context) error {
	select {
	case <-sc.ready:
		return nil
	case <-ctx.Done():
		return errors.New("checkpoints: the call ended while the workspace's first scan was running")
	}
}

// load reads the saved baseline; entries whose content the repository
// lacks (dropped by a gc after the file was saved) are left out, to be
// read again.
func (sc *scanner) load() (map[string]baseEntry, bool) {
	data, err := os.ReadFile(sc.file)
	if err != nil {
		return nil, false
	}
	var saved struct {
		Version int
		Entries map[string]baseEntry
	}
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&saved); err != nil || saved.Version != baselineVersion {
		return nil, false
	}
	for p, e := range saved.Entries {
		if e.Kind == entryFile && !sc.s.changes.Has(e.Blob) {
			delete(saved.Entries, p)
		}
	}
	if saved.Entries == nil {
		saved.Entries = map[string]baseEntry{}
	}
	return saved.Entries, true
}

// save writes the baseline when it changed.
func (sc *scanner) save() error {
	sc.lock()
	defer sc.unlock()
	return sc.saveLocked()
}

func (sc *scanner) saveLocked() error {
	if !sc.dirty || sc.base == nil {
		return nil
	}
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(struct {
		Version int
		Entries map[string]baseEntry
	}{baselineVersion, sc.base})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(sc.file), 0o700); err != nil {
		return err
	}
	tmp := sc.file + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, sc.file); err != nil {
		return err
	}
	sc.dirty = false
	return nil
}

// scanResult is a scan of the workspace.
type scanResult struct {
	entries map[string]baseEntry
	// contents read by the scan that the baseline before did not have.
	contents map[string][]byte
	files    int
	tooMany  bool
	dirs     []string // the directories walked
}

// store puts the contents a scan read into the repository.
func (sc *scanner) store(res scanResult) error {
	if len(res.contents) == 0 {
		return nil
	}
	blobs := make([][]byte, 0, len(res.contents))
	for _, c := range res.contents {
		blobs = append(blobs, c)
	}
	return sc.s.changes.Put(blobs)
}

// skipDir reports whether a directory of the workspace is never scanned:
// Nexus's own state and git's.
func skipDir(p string) bool {
	return p == ".nexus" || p == ".git" || strings.HasSuffix(p, "/.git")
}

// walk scans the workspace against prev, the baseline. The caller holds
// mu. Directories are listed by a few goroutines at once: a scan is
// mostly system calls.
func (sc *scanner) walk(prev map[string]baseEntry) (scanResult, error) {
	w := &walker{sc: sc, prev: prev, seen: time.Now().UnixNano(), sem: make(chan struct{}, scanWorkers),
		res: scanResult{entries: make(map[string]baseEntry, len(prev)), contents: map[string][]byte{}}}
	sc.current = false
	if sc.watch != nil {
		sc.watch.drain() // what changed before is in this scan
	}
	err := w.dir("", nil)
	if sc.fine {
		sc.margin = racyMargin
	}
	if err == nil && !w.res.tooMany && sc.watch != nil {
		sc.watch.watch(w.res.dirs)
	}
	return w.res, err
}

// unchanged reports whether the baseline is still the workspace: nothing
// changed in it since the scan that made it (see watcher).
func (sc *scanner) unchanged() bool {
	if sc.watch == nil || sc.watch.broken || !sc.current {
		return false
	}
	if sc.watch.drain() {
		sc.current = false
	}
	return sc.current
}

// scanWorkers bounds the directories a scan lists at once, beside its own.
const scanWorkers = 3

// walker is one scan.
type walker struct {
	sc   *scanner
	prev map[string]baseEntry
	seen int64
	sem  chan struct{}

	// mu guards res (and the scanner's fine).
	mu  sync.Mutex
	res scanResult
}

// dir scans a directory and, concurrently when a worker is free, those
// below it.
func (w *walker) dir(dir string, ig ignorer) error {
	sc := w.sc
	select {
	case <-sc.done:
		return errors.New("the store is closing")
	default:
	}
	entries, err := readDir(filepath.Join(sc.s.opts.Workspace, filepath.FromSlash(dir)))
	switch {
	case dir != "" && errors.Is(err, fs.ErrNotExist):
		return nil // removed meanwhile
	case dir != "" && errors.Is(err, fs.ErrPermission):
		w.mu.Lock()
		w.res.entries[dir] = baseEntry{Seen: w.seen, Kind: entryOther, What: "a directory Nexus may not read"}
		w.mu.Unlock()
		return nil
	case err != nil:
		return err
	}
	w.mu.Lock()
	w.res.dirs = append(w.res.dirs, dir)
	w.mu.Unlock()
	if slices.ContainsFunc(entries, func(e dirEntry) bool { return e.name == ".gitignore" }) {
		ig = ig.read(sc.s.root, dir)
	}
	var parts []string
	if dir != "" {
		parts = strings.Split(dir, "/")
	}
	var subdirs []string
	w.mu.Lock()
	for _, de := range entries {
		p := de.name
		if dir != "" {
			p = dir + "/" + de.name
		}
		st := de.st
		if st.mode.IsDir() {
			switch {
			case skipDir(p):
			case ig.matchIn(parts, de.name, true):
				w.res.entries[p] = baseEntry{Key: st.key, Seen: w.seen, Kind: entryIgnored}
			default:
				subdirs = append(subdirs, p)
			}
			continue
		}
		if ig.matchIn(parts, de.name, false) {
			w.res.entries[p] = baseEntry{Key: st.key, Seen: w.seen, Kind: entryIgnored}
			continue
		}
		if w.res.files++; w.res.files > sc.s.opts.MaxFiles {
			w.res.tooMany = true
			w.mu.Unlock()
			return nil
		}
		e, content, err := sc.entry(p, st, w.prev[p], w.seen)
		if err != nil {
			w.mu.Unlock()
			return err
		}
		w.res.entries[p] = e
		if content != nil {
			w.res.contents[e.Blob] = content
		}
	}
	tooMany := w.res.tooMany
	w.mu.Unlock()
	if tooMany {
		return nil
	}
	var wg sync.WaitGroup
	errs := make([]error, len(subdirs))
	for i, sub := range subdirs {
		select {
		case w.sem <- struct{}{}:
			wg.Go(func() {
				defer func() { <-w.sem }()
				errs[i] = w.dir(sub, ig)
			})
		default:
			errs[i] = w.dir(sub, ig)
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ignorer is the .gitignore patterns in force in a directory.
type ignorer []gitignore.Pattern

// read adds the patterns of dir's .gitignore.
func (ig ignorer) read(root *os.Root, dir string) ignorer {
	f, err := root.Open(path.Join(orDot(dir), ".gitignore"))
	if err != nil {
		return ig
	}
	defer f.Close()
	var domain []string
	if dir != "" {
		domain = strings.Split(dir, "/")
	}
	out := slices.Clip(ig)
	sc := bufio.NewScanner(io.LimitReader(f, 1<<20))
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		out = append(out, gitignore.ParsePattern(line, domain))
	}
	return out
}

func (ig ignorer) match(p string, isDir bool) bool {
	return len(ig) > 0 && gitignore.NewMatcher(ig).Match(strings.Split(p, "/"), isDir)
}

// matchIn is match of the entry name of the directory whose path's
// components are dir.
func (ig ignorer) matchIn(dir []string, name string, isDir bool) bool {
	if len(ig) == 0 {
		return false
	}
	return gitignore.NewMatcher(ig).Match(append(dir[:len(dir):len(dir)], name), isDir)
}

func orDot(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// entry makes the baseline entry of a file (not ignored) from its lstat
// info, reading it unless old, its entry before, vouches for its content.
// content is what it read.
func (sc *scanner) entry(p string, st fileStat, old baseEntry, seen int64) (e baseEntry, content []byte, err error) {
	key, keyed := st.key, st.keyed
	e = baseEntry{Key: key, Seen: seen}
	switch {
	case st.mode&fs.ModeSymlink != 0:
		e.Kind, e.What = entryOther, "a symlink"
		return e, nil, nil
	case !st.mode.IsRegular():
		e.Kind, e.What = entryOther, fileType(st.mode)
		return e, nil, nil
	case st.size > sc.s.opts.MaxFileSize:
		e.Kind = entryLarge
		return e, nil, nil
	}
	e.Exec = st.mode&0o111 != 0
	if key.MTime%int64(time.Second) != 0 {
		sc.fine = true
	}
	if keyed && old.Kind == entryFile && old.Blob != "" && old.Key == key &&
		key.CTime < old.Seen-sc.margin && key.MTime < old.Seen-sc.margin {
		e.Blob = old.Blob
		return e, nil, nil
	}
	content, err = readRegular(sc.s.root, p, sc.s.opts.MaxFileSize)
	switch {
	case errors.Is(err, errChanged), errors.Is(err, fs.ErrNotExist):
		// Replaced while read: read next time.
		e.Kind, e.Key = entryOther, state.FileKey{}
		e.What = "a file that changed while it was read"
		return e, nil, nil
	case errors.Is(err, errTooLarge):
		e.Kind = entryLarge
		return e, nil, nil
	case errors.Is(err, fs.ErrPermission):
		e.Kind, e.Key, e.What = entryOther, state.FileKey{}, "a file Nexus may not read"
		return e, nil, nil
	case err != nil:
		return e, nil, fmt.Errorf("read %s: %w", p, err)
	}
	e.Blob = state.BlobID(content)
	if e.Blob == old.Blob {
		return e, nil, nil
	}
	return e, content, nil
}

var (
	errChanged  = errors.New("not a regular file any more")
	errTooLarge = errors.New("over the size cap")
)

// readRegular reads a regular file of the workspace, confined to it,
// refusing one over max bytes.
func readRegular(root *os.Root, p string, max int64) ([]byte, error) {
	f, err := root.OpenFile(filepath.FromSlash(p), os.O_RDONLY|nonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, errChanged
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, errTooLarge
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

func fileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "a special file"
}

// compare returns what differs between the baseline before and a scan
// after, leaving out claimed paths.
func (sc *scanner) compare(before, after map[string]baseEntry) (files []FileChange, skipped []Skipped) {
	paths := make([]string, 0)
	for p, a := range after {
		if b, ok := before[p]; !ok || !b.same(a) {
			paths = append(paths, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	for _, p := range paths {
		if sc.claims[p] > 0 {
			continue
		}
		b, bok := before[p]
		a, aok := after[p]
		bFile, aFile := bok && b.Kind == entryFile, aok && a.Kind == entryFile
		switch {
		case bFile && aFile:
			files = append(files, FileChange{Path: p, Action: Modified, Before: b.Blob, After: a.Blob, BeforeExec: b.Exec, AfterExec: a.Exec})
		case !bok && aFile:
			files = append(files, FileChange{Path: p, Action: Added, After: a.Blob, AfterExec: a.Exec})
		case bFile && !aok:
			files = append(files, FileChange{Path: p, Action: Deleted, Before: b.Blob, BeforeExec: b.Exec})
		default:
			skipped = append(skipped, Skipped{Path: p, Reason: sc.s.skipReason(b, bok, a, aok)})
		}
	}
	return files, skipped
}

// skipReason says why a change was not recorded.
func (s *Store) skipReason(b baseEntry, bok bool, a baseEntry, aok bool) string {
	switch {
	case (aok && a.Kind == entryIgnored) || (bok && b.Kind == entryIgnored):
		return "ignored (.gitignore)"
	case aok && a.Kind == entryLarge:
		return s.overCap(a.Key.Size)
	case bok && b.Kind == entryLarge:
		return s.overCap(b.Key.Size) + ", before the call"
	case aok && a.Kind == entryOther:
		return "not a regular file (" + a.What + ")"
	case bok && b.Kind == entryOther:
		return "not a regular file before the call (" + b.What + ")"
	}
	return "not recorded"
}

func (s *Store) overCap(size int64) string {
	return fmt.Sprintf("over the size cap (checkpoints.maxFileSize, %s): %s", bytesize.String(s.opts.MaxFileSize), bytesize.String(size))
}

// refresh sets the baseline's entries of paths to what they are now (a
// call that named them ended, an undo restored them), storing a content
// the repository lacks. The caller holds mu.
func (sc *scanner) refresh(paths []string) error {
	if sc.base == nil {
		return nil
	}
	seen := time.Now().UnixNano()
	var blobs [][]byte
	for _, p := range paths {
		if !sc.scanned(p) {
			continue
		}
		info, err := sc.s.root.Lstat(filepath.FromSlash(p))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errUnderLink) || (err == nil && info.IsDir()) {
			delete(sc.base, p)
			continue
		}
		if err != nil {
			delete(sc.base, p)
			continue
		}
		if sc.ignored(p) {
			key, _ := state.FileKeyOf(info)
			sc.base[p] = baseEntry{Key: key, Seen: seen, Kind: entryIgnored}
			continue
		}
		e, content, err := sc.entry(p, statOf(info), baseEntry{}, seen)
		if err != nil {
			delete(sc.base, p)
			continue
		}
		if content != nil && !sc.s.changes.Has(e.Blob) {
			blobs = append(blobs, content)
		}
		sc.base[p] = e
	}
	sc.dirty = true
	if len(blobs) > 0 {
		return sc.s.changes.Put(blobs)
	}
	return nil
}

var errUnderLink = errors.New("under a symlink")

// scanned reports whether a scan looks at p: not under .nexus/ or .git/,
// nor under a symlink or an ignored directory.
func (sc *scanner) scanned(p string) bool {
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		dir := strings.Join(parts[:i], "/")
		if skipDir(dir) {
			return false
		}
		if info, err := sc.s.root.Lstat(filepath.FromSlash(dir)); err != nil || !info.IsDir() {
			return false
		}
		if e, ok := sc.base[dir]; ok && e.Kind == entryIgnored {
			return false
		}
	}
	return true
}

// ignored reports whether .gitignore files ignore the file p.
func (sc *scanner) ignored(p string) bool {
	var ig ignorer
	parts := strings.Split(p, "/")
	for i := range len(parts) { // "", then each directory above p
		ig = ig.read(sc.s.root, strings.Join(parts[:i], "/"))
	}
	return ig.match(p, false)
}
