package state

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Group commit. Writers do not commit themselves: each queues its write
// ([writeOp]) and waits. One goroutine, the committer, takes every write
// queued and commits them as one group, in queue order, each write its own
// commit (with its own author, message and parent: the commit of the write
// before it), so the history reads exactly as if they had been made one at
// a time. The group shares the three rounds of fsyncs of one write:
//
//	one pack of the group's objects and its index, as temporary files →
//	fsync both → take the ref lock (naming the group's last commit) and
//	rename the working files, the index and the pack into place → fsync
//	objects/pack with the lock → rename the lock over the ref → fsync
//	refs/heads.
//
// Only then are the writes of the group published (reads see them) and
// acknowledged. Their working files are synced after, by the checkpointer
// (checkpoint.go): the history is what makes a write durable, and a working
// file that a crash took back is written again from it on the next open.
// A crash before the ref moves leaves the old history intact and none of
// the group's writes was acknowledged; a working file already renamed is
// then found on the next open and committed as "disk".
//
// The committer does not wait for a group to fill: a lone writer waits for
// nothing but its own fsyncs. The writes that arrive during a group's
// rounds form the next group; when the group before had company, the
// committer lingers a moment for its writers to come back (linger), so
// that concurrent writers keep sharing one group rather than alternating
// between two.
//
// A write that fails (a stale expected revision, a diff that does not
// apply, a path where a directory is) fails alone: it is decided against
// the draft (HEAD with the group's writes before it) and leaves the draft
// as it was. Only a failure to write a group (the disk, a ref lock that
// git holds) fails every write of the group, whose temporary files are
// then removed.

// maxGroup bounds the writes of one group: the temporary files of a group
// are all open until its first fsync round.
const maxGroup = 64

// writeOp is one write waiting for the committer.
type writeOp struct {
	path string
	w    WriteOptions
	// plan decides, against the draft, what the write commits; it may word
	// w's message. errNoChange: there is nothing to commit.
	plan func(d *draft, w *WriteOptions) (commitOptions, error)

	done chan struct{} // closed when rev and err are set
	rev  plumbing.Hash
	err  error
}

// errNoChange is a plan's answer when the write has nothing to commit.
var errNoChange = errors.New("no change")

func (op *writeOp) finish(rev plumbing.Hash, err error) {
	op.rev, op.err = rev, err
	close(op.done)
}

// write queues op and waits until it is durable or has failed.
func (s *Definitions) write(op *writeOp) (plumbing.Hash, error) {
	s.enqueue(op)
	<-op.done
	return op.rev, op.err
}

// enqueue queues op for the committer without waiting; op.done is closed
// when it is durable or has failed.
func (s *Definitions) enqueue(op *writeOp) {
	op.done = make(chan struct{})
	s.queueMu.Lock()
	if s.stopping {
		s.queueMu.Unlock()
		op.finish(plumbing.ZeroHash, ErrClosed)
		return
	}
	s.queue = append(s.queue, op)
	s.queueMu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default: // the committer is already woken
	}
}

// startCommitter starts the goroutine that commits the queued writes;
// stopCommitter ends it.
func (s *Definitions) startCommitter() {
	s.wake = make(chan struct{}, 1)
	s.stop = make(chan struct{})
	s.stopped = make(chan struct{})
	go s.commitLoop()
}

// stopCommitter refuses new writes, lets the group in progress finish,
// fails the writes still queued with ErrClosed, and waits for the
// committer to return. It reports whether this call stopped it.
func (s *Definitions) stopCommitter() bool {
	s.queueMu.Lock()
	if s.stopping {
		s.queueMu.Unlock()
		return false
	}
	s.stopping = true
	s.queueMu.Unlock()
	close(s.stop)
	<-s.stopped
	return true
}

