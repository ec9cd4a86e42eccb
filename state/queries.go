package state

import (
	"fmt"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// List lists a directory: its direct entries, or every file and directory
// below it when recursive. Paths are relative to the definitions root.
func (s *Definitions) List(dir string, recursive bool) ([]Entry, error) {
	dir, err := CleanDir(dir)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	if _, isFile := s.files[dir]; isFile {
		return nil, fmt.Errorf("%w: %q is a file, not a directory", ErrInvalid, dir)
	}
	entries := []Entry{}
	if recursive {
		for d := range s.trees {
			if d != dir && underDir(d, dir) {
				entries = append(entries, Entry{Name: baseName(d), Path: d, Dir: true})
			}
		}
		for p, f := range s.files {
			if underDir(p, dir) {
				entries = append(entries, Entry{Name: baseName(p), Path: p, Size: f.size})
			}
		}
	} else {
		for _, e := range s.trees[dir] {
			p := joinPath(dir, e.Name)
			if e.Mode == filemode.Dir {
				entries = append(entries, Entry{Name: e.Name, Path: p, Dir: true})
			} else if f, ok := s.files[p]; ok {
				entries = append(entries, Entry{Name: e.Name, Path: p, Size: f.size})
			}
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	return entries, nil
}

// DefaultHistoryLimit is the page size of History when none is given.
const DefaultHistoryLimit = 100

// History returns the commits that changed path, newest first, a page at a
// time. pageToken is "" for the first page, then the token of the page before.
func (s *Definitions) History(path string, limit int, pageToken string) ([]HistoryEntry, string, error) {
	path, err := CleanPath(path)
	if err != nil {
		return nil, "", err
	}
	if limit <= 0 {
		limit = DefaultHistoryLimit
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, "", ErrClosed
	}
	ps := s.index.byPath[path]
	if len(ps) == 0 {
		return nil, "", fmt.Errorf("definition %q has no history: %w", path, ErrNotFound)
	}
	i := len(ps) - 1
	if pageToken != "" {
		p, ok := plumbing.Hash{}, plumbing.IsHash(pageToken)
		if ok {
			p = plumbing.NewHash(pageToken)
		}
		pos, found := s.index.pos[p]
		if !ok || !found {
			return nil, "", fmt.Errorf("%w: page token %q is not one this history gave out", ErrInvalid, pageToken)
		}
		i = sort.SearchInts(ps, pos+1) - 1
	}
	var out []HistoryEntry
	for ; i >= 0 && len(out) < limit; i-- {
		rec := s.index.commits[ps[i]]
		e := HistoryEntry{Revision: rec.hash.String(), Author: rec.author, Message: rec.message, Time: rec.when}
		for _, c := range rec.changes {
			if c.path == path {
				e.Change = c.change
			}
		}
		out = append(out, e)
	}
	next := ""
	if i >= 0 {
		next = s.index.commits[ps[i]].hash.String()
	}
	return out, next, nil
}

// Diff returns the unified diff of path between two revisions (to "" is the
// newest), as `git diff from to -- path` prints it, with display as the name
// in the headers (path when empty).
func (s *Definitions) Diff(path, display, from, to string) (string, error) {
	path, err := CleanPath(path)
	if err != nil {
		return "", err
	}
	if from == "" {
		return "", fmt.Errorf("%w: fromRevision is required", ErrInvalid)
	}
	if display == "" {
		display = path
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return "", ErrClosed
	}
	fromPos, err := s.resolveLocked(from)
	if err != nil {
		s.mu.RUnlock()
		return "", err
	}
	toPos := len(s.index.commits) - 1
	if to != "" {
		if toPos, err = s.resolveLocked(to); err != nil {
			s.mu.RUnlock()
			return "", err
		}
	}
	ca, okA := s.changeAtLocked(path, fromPos)
	cb, okB := s.changeAtLocked(path, toPos)
	s.mu.RUnlock()
	if !okA && !okB {
		return "", fmt.Errorf("definition %q exists at neither revision: %w", path, ErrNotFound)
	}
	a, err := s.side(ca, okA, path)
	if err != nil {
		return "", err
	}
	b, err := s.side(cb, okB, path)
	if err != nil {
		return "", err
	}
	return unifiedDiff(display, a, b, s.repo.abbrev), nil
}

func (s *Definitions) side(commit plumbing.Hash, ok bool, path string) (side, error) {
	if !ok {
		return side{}, nil
	}
	h, err := s.blobAt(commit, path)
	if err != nil {
		return side{}, err
	}
	data, err := s.repo.readBlob(h)
	if err != nil {
		return side{}, err
	}
	return side{exists: true, hash: h, content: data}, nil
}

func shortRev(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
