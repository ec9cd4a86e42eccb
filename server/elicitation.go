package server

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nexuscocreate/nexus/tools"
)

// requestElicitation is the request nexusd sends the editor when an MCP
// server asks the person for input (elicitation/create) during a call the
// editor answers for: the editor's own calls, apps' calls, and agent
// prompts started from the editor.
const requestElicitation = "nexus/requestElicitation"

// elicitationParams are the params of nexus/requestElicitation: the
// server, the call the question belongs to (when it is known), and the
// question: a form (requestedSchema, a flat JSON Schema object) or a URL
// to visit.
type elicitationParams struct {
	RequestID       string          `json:"requestId"`
	Server          string          `json:"server"`
	ToolCall        *toolCallWire   `json:"toolCall,omitempty"`
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	URL             string          `json:"url,omitempty"`
	ElicitationID   string          `json:"elicitationId,omitempty"`
}

// elicitationResult is the editor's answer: accept (with the form's
// content), decline or cancel.
type elicitationResult struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// attachElicitor makes the editor the one asked the questions of calls
// that bring no one of their own, from initialized until the editor goes.
func (s *Server) attachElicitor() {
	if s.opts.Tools != nil {
		s.opts.Tools.SetElicitor(s.askEditorElicitation)
	}
}

// askEditorElicitation sends nexus/requestElicitation and waits for the
// answer. When the question is withdrawn first (the server cancelled it,
// its call ended), the editor gets $/cancelRequest and closes its form.
func (s *Server) askEditorElicitation(ctx context.Context, q *tools.Elicitation) (tools.ElicitResult, error) {
	p := elicitationParams{RequestID: q.ID, Server: q.Server, Mode: q.Mode, Message: q.Message,
		RequestedSchema: q.Schema, URL: q.URL, ElicitationID: q.ElicitationID}
	if q.Call != nil {
		// The editor hears of the call before it is asked about it.
		s.out.event(*q.Call)
		if err := s.out.flush(ctx); err != nil {
			return tools.ElicitResult{}, err
		}
		p.ToolCall = toolCallJSON(*q.Call)
	}
	var res elicitationResult
	id, err := s.conn.Call(ctx, requestElicitation, p, &res)
	if ctx.Err() != nil {
		if id.IsValid() {
			s.conn.Notify(context.WithoutCancel(ctx), "$/cancelRequest", map[string]any{"id": idValue(id)})
		}
		return tools.ElicitResult{}, ctx.Err()
	}
	if err != nil {
		return tools.ElicitResult{}, fmt.Errorf("the editor: %w", err)
	}
	return tools.ElicitResult{Action: res.Action, Content: res.Content}, nil
}
