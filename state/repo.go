package state

import (
	"crypto/sha1"
	hexpkg "encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/bits"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// branchRef is the one branch of the history repository.
const branchRef = "refs/heads/main"

// repo is the bare history repository. repo reads and writes its objects
// itself (packs, see packs.go, and the loose objects of older versions and
// of git), and the branch ref, because go-git neither fsyncs nor replaces
// refs atomically.
type repo struct {
	dir    string       // the bare repository
	tmpDir string       // temporary files, outside objects/ so git fsck sees no garbage
	cache  cache.Object // of the packs' delta bases
	logger *slog.Logger

	// objMu guards packs and merging: a pack's reader is not safe for
	// concurrent use.
	objMu   sync.Mutex
	packs   []*pack // smallest first
	retired []retiredPack
	merging bool // consolidate is running
	closing bool
	bg      sync.WaitGroup // consolidate

	blobs *blobCache

	// gcMu is held for reading by every write of objects and refs, from
	// staging its pack to moving its ref, and for writing by gc, which
	// drops the objects nothing reaches: a writer that found an object
	// packed and did not write it again must not see it dropped.
	gcMu sync.RWMutex
}

// openRepo opens the bare repository at dir, creating it when missing, and
// removes temporary files that a previous run left behind.
func openRepo(dir string, logger *slog.Logger) (*repo, error) {
	r := &repo{dir: dir, tmpDir: filepath.Join(dir, "nexus-tmp"), cache: cache.NewObjectLRUDefault(),
		logger: logger, blobs: newBlobCache(32 << 20)}
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); errors.Is(err, os.ErrNotExist) {
		if err := initRepo(dir); err != nil {
			return nil, fmt.Errorf("create history repository %s: %w", dir, err)
		}
	} else if err != nil {
		return nil, err
	}
	for _, d := range []string{"logs/refs/heads", "objects/pack"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.RemoveAll(r.tmpDir); err != nil {
		return nil, err
	}
	if err := os.Mkdir(r.tmpDir, 0o700); err != nil {
		return nil, err
	}
	// A lock file left by a crash mid ref update: the ref itself is intact
	// (it is replaced by rename), so the lock is only debris; so are those
	// of the workspace checkpoints' refs (see changes.go).
	if err := r.unlockRef(); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := r.removeChangesLocks(); err != nil {
		return nil, err
	}
	if err := r.loadPacks(); err != nil {
		return nil, fmt.Errorf("history repository %s: %w", dir, err)
	}
	return r, nil
}

// removeChangesLocks removes the lock files of the refs under
// refs/nexus/ that a crash left.
func (r *repo) removeChangesLocks() error {
	root := filepath.Join(r.dir, filepath.FromSlash(changesRefPrefix))
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".lock") {
			return os.Remove(p)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

func initRepo(dir string) error {
	for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags", "logs/refs/heads"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	files := map[string]string{
		"HEAD":        "ref: " + branchRef + "\n",
		"config":      "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n\tlogallrefupdates = true\n",
		"description": "Definition files of a Nexus workspace; every write is a commit.\n",
	}
	for name, content := range files {
		if err := writeFileSync(filepath.Join(dir, name), []byte(content)); err != nil {
			return err
		}
	}
	return syncDirs(dir, filepath.Dir(dir))
}

// close waits for a consolidation under way to stop, removes the files of
// the packs it merged, and closes the packs.
func (r *repo) close() error {
	r.objMu.Lock()
	r.closing = true
	r.objMu.Unlock()
	r.bg.Wait()
	err := r.removeRetired(0, 0)
	r.objMu.Lock()
	defer r.objMu.Unlock()
	r.closePacks()
	return err
}

// readObject returns the type and content of an object, from the packs or
// a loose object.
func (r *repo) readObject(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	r.objMu.Lock()
	typ, data, ok, err := r.packedObject(h)
	r.objMu.Unlock()
	if ok {
		return typ, data, err
	}
	f, err := os.Open(r.objectPath(h))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil, fmt.Errorf("object %s: %w", h, ErrNotFound)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("read object %s: %w", h, err)
	}
	defer f.Close()
	rd, err := objfile.NewReader(f)
	if err != nil {
		return 0, nil, fmt.Errorf("read object %s: %w", h, err)
	}
	defer rd.Close()
	typ, size, err := rd.Header()
	if err != nil {
		return 0, nil, fmt.Errorf("read object %s: %w", h, err)
	}
	data = make([]byte, size)
	if _, err := io.ReadFull(rd, data); err != nil {
		return 0, nil, fmt.Errorf("read object %s: %w", h, err)
	}
	if got := rd.Hash(); got != h {
		return 0, nil, fmt.Errorf("read object %s: its content is %s's", h, got)
	}
	return typ, data, nil
}