func (s *Definitions) commitLoop() {
	defer close(s.stopped)
	d := s.newDraft()
	var carry []*writeOp // writes left for the next group, first in line
	var lastSize int     // the writes of the group before
	var lastTook time.Duration
	for {
		if len(carry) == 0 {
			select {
			case <-s.wake:
			case <-s.stop:
			}
			s.linger(lastSize, lastTook)
		}
		s.queueMu.Lock()
		ops := slices.Concat(carry, s.queue)
		s.queue = nil
		s.queueMu.Unlock()
		select {
		case <-s.stop:
			for _, op := range ops {
				op.finish(plumbing.ZeroHash, ErrClosed)
			}
			return
		default:
		}
		start := time.Now()
		d.reset() // HEAD as reads see it: the group before is published
		var g *group
		g, carry = s.makeGroup(d, ops)
		lastSize = len(g.waiting)
		if len(g.commits) == 0 {
			g.dw.abort()
			g.acknowledge()
			continue
		}
		s.commitGroup(g)
		lastTook = time.Since(start)
	}
}

// linger waits a little, when the last group had company, for its writers
// to come back: an acknowledged writer queues its next write a moment
// later, too late for a committer that takes the queue at once, and the
// groups would alternate between a few writes and the rest. It returns
// once as many writes as the last group had are queued, or after a quarter
// of the time the last group took to commit (at most 2 ms). A lone writer
// never waits.
func (s *Definitions) linger(want int, took time.Duration) {
	wait := min(took/4, 2*time.Millisecond)
	if want < 2 || wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for s.queued() < want {
		select {
		case <-s.wake:
		case <-t.C:
			return
		case <-s.stop:
			return
		}
	}
}

// queued is the number of writes waiting for the committer.
func (s *Definitions) queued() int {
	s.queueMu.Lock()
	defer s.queueMu.Unlock()
	return len(s.queue)
}

// makeGroup makes the commits of ops as one group on the draft and returns
// the writes left for the next group: from the first one that touches a
// path the group already wrote (the path, a directory above it or a file
// below it), or past maxGroup. The working files of a group are renamed
// and removed in one pass, which cannot order two changes of one path (or
// of a file and its directory), so such a write waits for the next round;
// it is still committed after the writes queued before it.
func (s *Definitions) makeGroup(d *draft, ops []*writeOp) (g *group, rest []*writeOp) {
	g = &group{dw: newDurableWrite(s.root), base: d.head}
	for i, op := range ops {
		if len(g.waiting) == maxGroup || d.overlaps(op.path) {
			rest = ops[i:]
			break
		}
		o, err := op.plan(d, &op.w)
		if errors.Is(err, errNoChange) {
			op.finish(plumbing.ZeroHash, nil)
			continue
		}
		if err == nil {
			op.rev, err = s.addCommit(d, g, op.path, op.w, o)
		}
		if err != nil {
			op.finish(plumbing.ZeroHash, err)
			continue
		}
		g.waiting = append(g.waiting, op)
	}
	g.head = d.head
	return g, rest
}

// group is the commits of one round.
type group struct {
	dw      *durableWrite // the working files and the objects
	objs    []pendingObject
	pack    *stagedPack // objs the history lacked, once staged
	commits []groupCommit
	base    plumbing.Hash // the branch before the group
	head    plumbing.Hash // the group's last commit (base when it has none)
	when    time.Time
	waiting []*writeOp // acknowledged when the group is durable
}

// groupCommit is one commit of a group, as it is published.
type groupCommit struct {
	path   string
	del    bool
	file   fileState
	trees  map[string][]object.TreeEntry // nil entries: the directory is gone
	rec    *commitRecord
	change ChangeType
}

func (g *group) acknowledge() {
	for _, op := range g.waiting {
		op.finish(op.rev, nil)
	}
}

func (g *group) fail(err error) {
	for _, op := range g.waiting {
		op.finish(plumbing.ZeroHash, err)
	}
}

