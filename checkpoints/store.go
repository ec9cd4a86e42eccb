package checkpoints

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/state"
)

// Storage. The checkpoints are one chain of commits under
// refs/nexus/checkpoints in the definitions' history repository (see
// state.Changes), one commit per checkpoint, its parent the checkpoint
// before: its tree holds the manifest (the Checkpoint as JSON, without
// UndoneBy, which is derived) and the contents its files had before and
// after. The store keeps the chain in memory, oldest first.

// ref is the chain of checkpoints.
const ref = "refs/nexus/checkpoints"

// Defaults of Options.
const (
	DefaultMaxFileSize   = 2 << 20
	DefaultMaxStoreBytes = 1 << 30
	DefaultMaxFiles      = 100_000
)

// Store records and undoes checkpoints.
type Store struct {
	opts    Options
	changes *state.Changes
	root    *os.Root // the workspace
	// defRel is the definitions root relative to the workspace
	// (slash-separated; "." for the workspace itself), "" when it is
	// outside.
	defRel string
	logger *slog.Logger

	// mu guards the checkpoints, oldest first, and their index by id.
	mu   sync.RWMutex
	list []*Checkpoint
	byID map[string]*Checkpoint

	// undoMu serialises undos, redos and prunes.
	undoMu sync.Mutex

	scan    *scanner
	pruning atomic.Bool // a prune runs
	rec     *recorder

	bg sync.WaitGroup // the first baseline, prunes
}

// Open opens the store of the workspace: it reads the checkpoints and
// starts building the workspace's first baseline in the background when
// it has none.
func Open(opts Options) (*Store, error) {
	if opts.Definitions == nil {
		return nil, errors.New("checkpoints: no definitions store to keep them in")
	}
	if opts.MaxFileSize <= 0 {
		opts.MaxFileSize = DefaultMaxFileSize
	}
	if opts.MaxStoreBytes <= 0 {
		opts.MaxStoreBytes = DefaultMaxStoreBytes
	}
	if opts.MaxFiles <= 0 {
		opts.MaxFiles = DefaultMaxFiles
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ws, err := filepath.Abs(opts.Workspace)
	if err != nil {
		return nil, fmt.Errorf("checkpoints: workspace %q: %w", opts.Workspace, err)
	}
	opts.Workspace = ws
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, fmt.Errorf("checkpoints: workspace: %w", err)
	}
	s := &Store{opts: opts, changes: opts.Definitions.Changes(), root: root, logger: opts.Logger,
		byID: map[string]*Checkpoint{}}
	defDir, err := filepath.Abs(opts.Definitions.Dir())
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("checkpoints: definitions root: %w", err)
	}
	if rel, err := filepath.Rel(ws, defDir); err == nil && (filepath.IsLocal(rel) || rel == ".") {
		s.defRel = filepath.ToSlash(rel)
	}
	if err := s.load(); err != nil {
		root.Close()
		return nil, err
	}
	s.scan = newScanner(s)
	s.bg.Go(s.scan.start)
	s.rec = newRecorder(s)
	return s, nil
}

// load reads the chain of checkpoints.
func (s *Store) load() error {
	entries, err := s.changes.Log(ref)
	if err != nil {
		return fmt.Errorf("checkpoints: read %s: %w", ref, err)
	}
	for i := len(entries) - 1; i >= 0; i-- {
		cp, err := decodeCheckpoint(entries[i])
		if err != nil {
			return fmt.Errorf("checkpoints: %w", err)
		}
		s.add(cp)
	}
	return nil
}

// add appends a recorded checkpoint. The caller holds mu, or is alone.
func (s *Store) add(cp *Checkpoint) {
	cp.UndoneBy = ""
	s.list = append(s.list, cp)
	s.byID[cp.ID] = cp
}

// Close stops the store, once its pending checkpoints are recorded.
func (s *Store) Close() error {
	s.rec.close()
	s.scan.stop()
	s.bg.Wait()
	err := s.scan.save()
	s.scan.watch.close()
	return errors.Join(err, s.root.Close())
}

func (s *Store) publish(session string) {
	if s.opts.Bus != nil {
		s.opts.Bus.Publish(Changed{Session: session})
	}
}

// undone returns, for every checkpoint undone now, the undo or redo
// that took it back. The caller holds mu.
func (s *Store) undone() map[string]string {
	by := map[string]string{}
	for _, cp := range s.list {
		switch cp.Kind {
		case KindUndo:
			for _, id := range cp.Undoes {
				by[id] = cp.ID
			}
		case KindRedo:
			for _, u := range cp.Undoes {
				by[u] = cp.ID
				if undo := s.byID[u]; undo != nil {
					for _, id := range undo.Undoes {
						if by[id] == u {
							delete(by, id)
						}
					}
				}
			}
		}
	}
	return by
}

// visible reports whether party may see cp: an app sees its own.
func visible(party access.Party, cp *Checkpoint) bool {
	return party.App() == nil || cp.AppID == party.AppID()
}

