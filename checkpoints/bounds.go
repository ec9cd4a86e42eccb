package checkpoints

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nexuscocreate/nexus/state"
)

// Bounds. After a checkpoint takes the repository's objects over
// MaxStoreBytes, the least recently active sessions' checkpoints are
// dropped, one session at a time (never the most recently active one),
// each followed by a gc, until the objects are under the cap: in the
// background, one prune at a time. The cap counts the whole repository,
// the definitions' history included, which is never pruned.

// afterRecord starts a prune when the store is over its cap.
func (s *Store) afterRecord() {
	n, err := s.changes.Size()
	if err != nil || n <= s.opts.MaxStoreBytes || !s.pruning.CompareAndSwap(false, true) {
		return
	}
	s.bg.Go(func() {
		defer s.pruning.Store(false)
		if _, _, err := s.prune(context.Background()); err != nil {
			s.logger.Warn("checkpoints not pruned; the store stays over its cap (checkpoints.maxStoreSize)", "error", err.Error())
		}
	})
}

// Usage returns the store's size.
func (s *Store) Usage() (Usage, error) {
	s.rec.flush()
	n, err := s.changes.Size()
	if err != nil {
		return Usage{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	sessions := map[string]bool{}
	for _, cp := range s.list {
		sessions[cp.Session] = true
	}
	return Usage{Checkpoints: len(s.list), Sessions: len(sessions), Bytes: n, MaxBytes: s.opts.MaxStoreBytes}, nil
}

// GC prunes the oldest sessions' checkpoints down to the cap and drops
// the objects nothing refers to any more.
func (s *Store) GC(ctx context.Context) (GCResult, error) {
	s.rec.flush()
	before, err := s.changes.Size()
	if err != nil {
		return GCResult{}, err
	}
	pruned, collected, err := s.prune(ctx)
	if err == nil && !collected {
		err = s.gc()
	}
	res := GCResult{Pruned: pruned, BytesBefore: before}
	if err != nil {
		return res, err
	}
	res.BytesAfter, err = s.changes.Size()
	return res, err
}

// prune drops the least recently active sessions until the store is
// under its cap, with a gc after each; collected says whether one ran.
func (s *Store) prune(ctx context.Context) (pruned int, collected bool, err error) {
	for {
		if err := ctx.Err(); err != nil {
			return pruned, collected, err
		}
		n, err := s.changes.Size()
		if err != nil || n <= s.opts.MaxStoreBytes {
			return pruned, collected, err
		}
		victim, ok := s.oldestSession()
		if !ok {
			return pruned, collected, nil // the newest session stays, whatever its size
		}
		dropped, err := s.dropSession(victim)
		if err != nil {
			return pruned, collected, err
		}
		pruned += dropped
		if err := s.gc(); err != nil {
			return pruned, collected, err
		}
		collected = true
		s.publish(victim)
	}
}

// oldestSession returns the session whose last checkpoint is the oldest,
// unless it is the only one.
func (s *Store) oldestSession() (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	last := map[string]int{}
	for i, cp := range s.list {
		last[cp.Session] = i
	}
	if len(last) < 2 {
		return "", false
	}
	victim, at := "", len(s.list)
	for session, i := range last {
		if i < at {
			victim, at = session, i
		}
	}
	return victim, true
}

// dropSession removes a session's checkpoints from the chain.
func (s *Store) dropSession(session string) (int, error) {
	s.undoMu.Lock()
	defer s.undoMu.Unlock()
	var decodeErr error
	n, err := s.changes.Rewrite(ref, func(e state.ChangeEntry) bool {
		var m struct {
			Session string `json:"session"`
		}
		if err := json.Unmarshal(e.Manifest, &m); err != nil {
			decodeErr = err
			return true
		}
		return m.Session != session
	})
	if err == nil {
		err = decodeErr
	}
	if err != nil {
		return n, fmt.Errorf("checkpoints: prune session %q: %w", session, err)
	}
	s.mu.Lock()
	kept := s.list[:0]
	for _, cp := range s.list {
		if cp.Session == session {
			delete(s.byID, cp.ID)
		} else {
			kept = append(kept, cp)
		}
	}
	s.list = kept
	s.mu.Unlock()
	return n, nil
}

// gc drops the objects nothing refers to, keeping the baseline's
// contents. Commands and undos wait meanwhile: a scan could otherwise
// take a content for kept that gc is dropping.
func (s *Store) gc() error {
	s.undoMu.Lock()
	defer s.undoMu.Unlock()
	sc := s.scan
	sc.lock()
	defer sc.unlock()
	// The checkpoints queued by commands that ended refer to contents
	// the baseline no longer holds: recorded first. No command ends
	// meanwhile (mu).
	s.rec.flush()
	keep := make([]string, 0, len(sc.base))
	for _, e := range sc.base {
		if e.Kind == entryFile {
			keep = append(keep, e.Blob)
		}
	}
	if _, _, err := s.changes.GC(keep); err != nil {
		return fmt.Errorf("checkpoints: gc: %w", err)
	}
	return nil
}
