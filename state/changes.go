package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Workspace checkpoints (package checkpoints) live in the definitions'
// history repository, under refs of their own (refs/nexus/...), sharing
// its packs and their objects: a content already in the history costs
// nothing more. They are not the durability checkpoint of checkpoint.go,
// which records how far the working files are synced.
//
// A ref of changes is one chain of commits, one per record, each with a
// tree of a manifest blob ("manifest.json") and the blobs the manifest
// names (entries named by their ids), so that a record keeps its contents
// reachable. Records appended concurrently share a pack and a ref update
// (group commit: the first waiting append commits every append queued by
// then). The pack and the ref's lock file are synced before the ref is
// renamed into place, so a crash leaves the ref at the last record whose
// objects are all durable.

// ManifestName is the name of a change record's manifest in its tree.
const ManifestName = "manifest.json"

// changesRefPrefix is where the refs of changes live.
const changesRefPrefix = "refs/nexus/"

// Changes stores workspace checkpoints in the history repository (see
// [Definitions.Changes]).
type Changes struct {
	s *Definitions
	r *repo

	// queueMu guards queue, the appends waiting for a leader.
	queueMu sync.Mutex
	queue   []*changeOp

	// commitMu is held by the append that commits the queue, and by
	// Rewrite; it guards tips and the ops' results.
	commitMu sync.Mutex
	tips     map[string]plumbing.Hash // refs read so far
}

// ChangeRecord is one record to append: its manifest and the contents
// it keeps.
type ChangeRecord struct {
	Manifest []byte
	Files    []ChangeFile
	Author   string
	Message  string
	Time     time.Time
}

// ChangeFile is a content a record keeps, by a name of its own in the
// record's tree (not ManifestName, no "/"): Content to store, or the ID of
// a blob the repository has (see Put).
type ChangeFile struct {
	Name    string
	Content []byte
	ID      string
}

// ChangeEntry is one record of a ref: its commit and tree, its manifest,
// and the blob ids of its files by name.
type ChangeEntry struct {
	Commit   string
	Tree     string
	Manifest []byte
	Files    map[string]string
}

type changeOp struct {
	ref     string
	recs    []ChangeRecord
	done    bool
	entries []ChangeEntry
	err     error
}

// Changes returns the store of workspace checkpoints, in the same
// repository, packs and readers as the definitions.
func (s *Definitions) Changes() *Changes {
	s.changesOnce.Do(func() {
		s.changes = &Changes{s: s, r: s.repo, tips: map[string]plumbing.Hash{}}
	})
	return s.changes
}

// Dir is the definitions root.
func (s *Definitions) Dir() string { return s.dir }

// BlobID is the id a content has as a blob of the history repository.
func BlobID(content []byte) string { return blobHash(content).String() }

func checkChangesRef(ref string) error {
	name, ok := strings.CutPrefix(ref, changesRefPrefix)
	if !ok || name == "" || strings.ContainsAny(name, ". \\:~^?*[") || strings.Contains(name, "//") {
		return fmt.Errorf("%w: %q is not a ref under %s", ErrInvalid, ref, changesRefPrefix)
	}
	return nil
}

func (c *Changes) checkOpen() error {
	c.s.mu.RLock()
	defer c.s.mu.RUnlock()
	if c.s.closed {
		return ErrClosed
	}
	return nil
}

// Read returns the content of the blob id. Callers must not modify it.
func (c *Changes) Read(id string) ([]byte, error) {
	h, ok := parseHash(id)
	if !ok {
		return nil, fmt.Errorf("%w: %q is not a blob id", ErrInvalid, id)
	}
	return c.r.readBlob(h)
}

// Has reports whether the repository has the blob id.
func (c *Changes) Has(id string) bool {
	h, ok := parseHash(id)
	return ok && c.r.hasObject(h)
}

// Put stores contents as blobs, durably, with no ref naming them: the
// caller keeps their ids (GC's roots) until a record names them.
func (c *Changes) Put(contents [][]byte) error {
	if err := c.checkOpen(); err != nil {
		return err
	}
	objs := make([]pendingObject, len(contents))
	for i, b := range contents {
		objs[i] = encodeBlob(b)
	}
	c.r.gcMu.RLock()
	defer c.r.gcMu.RUnlock()
	w := newDurableWrite(nil)
	sp, err := c.r.stageObjects(w, objs)
	if err != nil || sp == nil {
		w.abort()
		return err
	}
	if err := w.finish(); err != nil {
		return fmt.Errorf("write checkpoint contents: %w", err)
	}
	return c.r.addPack(sp)
}

