package checkpoints

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/state"
)

// Undo restores what sel selects to what it was before, and records the
// undo as a checkpoint (so that it can be redone).
func (s *Store) Undo(ctx context.Context, sel Selector, o UndoOptions) (Result, error) {
	if err := checkUndoer(o, "undo"); err != nil {
		return Result{}, err
	}
	s.undoMu.Lock()
	defer s.undoMu.Unlock()
	all := s.snapshot(o.Party)
	selected, err := selectCalls(all, sel)
	if err != nil {
		return Result{}, err
	}
	rec := &Checkpoint{Kind: KindUndo, Session: selected[0].Session, Turn: selected[0].Turn}
	for _, cp := range selected {
		rec.Undoes = append(rec.Undoes, cp.ID)
		if cp.Turn != rec.Turn {
			rec.Turn = ""
		}
	}
	return s.restore(ctx, all, selected, rec, o)
}

// Redo reverses the undo of id, or the most recent undo that stands when
// id is empty, and records the redo as a checkpoint.
func (s *Store) Redo(ctx context.Context, id string, o UndoOptions) (Result, error) {
	if err := checkUndoer(o, "redo"); err != nil {
		return Result{}, err
	}
	s.undoMu.Lock()
	defer s.undoMu.Unlock()
	all := s.snapshot(o.Party)
	var undo Checkpoint
	if id != "" {
		var err error
		if undo, err = find(all, id); err != nil {
			return Result{}, err
		}
		if undo.Kind != KindUndo {
			return Result{}, fmt.Errorf("checkpoint %s is a %s, not an undo: only an undo can be redone", undo.ID, kindName(undo.Kind))
		}
		if undo.UndoneBy != "" {
			return Result{}, fmt.Errorf("%w: undo %s was already redone by %s", ErrNotFound, undo.ID, undo.UndoneBy)
		}
	} else {
		i := len(all) - 1
		for i >= 0 && (all[i].Kind != KindUndo || all[i].UndoneBy != "") {
			i--
		}
		if i < 0 {
			return Result{}, fmt.Errorf("%w: nothing to redo (no undo stands)", ErrNotFound)
		}
		undo = all[i]
	}
	rec := &Checkpoint{Kind: KindRedo, Undoes: []string{undo.ID}, Session: undo.Session, Turn: undo.Turn}
	return s.restore(ctx, all, []Checkpoint{undo}, rec, o)
}

// checkUndoer refuses an undo or a redo by no one, and a forced one by an
// app: forcing writes over what someone changed since (the person, most
// likely), which only the person may decide.
func checkUndoer(o UndoOptions, verb string) error {
	switch {
	case !o.Party.Valid():
		return fmt.Errorf("checkpoints: %s by no one", verb)
	case o.Force && o.Party.App() != nil:
		return fmt.Errorf("checkpoints: a forced %s by app %q: %w (only the person may restore files over changes made since)",
			verb, o.Party.AppID(), access.ErrDenied)
	}
	return nil
}

func kindName(k string) string {
	if k == KindCall {
		return "call's checkpoint"
	}
	return k
}

// selectCalls returns the calls' checkpoints sel selects that stand (not
// undone), oldest first.
func selectCalls(all []Checkpoint, sel Selector) ([]Checkpoint, error) {
	standing := func(cp Checkpoint) bool { return cp.Kind == KindCall && cp.UndoneBy == "" }
	if sel.Call != "" {
		cp, err := find(all, sel.Call)
		switch {
		case err != nil:
			return nil, err
		case cp.Kind != KindCall:
			return nil, fmt.Errorf("checkpoint %s is a %s: nexus redo reverses an undo", cp.ID, kindName(cp.Kind))
		case cp.UndoneBy != "":
			return nil, fmt.Errorf("%w: the changes of call %s are already undone (by %s); nexus redo brings them back", ErrNotFound, cp.ID, cp.UndoneBy)
		}
		return []Checkpoint{cp}, nil
	}
	session, turn := sel.Session, sel.Turn
	whole := session != "" && turn == "" && !sel.LastTurn
	var last *Checkpoint // the newest standing call of the session (of any, when none is named)
	for i := len(all) - 1; i >= 0 && !whole && turn == ""; i-- {
		if standing(all[i]) && (session == "" || all[i].Session == session) {
			last = &all[i]
			break
		}
	}
	if !whole && turn == "" {
		if last == nil {
			if session != "" {
				return nil, fmt.Errorf("%w: nothing to undo in session %q", ErrNotFound, session)
			}
			return nil, fmt.Errorf("%w: nothing to undo", ErrNotFound)
		}
		if session == "" {
			session = last.Session
		}
		if last.Turn == "" {
			// A call outside any turn (an app's own) is a turn of its own.
			return []Checkpoint{*last}, nil
		}
		turn = last.Turn
	}
	var out []Checkpoint
	for _, cp := range all {
		if standing(cp) && (session == "" || cp.Session == session) && (turn == "" || cp.Turn == turn) {
			out = append(out, cp)
		}
	}
	if len(out) == 0 {
		what := fmt.Sprintf("session %q", session)
		if turn != "" {
			what = fmt.Sprintf("turn %q of %s", turn, what)
		}
		if session == "" {
			what = fmt.Sprintf("turn %q", turn)
		}
		return nil, fmt.Errorf("%w: nothing to undo in %s", ErrNotFound, what)
	}
	return out, nil
}