// snapshot returns copies of the checkpoints party may see, oldest first,
// with UndoneBy set.
func (s *Store) snapshot(party access.Party) []Checkpoint {
	s.rec.flush()
	s.mu.RLock()
	defer s.mu.RUnlock()
	by := s.undone()
	out := make([]Checkpoint, 0, len(s.list))
	for _, cp := range s.list {
		if visible(party, cp) {
			c := *cp
			c.UndoneBy = by[c.ID]
			out = append(out, c)
		}
	}
	return out
}

// List returns the checkpoints f selects that party may see (an app: its
// own), newest first.
func (s *Store) List(party access.Party, f Filter) ([]Checkpoint, error) {
	all := s.snapshot(party)
	var out []Checkpoint
	for i := len(all) - 1; i >= 0; i-- {
		cp := all[i]
		if (f.Session != "" && cp.Session != f.Session) || (f.Turn != "" && cp.Turn != f.Turn) {
			continue
		}
		out = append(out, cp)
		if f.Limit > 0 && len(out) == f.Limit {
			break
		}
	}
	return out, nil
}

// Get returns the checkpoint of id (a full id or a unique prefix).
func (s *Store) Get(party access.Party, id string) (Checkpoint, error) {
	return find(s.snapshot(party), id)
}

// find returns the checkpoint of id, or of the one id a prefix of.
func find(all []Checkpoint, id string) (Checkpoint, error) {
	if id == "" {
		return Checkpoint{}, fmt.Errorf("%w: no checkpoint id given", ErrNotFound)
	}
	var match []Checkpoint
	for _, cp := range all {
		if cp.ID == id {
			return cp, nil
		}
		if strings.HasPrefix(cp.ID, id) {
			match = append(match, cp)
		}
	}
	switch len(match) {
	case 0:
		return Checkpoint{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	case 1:
		return match[0], nil
	}
	ids := make([]string, 0, 3)
	for _, cp := range match[:min(3, len(match))] {
		ids = append(ids, cp.ID)
	}
	return Checkpoint{}, fmt.Errorf("checkpoint id %q is ambiguous: it starts %d checkpoints (%s…); give more of it",
		id, len(match), strings.Join(ids, ", "))
}

// Diff returns the files of the checkpoint of id with their contents.
func (s *Store) Diff(party access.Party, id string) ([]FileDiff, error) {
	cp, err := s.Get(party, id)
	if err != nil {
		return nil, err
	}
	return s.diff(cp, 0)
}

// DiffLimits bound what CallDiff returns: the first Files files (0: all),
// and no diff text for a file either of whose contents is over Content
// bytes (0: no bound), since a diff's cost grows with both sides.
type DiffLimits struct {
	Files   int
	Content int
}

// CallDiff returns the files the ended call of id changed, with their
// contents, within lim, and how many more it changed: its checkpoint's (a
// call ends once its checkpoint is recorded), found by its whole id
// without waiting for the queue nor copying the chain, so that asking
// about a call that changed nothing costs a map lookup. It is ErrNotFound
// when the call made no checkpoint that party may see.
func (s *Store) CallDiff(party access.Party, id string, lim DiffLimits) ([]FileDiff, int, error) {
	s.mu.RLock()
	cp := s.byID[id]
	ok := cp != nil && cp.Kind == KindCall && visible(party, cp)
	var c Checkpoint
	if ok {
		c = *cp
	}
	s.mu.RUnlock()
	if !ok {
		return nil, 0, fmt.Errorf("%w: no checkpoint of call %q", ErrNotFound, id)
	}
	more := 0
	if lim.Files > 0 && len(c.Files) > lim.Files {
		c.Files, more = c.Files[:lim.Files], len(c.Files)-lim.Files
	}
	out, err := s.diff(c, lim.Content)
	return out, more, err
}

// diff is the files of cp with their contents, and their diffs but of
// those with a content over maxContent bytes (0: no bound).
func (s *Store) diff(cp Checkpoint, maxContent int) ([]FileDiff, error) {
	var err error
	out := make([]FileDiff, 0, len(cp.Files))
	for _, f := range cp.Files {
		d := FileDiff{FileChange: f}
		if d.Before, err = s.content(f.Before); err != nil {
			return nil, fmt.Errorf("checkpoint %s: %s before: %w", cp.ID, f.Path, err)
		}
		if d.After, err = s.content(f.After); err != nil {
			return nil, fmt.Errorf("checkpoint %s: %s after: %w", cp.ID, f.Path, err)
		}
		d.Binary = state.IsBinary(d.Before) || state.IsBinary(d.After)
		if maxContent == 0 || max(len(d.Before), len(d.After)) <= maxContent {
			d.Unified = state.FileDiff(f.Path, d.Before, d.After)
		}
		out = append(out, d)
	}
	return out, nil
}

// content returns a copy of the blob id, nil for "" (absent).
func (s *Store) content(id string) ([]byte, error) {
	if id == "" {
		return nil, nil
	}
	data, err := s.changes.Read(id)
	if err != nil {
		return nil, err
	}
	return append([]byte{}, data...), nil
}

// inDefinitions returns the path of p (workspace-relative) in the
// definitions root, when it is under it.
func (s *Store) inDefinitions(p string) (string, bool) {
	switch {
	case s.defRel == "":
		return "", false
	case s.defRel == ".":
		return p, true
	}
	rel, ok := strings.CutPrefix(p, s.defRel+"/")
	return rel, ok && rel != ""
}