// addCommit adds to the group the commit of one write, made against the
// draft, and applies it to the draft. The same content as the draft's is
// no commit: the revision that has it is returned.
func (s *Definitions) addCommit(d *draft, g *group, path string, w WriteOptions, o commitOptions) (plumbing.Hash, error) {
	cur, exists := d.file(path)
	var blob pendingObject
	if !o.delete {
		blob = encodeBlob(o.content)
		if exists && cur.blob == blob.hash {
			return cur.rev, nil
		}
	}
	if err := d.checkShape(path, o.delete); err != nil {
		return plumbing.ZeroHash, err
	}
	trees, objs, rootHash, err := d.buildTrees(path, blob.hash, o.delete)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if !o.delete {
		objs = append(objs, blob)
	}
	now := s.opts.Now().UTC().Truncate(time.Second)
	sig := object.Signature{Name: w.Author, Email: authorEmail, When: now}
	msg := w.Message
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: rootHash}
	if !d.head.IsZero() {
		c.ParentHashes = []plumbing.Hash{d.head}
	}
	commit, err := encodeCommit(c)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	objs = append(objs, commit)
	if !o.fromDisk {
		// Staged apart, so that a path refused on disk fails this write
		// alone.
		dw := newDurableWrite(s.root)
		if err := s.stageWorkingFile(dw, path, o.content, o.delete); err != nil {
			dw.abort()
			return plumbing.ZeroHash, err
		}
		g.dw.merge(dw)
	}

	change := Modified
	switch {
	case o.delete:
		change = Deleted
	case !exists:
		change = Added
	}
	gc := groupCommit{path: path, del: o.delete, trees: trees, change: change,
		rec: &commitRecord{hash: commit.hash, parent: d.head, when: now, author: w.Author, message: msg,
			changes: []pathChange{{path, change}}}}
	if !o.delete {
		gc.file = fileState{blob: blob.hash, size: int64(len(o.content)), rev: commit.hash}
	}
	d.apply(gc, blob)
	g.objs = append(g.objs, objs...)
	g.commits = append(g.commits, gc)
	g.when = now
	return commit.hash, nil
}

// commitGroup commits a group: its three rounds of fsyncs, then the
// snapshot, the history index and the bus; it acknowledges the writes and
// hands their working files to the checkpointer. A failure fails them all.
func (s *Definitions) commitGroup(g *group) {
	s.repo.gcMu.RLock()
	err := s.commitFiles(g)
	if err == nil {
		err = s.publish(g)
	}
	s.repo.gcMu.RUnlock()
	files, dirs := g.dw.takeLazy()
	if err != nil {
		for _, f := range files {
			f.Close()
		}
		g.fail(err)
		return
	}
	if len(files)+len(dirs) > 0 {
		s.ckpt.add(files, dirs, g.head)
	}
	g.acknowledge()
}

// commitFiles writes the group's pack and the ref lock, and makes them and
// the working files' names durable: the first two rounds. Nothing is
// published yet.
func (s *Definitions) commitFiles(g *group) error {
	var err error
	if g.pack, err = s.repo.stageObjects(g.dw, g.objs); err != nil {
		g.dw.abort()
		return fmt.Errorf("write history objects: %w", err)
	}
	// The ref lock with them: a git command holding it fails the group
	// before anything is in place.
	if err := s.repo.stageRef(g.dw, g.head); err != nil {
		g.dw.abort()
		return fmt.Errorf("write %s: %w", g.describe(), err)
	}
	if err := g.dw.place(); err != nil {
		return fmt.Errorf("write %s: %w", g.describe(), err)
	}
	if err := g.dw.syncPlaced(); err != nil {
		s.repo.unlockRef()
		return fmt.Errorf("write %s: %w", g.describe(), err)
	}
	return nil
}

// publish reads the group's pack, moves the ref (the last round), and
// publishes the commits.
func (s *Definitions) publish(g *group) error {
	if g.pack != nil {
		if err := s.repo.addPack(g.pack); err != nil {
			s.repo.unlockRef()
			return fmt.Errorf("write %s: read the new pack: %w", g.describe(), err)
		}
	}
	last := g.commits[len(g.commits)-1].rec
	who, msg := last.author, last.message
	if n := len(g.commits); n > 1 {
		msg = fmt.Sprintf("group of %d commits, the last: %s", n, firstLine(msg))
	}
	reflogErr, err := s.repo.commitRef(g.base, g.head, who, msg, g.when.Unix())
	if err != nil {
		return err
	}
	if reflogErr != nil {
		s.logger.Warn("reflog not appended; recovery from a damaged ref will not reach this commit", "error", reflogErr.Error())
	}

	recs := make([]*commitRecord, len(g.commits))
	s.mu.Lock()
	for i, c := range g.commits {
		for dir, entries := range c.trees {
			if entries == nil && dir != "" {
				delete(s.trees, dir)
			} else {
				s.trees[dir] = entries
			}
		}
		if c.del {
			delete(s.files, c.path)
		} else {
			s.files[c.path] = c.file
		}
		s.index.add(c.rec)
		recs[i] = c.rec
	}
	s.head = g.head
	s.mu.Unlock()
	if err := s.index.appendFile(recs...); err != nil {
		s.logger.Warn("history index not saved; it is rebuilt on the next start", "error", err.Error())
	}
	if s.opts.Bus != nil {
		for _, c := range g.commits {
			s.opts.Bus.Publish(DefinitionChange{Path: c.path, Revision: c.rec.hash.String(), Author: c.rec.author,
				Change: c.change, Message: c.rec.message, Time: c.rec.when})
		}
	}
	return nil
}

