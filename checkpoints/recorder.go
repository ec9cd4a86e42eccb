package checkpoints

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/nexuscocreate/nexus/state"
)

// The recorder appends checkpoints to the chain in the order their calls
// ended, all those waiting at once (one pack, one ref update: a group
// commit). A call ends once its checkpoint is durable, so that a change
// acknowledged to its caller can be undone after a crash too (the group
// commit keeps that at about 0.15x a git commit: make bench). Whatever
// reads the checkpoints (List, Get, Diff, Undo, Redo, Usage, GC, Close)
// waits for the queue first.

// pendingRecord is a checkpoint waiting to be recorded.
type pendingRecord struct {
	cp *Checkpoint // nil for a flush
	// contents are those of the checkpoint's blobs the repository may
	// lack, by id; the others are referred to by id.
	contents map[string][]byte
	// settle are paths whose baseline entries are refreshed once the
	// checkpoint is recorded, and whose claim is then released.
	settle []string
	// storeOnFailure: the baseline names blobs' contents already (a
	// command's), so they are stored even if the checkpoint is not.
	storeOnFailure bool
	done           chan error // nil: nobody waits
}

type recorder struct {
	s    *Store
	wake chan struct{}
	quit chan struct{}
	gone chan struct{}

	// mu guards the queue.
	mu      sync.Mutex
	queue   []*pendingRecord
	closing bool
}

func newRecorder(s *Store) *recorder {
	r := &recorder{s: s, wake: make(chan struct{}, 1), quit: make(chan struct{}), gone: make(chan struct{})}
	go r.loop()
	return r
}

// enqueue queues a record; it returns false once the recorder is closed.
func (r *recorder) enqueue(p *pendingRecord) bool {
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		return false
	}
	r.queue = append(r.queue, p)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	return true
}

// flush waits until every checkpoint queued before it is recorded.
func (r *recorder) flush() {
	p := &pendingRecord{done: make(chan error, 1)}
	if r.enqueue(p) {
		<-p.done
	}
}

// close records what is queued and stops.
func (r *recorder) close() {
	r.mu.Lock()
	already := r.closing
	r.closing = true
	r.mu.Unlock()
	if !already {
		close(r.quit)
	}
	<-r.gone
}

func (r *recorder) loop() {
	defer close(r.gone)
	for {
		select {
		case <-r.wake:
		case <-r.quit:
		}
		r.mu.Lock()
		batch, closing := r.queue, r.closing
		r.queue = nil
		r.mu.Unlock()
		if len(batch) > 0 {
			r.record(batch)
		}
		if closing && len(batch) == 0 {
			return
		}
	}
}

// record appends a batch's checkpoints, then refreshes the baseline for
// their paths and answers their callers.
func (r *recorder) record(batch []*pendingRecord) {
	s := r.s
	var recs []state.ChangeRecord
	var cps []*Checkpoint
	var err error
	for _, p := range batch {
		if p.cp == nil {
			continue
		}
		manifest, files, merr := encodeCheckpoint(p.cp, p.contents)
		if merr != nil {
			err = merr
			break
		}
		msg := fmt.Sprintf("%s %s", p.cp.Kind, p.cp.ID)
		if p.cp.ToolName != "" {
			msg += " (" + p.cp.ToolName + ")"
		}
		recs = append(recs, state.ChangeRecord{Manifest: manifest, Files: files,
			Author: p.cp.Author, Message: msg, Time: p.cp.Time})
		cps = append(cps, p.cp)
	}
	if err == nil && len(recs) > 0 {
		_, err = s.changes.Append(ref, recs...)
	}
	if err != nil {
		err = fmt.Errorf("record %d checkpoints: %w", len(cps), err)
	} else if len(cps) > 0 {
		s.mu.Lock()
		for _, cp := range cps {
			s.add(cp)
		}
		s.mu.Unlock()
	}
	if len(cps) > 0 && err == nil {
		s.afterRecord()
	}
	// Answer first: a command's end waits here holding the baseline,
	// which the refreshes below take.
	var settles [][]string
	var failed [][]string
	for _, p := range batch {
		if len(p.settle) > 0 && err == nil {
			settles = append(settles, p.settle)
		} else if len(p.settle) > 0 {
			failed = append(failed, p.settle)
		}
	}
	sessions := map[string]bool{}
	for _, p := range batch {
		if p.cp != nil && err == nil {
			sessions[p.cp.Session] = true
		}
		if err != nil && p.storeOnFailure && len(p.contents) > 0 {
			if perr := s.changes.Put(slices.Collect(maps.Values(p.contents))); perr != nil {
				s.logger.Error("a command's contents were not stored; a later undo of its files may fail", "call", p.cp.ID, "error", perr.Error())
			}
		}
		if p.done != nil {
			p.done <- err
		} else if err != nil && p.cp != nil {
			s.logger.Error("a call's changes were not recorded; they cannot be undone", "call", p.cp.ID, "error", err.Error())
		}
	}
	for _, paths := range settles {
		s.scan.settleAndRelease(paths)
	}
	for _, paths := range failed {
		s.scan.releaseLater(paths)
	}
	for session := range sessions {
		s.publish(session)
	}
}

// record records a checkpoint and waits until it is durable.
func (s *Store) record(cp *Checkpoint, contents map[string][]byte) error {
	p := &pendingRecord{cp: cp, contents: contents, done: make(chan error, 1)}
	if !s.rec.enqueue(p) {
		return fmt.Errorf("record checkpoint %s: the store is closed", cp.ID)
	}
	return <-p.done
}

// The manifest is the Checkpoint as JSON without what is derived or kept
// elsewhere: UndoneBy, and the blob ids of its files, which are the
// entries of its tree named "b<i>" (before) and "a<i>" (after) for its
// i-th file. Ids of 40 random hex digits twice, in the manifest and in the
// tree, cost more than the rest of a small checkpoint once compressed.

// encodeCheckpoint returns a checkpoint's manifest and contents.
func encodeCheckpoint(cp *Checkpoint, contents map[string][]byte) ([]byte, []state.ChangeFile, error) {
	cp.UndoneBy = ""
	m := *cp
	m.Files = slices.Clone(cp.Files)
	var files []state.ChangeFile
	add := func(name, id string) {
		if id == "" {
			return
		}
		f := state.ChangeFile{Name: name, ID: id}
		if c, ok := contents[id]; ok {
			f.Content, f.ID = c, ""
		}
		files = append(files, f)
	}
	for i := range m.Files {
		add("b"+strconv.Itoa(i), m.Files[i].Before)
		add("a"+strconv.Itoa(i), m.Files[i].After)
		m.Files[i].Before, m.Files[i].After = "", ""
	}
	if m.ToolCallID == m.ID {
		m.ToolCallID = "" // the id; decodeCheckpoint puts it back
	}
	manifest, err := json.Marshal(m)
	return manifest, files, err
}

// decodeCheckpoint reads a checkpoint back from its record.
func decodeCheckpoint(e state.ChangeEntry) (*Checkpoint, error) {
	var cp Checkpoint
	if err := json.Unmarshal(e.Manifest, &cp); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", e.Commit, err)
	}
	if cp.Kind == KindCall && cp.ToolCallID == "" {
		cp.ToolCallID = cp.ID
	}
	for i := range cp.Files {
		cp.Files[i].Before = e.Files["b"+strconv.Itoa(i)]
		cp.Files[i].After = e.Files["a"+strconv.Itoa(i)]
	}
	return &cp, nil
}
