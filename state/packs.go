package state

import (
	"bufio"
	"cmp"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// Packs. The objects of a group of writes (its blobs, trees and commits)
// go into one pack, objects/pack/pack-<checksum>.{pack,idx}, as git's own
// receive does, rather than one loose file each: creating a file is what a
// durable write pays most for on a busy disk, and a pack is two files
// (and one directory to sync) whatever the group's size. Objects are
// stored whole (no deltas), so a pack is written in one pass, and a group
// does not compress them (see stored): merging does.
//
// The index is renamed into place before the pack: git ignores an index
// without its pack, and repo (like go-git) only looks at a pack whose index
// is there. A crash between the two renames leaves an index alone, which
// openRepo removes. The ref moves only after both names are durable.
//
// Every group adds a pack, so packs are merged in the background
// (consolidate) once there are more than maxPacks: the smallest ones, so
// that the sizes left grow at least twofold (git repack --geometric=2).
// Each object is then rewritten O(log n) times in all, and a lookup tries
// O(log n) indexes.

// maxPacks is the number of packs above which the smallest are merged.
const maxPacks = 16

// pack is one pack of the history and its index, read by repo itself.
type pack struct {
	id    plumbing.Hash // the pack's checksum, which names its files
	count int
	idx   *idxfile.MemoryIndex
	p     *packfile.Packfile // not safe for concurrent use: under repo.objMu
	file  billy.File         // the pack's, for mergePacks' reads at offsets
	keep  bool               // git keeps it (a .keep file): never merged
}

func (r *repo) packPath(id plumbing.Hash, ext string) string {
	return filepath.Join(r.dir, "objects", "pack", "pack-"+id.String()+ext)
}

// loadPacks opens the packs of the repository, and removes an index left
// without its pack by a crash.
func (r *repo) loadPacks() error {
	dir := filepath.Join(r.dir, "objects", "pack")
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
	}
	for name := range names {
		base, ok := strings.CutSuffix(name, ".idx")
		if !ok || !strings.HasPrefix(base, "pack-") {
			continue
		}
		if !names[base+".pack"] {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return err
			}
			continue
		}
		hex := strings.TrimPrefix(base, "pack-")
		if !plumbing.IsHash(hex) {
			continue
		}
		p, err := r.openPack(plumbing.NewHash(hex))
		if err != nil {
			r.closePacks()
			return err
		}
		p.keep = names[base+".keep"]
		r.packs = append(r.packs, p)
	}
	r.sortPacks()
	return nil
}

// sortPacks puts the small packs, where the recent objects are, first.
func (r *repo) sortPacks() {
	slices.SortFunc(r.packs, func(a, b *pack) int { return cmp.Compare(a.count, b.count) })
}

func (r *repo) openPack(id plumbing.Hash) (*pack, error) {
	f, err := os.Open(r.packPath(id, ".idx"))
	if err != nil {
		return nil, err
	}
	idx := idxfile.NewMemoryIndex()
	err = idxfile.NewDecoder(bufio.NewReader(f)).Decode(idx)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("read pack index %s: %w", id, err)
	}
	if idx.PackfileChecksum != id {
		return nil, fmt.Errorf("pack index %s names pack %s", id, idx.PackfileChecksum)
	}
	return r.readPack(id, idx)
}

// readPack opens a pack whose index is read.
func (r *repo) readPack(id plumbing.Hash, idx *idxfile.MemoryIndex) (*pack, error) {
	pf, err := osfs.Default.Open(r.packPath(id, ".pack")) // a billy.File, as packfile wants
	if err != nil {
		return nil, err
	}
	count, _ := idx.Count()
	// No file system: objects are read into memory, never reopened.
	return &pack{id: id, count: int(count), idx: idx, p: packfile.NewPackfileWithCache(idx, nil, pf, r.cache, 0), file: pf}, nil
}

func (r *repo) closePacks() {
	for _, p := range r.packs {
		p.p.Close()
	}
	r.packs = nil
}

