package server

import (
	"context"
	"errors"
	"unicode/utf8"

	"github.com/nexuscocreate/nexus/checkpoints"
)

// The nexus/checkpoints/ methods: what agents, apps, MCP clients and
// their commands changed in the workspace, to review, undo and redo. The
// editor acts as the person: it sees and undoes every checkpoint.

// maxDiffContent is the largest content of a file that
// nexus/checkpoints/diff sends whole, for VS Code's diff editor.
const maxDiffContent = 1 << 20

type checkpointsListParams struct {
	Session string `json:"session,omitempty"`
	Turn    string `json:"turn,omitempty"`
	Limit   int    `json:"limit,omitempty"`
}

type checkpointsListResult struct {
	Checkpoints []checkpoints.Checkpoint `json:"checkpoints"`
	Usage       checkpoints.Usage        `json:"usage"`
}

type checkpointsDiffParams struct {
	ID string `json:"id"`
}

// checkpointFileWire is one file of nexus/checkpoints/diff: its change,
// the unified diff, and both contents as text; Before and After replace
// the change's blob ids, and are left out when the file is absent,
// binary or not UTF-8 (Binary), or larger than maxDiffContent
// (Truncated).
type checkpointFileWire struct {
	checkpoints.FileChange
	Diff      string  `json:"diff"`
	Binary    bool    `json:"binary,omitempty"`
	Before    *string `json:"before,omitempty"`
	After     *string `json:"after,omitempty"`
	Truncated bool    `json:"truncated,omitempty"`
}

type checkpointsDiffResult struct {
	Checkpoint checkpoints.Checkpoint `json:"checkpoint"`
	Files      []checkpointFileWire   `json:"files"`
}

type checkpointsUndoParams struct {
	Call     string `json:"call,omitempty"`
	Session  string `json:"session,omitempty"`
	Turn     string `json:"turn,omitempty"`
	LastTurn bool   `json:"lastTurn,omitempty"`
	Force    bool   `json:"force,omitempty"`
}

type checkpointsRedoParams struct {
	ID    string `json:"id,omitempty"`
	Force bool   `json:"force,omitempty"`
}

// checkpointsChangedWire is nexus/checkpointsChanged.
type checkpointsChangedWire struct {
	Session string `json:"session,omitempty"`
}

// checkpointStore is the store, or the error saying it is off.
func (s *Server) checkpointStore() (*checkpoints.Store, error) {
	if s.opts.Checkpoints == nil {
		return nil, precondition("checkpoints are off (checkpoints.enabled: false in .nexus/config.yaml): no change is recorded, none can be undone")
	}
	return s.opts.Checkpoints, nil
}

func (s *Server) checkpointsList(_ context.Context, p *checkpointsListParams) (*checkpointsListResult, error) {
	if p.Limit < 0 {
		return nil, invalid("limit %d is negative; 0 lists every checkpoint", p.Limit)
	}
	if p.Turn != "" && p.Session == "" {
		return nil, missing("session", "the session whose turn to list")
	}
	st, err := s.checkpointStore()
	if err != nil {
		return nil, err
	}
	list, err := st.List(editor, checkpoints.Filter{Session: p.Session, Turn: p.Turn, Limit: p.Limit})
	if err != nil {
		return nil, err
	}
	usage, err := st.Usage()
	if err != nil {
		return nil, err
	}
	if list == nil {
		list = []checkpoints.Checkpoint{}
	}
	return &checkpointsListResult{Checkpoints: list, Usage: usage}, nil
}

func (s *Server) checkpointsDiff(_ context.Context, p *checkpointsDiffParams) (*checkpointsDiffResult, error) {
	if p.ID == "" {
		return nil, missing("id", "the checkpoint's id (a tool call's id), or a unique prefix of it")
	}
	st, err := s.checkpointStore()
	if err != nil {
		return nil, err
	}
	cp, err := st.Get(editor, p.ID)
	if err != nil {
		return nil, err
	}
	diffs, err := st.Diff(editor, cp.ID)
	if err != nil {
		return nil, err
	}
	res := &checkpointsDiffResult{Checkpoint: cp, Files: make([]checkpointFileWire, 0, len(diffs))}
	for _, d := range diffs {
		f := checkpointFileWire{FileChange: d.FileChange, Diff: d.Unified, Binary: d.Binary}
		f.Before, f.Truncated = diffText(d.Before, &f.Binary, f.Truncated)
		f.After, f.Truncated = diffText(d.After, &f.Binary, f.Truncated)
		res.Files = append(res.Files, f)
	}
	return res, nil
}

// diffText is a content as the diff editor's text: nil when absent,
// binary or not UTF-8 (setting *binary), or over maxDiffContent (then
// truncated).
func diffText(b []byte, binary *bool, truncated bool) (*string, bool) {
	switch {
	case b == nil || *binary:
		return nil, truncated
	case len(b) > maxDiffContent:
		return nil, true
	case !utf8.Valid(b):
		*binary = true
		return nil, truncated
	}
	text := string(b)
	return &text, truncated
}

func (s *Server) checkpointsUndo(ctx context.Context, p *checkpointsUndoParams) (*checkpoints.Result, error) {
	if p.Turn != "" && p.Session == "" {
		return nil, missing("session", "the session whose turn to undo")
	}
	if p.Call != "" && (p.Session != "" || p.Turn != "" || p.LastTurn) {
		return nil, invalid("call selects one call's checkpoint: give it alone, without session, turn or lastTurn")
	}
	st, err := s.checkpointStore()
	if err != nil {
		return nil, err
	}
	sel := checkpoints.Selector{Call: p.Call, Session: p.Session, Turn: p.Turn, LastTurn: p.LastTurn}
	return undone(st.Undo(ctx, sel, checkpoints.UndoOptions{Party: editor, Force: p.Force}))
}

func (s *Server) checkpointsRedo(ctx context.Context, p *checkpointsRedoParams) (*checkpoints.Result, error) {
	st, err := s.checkpointStore()
	if err != nil {
		return nil, err
	}
	return undone(st.Redo(ctx, p.ID, checkpoints.UndoOptions{Party: editor, Force: p.Force}))
}

// undone is the answer of an undo or a redo: conflicts come back in the
// result, not as an error, so that the editor can offer to force it.
func undone(res checkpoints.Result, err error) (*checkpoints.Result, error) {
	if err != nil && !errors.Is(err, checkpoints.ErrConflict) {
		return nil, err
	}
	if res.Undone == nil {
		res.Undone = []string{}
	}
	if res.Restored == nil {
		res.Restored = []checkpoints.FileChange{}
	}
	return &res, nil
}

func (s *Server) checkpointsGC(ctx context.Context, _ *emptyResult) (*checkpoints.GCResult, error) {
	st, err := s.checkpointStore()
	if err != nil {
		return nil, err
	}
	res, err := st.GC(ctx)
	if err != nil {
		return nil, err
	}
	return &res, nil
}
