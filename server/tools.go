package server

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// The nexus/tools/ and nexus/toolCalls/ methods. A call the editor starts
// is the person's own act (appId empty, author "editor"): the policy's
// admin decision applies, as for the CLI.

type toolDefinitionWire struct {
	Name             string `json:"name"`
	Title            string `json:"title,omitempty"`
	Description      string `json:"description"`
	ServerName       string `json:"serverName,omitempty"`
	InputSchemaJSON  string `json:"inputSchemaJson"`
	OutputSchemaJSON string `json:"outputSchemaJson,omitempty"`
	Kind             string `json:"kind"`
	Risk             string `json:"risk"`
}

func toolDefinitionJSON(d tools.Definition) toolDefinitionWire {
	return toolDefinitionWire{Name: d.Name, Title: d.Title, Description: d.Description, ServerName: d.ServerName,
		InputSchemaJSON: string(d.InputSchema), OutputSchemaJSON: string(d.OutputSchema), Kind: string(d.Kind), Risk: string(d.Risk)}
}

type toolsListParams struct {
	AppID      string `json:"appId"`
	ServerName string `json:"serverName"`
}

type toolsListResult struct {
	Tools []toolDefinitionWire `json:"tools"`
}

func (s *Server) toolsList(_ context.Context, p *toolsListParams) (*toolsListResult, error) {
	defs := s.opts.Tools.List(p.ServerName)
	res := &toolsListResult{Tools: make([]toolDefinitionWire, len(defs))}
	for i, d := range defs {
		res.Tools[i] = toolDefinitionJSON(d)
	}
	return res, nil
}

type toolsGetParams struct {
	AppID      string `json:"appId"`
	Name       string `json:"name"`
	ServerName string `json:"serverName"`
}

type toolsGetResult struct {
	Tool  *toolDefinitionWire `json:"tool,omitempty"`
	Found bool                `json:"found"`
}

func (s *Server) toolsGet(_ context.Context, p *toolsGetParams) (*toolsGetResult, error) {
	if p.Name == "" {
		return nil, missing("name", "the tool's name")
	}
	d, ok := s.opts.Tools.Lookup(p.Name, p.ServerName)
	if !ok {
		return &toolsGetResult{}, nil
	}
	w := toolDefinitionJSON(d)
	return &toolsGetResult{Tool: &w, Found: true}, nil
}

type toolsExecuteParams struct {
	ToolName      string `json:"toolName"`
	ServerName    string `json:"serverName"`
	ArgumentsJSON string `json:"argumentsJson"`
	// Arguments is the arguments as a JSON object, for clients that would
	// rather not encode them twice; at most one of the two.
	Arguments       json.RawMessage `json:"arguments"`
	RequestingAppID string          `json:"requestingAppId"`
	TaskID          string          `json:"taskId"`
	RequestID       string          `json:"requestId"`
	Intent          string          `json:"intent"`
	ExpectedOutcome string          `json:"expectedOutcome"`
	// WorkDoneToken, LSP's, asks for $/progress while the call runs.
	WorkDoneToken json.RawMessage `json:"workDoneToken"`
}

type toolsExecuteResult struct {
	Success    bool   `json:"success"`
	Message    string `json:"message,omitempty"`
	OutputJSON string `json:"outputJson,omitempty"`
	ToolCallID string `json:"toolCallId"`
	ErrorCode  string `json:"errorCode,omitempty"`
}