// packedObject reads an object from the packs; ok is false when none has
// it. The caller holds objMu.
func (r *repo) packedObject(h plumbing.Hash) (typ plumbing.ObjectType, data []byte, ok bool, err error) {
	for _, p := range r.packs {
		if found, _ := p.idx.Contains(h); !found {
			continue
		}
		obj, err := p.p.Get(h)
		if err != nil {
			return 0, nil, true, fmt.Errorf("read object %s from pack %s: %w", h, p.id, err)
		}
		rd, err := obj.Reader()
		if err != nil {
			return 0, nil, true, err
		}
		data, err = io.ReadAll(rd)
		rd.Close()
		if err != nil {
			return 0, nil, true, fmt.Errorf("read object %s from pack %s: %w", h, p.id, err)
		}
		return obj.Type(), data, true, nil
	}
	return 0, nil, false, nil
}

// packed reports whether a pack has the object. The caller holds objMu.
func (r *repo) packed(h plumbing.Hash) bool {
	for _, p := range r.packs {
		if found, _ := p.idx.Contains(h); found {
			return true
		}
	}
	return false
}

// packEncoder writes a pack, whole objects only, and its index.
type packEncoder struct {
	f       *os.File
	bw      *bufio.Writer
	sum     hash.Hash // of everything written: the pack's checksum
	crc     hash.Hash32
	n       int64 // bytes written
	zw      *zlib.Writer
	index   idxfile.Writer
	count   uint32 // the objects the header announces
	written uint32
	level   int
}

// Compression. A group's pack stores its objects uncompressed (zlib's
// stored blocks): deflate builds Huffman tables for every stream, some
// 25 µs for the smallest object, which made compression most of a group's
// time. Merging packs, in the background, compresses them (compressed
// below), at the fastest level, whose state resets at little cost between
// objects (the default level clears 512 KiB of tables for each).
const (
	stored     = zlib.NoCompression
	compressed = zlib.BestSpeed
)

// zlibWriters keeps compressors by level: making one costs more than
// a small pack.
var zlibWriters = map[int]*sync.Pool{
	stored:     {New: func() any { w, _ := zlib.NewWriterLevel(io.Discard, stored); return w }},
	compressed: {New: func() any { w, _ := zlib.NewWriterLevel(io.Discard, compressed); return w }},
}

// newPackEncoder starts a pack of count objects in a temporary file of
// dir, compressed at level (stored or compressed).
func newPackEncoder(dir string, count, level int) (*packEncoder, error) {
	f, err := os.CreateTemp(dir, "pack-")
	if err != nil {
		return nil, err
	}
	e := &packEncoder{f: f, bw: bufio.NewWriterSize(f, 64<<10), sum: sha1.New(), crc: crc32.NewIEEE(), count: uint32(count), level: level}
	e.zw = zlibWriters[level].Get().(*zlib.Writer)
	e.index.OnHeader(e.count)
	var hdr [12]byte
	copy(hdr[:], "PACK")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], e.count)
	if _, err := e.Write(hdr[:]); err != nil {
		e.abort()
		return nil, err
	}
	return e, nil
}

func (e *packEncoder) Write(b []byte) (int, error) {
	e.sum.Write(b)
	e.crc.Write(b)
	n, err := e.bw.Write(b)
	e.n += int64(n)
	return n, err
}

// add writes one object.
func (e *packEncoder) add(h plumbing.Hash, typ plumbing.ObjectType, data []byte) error {
	off := e.n
	e.crc.Reset()
	// The entry's header: the type and the size, seven bits at a time
	// after the first four.
	var hdr [16]byte
	size := uint64(len(data))
	c := byte(typ)<<4 | byte(size&0x0f)
	size >>= 4
	n := 0
	for size != 0 {
		hdr[n] = c | 0x80
		n++
		c = byte(size & 0x7f)
		size >>= 7
	}
	hdr[n] = c
	if _, err := e.Write(hdr[:n+1]); err != nil {
		return err
	}
	e.zw.Reset(e)
	if _, err := e.zw.Write(data); err != nil {
		return err
	}
	if err := e.zw.Close(); err != nil {
		return err
	}
	e.index.Add(h, uint64(off), e.crc.Sum32())
	e.written++
	return nil
}