// Append adds records at the end of ref's chain, in order, durably, and
// returns them. Appends that arrive while another group is being written
// share the next group's pack and ref update.
func (c *Changes) Append(ref string, recs ...ChangeRecord) ([]ChangeEntry, error) {
	if err := checkChangesRef(ref); err != nil {
		return nil, err
	}
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	op := &changeOp{ref: ref, recs: recs}
	c.queueMu.Lock()
	c.queue = append(c.queue, op)
	c.queueMu.Unlock()
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	if !op.done {
		c.queueMu.Lock()
		ops := c.queue
		c.queue = nil
		c.queueMu.Unlock()
		c.commitOps(ops)
	}
	return op.entries, op.err
}

// tip returns the commit ref points to. The caller holds commitMu.
func (c *Changes) tip(ref string) (plumbing.Hash, error) {
	if h, ok := c.tips[ref]; ok {
		return h, nil
	}
	h, err := c.r.readNamedRef(ref)
	if err != nil {
		return h, err
	}
	c.tips[ref] = h
	return h, nil
}

// commitOps writes the records of ops as one pack and one update per ref.
// The caller holds commitMu.
func (c *Changes) commitOps(ops []*changeOp) {
	heads := map[string]plumbing.Hash{}
	var objs []pendingObject
	var good []*changeOp
	for _, op := range ops {
		op.done = true
		// An op that cannot be encoded (a bad name, a content not stored)
		// fails alone.
		op.err = func() error {
			parent, ok := heads[op.ref]
			if !ok {
				var err error
				if parent, err = c.tip(op.ref); err != nil {
					return err
				}
			}
			var opObjs []pendingObject
			for _, rec := range op.recs {
				o, entry, err := c.encodeChange(rec, parent)
				if err != nil {
					op.entries = nil
					return err
				}
				opObjs = append(opObjs, o...)
				op.entries = append(op.entries, entry)
				parent = plumbing.NewHash(entry.Commit)
			}
			objs = append(objs, opObjs...)
			heads[op.ref] = parent
			return nil
		}()
		if op.err == nil {
			good = append(good, op)
		}
	}
	if len(good) == 0 {
		return
	}
	if err := c.writeRefs(objs, heads); err != nil {
		for _, op := range good {
			op.err, op.entries = err, nil
		}
	}
}

// writeRefs writes objs as one pack and moves the refs of heads, durably.
// The caller holds commitMu.
func (c *Changes) writeRefs(objs []pendingObject, heads map[string]plumbing.Hash) error {
	c.r.gcMu.RLock()
	defer c.r.gcMu.RUnlock()
	clear(c.tips) // read again after a failure
	w := newDurableWrite(nil)
	sp, err := c.r.stageObjects(w, objs)
	if err != nil {
		w.abort()
		return fmt.Errorf("write checkpoint objects: %w", err)
	}
	refs := slices.Sorted(func(yield func(string) bool) {
		for ref := range heads {
			if !yield(ref) {
				return
			}
		}
	})
	for _, ref := range refs {
		if err := c.r.stageNamedRef(w, ref, heads[ref]); err != nil {
			w.abort()
			return err
		}
	}
	if err := w.finish(); err != nil {
		return fmt.Errorf("write checkpoints: %w", err)
	}
	if sp != nil {
		if err := c.r.addPack(sp); err != nil {
			for _, ref := range refs {
				os.Remove(c.r.namedRefLock(ref))
			}
			return fmt.Errorf("write checkpoints: read the new pack: %w", err)
		}
	}
	for _, ref := range refs {
		if err := c.r.moveRef(ref); err != nil {
			return err
		}
		c.tips[ref] = heads[ref]
	}
	return nil
}

// encodeChange encodes a record's blobs, tree and commit.
func (c *Changes) encodeChange(rec ChangeRecord, parent plumbing.Hash) ([]pendingObject, ChangeEntry, error) {
	manifest := encodeBlob(rec.Manifest)
	objs := []pendingObject{manifest}
	entries := []object.TreeEntry{{Name: ManifestName, Mode: filemode.Regular, Hash: manifest.hash}}
	names := map[string]bool{ManifestName: true}
	for _, f := range rec.Files {
		if f.Name == "" || names[f.Name] || strings.ContainsAny(f.Name, "/\x00") || f.Name == "." || f.Name == ".." {
			return nil, ChangeEntry{}, fmt.Errorf("%w: %q is not a name for a checkpoint's content", ErrInvalid, f.Name)
		}
		names[f.Name] = true
		var h plumbing.Hash
		if f.Content != nil {
			o := encodeBlob(f.Content)
			objs = append(objs, o)
			h = o.hash
		} else {
			var ok bool
			if h, ok = parseHash(f.ID); !ok {
				return nil, ChangeEntry{}, fmt.Errorf("%w: %q is not a blob id", ErrInvalid, f.ID)
			}
			if !c.r.hasObject(h) {
				return nil, ChangeEntry{}, fmt.Errorf("checkpoint content %s: %w", f.ID, ErrNotFound)
			}
		}
		entries = append(entries, object.TreeEntry{Name: f.Name, Mode: filemode.Regular, Hash: h})
	}
	slices.SortFunc(entries, func(a, b object.TreeEntry) int { return strings.Compare(a.Name, b.Name) })
	tree, err := encodeTree(entries)
	if err != nil {
		return nil, ChangeEntry{}, err
	}
	commit, err := changeCommit(tree.hash, parent, rec.Author, rec.Message, rec.Time)
	if err != nil {
		return nil, ChangeEntry{}, err
	}
	objs = append(objs, tree, commit)
	return objs, ChangeEntry{Commit: commit.hash.String(), Tree: tree.hash.String(), Manifest: rec.Manifest}, nil
}