func (r *repo) readTyped(h plumbing.Hash, want plumbing.ObjectType) ([]byte, error) {
	typ, data, err := r.readObject(h)
	if err != nil {
		return nil, err
	}
	if typ != want {
		return nil, fmt.Errorf("object %s is a %s, not a %s", h, typ, want)
	}
	return data, nil
}

// readBlob returns a blob's content. Blobs are immutable, so recent ones are
// kept in memory; callers must not modify the slice.
func (r *repo) readBlob(h plumbing.Hash) ([]byte, error) {
	if data, ok := r.blobs.get(h); ok {
		return data, nil
	}
	data, err := r.readTyped(h, plumbing.BlobObject)
	if err == nil {
		r.blobs.put(h, data)
	}
	return data, err
}

// abbrev abbreviates a hash as git does by default (core.abbrev=auto): the
// length grows with the number of packed objects (half the bits of the
// count, at least 7 hex digits), then until no other object shares the
// prefix.
func (r *repo) abbrev(h plumbing.Hash) string {
	full := h.String()
	var loose []os.DirEntry
	if !h.IsZero() {
		// Read before objMu, which every read of an object takes.
		loose, _ = os.ReadDir(filepath.Join(r.dir, "objects", full[:2]))
	}
	r.objMu.Lock()
	defer r.objMu.Unlock()
	// git counts the objects of every pack on disk, those of a merged
	// pack whose files are still there included.
	var packed uint64
	for _, p := range r.packs {
		packed += uint64(p.count)
	}
	for _, p := range r.retired {
		packed += uint64(p.count)
	}
	n := max(7, (bits.Len64(packed)+1)/2)
	if h.IsZero() {
		return full[:n]
	}
	for ; n < len(full); n++ {
		ambiguous := false
		for _, e := range loose {
			if name := e.Name(); full[:2]+name != full && strings.HasPrefix(full[:2]+name, full[:n]) {
				ambiguous = true
			}
		}
		for _, p := range r.packs {
			ambiguous = ambiguous || hasOther(p.idx, h, full[:n])
		}
		if !ambiguous {
			break
		}
	}
	return full[:n]
}

// hasOther reports whether a pack's index holds an object other than h
// whose name starts with the hex prefix (of h).
func hasOther(idx *idxfile.MemoryIndex, h plumbing.Hash, prefix string) bool {
	k := idx.FanoutMapping[h[0]]
	if k < 0 || k >= len(idx.Names) {
		return false // no object starts with h's first byte
	}
	names := idx.Names[k]
	count := len(names) / 20
	name := func(i int) string { return hexpkg.EncodeToString(names[20*i : 20*i+20]) }
	// The first name not below the prefix, then its neighbours.
	for i := sort.Search(count, func(i int) bool { return name(i) >= prefix }); i < count; i++ {
		n := name(i)
		if !strings.HasPrefix(n, prefix) {
			return false
		}
		if n != h.String() {
			return true
		}
	}
	return false
}

func (r *repo) readTree(h plumbing.Hash) (*object.Tree, error) {
	data, err := r.readTyped(h, plumbing.TreeObject)
	if err != nil {
		return nil, err
	}
	t := &object.Tree{}
	if err := t.Decode(memoryObject(plumbing.TreeObject, data)); err != nil {
		return nil, fmt.Errorf("decode tree %s: %w", h, err)
	}
	return t, nil
}

func (r *repo) readCommit(h plumbing.Hash) (*object.Commit, error) {
	data, err := r.readTyped(h, plumbing.CommitObject)
	if err != nil {
		return nil, err
	}
	c := &object.Commit{}
	if err := c.Decode(memoryObject(plumbing.CommitObject, data)); err != nil {
		return nil, fmt.Errorf("decode commit %s: %w", h, err)
	}
	c.Hash = h
	return c, nil
}

