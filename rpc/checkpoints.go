package rpc

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/nexuscocreate/nexus/checkpoints"
	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// The checkpoint RPCs of ToolManager: convert, call the store as the
// caller's party (an app sees and undoes only its own checkpoints: the
// store decides), convert.

// store is the checkpoints store, or the status saying it is off.
func (s *toolService) store() (*checkpoints.Store, error) {
	if s.checkpoints == nil {
		return nil, status.Error(codes.FailedPrecondition, "checkpoints are off (checkpoints.enabled: false in .nexus/config.yaml): no change is recorded, none can be undone")
	}
	return s.checkpoints, nil
}

func (s *toolService) ListCheckpoints(ctx context.Context, req *nexusv1.ListCheckpointsRequest) (*nexusv1.ListCheckpointsResponse, error) {
	c, err := s.apps.caller(ctx, "")
	if err != nil {
		return nil, err
	}
	switch {
	case req.GetLimit() < 0:
		return nil, status.Errorf(codes.InvalidArgument, "limit %d is negative; 0 lists every checkpoint", req.GetLimit())
	case req.GetTurn() != "" && req.GetSession() == "":
		return nil, status.Error(codes.InvalidArgument, "turn needs session: the session whose turn to list")
	}
	st, err := s.store()
	if err != nil {
		return nil, err
	}
	list, err := st.List(c.party, checkpoints.Filter{Session: req.GetSession(), Turn: req.GetTurn(), Limit: int(req.GetLimit())})
	if err != nil {
		return nil, checkpointStatus(err)
	}
	resp := &nexusv1.ListCheckpointsResponse{Checkpoints: make([]*nexusv1.Checkpoint, 0, len(list))}
	for _, cp := range list {
		resp.Checkpoints = append(resp.Checkpoints, checkpointMessage(cp))
	}
	u, err := st.Usage()
	if err != nil {
		return nil, checkpointStatus(err)
	}
	if c.appID == "" { // the store's size is the person's business
		resp.Usage = &nexusv1.CheckpointUsage{Checkpoints: int64(u.Checkpoints), Sessions: int64(u.Sessions), Bytes: u.Bytes, MaxBytes: u.MaxBytes}
	}
	return resp, nil
}

func (s *toolService) GetCheckpointDiff(ctx context.Context, req *nexusv1.GetCheckpointDiffRequest) (*nexusv1.GetCheckpointDiffResponse, error) {
	c, err := s.apps.caller(ctx, "")
	if err != nil {
		return nil, err
	}
	if req.GetId() == "" {
		return nil, status.Error(codes.InvalidArgument, "id is required: a checkpoint's id (a tool call's id), or a unique prefix of it")
	}
	st, err := s.store()
	if err != nil {
		return nil, err
	}
	cp, err := st.Get(c.party, req.GetId())
	if err != nil {
		return nil, checkpointStatus(err)
	}
	diffs, err := st.Diff(c.party, cp.ID)
	if err != nil {
		return nil, checkpointStatus(err)
	}
	resp := &nexusv1.GetCheckpointDiffResponse{Checkpoint: checkpointMessage(cp)}
	for _, d := range diffs {
		resp.Files = append(resp.Files, &nexusv1.CheckpointFileDiff{File: fileMessage(d.FileChange), Diff: d.Unified, Binary: d.Binary})
	}
	return resp, nil
}

func (s *toolService) UndoCheckpoints(ctx context.Context, req *nexusv1.UndoCheckpointsRequest) (*nexusv1.UndoCheckpointsResponse, error) {
	c, err := s.apps.caller(ctx, "")
	if err != nil {
		return nil, err
	}
	switch {
	case req.GetTurn() != "" && req.GetSession() == "":
		return nil, status.Error(codes.InvalidArgument, "turn needs session: the session whose turn to undo")
	case req.GetCall() != "" && (req.GetSession() != "" || req.GetTurn() != "" || req.GetLastTurn()):
		return nil, status.Error(codes.InvalidArgument, "call selects one call's checkpoint: give it alone, without session, turn or last_turn")
	}
	st, err := s.store()
	if err != nil {
		return nil, err
	}
	sel := checkpoints.Selector{Call: req.GetCall(), Session: req.GetSession(), Turn: req.GetTurn(), LastTurn: req.GetLastTurn()}
	return resultMessage(st.Undo(ctx, sel, checkpoints.UndoOptions{Party: c.party, Force: req.GetForce()}))
}