func changeCommit(tree, parent plumbing.Hash, author, message string, when time.Time) (pendingObject, error) {
	if author == "" {
		author = "nexusd"
	}
	if !strings.HasSuffix(message, "\n") {
		message += "\n"
	}
	sig := object.Signature{Name: author, Email: authorEmail, When: when.UTC().Truncate(time.Second)}
	cm := &object.Commit{Author: sig, Committer: sig, Message: message, TreeHash: tree}
	if !parent.IsZero() {
		cm.ParentHashes = []plumbing.Hash{parent}
	}
	return encodeCommit(cm)
}

// Log returns the records of ref, newest first.
func (c *Changes) Log(ref string) ([]ChangeEntry, error) {
	if err := checkChangesRef(ref); err != nil {
		return nil, err
	}
	c.commitMu.Lock()
	h, err := c.tip(ref)
	c.commitMu.Unlock()
	if err != nil {
		return nil, err
	}
	return c.log(h)
}

func (c *Changes) log(h plumbing.Hash) ([]ChangeEntry, error) {
	var out []ChangeEntry
	for !h.IsZero() {
		cm, err := c.r.readCommit(h)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", h, err)
		}
		t, err := c.r.readTree(cm.TreeHash)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", h, err)
		}
		e := ChangeEntry{Commit: h.String(), Tree: cm.TreeHash.String(), Files: map[string]string{}}
		for _, te := range t.Entries {
			if te.Name != ManifestName {
				e.Files[te.Name] = te.Hash.String()
			} else if e.Manifest, err = c.r.readBlob(te.Hash); err != nil {
				return nil, fmt.Errorf("checkpoint %s: %w", h, err)
			}
		}
		if e.Manifest == nil {
			return nil, fmt.Errorf("checkpoint %s has no %s", h, ManifestName)
		}
		out = append(out, e)
		h = plumbing.ZeroHash
		if len(cm.ParentHashes) > 0 {
			h = cm.ParentHashes[0]
		}
	}
	return out, nil
}

// Rewrite keeps the records of ref that keep accepts (the chain is made
// again of their trees, in their order) and returns how many it dropped.
// Appends wait meanwhile, so none is lost.
func (c *Changes) Rewrite(ref string, keep func(ChangeEntry) bool) (int, error) {
	if err := checkChangesRef(ref); err != nil {
		return 0, err
	}
	if err := c.checkOpen(); err != nil {
		return 0, err
	}
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	h, err := c.tip(ref)
	if err != nil {
		return 0, err
	}
	entries, err := c.log(h)
	if err != nil {
		return 0, err
	}
	var kept []ChangeEntry
	for _, e := range entries {
		if keep(e) {
			kept = append(kept, e)
		}
	}
	dropped := len(entries) - len(kept)
	if dropped == 0 {
		return 0, nil
	}
	var objs []pendingObject
	head := plumbing.ZeroHash
	for i := len(kept) - 1; i >= 0; i-- {
		old, err := c.r.readCommit(plumbing.NewHash(kept[i].Commit))
		if err != nil {
			return 0, err
		}
		cm, err := changeCommit(old.TreeHash, head, old.Author.Name, old.Message, old.Author.When)
		if err != nil {
			return 0, err
		}
		objs = append(objs, cm)
		head = cm.hash
	}
	if head.IsZero() {
		return dropped, c.removeRef(ref)
	}
	return dropped, c.writeRefs(objs, map[string]plumbing.Hash{ref: head})
}

// removeRef removes a ref of changes that has no record left. The caller
// holds commitMu.
func (c *Changes) removeRef(ref string) error {
	c.r.gcMu.RLock()
	defer c.r.gcMu.RUnlock()
	path := filepath.Join(c.r.dir, ref)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	c.tips[ref] = plumbing.ZeroHash
	return syncDirs(filepath.Dir(path))
}

// Size is the bytes of the repository's objects (packs and loose), the
// definitions' history included.
func (c *Changes) Size() (int64, error) { return c.r.objectBytes() }

// objectBytes sums the sizes of the files under objects/.
func (r *repo) objectBytes() (int64, error) {
	var n int64
	err := filepath.WalkDir(filepath.Join(r.dir, "objects"), func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile
			}
			return err
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n, err
}
