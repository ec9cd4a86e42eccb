package state

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
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
	if w.Message == "" {
		w.Message = "set " + path
	}
	return revString(s.write(&writeOp{path: path, w: w, plan: func(d *draft, w *WriteOptions) (commitOptions, error) {
		return commitOptions{content: content}, d.checkExpected(path, w.ExpectedRevision)
	}}))
}

// revString is a revision as the store's methods return it: "" with an
// error.
func revString(rev plumbing.Hash, err error) (string, error) {
	if err != nil {
		return "", err
	}
	return rev.String(), nil
}

// ApplyDiff applies a unified diff of one file to its current content and
// commits the result.
func (s *Definitions) ApplyDiff(path, diff string, w WriteOptions) (string, []byte, error) {
	path, err := CleanPath(path)
	if err != nil {
		return "", nil, err
	}
	if w.Message == "" {
		w.Message = "apply diff to " + path
	}
	var content []byte // the result, decided by the plan
	rev, err := s.write(&writeOp{path: path, w: w, plan: func(d *draft, w *WriteOptions) (commitOptions, error) {
		if err := d.checkExpected(path, w.ExpectedRevision); err != nil {
			return commitOptions{}, err
		}
		var cur []byte
		f, exists := d.file(path)
		if exists {
			var err error
			if cur, err = d.readBlob(f.blob); err != nil {
				return commitOptions{}, err
			}
		}
		out, deleted, err := applyPatch(path, cur, exists, diff)
		if err != nil {
			return commitOptions{}, err
		}
		if !deleted {
			if err := s.checkContent(path, out); err != nil {
				return commitOptions{}, err
			}
		}
		content = out
		return commitOptions{content: out, delete: deleted}, nil
	}})
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
	if w.Message == "" {
		w.Message = "delete " + path
	}
	return revString(s.write(&writeOp{path: path, w: w, plan: func(d *draft, w *WriteOptions) (commitOptions, error) {
		if err := d.checkExpected(path, w.ExpectedRevision); err != nil {
			return commitOptions{}, err
		}
		if _, ok := d.file(path); !ok {
			return commitOptions{}, fmt.Errorf("definition %q: %w", path, ErrNotFound)
		}
		return commitOptions{delete: true}, nil
	}}))
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

// checkExpected checks a write's expected revision (see
// [WriteOptions.ExpectedRevision]) against the draft: a revision that only
// the group in progress made is not one a writer can expect.
func (d *draft) checkExpected(path, expected string) error {
	if expected == "" {
		return nil
	}
	f, exists := d.file(path)
	if expected == ExpectAbsent {
		if exists {
			return fmt.Errorf("definition %q: %w: expected it not to exist, it is at %s", path, ErrConflict, shortRev(f.rev.String()))
		}
		return nil
	}
	d.s.mu.RLock()
	pos, err := d.s.resolveLocked(expected)
	var want plumbing.Hash
	if err == nil {
		want = d.s.index.commits[pos].hash
	}
	d.s.mu.RUnlock()
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return fmt.Errorf("definition %q: %w: expected revision %s is not in the history", path, ErrConflict, shortRev(expected))
		}
		return err
	}
	if cur := d.lastChange(path); cur != want {
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

// checkShape refuses a file where a directory is, or under a file.
func (d *draft) checkShape(path string, del bool) error {
	if _, isDir := d.tree(path); isDir && !del {
		return fmt.Errorf("%w: %q is a directory", ErrInvalid, path)
	}
	for dir := parentDir(path); dir != ""; dir = parentDir(dir) {
		if _, isFile := d.file(dir); isFile {
			return fmt.Errorf("%w: %q is a file, so %q cannot be created under it", ErrInvalid, dir, path)
		}
	}
	return nil
}

// buildTrees returns the new entries of every directory on the way from
// path to the root, the tree objects to write, and the new root tree.
func (d *draft) buildTrees(path string, blob plumbing.Hash, del bool) (map[string][]object.TreeEntry, []pendingObject, plumbing.Hash, error) {
	changed := map[string][]object.TreeEntry{}
	var objs []pendingObject
	name, dir := baseName(path), parentDir(path)
	entry := object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: blob}
	remove := del
	for {
		cur, _ := d.tree(dir)
		entries := replaceEntry(cur, entry, remove)
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
		dir = parentDir(dir) // the root is last: it is never emptied away
	}
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
	if mode, err := d.lstat(base); err == nil && !mode.IsRegular() {
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
	f, err := d.create(tmp)
	if err != nil {
		return fmt.Errorf("definition %q: %w", path, err)
	}
	if syncWorkingFilesLater {
		dw.lazy = append(dw.lazy, f)
	} else {
		dw.files = append(dw.files, f)
	}
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