// target is what an undo puts back in one file.
type target struct {
	path        string
	blob        string // "" : absent
	exec        bool
	left        string // what the selected checkpoints left
	leftExec    bool
	lastChanged int // the index in all of the last selected checkpoint that changed it
}

// plan returns, per path, what the selected checkpoints' first change
// found and their last one left, in the order they were first changed.
func plan(all []Checkpoint, selected []Checkpoint) []*target {
	pos := map[string]int{}
	for i, cp := range all {
		pos[cp.ID] = i
	}
	var order []*target
	byPath := map[string]*target{}
	for _, cp := range selected {
		for _, f := range cp.Files {
			t := byPath[f.Path]
			if t == nil {
				t = &target{path: f.Path, blob: f.Before, exec: f.BeforeExec}
				byPath[f.Path] = t
				order = append(order, t)
			}
			t.left, t.leftExec, t.lastChanged = f.After, f.AfterExec, pos[cp.ID]
		}
	}
	return order
}

// restore puts back what the selected checkpoints changed, and records it
// as rec.
func (s *Store) restore(ctx context.Context, all, selected []Checkpoint, rec *Checkpoint, o UndoOptions) (Result, error) {
	res := Result{Restored: []FileChange{}}
	for _, cp := range selected {
		res.Undone = append(res.Undone, cp.ID)
	}
	targets := plan(all, selected)
	paths := make([]string, len(targets))
	for i, t := range targets {
		paths[i] = t.path
	}
	s.scan.claim(paths)
	settled := false
	defer func() {
		if !settled {
			s.scan.unclaim(paths)
		}
	}()

	type step struct {
		t   *target
		cur fileState
	}
	var steps []step
	for _, t := range targets {
		cur, err := s.readPath(t.path)
		if err != nil {
			return res, fmt.Errorf("checkpoints: read %s: %w", t.path, err)
		}
		switch {
		case cur.skip == "" && holds(cur, t.blob, t.exec):
			continue // already as it was
		case cur.skip == "" && holds(cur, t.left, t.leftExec):
		case cur.linked:
			// Never restored, forced or not: what it names now is
			// somewhere else, maybe .nexus/ through a symlink a command made.
			res.Conflicts = append(res.Conflicts, Conflict{Path: t.path, Reason: conflictReason(all, t, cur) + "; it cannot be restored through a symlink"})
			continue
		default:
			res.Conflicts = append(res.Conflicts, Conflict{Path: t.path, Reason: conflictReason(all, t, cur)})
			if !o.Force {
				continue
			}
		}
		steps = append(steps, step{t, cur})
	}
	if len(res.Conflicts) > 0 && !o.Force {
		return res, fmt.Errorf("%w: %d of the files (%s) changed since; nothing was restored (force restores them anyway)",
			ErrConflict, len(res.Conflicts), conflictPaths(res.Conflicts))
	}

	id, err := uuid.NewV7()
	if err != nil {
		return res, err
	}
	rec.ID, rec.Author, rec.AppID = id.String(), o.Party.Author(), o.Party.AppID()
	contents := map[string][]byte{}
	var errs []error
	for _, st := range steps {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		if err := s.put(st.t, rec.ID, o); err != nil {
			errs = append(errs, fmt.Errorf("restore %s: %w", st.t.path, err))
			continue
		}
		f := FileChange{Path: st.t.path, Action: Modified, After: st.t.blob, AfterExec: st.t.exec}
		if st.cur.skip == "" {
			f.Before, f.BeforeExec = st.cur.blob, st.cur.exec
			if st.cur.exists {
				contents[st.cur.blob] = st.cur.content
			}
		}
		switch {
		case f.Before == "":
			f.Action = Added
		case f.After == "":
			f.Action = Deleted
		}
		rec.Files = append(rec.Files, f)
		res.Restored = append(res.Restored, f)
	}
	rec.Time = time.Now().UTC()
	if err := s.record(rec, contents); err != nil {
		errs = append(errs, err)
	} else {
		res.Checkpoint = rec
	}
	s.scan.settleAndRelease(paths)
	settled = true
	if len(errs) > 0 {
		return res, fmt.Errorf("checkpoints: %s: %w", rec.Kind, errors.Join(errs...))
	}
	return res, nil
}

