package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
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

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/nexuscocreate/nexus/internal/durable"
)

// Checkpoints. A write is durable once its commit is: the group's pack,
// the directories it was renamed into and the ref are synced before the
// write is acknowledged. Its working file is renamed into place before
// that too (reads of the disk see it at once) but synced after, by the
// checkpointer, together with the working files of every group that ended
// meanwhile: a group's fsyncs are then those of its history, whatever the
// number of its writes. When the working files of every commit up to one
// are on disk, the checkpointer records that commit, the checkpoint, in
// history.git/nexus-checkpoint.
//
// On open, the working files that the store wrote after the checkpoint are
// checked against the history (recoverWorkingFiles). One that holds what
// the path held before its last write (at the checkpoint or at a commit
// since), is missing where the path was absent then, or is empty where
// HEAD's is not, lost its write in a crash and is written again from HEAD.
// Any other content is an edit made on disk, committed as "disk" as always.
// A clean Close syncs everything and records HEAD, so a store that was
// closed checks nothing.

// checkpointName is the checkpoint's file in the history repository.
const checkpointName = "nexus-checkpoint"

// The file has two slots, 512 bytes apart (each in a sector of its own):
// a sequence number, a commit and the CRC-32 of both. A checkpoint
// overwrites the older slot, so a torn write leaves the newer one whole.
const (
	slotSize   = 8 + 20 + 4
	slotStride = 512
)

// checkpointFile is the checkpoint as recorded, and its file, kept open.
type checkpointFile struct {
	mu    sync.Mutex // record is called by the open and the checkpointer
	f     *os.File
	seq   uint64
	head  plumbing.Hash
	found bool // the file had a checkpoint when opened
	fresh bool // the file was created: its name is not durable yet
}

func openCheckpoint(historyDir string) (*checkpointFile, error) {
	path := filepath.Join(historyDir, checkpointName)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	fresh := false
	if errors.Is(err, fs.ErrNotExist) {
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		fresh = true
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	c := &checkpointFile{f: f, fresh: fresh}
	buf := make([]byte, slotStride+slotSize)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		f.Close()
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	for _, off := range []int{0, slotStride} {
		if n < off+slotSize {
			continue
		}
		slot := buf[off : off+slotSize]
		if crc32.ChecksumIEEE(slot[:28]) != binary.BigEndian.Uint32(slot[28:]) {
			continue // torn, or never written
		}
		if seq := binary.BigEndian.Uint64(slot); !c.found || seq > c.seq {
			c.seq, c.found = seq, true
			copy(c.head[:], slot[8:28])
		}
	}
	return c, nil
}

// record makes head the checkpoint, durably.
func (c *checkpointFile) record(head plumbing.Hash) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.found && head == c.head {
		return nil
	}
	seq := c.seq + 1
	var slot [slotSize]byte
	binary.BigEndian.PutUint64(slot[:], seq)
	copy(slot[8:28], head[:])
	binary.BigEndian.PutUint32(slot[28:], crc32.ChecksumIEEE(slot[:28]))
	if _, err := c.f.WriteAt(slot[:], int64(seq%2)*slotStride); err != nil {
		return err
	}
	if err := c.f.Sync(); err != nil {
		return err
	}
	if c.fresh {
		if err := syncDirs(filepath.Dir(c.f.Name())); err != nil {
			return err
		}
		c.fresh = false
	}
	c.seq, c.head, c.found = seq, head, true
	return nil
}