// describe names the writes of a group in an error.
func (g *group) describe() string {
	first := fmt.Sprintf("definition %q", g.commits[0].path)
	if n := len(g.commits); n > 1 {
		return fmt.Sprintf("%s and %d other writes", first, n-1)
	}
	return first
}

// draft is HEAD as the group being made leaves it: the published snapshot
// with the group's writes over it. Only the committer uses it; it reads the
// snapshot under mu.
type draft struct {
	s     *Definitions
	head  plumbing.Hash
	files map[string]*fileState         // paths the group wrote (nil: deleted)
	trees map[string][]object.TreeEntry // directories it changed (nil but for the root: removed)
	revs  map[string]plumbing.Hash      // the commit that last changed a path
	blobs map[plumbing.Hash][]byte      // contents not yet published
}

func (s *Definitions) newDraft() *draft {
	return &draft{s: s, files: map[string]*fileState{}, trees: map[string][]object.TreeEntry{},
		revs: map[string]plumbing.Hash{}, blobs: map[plumbing.Hash][]byte{}}
}

// reset makes the draft the published snapshot again, before a group.
func (d *draft) reset() {
	clear(d.files)
	clear(d.trees)
	clear(d.revs)
	clear(d.blobs)
	d.s.mu.RLock()
	d.head = d.s.head
	d.s.mu.RUnlock()
}

// file returns the state of a file in the draft.
func (d *draft) file(path string) (fileState, bool) {
	if f, ok := d.files[path]; ok {
		if f == nil {
			return fileState{}, false
		}
		return *f, true
	}
	d.s.mu.RLock()
	defer d.s.mu.RUnlock()
	f, ok := d.s.files[path]
	return f, ok
}

// tree returns the entries of a directory in the draft.
func (d *draft) tree(dir string) ([]object.TreeEntry, bool) {
	if entries, ok := d.trees[dir]; ok {
		if entries == nil && dir != "" {
			return nil, false
		}
		return entries, true
	}
	d.s.mu.RLock()
	defer d.s.mu.RUnlock()
	entries, ok := d.s.trees[dir]
	return entries, ok
}

// lastChange returns the commit that last changed path (a deletion
// included), or the zero hash when none did.
func (d *draft) lastChange(path string) plumbing.Hash {
	if rev, ok := d.revs[path]; ok {
		return rev
	}
	d.s.mu.RLock()
	defer d.s.mu.RUnlock()
	if ps := d.s.index.byPath[path]; len(ps) > 0 {
		return d.s.index.commits[ps[len(ps)-1]].hash
	}
	return plumbing.ZeroHash
}

// readBlob returns a blob's content, from the draft when it is not yet
// published.
func (d *draft) readBlob(h plumbing.Hash) ([]byte, error) {
	if data, ok := d.blobs[h]; ok {
		return data, nil
	}
	return d.s.repo.readBlob(h)
}

// overlaps reports whether the group being made wrote path, a file above
// it, or a file below it.
func (d *draft) overlaps(path string) bool {
	if _, ok := d.revs[path]; ok {
		return true
	}
	for dir := parentDir(path); dir != ""; dir = parentDir(dir) {
		if _, ok := d.revs[dir]; ok {
			return true
		}
	}
	for p := range d.revs {
		if strings.HasPrefix(p, path+"/") {
			return true
		}
	}
	return false
}

// apply puts a commit of the group being made on the draft.
func (d *draft) apply(c groupCommit, blob pendingObject) {
	d.head = c.rec.hash
	for dir, entries := range c.trees {
		d.trees[dir] = entries
	}
	if c.del {
		d.files[c.path] = nil
	} else {
		f := c.file
		d.files[c.path] = &f
		d.blobs[blob.hash] = blob.data
	}
	d.revs[c.path] = c.rec.hash
}