// holds reports whether a file holds blob ("" : is absent).
func holds(cur fileState, blob string, exec bool) bool {
	if blob == "" {
		return !cur.exists
	}
	return cur.exists && cur.blob == blob && cur.exec == exec
}

func conflictPaths(cs []Conflict) string {
	var ps []string
	for _, c := range cs[:min(3, len(cs))] {
		ps = append(ps, c.Path)
	}
	if len(cs) > 3 {
		ps = append(ps, "…")
	}
	return strings.Join(ps, ", ")
}

// conflictReason says what a file holds now and who changed it since: the
// newest recorded change of it when the file holds what that change left,
// else someone outside the recorded calls (the person, most likely).
func conflictReason(all []Checkpoint, t *target, cur fileState) string {
	reason := fmt.Sprintf("it holds %s now, not what the checkpoint left (%s)", describe(cur), describeBlob(t.left))
	for i := len(all) - 1; i > t.lastChanged; i-- {
		for _, f := range all[i].Files {
			if f.Path != t.path {
				continue
			}
			by := all[i].ID
			if all[i].ToolName != "" {
				by += " (" + all[i].ToolName + ")"
			}
			if cur.skip == "" && holds(cur, f.After, f.AfterExec) {
				return fmt.Sprintf("%s: changed since by %s %s of session %q", reason, kindName(all[i].Kind), by, all[i].Session)
			}
			return fmt.Sprintf("%s: changed since outside the recorded calls, after %s %s", reason, kindName(all[i].Kind), by)
		}
	}
	return reason + ": changed since outside the recorded calls"
}

func describe(cur fileState) string {
	switch {
	case cur.skip != "":
		return "something " + cur.skip
	case !cur.exists:
		return "nothing (it is absent)"
	}
	return describeBlob(cur.blob)
}

func describeBlob(blob string) string {
	if blob == "" {
		return "nothing: absent"
	}
	return "content " + blob[:min(12, len(blob))]
}

// put writes one file back, atomically: through the definitions' history
// for a file under their root, else by a temporary file renamed over it
// (never following a symlink out of the workspace).
func (s *Store) put(t *target, id string, o UndoOptions) error {
	content, err := s.content(t.blob)
	if err != nil {
		return err
	}
	if rel, ok := s.inDefinitions(t.path); ok {
		v := s.opts.Definitions.For(o.Party)
		w := state.WriteOptions{Message: "undo " + id}
		if t.blob == "" {
			_, err = v.Delete(rel, w)
			if errors.Is(err, state.ErrNotFound) {
				err = nil
			}
		} else {
			_, err = v.Set(rel, content, w)
		}
		return err
	}
	if err := plainDirs(s.root, t.path); err != nil {
		return err
	}
	p := filepath.FromSlash(t.path)
	if t.blob == "" {
		if err := s.root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		// The directories the file's creation made, when empty now.
		for d := path.Dir(t.path); d != "."; d = path.Dir(d) {
			if s.root.Remove(filepath.FromSlash(d)) != nil {
				break
			}
		}
		return nil
	}
	return writeAtomic(s.root, t.path, content, t.exec)
}

// writeAtomic writes a file of root by a temporary file in its directory
// renamed over it, keeping its permissions but for the executable bits,
// and making its missing directories.
func writeAtomic(root *os.Root, p string, content []byte, exec bool) error {
	dir := path.Dir(p)
	if dir != "." {
		if err := root.MkdirAll(filepath.FromSlash(dir), 0o755); err != nil {
			return err
		}
	}
	perm := fs.FileMode(0o644)
	if info, err := root.Lstat(filepath.FromSlash(p)); err == nil && info.Mode().IsRegular() {
		perm = info.Mode().Perm() &^ 0o111
	}
	if exec {
		perm |= (perm & 0o444) >> 2 // x where r
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := filepath.FromSlash(path.Join(dir, ".nexus-undo-"+hex.EncodeToString(rnd[:])))
	f, err := root.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Chmod(tmp, perm) // past the umask
	}
	if err == nil {
		err = root.Rename(tmp, filepath.FromSlash(p))
	}
	if err != nil {
		root.Remove(tmp)
	}
	return err
}
