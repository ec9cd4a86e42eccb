package agent

import (
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/nexuscocreate/nexus/checkpoints"
	"github.com/nexuscocreate/nexus/tools"
)

// What a completed call's update carries of the files it changed: the
// first few files, each diff cut to a few KiB. The doors show a compact
// diff; the whole one is the checkpoint's (nexus checkpoints diff ID).
const (
	maxChangedFiles = 5
	maxChangeDiff   = 4 << 10
	// maxDiffContent bounds the contents a diff is computed of (a larger
	// file's change shows without one), and each text of an Edit.
	maxDiffContent = 256 << 10
)

// Edit is a file a call changed as a whole text before and after it (nil:
// absent), for a door that shows a diff of its own (ACP's diff content).
// It is left out for a binary file and a text over maxDiffContent bytes.
type Edit struct {
	Path          string
	Before, After *string
}

// mayChange reports whether a call of d may have made a checkpoint: a
// core tool that is not read-only, with checkpoints on. Only such calls
// ask the store, so that the others cost nothing more.
func (ss *Session) mayChange(d tools.Definition) bool {
	return ss.svc.opts.Checkpoints != nil && d.ServerName == "" && (d.Annotations == nil || !d.Annotations.ReadOnly)
}

// changesOf returns the files the call of id changed, as its checkpoint
// has them, cut (see maxChangedFiles), how many more it changed, and
// their texts (see Edit); none when it made no checkpoint (it changed
// nothing) or the store cannot say.
func (ss *Session) changesOf(id string) ([]FileChange, int, []Edit) {
	diffs, more, err := ss.svc.opts.Checkpoints.CallDiff(ss.party, id, checkpoints.DiffLimits{Files: maxChangedFiles, Content: maxDiffContent})
	if err != nil {
		if !errors.Is(err, checkpoints.ErrNotFound) {
			ss.svc.logger.Warn("a call's changes are not shown: its checkpoint could not be read", "call", id, "error", err.Error())
		}
		return nil, 0, nil
	}
	out := make([]FileChange, 0, len(diffs))
	var edits []Edit
	for _, d := range diffs {
		c := FileChange{Path: d.Path, Action: d.Action, Binary: d.Binary}
		switch {
		case d.Binary:
		case max(len(d.Before), len(d.After)) > maxDiffContent:
			c.Truncated = true // too large to show a diff
		default:
			c.Diff, c.Truncated = cutDiff(d.Unified, maxChangeDiff)
			edits = append(edits, Edit{Path: d.Path, Before: optionalText(d.Before), After: optionalText(d.After)})
		}
		out = append(out, c)
	}
	return out, more, edits
}

// optionalText is content as text, nil when absent.
func optionalText(content []byte) *string {
	if content == nil {
		return nil
	}
	s := string(content)
	return &s
}

// cutDiff cuts a diff to at most n bytes, at the end of a line when there
// is one, never inside a character.
func cutDiff(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	cut := s[:n]
	if i := strings.LastIndexByte(cut, '\n'); i >= 0 {
		return cut[:i+1], true
	}
	for len(cut) > 0 && !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	return cut, true
}
