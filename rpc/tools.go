package rpc

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"unsafe"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/nexuscocreate/nexus/checkpoints"
	"github.com/nexuscocreate/nexus/events"
	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/mcp"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// Permissions answers CheckPermission and hides the tools an app is denied.
// action is a tool name; decision is allow, ask or deny.
type Permissions func(appID, action, resource string) (decision, reason string)

// toolService is the ToolManager API and the tool RPCs of CoreFramework: a
// thin adapter from protobuf to the tools.Manager.
type toolService struct {
	nexusv1.UnimplementedToolManagerServer

	tools     *tools.Manager
	perms     Permissions
	approvals *policy.Approvals
	approvers *policy.Approvers
	bus       *events.Bus
	apps      apps
	mcp       *mcp.Hub
	// checkpoints is nil when checkpoints are off.
	checkpoints *checkpoints.Store
	// questions are MCP servers' questions put to the callers of
	// ExecuteToolStream (and Agent's Prompt) that answer them.
	questions *questions
}

var _ nexusv1.ToolManagerServer = (*toolService)(nil)

func (s *toolService) ListTools(ctx context.Context, req *nexusv1.ListToolsRequest) (*nexusv1.ListToolsResponse, error) {
	c, err := s.apps.caller(ctx, req.GetAppId())
	if err != nil {
		return nil, err
	}
	resp := &nexusv1.ListToolsResponse{}
	for _, d := range s.tools.List(req.GetServerName()) {
		if s.perms != nil && c.appID != "" {
			if decision, _ := s.perms(c.appID, qualifiedName(d), ""); decision == "deny" {
				continue
			}
		}
		resp.Tools = append(resp.Tools, toolDefinition(d))
	}
	return resp, nil
}

func (s *toolService) GetToolDefinition(ctx context.Context, req *nexusv1.GetToolDefinitionRequest) (*nexusv1.GetToolDefinitionResponse, error) {
	if _, err := s.apps.caller(ctx, req.GetAppId()); err != nil {
		return nil, err
	}
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required")
	}
	d, ok := s.tools.Lookup(req.GetName(), req.GetServerName())
	if !ok {
		return &nexusv1.GetToolDefinitionResponse{Found: false}, nil
	}
	return &nexusv1.GetToolDefinitionResponse{Found: true, Tool: toolDefinition(d)}, nil
}

// qualifiedName is how permissions name a tool: its name, or "server/tool"
// for a tool of an MCP server.
func qualifiedName(d tools.Definition) string {
	if d.ServerName == "" {
		return d.Name
	}
	return d.ServerName + "/" + d.Name
}

func toolDefinition(d tools.Definition) *nexusv1.ToolDefinition {
	td := &nexusv1.ToolDefinition{Name: d.Name, Title: d.Title, Description: d.Description, ServerName: d.ServerName,
		InputSchemaJson: string(d.InputSchema), OutputSchemaJson: string(d.OutputSchema), Kind: string(d.Kind), Risk: string(d.Risk)}
	if a := d.Annotations; a != nil {
		td.Annotations = &nexusv1.ToolAnnotations{ReadOnly: a.ReadOnly, Destructive: a.Destructive, Idempotent: a.Idempotent, OpenWorld: a.OpenWorld}
	}
	return td
}

// executeRequest turns a request into a tools.ExecuteRequest for the caller.
func (s *toolService) executeRequest(ctx context.Context, req *nexusv1.ExecuteToolRequest) (tools.ExecuteRequest, error) {
	c, err := s.apps.caller(ctx, req.GetRequestingAppId())
	if err != nil {
		return tools.ExecuteRequest{}, err
	}
	if req.GetToolName() == "" {
		return tools.ExecuteRequest{}, status.Error(codes.InvalidArgument, "toolName is required")
	}
	args := json.RawMessage(req.GetArgumentsJson())
	if strings.TrimSpace(req.GetArgumentsJson()) == "" {
		args = json.RawMessage("{}")
	}
	return tools.ExecuteRequest{
		ToolName: req.GetToolName(), ServerName: req.GetServerName(), Arguments: args,
		Party: c.party, AppID: c.appID, TaskID: req.GetTaskId(), RequestID: req.GetRequestId(),
		// An app's task groups its calls' checkpoints as a turn of its
		// session ("app:<id>"): undone with --session app:<id> --turn TASK.
		Turn:   req.GetTaskId(),
		Intent: req.GetIntent(), ExpectedOutcome: req.GetExpectedOutcome(),
	}, nil
}

func (s *toolService) ExecuteTool(ctx context.Context, req *nexusv1.ExecuteToolRequest) (*nexusv1.ExecuteToolResponse, error) {
	er, err := s.executeRequest(ctx, req)
	if err != nil {
		return nil, err
	}
	c := s.tools.Execute(ctx, er)
	resp := &nexusv1.ExecuteToolResponse{Success: c.Status == tools.StatusCompleted, OutputJson: resultString(c.ResultJSON), ToolCallId: c.ID}
	if c.Error != nil {
		resp.ErrorCode, resp.Message = c.Error.Code, c.Error.Message
	}
	return resp, nil
}