func (r *repo) hasObject(h plumbing.Hash) bool {
	r.objMu.Lock()
	packed := r.packed(h)
	r.objMu.Unlock()
	if packed {
		return true
	}
	_, err := os.Stat(r.objectPath(h))
	return err == nil
}

func (r *repo) objectPath(h plumbing.Hash) string {
	hex := h.String()
	return filepath.Join(r.dir, "objects", hex[:2], hex[2:])
}

func memoryObject(t plumbing.ObjectType, data []byte) *plumbing.MemoryObject {
	o := &plumbing.MemoryObject{}
	o.SetType(t)
	o.Write(data)
	return o
}

// pendingObject is an encoded object not yet written.
type pendingObject struct {
	hash plumbing.Hash
	typ  plumbing.ObjectType
	data []byte
}

func encodeBlob(content []byte) pendingObject {
	return pendingObject{blobHash(content), plumbing.BlobObject, content}
}

// blobHash is git's id of a blob: the SHA-1 of "blob <size>\x00" and the
// content.
func blobHash(content []byte) plumbing.Hash { return objectHash(plumbing.BlobObject, content) }

// objectHash is git's id of an object: the SHA-1 of "<type> <size>\x00" and
// the content. It uses crypto/sha1 (SHA-NI where the CPU has it), several
// times faster than go-git's collision-detecting SHA-1 on the start's scan
// of every file and on every commit's trees; the ids are the same.
func objectHash(t plumbing.ObjectType, content []byte) plumbing.Hash {
	h := sha1.New()
	var hdr [32]byte
	b := append(append(hdr[:0], t.String()...), ' ')
	b = append(strconv.AppendInt(b, int64(len(content)), 10), 0)
	h.Write(b)
	h.Write(content)
	var id plumbing.Hash
	h.Sum(id[:0])
	return id
}

func encodeTree(entries []object.TreeEntry) (pendingObject, error) {
	o := &plumbing.MemoryObject{}
	if err := (&object.Tree{Entries: entries}).Encode(o); err != nil {
		return pendingObject{}, err
	}
	data := memoryBytes(o)
	return pendingObject{objectHash(plumbing.TreeObject, data), plumbing.TreeObject, data}, nil
}

func encodeCommit(c *object.Commit) (pendingObject, error) {
	o := &plumbing.MemoryObject{}
	if err := c.Encode(o); err != nil {
		return pendingObject{}, err
	}
	data := memoryBytes(o)
	return pendingObject{objectHash(plumbing.CommitObject, data), plumbing.CommitObject, data}, nil
}

func memoryBytes(o *plumbing.MemoryObject) []byte {
	rd, _ := o.Reader() // a MemoryObject's reader never fails
	data, _ := io.ReadAll(rd)
	return data
}

// readRef returns the commit the branch points to, or the zero hash for a
// repository without commits. A ref file that exists but does not hold a
// hash is an error: recovery decides what to do with it.
func (r *repo) readRef() (plumbing.Hash, error) { return r.readNamedRef(branchRef) }

// readNamedRef returns the commit a ref (loose, or in packed-refs, where
// git gc moves it) points to, or the zero hash when there is none.
func (r *repo) readNamedRef(name string) (plumbing.Hash, error) {
	data, err := os.ReadFile(filepath.Join(r.dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return r.readPackedRef(name)
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	s := strings.TrimSpace(string(data))
	if !plumbing.IsHash(s) {
		return plumbing.ZeroHash, fmt.Errorf("ref %s holds %q, not a commit hash", name, truncate(s, 60))
	}
	return plumbing.NewHash(s), nil
}

// readPackedRef reads a ref from packed-refs.
func (r *repo) readPackedRef(ref string) (plumbing.Hash, error) {
	data, err := os.ReadFile(filepath.Join(r.dir, "packed-refs"))
	if errors.Is(err, os.ErrNotExist) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if h, name, ok := strings.Cut(line, " "); ok && name == ref && plumbing.IsHash(h) {
			return plumbing.NewHash(h), nil
		}
	}
	return plumbing.ZeroHash, nil
}

// stageRef writes the branch's lock file with the new commit into the
// durable write, so that it is synced in the same round as the objects.
// git treats the lock file as a lock, so a git command cannot update the
// branch meanwhile.
func (r *repo) stageRef(w *durableWrite, commit plumbing.Hash) error {
	return r.stageNamedRef(w, branchRef, commit)
}

// stageNamedRef is stageRef for any ref of the repository.
func (r *repo) stageNamedRef(w *durableWrite, name string, commit plumbing.Hash) error {
	lock := r.namedRefLock(name)
	if err := os.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("lock %s: %w (is a git command running on the history repository?)", name, err)
	}
	w.files = append(w.files, f)
	w.cleanup = append(w.cleanup, lock)
	_, err = f.WriteString(commit.String() + "\n")
	return err
}

