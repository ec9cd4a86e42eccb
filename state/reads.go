package state

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// Head returns the newest commit, or "" when there is none.
func (s *Definitions) Head() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.head.IsZero() {
		return ""
	}
	return s.head.String()
}

// Get returns a file at HEAD (rev "") or at a revision.
func (s *Definitions) Get(path, rev string) (File, error) {
	path, err := CleanPath(path)
	if err != nil {
		return File{}, err
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return File{}, ErrClosed
	}
	var blob, frev plumbing.Hash
	if rev == "" {
		f, ok := s.files[path]
		if !ok {
			s.mu.RUnlock()
			return File{}, fmt.Errorf("definition %q: %w", path, ErrNotFound)
		}
		blob, frev = f.blob, f.rev
		s.mu.RUnlock()
	} else {
		pos, err := s.resolveLocked(rev)
		if err != nil {
			s.mu.RUnlock()
			return File{}, err
		}
		at, ok := s.changeAtLocked(path, pos)
		s.mu.RUnlock()
		if !ok {
			return File{}, fmt.Errorf("definition %q at %s: %w", path, shortRev(rev), ErrNotFound)
		}
		frev = at
		if blob, err = s.blobAt(at, path); err != nil {
			return File{}, err
		}
	}
	data, err := s.repo.readBlob(blob)
	if err != nil {
		return File{}, fmt.Errorf("definition %q: %w", path, err)
	}
	return File{Content: data, Revision: frev.String()}, nil
}

// resolveLocked finds a revision (a full hash or a unique prefix of at least
// four hex digits) among the commits of the branch.
func (s *Definitions) resolveLocked(rev string) (int, error) {
	rev = strings.ToLower(strings.TrimSpace(rev))
	if len(rev) < 4 || len(rev) > 40 || strings.Trim(rev, "0123456789abcdef") != "" {
		return 0, fmt.Errorf("%w: revision %q is not a commit hash", ErrInvalid, rev)
	}
	if len(rev) == 40 {
		if p, ok := s.index.pos[plumbing.NewHash(rev)]; ok {
			return p, nil
		}
		return 0, fmt.Errorf("revision %s: %w", rev, ErrNotFound)
	}
	found := -1
	for i, c := range s.index.commits {
		if strings.HasPrefix(c.hash.String(), rev) {
			if found >= 0 {
				return 0, fmt.Errorf("%w: revision %q is ambiguous", ErrInvalid, rev)
			}
			found = i
		}
	}
	if found < 0 {
		return 0, fmt.Errorf("revision %s: %w", rev, ErrNotFound)
	}
	return found, nil
}

// changeAtLocked returns the commit that last changed path at or before
// position pos, if the path existed there.
func (s *Definitions) changeAtLocked(path string, pos int) (plumbing.Hash, bool) {
	ps := s.index.byPath[path]
	i := sort.SearchInts(ps, pos+1) - 1
	if i < 0 {
		return plumbing.ZeroHash, false
	}
	rec := s.index.commits[ps[i]]
	for _, c := range rec.changes {
		if c.path == path && c.change == Deleted {
			return plumbing.ZeroHash, false
		}
	}
	return rec.hash, true
}

// blobAt finds the blob of path in the tree of a commit.
func (s *Definitions) blobAt(commit plumbing.Hash, path string) (plumbing.Hash, error) {
	c, err := s.repo.readCommit(commit)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	h := c.TreeHash
	parts := strings.Split(path, "/")
	for i, name := range parts {
		t, err := s.repo.readTree(h)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		found := false
		for _, e := range t.Entries {
			if e.Name == name && (e.Mode == filemode.Dir) == (i < len(parts)-1) {
				h, found = e.Hash, true
				break
			}
		}
		if !found {
			return plumbing.ZeroHash, fmt.Errorf("definition %q at %s: %w", path, shortRev(commit.String()), ErrNotFound)
		}
	}
	return h, nil
}
