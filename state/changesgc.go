package state

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// GC rewrites the repository's packs (but those git keeps) as one, with
// delta compression (git gc's window of 10), keeping only the objects
// reachable from the branch, its reflog, the refs of changes, any other
// ref, and keep (blob ids the caller holds). Writers wait meanwhile (a
// writer that found an object packed does not write it again, so nothing
// may go between its look and its ref); readers go on. The new pack is
// durable before the old ones are removed: a crash leaves both, or the
// new one alone. It returns the bytes of the objects before and after.
func (c *Changes) GC(keep []string) (before, after int64, err error) {
	if err := c.checkOpen(); err != nil {
		return 0, 0, err
	}
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	r := c.r
	r.gcMu.Lock()
	defer r.gcMu.Unlock()
	// No merge may run: it would put back what gc drops. None starts
	// meanwhile (packs are added under gcMu).
	r.bg.Wait()
	r.objMu.Lock()
	if r.closing {
		r.objMu.Unlock()
		return 0, 0, ErrClosed
	}
	r.merging = true
	old := slices.DeleteFunc(slices.Clone(r.packs), func(p *pack) bool { return p.keep })
	r.objMu.Unlock()
	defer func() {
		r.objMu.Lock()
		r.merging = false
		r.objMu.Unlock()
	}()
	if before, err = r.objectBytes(); err != nil {
		return 0, 0, err
	}

	live, err := r.reachable(keep)
	if err != nil {
		return before, 0, fmt.Errorf("gc: %w", err)
	}
	var hashes []plumbing.Hash
	r.objMu.Lock()
	for h := range live {
		for _, p := range old {
			if found, _ := p.idx.Contains(h); found {
				hashes = append(hashes, h)
				break
			}
		}
	}
	r.objMu.Unlock()
	slices.SortFunc(hashes, func(a, b plumbing.Hash) int { return strings.Compare(a.String(), b.String()) })

	var np *pack
	if len(hashes) > 0 {
		if np, err = r.writeDeltaPack(hashes); err != nil {
			return before, 0, fmt.Errorf("gc: write the pack: %w", err)
		}
	}
	r.objMu.Lock()
	r.packs = slices.DeleteFunc(r.packs, func(p *pack) bool { return slices.Contains(old, p) })
	if np != nil && !slices.ContainsFunc(r.packs, func(p *pack) bool { return p.id == np.id }) {
		r.packs = append(r.packs, np)
	}
	r.sortPacks()
	for _, p := range old {
		p.p.Close()
	}
	for _, p := range old {
		if np == nil || p.id != np.id {
			r.retired = append(r.retired, retiredPack{p.id, p.count, c.s.opts.Now()})
		}
	}
	r.objMu.Unlock()
	if err := r.removeRetired(0, 0); err != nil {
		return before, 0, err
	}
	after, err = r.objectBytes()
	return before, after, err
}

// reachable returns the objects reachable from the repository's refs, the
// branch's reflog and keep. A reflog entry whose objects are gone is
// passed over; a ref's is an error.
func (r *repo) reachable(keep []string) (map[plumbing.Hash]bool, error) {
	live := map[plumbing.Hash]bool{}
	refs, err := r.refs()
	if err != nil {
		return nil, err
	}
	for _, h := range refs {
		if err := r.mark(h, live); err != nil {
			return nil, err
		}
	}
	for _, h := range r.reflog() {
		if !live[h] && r.commitComplete(h) == nil {
			if err := r.mark(h, live); err != nil {
				return nil, err
			}
		}
	}
	for _, id := range keep {
		if h, ok := parseHash(id); ok && r.hasObject(h) {
			live[h] = true
		}
	}
	return live, nil
}

// refs returns the commits of every ref: loose under refs/, and packed.
func (r *repo) refs() ([]plumbing.Hash, error) {
	var out []plumbing.Hash
	if h, err := r.readRef(); err != nil {
		return nil, err
	} else if !h.IsZero() {
		out = append(out, h)
	}
	err := filepath.WalkDir(filepath.Join(r.dir, "refs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".lock") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if s := strings.TrimSpace(string(data)); plumbing.IsHash(s) {
			out = append(out, plumbing.NewHash(s))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if f, err := os.Open(filepath.Join(r.dir, "packed-refs")); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if h, _, ok := strings.Cut(sc.Text(), " "); ok && plumbing.IsHash(h) {
				out = append(out, plumbing.NewHash(h))
			}
		}
	}
	return out, nil
}