// resultString is a finished call's whole result as a string, without a
// copy (a result is up to tools.outputLimit, 1 MiB by default, per call): a
// result is never written once its call has finished, by the manager or
// anyone it hands the call to.
func resultString(b json.RawMessage) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// executeStream runs a call and streams its status changes. A slow reader
// may miss intermediate changes; the final status is always sent.
func (s *toolService) executeStream(ctx context.Context, req *nexusv1.ExecuteToolRequest, send func(*nexusv1.ToolCall) error) error {
	er, err := s.executeRequest(ctx, req)
	if err != nil {
		return err
	}
	if err := mayAnswer(er.Party, "ask_elicitation", req.GetAskElicitation()); err != nil {
		return err
	}
	var (
		sendMu  sync.Mutex
		sendErr error
		ended   bool
	)
	sendOne := func(m *nexusv1.ToolCall) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		switch {
		case ended:
			return errNoStream
		case sendErr == nil:
			sendErr = send(m)
		}
		return sendErr
	}
	if req.GetAskElicitation() {
		er.Elicit = s.questions.elicitor(owner(ctx), "", func(q *tools.Elicitation, withdrawn bool) error {
			m := &nexusv1.ToolCall{}
			if q.Call != nil {
				m = toolCall(*q.Call)
			}
			m.Elicitation = elicitation(q, withdrawn)
			return sendOne(m)
		})
	}
	updates := make(chan tools.Call, 256)
	er.OnUpdate = func(c tools.Call) {
		if c.Done() {
			return // sent below, never dropped
		}
		select {
		case updates <- c:
		default:
		}
	}
	go func() {
		final := s.tools.Execute(ctx, er)
		updates <- final
		close(updates)
	}()
	for c := range updates {
		_ = sendOne(toolCall(c))
	}
	sendMu.Lock()
	defer sendMu.Unlock()
	ended = true // a question withdrawn later is not sent after the stream ended
	return sendErr
}

func (s *toolService) WatchToolCalls(req *nexusv1.WatchToolCallsRequest, stream nexusv1.ToolManager_WatchToolCallsServer) error {
	c, err := s.apps.caller(stream.Context(), req.GetAppId())
	if err != nil {
		return err
	}
	appFilter := c.appID // an app sees its own calls; the admin all, or one app's
	id := req.GetToolCallId()
	sub := s.bus.Subscribe(func(ev any) bool {
		call, ok := ev.(tools.Call)
		return ok && (appFilter == "" || call.AppID == appFilter) && (id == "" || call.ID == id)
	}, watchBuffer)
	defer sub.Close()
	if err := live(stream); err != nil {
		return err
	}
	return forward(stream.Context(), sub, func(ev any) error { return stream.Send(toolCall(ev.(tools.Call))) })
}

func (s *toolService) ListToolCalls(ctx context.Context, req *nexusv1.ListToolCallsRequest) (*nexusv1.ListToolCallsResponse, error) {
	c, err := s.apps.caller(ctx, req.GetAppId())
	if err != nil {
		return nil, err
	}
	if req.GetLimit() < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "limit %d is negative", req.GetLimit())
	}
	resp := &nexusv1.ListToolCallsResponse{}
	for _, call := range s.tools.Calls(tools.CallFilter{AppID: c.appID, Status: req.GetStatus(), Limit: int(req.GetLimit())}) {
		resp.ToolCalls = append(resp.ToolCalls, toolCall(call))
	}
	return resp, nil
}

func (s *toolService) CancelToolCall(ctx context.Context, req *nexusv1.CancelToolCallRequest) (*nexusv1.CancelToolCallResponse, error) {
	c, err := s.apps.caller(ctx, req.GetAppId())
	if err != nil {
		return nil, err
	}
	call, ok := s.tools.Get(req.GetToolCallId())
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no tool call %q", req.GetToolCallId())
	}
	if c.id.App != nil && call.AppID != c.id.App.ID {
		return nil, status.Errorf(codes.PermissionDenied, "tool call %s belongs to another app", call.ID)
	}
	return &nexusv1.CancelToolCallResponse{Cancelled: s.tools.Cancel(call.ID)}, nil
}