func (s *toolService) RedoCheckpoints(ctx context.Context, req *nexusv1.RedoCheckpointsRequest) (*nexusv1.UndoCheckpointsResponse, error) {
	c, err := s.apps.caller(ctx, "")
	if err != nil {
		return nil, err
	}
	st, err := s.store()
	if err != nil {
		return nil, err
	}
	return resultMessage(st.Redo(ctx, req.GetId(), checkpoints.UndoOptions{Party: c.party, Force: req.GetForce()}))
}

func (s *toolService) CollectCheckpoints(ctx context.Context, _ *nexusv1.CollectCheckpointsRequest) (*nexusv1.CollectCheckpointsResponse, error) {
	if !identityFrom(ctx).Admin {
		return nil, status.Error(codes.PermissionDenied, "only the admin token (the person) may collect checkpoints: it prunes every party's")
	}
	st, err := s.store()
	if err != nil {
		return nil, err
	}
	res, err := st.GC(ctx)
	if err != nil {
		return nil, checkpointStatus(err)
	}
	return &nexusv1.CollectCheckpointsResponse{Pruned: int64(res.Pruned), BytesBefore: res.BytesBefore, BytesAfter: res.BytesAfter}, nil
}

// resultMessage is an undo's or redo's response: conflicts are in it, not
// an error, so that the caller can show them and force.
func resultMessage(res checkpoints.Result, err error) (*nexusv1.UndoCheckpointsResponse, error) {
	if err != nil && !errors.Is(err, checkpoints.ErrConflict) {
		return nil, checkpointStatus(err)
	}
	resp := &nexusv1.UndoCheckpointsResponse{Undone: res.Undone}
	if res.Checkpoint != nil {
		resp.Checkpoint = checkpointMessage(*res.Checkpoint)
	}
	for _, f := range res.Restored {
		resp.Restored = append(resp.Restored, fileMessage(f))
	}
	for _, c := range res.Conflicts {
		resp.Conflicts = append(resp.Conflicts, &nexusv1.CheckpointConflict{Path: c.Path, Reason: c.Reason})
	}
	return resp, nil
}

// checkpointStatus maps the store's errors to statuses.
func checkpointStatus(err error) error {
	if errors.Is(err, checkpoints.ErrNotFound) {
		return status.Error(codes.NotFound, err.Error())
	}
	return toStatus(err)
}

func checkpointMessage(c checkpoints.Checkpoint) *nexusv1.Checkpoint {
	m := &nexusv1.Checkpoint{Id: c.ID, Kind: c.Kind, ToolCallId: c.ToolCallID, ToolName: c.ToolName, ServerName: c.ServerName,
		Author: c.Author, AppId: c.AppID, Session: c.Session, Turn: c.Turn, Time: timestamppb.New(c.Time),
		Undoes: c.Undoes, UndoneBy: c.UndoneBy}
	for _, f := range c.Files {
		m.Files = append(m.Files, fileMessage(f))
	}
	for _, sk := range c.Skipped {
		m.Skipped = append(m.Skipped, &nexusv1.CheckpointSkipped{Path: sk.Path, Reason: sk.Reason})
	}
	return m
}

func fileMessage(f checkpoints.FileChange) *nexusv1.CheckpointFile {
	return &nexusv1.CheckpointFile{Path: f.Path, Action: f.Action, Before: f.Before, After: f.After,
		BeforeExecutable: f.BeforeExec, AfterExecutable: f.AfterExec}
}