func (s *Server) toolsExecute(ctx context.Context, p *toolsExecuteParams) (*toolsExecuteResult, error) {
	if p.ToolName == "" {
		return nil, missing("toolName", "the tool to run")
	}
	if p.RequestingAppID != "" {
		return nil, invalid("requestingAppId %q: the editor acts as the person, not as an app", p.RequestingAppID)
	}
	args := json.RawMessage(strings.TrimSpace(p.ArgumentsJSON))
	if len(p.Arguments) > 0 && string(p.Arguments) != "null" {
		if len(args) > 0 {
			return nil, invalid("give argumentsJson or arguments, not both")
		}
		args = p.Arguments
	}
	// Arguments over the limit are refused by the manager before anything
	// reads them.
	if len(args) > 0 && len(args) <= s.opts.Tools.MaxArguments() && !json.Valid(args) {
		return nil, invalid("argumentsJson is not valid JSON")
	}
	req := tools.ExecuteRequest{ToolName: p.ToolName, ServerName: p.ServerName, Arguments: args,
		Party: editor, TaskID: p.TaskID, RequestID: p.RequestID, Intent: p.Intent, ExpectedOutcome: p.ExpectedOutcome}
	if tok := validToken(p.WorkDoneToken); tok != nil {
		title := p.ToolName
		if p.ServerName != "" {
			title = p.ServerName + "/" + p.ToolName
		}
		s.out.progress(tok, workDoneProgress{Kind: "begin", Title: title, Cancellable: true, Message: tools.StatusInitiated})
		req.OnUpdate = func(c tools.Call) {
			if c.Done() {
				return // the end is sent below, after the last report
			}
			r := workDoneProgress{Kind: "report", Message: c.Status}
			if c.Progress != nil {
				if c.Progress.Message != "" {
					r.Message = c.Progress.Message
				}
				if c.Progress.Total > 0 {
					pct := min(100, 100*c.Progress.Progress/c.Progress.Total)
					r.Percentage = &pct
				}
			}
			s.out.progress(tok, r)
		}
		defer func() { s.out.progress(tok, workDoneProgress{Kind: "end"}) }()
	}
	c := s.opts.Tools.Execute(policy.WithApprover(ctx, s.ownApprover()), req)
	if ctx.Err() != nil {
		return nil, ctx.Err() // answered -32800; the call ended as cancelled
	}
	res := &toolsExecuteResult{Success: c.Status == tools.StatusCompleted, OutputJSON: string(c.ResultJSON), ToolCallID: c.ID}
	if c.Error != nil {
		res.ErrorCode, res.Message = c.Error.Code, c.Error.Message
	}
	return res, nil
}

// validToken returns a ProgressToken (integer or string) or nil.
func validToken(raw json.RawMessage) json.RawMessage {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return nil
	}
	switch v.(type) {
	case string, float64:
		return raw
	}
	return nil
}

type toolCallsListParams struct {
	AppID  string `json:"appId"`
	Status string `json:"status"`
	Limit  int    `json:"limit"`
}

type toolCallsListResult struct {
	ToolCalls []*toolCallWire `json:"toolCalls"`
}

var callStatuses = []string{tools.StatusInitiated, tools.StatusRunning, tools.StatusCompleted, tools.StatusError}

func (s *Server) toolCallsList(_ context.Context, p *toolCallsListParams) (*toolCallsListResult, error) {
	if p.Limit < 0 {
		return nil, invalid("limit %d is negative", p.Limit)
	}
	if p.Status != "" && !slices.ContainsFunc(callStatuses, func(st string) bool { return strings.EqualFold(st, p.Status) }) {
		return nil, invalid("status %q is not one of %s", p.Status, strings.Join(callStatuses, ", "))
	}
	calls := s.opts.Tools.Calls(tools.CallFilter{AppID: p.AppID, Status: p.Status, Limit: p.Limit})
	res := &toolCallsListResult{ToolCalls: make([]*toolCallWire, len(calls))}
	for i, c := range calls {
		res.ToolCalls[i] = toolCallJSON(c)
	}
	return res, nil
}

type toolCallsCancelParams struct {
	ToolCallID string `json:"toolCallId"`
	AppID      string `json:"appId"`
}

type toolCallsCancelResult struct {
	Cancelled bool `json:"cancelled"`
}

func (s *Server) toolCallsCancel(_ context.Context, p *toolCallsCancelParams) (*toolCallsCancelResult, error) {
	if p.ToolCallID == "" {
		return nil, missing("toolCallId", "the call to cancel")
	}
	if s.opts.Tools.Cancel(p.ToolCallID) {
		return &toolCallsCancelResult{Cancelled: true}, nil
	}
	if _, ok := s.opts.Tools.Get(p.ToolCallID); ok {
		return &toolCallsCancelResult{}, nil // it had already ended
	}
	return nil, notFound("no tool call %q is running or recent", p.ToolCallID)
}

func notFound(format string, args ...any) error {
	return coded(CodeNotFound, "not_found", fmt.Sprintf(format, args...))
}

func precondition(format string, args ...any) error {
	return coded(CodeFailedPrecondition, "failed_precondition", fmt.Sprintf(format, args...))
}