// uncompressed reports whether a pack entry (its header, then a zlib
// stream) holds its object uncompressed (the first deflate block is a
// stored one) and is long enough for compression to pay: deflate itself
// stores a few dozen bytes as they are.
func uncompressed(entry []byte) bool {
	i := 0
	for i < len(entry) && entry[i]&0x80 != 0 {
		i++ // the size, seven bits at a time
	}
	i += 3 // the header's last byte, then zlib's two
	return len(entry) > 128 && i < len(entry) && entry[i]>>1&3 == 0
}

// addRaw writes an entry of another pack as it is (its header and its
// compressed object).
func (e *packEncoder) addRaw(h plumbing.Hash, raw []byte) error {
	off := e.n
	e.crc.Reset()
	if _, err := e.Write(raw); err != nil {
		return err
	}
	e.index.Add(h, uint64(off), e.crc.Sum32())
	e.written++
	return nil
}

// finish writes the checksum and the index (to a second temporary file),
// and returns both files, written but not synced.
func (e *packEncoder) finish() (id plumbing.Hash, packFile, idxFile *os.File, idx *idxfile.MemoryIndex, err error) {
	defer func() {
		if err != nil {
			e.abort()
		}
	}()
	if e.written != e.count {
		return id, nil, nil, nil, fmt.Errorf("pack of %d objects holds %d", e.count, e.written)
	}
	e.release()
	copy(id[:], e.sum.Sum(nil))
	if _, err := e.bw.Write(id[:]); err != nil {
		return id, nil, nil, nil, err
	}
	if err := e.bw.Flush(); err != nil {
		return id, nil, nil, nil, err
	}
	if err := e.index.OnFooter(id); err != nil {
		return id, nil, nil, nil, err
	}
	idx, err = e.index.Index()
	if err != nil {
		return id, nil, nil, nil, err
	}
	f, err := writeIndex(filepath.Dir(e.f.Name()), idx)
	if err != nil {
		return id, nil, nil, nil, err
	}
	return id, e.f, f, idx, nil
}