// checkpointer syncs, in the background, the working files of the groups
// that ended, and records the checkpoint.
type checkpointer struct {
	root   *os.Root
	file   *checkpointFile
	logger *slog.Logger

	mu     sync.Mutex
	files  []*os.File
	dirs   map[string]bool
	head   plumbing.Hash
	ahead  bool  // head is past the checkpoint
	failed error // a sync failed: the checkpoint no longer moves

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

func newCheckpointer(root *os.Root, file *checkpointFile, logger *slog.Logger) *checkpointer {
	c := &checkpointer{root: root, file: file, logger: logger, dirs: map[string]bool{},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c
}

// add hands over the working files and directories of a group that ended
// with commit head, for the next round.
func (c *checkpointer) add(files []*os.File, dirs []string, head plumbing.Hash) {
	c.mu.Lock()
	c.files = append(c.files, files...)
	for _, d := range dirs {
		c.dirs[d] = true
	}
	c.head, c.ahead = head, true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *checkpointer) loop() {
	defer close(c.done)
	for {
		select {
		case <-c.wake:
			c.round()
		case <-c.stop:
			c.round()
			return
		}
	}
}

// round syncs what the groups that ended since the last round wrote, and
// records the newest of them as the checkpoint.
func (c *checkpointer) round() {
	c.mu.Lock()
	files, dirs, head, ahead := c.files, c.dirs, c.head, c.ahead
	c.files, c.dirs, c.ahead = nil, map[string]bool{}, false
	failed := c.failed
	c.mu.Unlock()
	if !ahead {
		return
	}
	err := syncLazy(c.root, files, slices.Collect(maps.Keys(dirs)))
	if err == nil && failed == nil {
		err = c.file.record(head)
	}
	if err != nil && failed == nil {
		c.logger.Error("working files not synced; after a crash they are checked against the history on the next start",
			"error", err.Error())
		c.mu.Lock()
		c.failed = err
		c.mu.Unlock()
	}
}

// close runs a last round and stops the checkpointer.
func (c *checkpointer) close() error {
	close(c.stop)
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.failed, c.file.f.Close())
}

// recoverWorkingFiles checks, during open, the working files that the store
// wrote after the checkpoint (see above): it writes again from HEAD those
// that lost their write, syncs the others, and updates onDisk to match. It
// then records HEAD as the checkpoint.
func (s *Definitions) recoverWorkingFiles(onDisk map[string]diskFile) error {
	c := s.ckpt.file
	if !c.found || c.head == s.head {
		return c.record(s.head) // a new store, one kept in sync, or one closed cleanly
	}
	from := 0
	if !c.head.IsZero() {
		pos, ok := s.index.pos[c.head]
		if !ok {
			s.logger.Warn("the checkpoint is not in the history (it was rewritten or recovered); working files not checked",
				"checkpoint", c.head.String())
			return c.record(s.head)
		}
		from = pos + 1
	}
	written := map[string]bool{}
	for _, rec := range s.index.commits[from:] {
		if rec.author == AuthorDisk {
			continue
		}
		for _, ch := range rec.changes {
			written[ch.path] = true
		}
	}
	paths := slices.Sorted(maps.Keys(written))
	empty := blobHash(nil)
	dw := newDurableWrite(s.root)
	var restored, synced []string
	for _, p := range paths {
		head, inHead := s.files[p]
		disk, onD := onDisk[p]
		if inHead == onD && (!onD || head.blob == disk.blob) {
			synced = append(synced, p)
			continue
		}
		if onD && disk.blob.IsZero() {
			continue // over the size limit: left to the scan
		}
		lost := onD && inHead && disk.size == 0 && head.blob != empty
		for _, v := range s.versionsBefore(p, from, c.head) {
			lost = lost || (v.IsZero() && !onD) || (!v.IsZero() && onD && v == disk.blob)
		}
		if !lost {
			continue // an edit on disk: the scan commits it
		}
		var err error
		if inHead {
			var data []byte
			if data, err = s.repo.readBlob(head.blob); err == nil {
				err = s.stageWorkingFile(dw, p, data, false)
				onDisk[p] = diskFile{blob: head.blob, size: int64(len(data))}
			}
		} else {
			err = s.stageWorkingFile(dw, p, nil, true)
			delete(onDisk, p)
		}
		if err != nil {
			s.logger.Warn("working file not restored after a crash", "path", p, "error", err.Error())
			continue
		}
		restored = append(restored, p)
	}
	if err := dw.finish(); err != nil {
		return fmt.Errorf("restore working files after a crash: %w", err)
	}
	if len(restored) > 0 {
		s.logger.Warn("working files restored from the history after a crash", "paths", strings.Join(restored, ", "))
	}
	// The others are on disk only as far as the crash let them be: a
	// killed daemon leaves them in the page cache.
	files, dirs := []*os.File{}, map[string]bool{}
	for _, p := range synced {
		if f, err := durable.OpenToSync(s.root, p); err == nil {
			files = append(files, f)
		}
		dirs[parentDir(p)] = true
	}
	if err := syncLazy(s.root, files, slices.Collect(maps.Keys(dirs))); err != nil {
		return fmt.Errorf("sync working files after a crash: %w", err)
	}
	return c.record(s.head)
}

// versionsBefore returns the blobs that path had (the zero hash: absent)
// at the checkpoint and after each commit from position from on that
// changed it, but the last: what a working file holds if its last write
// was lost.
func (s *Definitions) versionsBefore(path string, from int, checkpoint plumbing.Hash) []plumbing.Hash {
	var out []plumbing.Hash
	at := func(commit plumbing.Hash) {
		if commit.IsZero() {
			out = append(out, plumbing.ZeroHash)
			return
		}
		h, err := s.blobAt(commit, path)
		if err != nil {
			h = plumbing.ZeroHash
		}
		out = append(out, h)
	}
	at(checkpoint)
	ps := s.index.byPath[path]
	ps = ps[sort.SearchInts(ps, from):]
	for i, pos := range ps {
		if i == len(ps)-1 {
			break
		}
		at(s.index.commits[pos].hash)
	}
	return out
}
