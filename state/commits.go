package state

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"golang.org/x/sys/unix"
)

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
	rev, err := s.commitLocked(path, w, commitOptions{content: content})
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
	rev, err := s.commitLocked(path, w, commitOptions{content: content, delete: deleted})
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
	rev, err := s.commitLocked(path, w, commitOptions{delete: true})
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

// commitOptions say what one commit does to its path.
type commitOptions struct {
	// content is the path's new content; ignored when delete is set.
	content []byte
	// delete removes the path.
	delete bool
	// fromDisk marks an edit found on disk: the working file already is as
	// the commit records it, so it is not written.
	fromDisk bool
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
func (s *Definitions) commitLocked(path string, w WriteOptions, o commitOptions) (plumbing.Hash, error) {
	content, del := o.content, o.delete
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
	if !o.fromDisk {
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