// writeIndex writes a pack's index to a temporary file of dir, not synced.
func writeIndex(dir string, idx *idxfile.MemoryIndex) (*os.File, error) {
	f, err := os.CreateTemp(dir, "idx-")
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriter(f)
	if _, err = idxfile.NewEncoder(bw).Encode(idx); err == nil {
		err = bw.Flush()
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

func (e *packEncoder) abort() {
	e.release()
	e.f.Close()
	os.Remove(e.f.Name())
}

// release gives the compressor back.
func (e *packEncoder) release() {
	if e.zw != nil {
		e.zw.Reset(io.Discard)
		zlibWriters[e.level].Put(e.zw)
		e.zw = nil
	}
}

// stagedPack is a pack written by a group, renamed into place but not yet
// read from.
type stagedPack struct {
	id  plumbing.Hash
	idx *idxfile.MemoryIndex
}

// stageObjects writes the objects that no pack has as one pack, in
// temporary files of w that place renames into objects/pack, the index
// first. It returns nil when the packs have every object. Loose objects
// are not looked for: one that git wrote is then also packed, which is
// harmless.
func (r *repo) stageObjects(w *durableWrite, objs []pendingObject) (*stagedPack, error) {
	seen := make(map[plumbing.Hash]bool, len(objs))
	var todo []pendingObject
	r.objMu.Lock()
	for _, o := range objs {
		if !seen[o.hash] && !r.packed(o.hash) {
			todo = append(todo, o)
		}
		seen[o.hash] = true
	}
	r.objMu.Unlock()
	if len(todo) == 0 {
		return nil, nil
	}
	e, err := newPackEncoder(r.tmpDir, len(todo), stored)
	if err != nil {
		return nil, err
	}
	for _, o := range todo {
		if err := e.add(o.hash, o.typ, o.data); err != nil {
			e.abort()
			return nil, fmt.Errorf("write object %s: %w", o.hash, err)
		}
	}
	id, pf, xf, idx, err := e.finish()
	if err != nil {
		return nil, err
	}
	r.placePack(w, id, pf, xf)
	return &stagedPack{id, idx}, nil
}

// placePack adds a pack's temporary files to w, to be synced and renamed
// into objects/pack, the index first.
func (r *repo) placePack(w *durableWrite, id plumbing.Hash, packFile, idxFile *os.File) {
	w.files = append(w.files, idxFile, packFile)
	w.renames = append(w.renames, rename{idxFile.Name(), r.packPath(id, ".idx")}, rename{packFile.Name(), r.packPath(id, ".pack")})
	w.dirs[filepath.Join(r.dir, "objects", "pack")] = true
}

// addPack makes a pack that is in place and durable readable, and starts
// a consolidation when there are too many.
func (r *repo) addPack(sp *stagedPack) error {
	p, err := r.readPack(sp.id, sp.idx)
	if err != nil {
		return err
	}
	r.objMu.Lock()
	defer r.objMu.Unlock()
	if slices.ContainsFunc(r.packs, func(o *pack) bool { return o.id == p.id }) {
		p.p.Close() // the same objects, written again by a group that failed
		return nil
	}
	r.packs = append(r.packs, p)
	r.sortPacks()
	if len(r.packs) > maxPacks && !r.merging && !r.closing { // consolidate skips kept packs
		r.merging = true
		r.bg.Add(1)
		go r.consolidate()
	}
	return nil
}

// packsToMerge returns how many of the smallest packs (counts, ascending)
// to merge into one: the fewest, at least two, after which every pack
// holds at least twice the objects of the one below it. 0: none.
func packsToMerge(counts []int) int {
	n := len(counts)
	// geometric[k]: the packs from k up grow twofold.
	geometric := make([]bool, n+1)
	geometric[n] = true
	for k := n - 1; k >= 0; k-- {
		geometric[k] = geometric[k+1] && (k == n-1 || counts[k+1] >= 2*counts[k])
	}
	if geometric[0] {
		return 0
	}
	sum := 0
	for k := 1; k <= n; k++ {
		sum += counts[k-1]
		if k >= 2 && geometric[k] && (k == n || counts[k] >= 2*sum) {
			return k
		}
	}
	return n
}

// consolidate merges the smallest packs, in the background, until there
// are maxPacks or fewer or they grow twofold.
func (r *repo) consolidate() {
	defer r.bg.Done()
	for {
		r.objMu.Lock()
		// A pack that git keeps (a .keep file beside it) stays as it is.
		var candidates []*pack
		var counts []int
		for _, p := range r.packs {
			if !p.keep {
				candidates = append(candidates, p)
				counts = append(counts, p.count)
			}
		}
		k := packsToMerge(counts)
		if r.closing || len(candidates) <= maxPacks || k < 2 {
			r.merging = false
			r.objMu.Unlock()
			return
		}
		merged := candidates[:k]
		r.objMu.Unlock()
		if err := r.mergePacks(merged); err != nil {
			if !errors.Is(err, ErrClosed) {
				r.logger.Warn("history packs not merged; they are read as they are", "packs", len(merged), "error", err.Error())
			}
			r.objMu.Lock()
			r.merging = false
			r.objMu.Unlock()
			return
		}
	}
}

// packEntry is the bytes of one object's entry in a pack: its header and
// its compressed object or delta.
type packEntry struct {
	h        plumbing.Hash
	from, to int64
}

// packEntries returns the entries of a pack in the order of their
// offsets, so that an entry ends where the next begins (or at the
// checksum).
func (r *repo) packEntries(p *pack) ([]packEntry, error) {
	st, err := os.Stat(r.packPath(p.id, ".pack"))
	if err != nil {
		return nil, err
	}
	it, err := p.idx.EntriesByOffset()
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []packEntry
	for {
		e, err := it.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		out = append(out, packEntry{h: e.Hash, from: int64(e.Offset)})
	}
	for i := range out {
		out[i].to = st.Size() - int64(len(p.id))
		if i+1 < len(out) {
			out[i].to = out[i+1].from
		}
	}
	return out, nil
}

// mergePacks writes the objects of packs as one pack, makes it durable,
// puts it in their place, and removes them.
func (r *repo) mergePacks(packs []*pack) error {
	// Each object once, pack by pack.
	type entry struct {
		p *pack
		packEntry
	}
	var entries []entry
	seen := map[plumbing.Hash]bool{}
	for _, p := range packs {
		pes, err := r.packEntries(p)
		if err != nil {
			return err
		}
		for _, pe := range pes {
			if !seen[pe.h] {
				seen[pe.h] = true
				entries = append(entries, entry{p, pe})
			}
		}
	}
	e, err := newPackEncoder(r.tmpDir, len(entries), compressed)
	if err != nil {
		return err
	}
	var buf []byte
	for _, en := range entries {
		r.objMu.Lock()
		closing := r.closing
		r.objMu.Unlock()
		if closing {
			e.abort()
			return ErrClosed
		}
		// A compressed whole object is copied as it is. A delta (in a pack
		// that git wrote) refers to its base by its place in that pack, and
		// an object a group stored is not compressed: both are written
		// again.
		buf = slices.Grow(buf[:0], int(en.to-en.from))[:en.to-en.from]
		_, err := en.p.file.ReadAt(buf, en.from)
		if err == nil {
			if typ := plumbing.ObjectType(buf[0] >> 4 & 7); typ.IsDelta() || uncompressed(buf) {
				var data []byte
				r.objMu.Lock()
				typ, data, _, err = r.packedObject(en.h)
				r.objMu.Unlock()
				if err == nil {
					err = e.add(en.h, typ, data)
				}
			} else {
				err = e.addRaw(en.h, buf)
			}
		}
		if err != nil {
			e.abort()
			return fmt.Errorf("merge pack %s: object %s: %w", en.p.id, en.h, err)
		}
	}
	id, pf, xf, idx, err := e.finish()
	if err != nil {
		return err
	}
	w := newDurableWrite(nil)
	r.placePack(w, id, pf, xf)
	if err := w.finish(); err != nil {
		return err
	}
	np, err := r.readPack(id, idx)
	if err != nil {
		return err
	}
	r.objMu.Lock()
	r.packs = slices.DeleteFunc(r.packs, func(p *pack) bool { return slices.Contains(packs, p) })
	r.packs = append(r.packs, np)
	r.sortPacks()
	for _, p := range packs {
		p.p.Close()
	}
	for _, p := range packs {
		if p.id != id {
			r.retired = append(r.retired, retiredPack{p.id, p.count, time.Now()})
		}
	}
	r.objMu.Unlock()
	return r.removeRetired(retireGrace, maxRetired)
}

// retireGrace is how long a merged pack's files stay after the merge: a
// git fsck that listed them a moment before still finds them. The objects
// are meanwhile in two packs, which is harmless; a crash leaves them so,
// and a later merge keeps one copy. Under a storm of writes the files of
// at most maxRetired packs stay, the newest: every git command opens them.
const (
	retireGrace = time.Minute
	maxRetired  = 64
)

// retiredPack is a pack merged into another, whose files are to go.
type retiredPack struct {
	id    plumbing.Hash
	count int
	at    time.Time
}

// removeRetired removes the files of the packs retired longer than grace
// ago, and of the oldest beyond keep.
func (r *repo) removeRetired(grace time.Duration, keep int) error {
	r.objMu.Lock()
	var due []plumbing.Hash
	for i, p := range r.retired { // oldest first
		if time.Since(p.at) < grace && len(r.retired)-i <= keep {
			break
		}
		due = append(due, p.id)
	}
	r.retired = r.retired[len(due):]
	r.objMu.Unlock()
	var errs []error
	for _, id := range due {
		// The pack first, the index last: an index alone is ignored, and
		// removed at the next start. The others are git's (gc writes a
		// bitmap and a reverse index).
		for _, ext := range []string{".pack", ".bitmap", ".rev", ".mtimes", ".idx"} {
			if err := os.Remove(r.packPath(id, ext)); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