// mark adds h and what it reaches to live.
func (r *repo) mark(h plumbing.Hash, live map[plumbing.Hash]bool) error {
	for stack := []plumbing.Hash{h}; len(stack) > 0; {
		h, stack = stack[len(stack)-1], stack[:len(stack)-1]
		if live[h] {
			continue
		}
		typ, data, err := r.readObject(h)
		if err != nil {
			return err
		}
		live[h] = true
		switch typ {
		case plumbing.CommitObject:
			c := &object.Commit{}
			if err := c.Decode(memoryObject(typ, data)); err != nil {
				return fmt.Errorf("decode commit %s: %w", h, err)
			}
			stack = append(append(stack, c.TreeHash), c.ParentHashes...)
		case plumbing.TreeObject:
			t := &object.Tree{}
			if err := t.Decode(memoryObject(typ, data)); err != nil {
				return fmt.Errorf("decode tree %s: %w", h, err)
			}
			for _, e := range t.Entries {
				switch {
				case e.Mode == filemode.Submodule || live[e.Hash]:
				case e.Mode == filemode.Dir:
					stack = append(stack, e.Hash)
				case !r.hasObject(e.Hash):
					return fmt.Errorf("blob %s of tree %s: %w", e.Hash, h, ErrNotFound)
				default:
					live[e.Hash] = true
				}
			}
		}
	}
	return nil
}

// writeDeltaPack writes the objects as one pack with deltas, durably, and
// opens it.
func (r *repo) writeDeltaPack(hashes []plumbing.Hash) (*pack, error) {
	f, err := os.CreateTemp(r.tmpDir, "pack-")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*pack, error) {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	id, err := packfile.NewEncoder(bw, repoStorer{r}, false).Encode(hashes, 10)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return fail(err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		return fail(err)
	}
	var iw idxfile.Writer
	parser, err := packfile.NewParser(packfile.NewScanner(f), &iw)
	if err != nil {
		return fail(err)
	}
	if _, err := parser.Parse(); err != nil {
		return fail(fmt.Errorf("read the new pack back: %w", err))
	}
	idx, err := iw.Index()
	if err != nil {
		return fail(err)
	}
	xf, err := writeIndex(r.tmpDir, idx)
	if err != nil {
		return fail(err)
	}
	w := newDurableWrite(nil)
	r.placePack(w, id, f, xf)
	if err := w.finish(); err != nil {
		return nil, err
	}
	return r.readPack(id, idx)
}

// repoStorer gives go-git's pack encoder the repository's objects.
type repoStorer struct{ r *repo }

var _ storer.EncodedObjectStorer = repoStorer{}

var errReadOnly = errors.New("read only")

func (s repoStorer) NewEncodedObject() plumbing.EncodedObject { return &plumbing.MemoryObject{} }

func (s repoStorer) SetEncodedObject(plumbing.EncodedObject) (plumbing.Hash, error) {
	return plumbing.ZeroHash, errReadOnly
}

func (s repoStorer) EncodedObject(_ plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	typ, data, err := s.r.readObject(h)
	if errors.Is(err, ErrNotFound) {
		return nil, plumbing.ErrObjectNotFound
	}
	if err != nil {
		return nil, err
	}
	return memoryObject(typ, data), nil
}

func (s repoStorer) IterEncodedObjects(plumbing.ObjectType) (storer.EncodedObjectIter, error) {
	return nil, errReadOnly
}

func (s repoStorer) HasEncodedObject(h plumbing.Hash) error {
	if s.r.hasObject(h) {
		return nil
	}
	return plumbing.ErrObjectNotFound
}

func (s repoStorer) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	_, data, err := s.r.readObject(h)
	return int64(len(data)), err
}

func (s repoStorer) AddAlternate(string) error { return errReadOnly }
