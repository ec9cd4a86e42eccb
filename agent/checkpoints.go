package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/checkpoints"
	"github.com/nexuscocreate/nexus/internal/inert"
)

// Checkpoints is what the special commands /undo and /rewind need of the
// checkpoints store (the daemon passes its *checkpoints.Store). They act
// for the person who typed them, the session's owner, never for the
// model: no tool undoes. CallDiff gives the files a call changed (its
// checkpoint's id is the call's), shown with its completed update.
type Checkpoints interface {
	List(party access.Party, f checkpoints.Filter) ([]checkpoints.Checkpoint, error)
	Undo(ctx context.Context, sel checkpoints.Selector, o checkpoints.UndoOptions) (checkpoints.Result, error)
	CallDiff(party access.Party, id string, lim checkpoints.DiffLimits) ([]checkpoints.FileDiff, int, error)
}

// undoCommand is /undo [--force]: the session's last turn whose changes
// stand is undone.
func (ss *Session) undoCommand(ctx context.Context, arg string, say func(string, ...any)) error {
	force, err := forceFlag("/undo", arg)
	if err != nil {
		return err
	}
	st, turns, err := ss.turns()
	if err != nil {
		return err
	}
	last := -1
	for i, t := range turns {
		if t.standing {
			last = i
		}
	}
	if last < 0 {
		say("Nothing to undo: no change of this session stands.")
		return nil
	}
	say("Turn %s:", turns[last].turn)
	res, err := st.Undo(ctx, checkpoints.Selector{Session: ss.id, Turn: turns[last].turn}, checkpoints.UndoOptions{Party: ss.owner, Force: force})
	return sayUndone(res, err, "/undo --force", say)
}

// rewindCommand is /rewind (the session's turns with the files each
// changed) and /rewind N [--force] (turns N to the last undone, the last
// first).
func (ss *Session) rewindCommand(ctx context.Context, arg string, say func(string, ...any)) error {
	st, turns, err := ss.turns()
	if err != nil {
		return err
	}
	words := strings.Fields(arg)
	if len(words) == 0 {
		if len(turns) == 0 {
			say("No turn of this session changed a file.")
			return nil
		}
		var b strings.Builder
		for _, t := range turns {
			fmt.Fprintf(&b, "turn %s%s:\n", t.turn, t.mark())
			for _, f := range t.files {
				fmt.Fprintf(&b, "  %s %s\n", actionMark(f.Action), inert.Line(f.Path))
			}
		}
		b.WriteString("/rewind N undoes turns N to the last.")
		say("%s", b.String())
		return nil
	}
	force := slices.Contains(words, "--force")
	words = slices.DeleteFunc(words, func(w string) bool { return w == "--force" })
	n, err := strconv.Atoi(words[0])
	if len(words) != 1 || err != nil || n < 1 {
		return commandErr("/rewind takes a turn number (see /rewind): /rewind N [--force], not %q", inert.Line(arg))
	}
	var undo []string
	for _, t := range slices.Backward(turns) {
		if k, _ := strconv.Atoi(t.turn); k >= n && t.standing {
			undo = append(undo, t.turn)
		}
	}
	if len(undo) == 0 {
		say("Nothing to rewind: no change of turn %d or later stands.", n)
		return nil
	}
	for _, turn := range undo {
		res, err := st.Undo(ctx, checkpoints.Selector{Session: ss.id, Turn: turn}, checkpoints.UndoOptions{Party: ss.owner, Force: force})
		say("Turn %s:", turn)
		if err := sayUndone(res, err, fmt.Sprintf("/rewind %d --force", n), say); err != nil {
			return err
		}
		if len(res.Conflicts) > 0 && !force {
			return nil // the turns before it stay as they are
		}
	}
	return nil
}

// turns are the session's turns that changed files, as its owner sees
// them, with the store; an error when checkpoints are off.
func (ss *Session) turns() (Checkpoints, []turnChanges, error) {
	st := ss.svc.opts.Checkpoints
	if st == nil {
		return nil, nil, commandErr("checkpoints are off (checkpoints.enabled: false in .nexus/config.yaml): there is nothing to undo")
	}
	list, err := st.List(ss.owner, checkpoints.Filter{Session: ss.id})
	if err != nil {
		return nil, nil, err
	}
	return st, turnsOf(list), nil
}

// forceFlag reads the argument of /undo: nothing or --force.
func forceFlag(cmd, arg string) (bool, error) {
	switch strings.TrimSpace(arg) {
	case "":
		return false, nil
	case "--force":
		return true, nil
	}
	return false, commandErr("%s takes no argument but --force, not %q", cmd, inert.Line(arg))
}

// sayUndone tells what an undo did: the files restored, or the conflicts
// and that nothing was changed.
func sayUndone(res checkpoints.Result, err error, force string, say func(string, ...any)) error {
	switch {
	case errors.Is(err, checkpoints.ErrNotFound):
		say("Nothing to undo: no change of this session stands.")
		return nil
	case err != nil && !errors.Is(err, checkpoints.ErrConflict):
		return err
	}
	var b strings.Builder
	if len(res.Conflicts) > 0 && res.Checkpoint == nil {
		b.WriteString("These files changed since; nothing was changed (" + force + " restores anyway):\n")
		for _, c := range res.Conflicts {
			fmt.Fprintf(&b, "  %s: %s\n", inert.Line(c.Path), inert.Line(c.Reason))
		}
		say("%s", strings.TrimSuffix(b.String(), "\n"))
		return nil
	}
	if len(res.Restored) == 0 {
		say("Nothing to restore.")
		return nil
	}
	fmt.Fprintf(&b, "Restored %d file(s):\n", len(res.Restored))
	for _, f := range res.Restored {
		fmt.Fprintf(&b, "  %s %s\n", actionMark(f.Action), inert.Line(f.Path))
	}
	say("%s", strings.TrimSuffix(b.String(), "\n"))
	return nil
}

// actionMark is the mark of a file's change: + added, ~ modified, -
// deleted.
func actionMark(action string) string {
	switch action {
	case checkpoints.Added:
		return "+"
	case checkpoints.Deleted:
		return "-"
	}
	return "~"
}

// turnChanges are the files one turn changed.
type turnChanges struct {
	turn     string
	files    []checkpoints.FileChange
	standing bool // some of its calls' changes stand
	undone   bool // some are undone
}

func (t turnChanges) mark() string {
	switch {
	case t.undone && t.standing:
		return " (partly undone)"
	case t.undone:
		return " (undone)"
	}
	return ""
}

// turnsOf groups the calls' checkpoints of a session by turn, in turn
// order.
func turnsOf(list []checkpoints.Checkpoint) []turnChanges {
	byTurn := map[string]*turnChanges{}
	for _, c := range slices.Backward(list) { // oldest first
		if c.Kind != checkpoints.KindCall || c.Turn == "" {
			continue
		}
		t := byTurn[c.Turn]
		if t == nil {
			t = &turnChanges{turn: c.Turn}
			byTurn[c.Turn] = t
		}
		if c.UndoneBy != "" {
			t.undone = true
		} else {
			t.standing = true
		}
		for _, f := range c.Files {
			if !slices.ContainsFunc(t.files, func(g checkpoints.FileChange) bool { return g.Path == f.Path }) {
				t.files = append(t.files, f)
			}
		}
	}
	out := make([]turnChanges, 0, len(byTurn))
	for _, t := range byTurn {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b turnChanges) int {
		x, _ := strconv.Atoi(a.turn)
		y, _ := strconv.Atoi(b.turn)
		return x - y
	})
	return out
}