// refLock is the branch's lock file, as git names it.
func (r *repo) refLock() string { return r.namedRefLock(branchRef) }

func (r *repo) namedRefLock(name string) string { return filepath.Join(r.dir, name+".lock") }

// unlockRef removes the branch's lock file: a ref update that will not
// happen.
func (r *repo) unlockRef() error { return os.Remove(r.refLock()) }

// moveRef renames a ref's lock file, which finish made durable, to the
// ref, and syncs the directory: the ref's update is then durable. On an
// error the lock is removed.
func (r *repo) moveRef(name string) error {
	path := filepath.Join(r.dir, name)
	if err := os.Rename(r.namedRefLock(name), path); err != nil {
		os.Remove(r.namedRefLock(name))
		return fmt.Errorf("update %s: %w", name, err)
	}
	return syncDirs(filepath.Dir(path))
}

// commitRef moves the branch to the commit whose lock file finish made
// durable: rename, then sync the directory. It then appends to the reflog,
// which recovery reads when the ref itself is lost; the commit is made by
// then, so a failure there is only reported.
func (r *repo) commitRef(old, commit plumbing.Hash, who, message string, when int64) (reflogErr, err error) {
	if err := r.moveRef(branchRef); err != nil {
		return nil, err
	}
	line := fmt.Sprintf("%s %s %s <%s> %d +0000\t%s\n", old, commit, who, authorEmail, when, firstLine(message))
	lf, err := os.OpenFile(filepath.Join(r.dir, "logs", branchRef), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err, nil
	}
	_, err = lf.WriteString(line)
	if cerr := lf.Close(); err == nil {
		err = cerr
	}
	return err, nil
}

// writeRef moves the branch on its own (recovery uses it).
func (r *repo) writeRef(old, commit plumbing.Hash, who, message string, when int64) (reflogErr, err error) {
	w := newDurableWrite(nil)
	if err := r.stageRef(w, commit); err != nil {
		w.abort()
		return nil, err
	}
	if err := w.finish(); err != nil {
		return nil, err
	}
	return r.commitRef(old, commit, who, message, when)
}

// reflog returns the commits of the branch's reflog, newest first.
func (r *repo) reflog() []plumbing.Hash {
	data, err := os.ReadFile(filepath.Join(r.dir, "logs", branchRef))
	if err != nil {
		return nil
	}
	var out []plumbing.Hash
	lines := strings.Split(string(data), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		f := strings.Fields(lines[i])
		if len(f) >= 2 && plumbing.IsHash(f[1]) {
			out = append(out, plumbing.NewHash(f[1]))
		}
	}
	return out
}

// commitComplete reports whether a commit and everything its tree reaches
// can be read.
func (r *repo) commitComplete(h plumbing.Hash) error {
	c, err := r.readCommit(h)
	if err != nil {
		return err
	}
	var walk func(plumbing.Hash) error
	walk = func(th plumbing.Hash) error {
		t, err := r.readTree(th)
		if err != nil {
			return err
		}
		for _, e := range t.Entries {
			if e.Mode == filemode.Dir {
				if err := walk(e.Hash); err != nil {
					return err
				}
			} else if !r.hasObject(e.Hash) {
				return fmt.Errorf("blob %s of %s is missing", e.Hash, e.Name)
			}
		}
		return nil
	}
	return walk(c.TreeHash)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