// toolCall converts a call to its protobuf form.
func toolCall(c tools.Call) *nexusv1.ToolCall {
	p := &nexusv1.ToolCall{
		ToolCallId: c.ID, ToolName: c.ToolName, ServerName: c.ServerName, ArgumentsJson: string(c.ArgumentsJSON),
		Status: c.Status, ResultJson: string(c.ResultJSON), AppId: c.AppID, Author: c.Author, TaskId: c.TaskID, RequestId: c.RequestID,
		Title: c.Title, Kind: string(c.Kind), StartedAt: timestamppb.New(c.StartedAt),
		ArgumentsTruncated: c.ArgumentsTruncated, ArgumentsSize: int64(c.ArgumentsSize),
		ResultTruncated: c.ResultTruncated, ResultSize: int64(c.ResultSize), Session: c.Session, Turn: c.Turn,
		Notes: c.Notes,
	}
	if !c.EndedAt.IsZero() {
		p.EndedAt = timestamppb.New(c.EndedAt)
	}
	if c.Error != nil {
		p.Error = &nexusv1.ToolCallError{Code: c.Error.Code, Message: c.Error.Message}
	}
	if c.Progress != nil {
		p.Progress = &nexusv1.ToolCallProgress{Progress: c.Progress.Progress, Total: c.Progress.Total, Message: c.Progress.Message}
	}
	if c.ICERC != nil {
		p.Icerc = &nexusv1.Icerc{Intent: c.ICERC.Intent, Command: c.ICERC.Command, ExpectedOutcome: c.ICERC.ExpectedOutcome,
			Asker: c.ICERC.Asker, Always: c.ICERC.Always,
			Risk: &nexusv1.RiskAssessment{Level: string(c.ICERC.Risk.Level), Scope: c.ICERC.Risk.Scope, Details: c.ICERC.Risk.Details}}
		for _, ch := range c.ICERC.Changes {
			p.Icerc.Changes = append(p.Icerc.Changes, &nexusv1.ProposedChange{Path: ch.Path, Action: ch.Action, Diff: ch.Diff,
				Binary: ch.Binary, Truncated: ch.Truncated})
		}
	}
	return p
}

// The tool RPCs of CoreFramework.

func (s *frameworkService) ExecuteTool(ctx context.Context, req *nexusv1.ExecuteToolRequest) (*nexusv1.ExecuteToolResponse, error) {
	return s.tools.ExecuteTool(ctx, req)
}

func (s *frameworkService) ExecuteToolStream(req *nexusv1.ExecuteToolRequest, stream nexusv1.CoreFramework_ExecuteToolStreamServer) error {
	return s.tools.executeStream(stream.Context(), req, stream.Send)
}

func (s *frameworkService) CheckPermission(ctx context.Context, req *nexusv1.CheckPermissionRequest) (*nexusv1.CheckPermissionResponse, error) {
	c, err := s.apps.caller(ctx, req.GetAppId())
	if err != nil {
		return nil, err
	}
	if req.GetAction() == "" {
		return nil, status.Error(codes.InvalidArgument, "action is required: a tool name")
	}
	if s.tools.perms == nil {
		return &nexusv1.CheckPermissionResponse{Decision: "deny", Reason: "no permission policy is configured"}, nil
	}
	decision, reason := s.tools.perms(c.appID, req.GetAction(), req.GetResource())
	return &nexusv1.CheckPermissionResponse{Allowed: decision == "allow", Decision: decision, Reason: reason}, nil
}

// adminOnly refuses app tokens: remembered answers are the person's.
func adminOnly(ctx context.Context) error {
	if !identityFrom(ctx).Admin {
		return status.Error(codes.PermissionDenied, "only the admin token may list or revoke remembered answers")
	}
	return nil
}

func (s *toolService) ListApprovals(ctx context.Context, _ *nexusv1.ListApprovalsRequest) (*nexusv1.ListApprovalsResponse, error) {
	if err := adminOnly(ctx); err != nil {
		return nil, err
	}
	resp := &nexusv1.ListApprovalsResponse{}
	if s.approvals == nil {
		return resp, nil
	}
	// The Approval message has no field for the scope: tool_name is the
	// answer's name, the tool's with its scope ("execute_command:ls",
	// "read_file:src/**", "execute_command:**" for a broad answer), which
	// RevokeApproval takes back.
	for _, a := range s.approvals.List() {
		resp.Approvals = append(resp.Approvals, &nexusv1.Approval{AppId: a.AppID, ToolName: a.Name(), ServerName: a.Server,
			DefinitionHash: a.DefinitionHash, Allow: a.Allow, Time: timestamppb.New(a.Time)})
	}
	return resp, nil
}

func (s *toolService) RevokeApproval(ctx context.Context, req *nexusv1.RevokeApprovalRequest) (*nexusv1.RevokeApprovalResponse, error) {
	if err := adminOnly(ctx); err != nil {
		return nil, err
	}
	if req.GetToolName() == "" {
		return nil, status.Error(codes.InvalidArgument, "toolName is required")
	}
	if s.approvals == nil {
		return &nexusv1.RevokeApprovalResponse{}, nil
	}
	n, err := s.approvals.Revoke(req.GetAppId(), req.GetToolName(), req.GetServerName())
	if err != nil {
		return nil, status.Errorf(codes.Internal, "revoke: %v", err)
	}
	return &nexusv1.RevokeApprovalResponse{Revoked: n > 0}, nil
}
