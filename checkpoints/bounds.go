package checkpoints

import (
	"context"
	"errors"
)

// afterRecord keeps the store under its cap.
func (s *Store) afterRecord() {}

// Usage returns the store's size.
func (s *Store) Usage() (Usage, error) {
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
	return GCResult{}, errors.New("checkpoints: gc not built yet")
}
