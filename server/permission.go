package server

import (
	"context"
	"encoding/json"
	"fmt"

	"go.lsp.dev/jsonrpc2"

	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// requestPermission is the request nexusd sends the editor when the policy
// says "ask".
const requestPermission = "nexus/requestPermission"

type permissionParams struct {
	ToolCall *toolCallWire `json:"toolCall"`
	ICERC    tools.ICERC   `json:"icerc"`
	// Options are the answers the editor may give.
	Options []policy.Answer `json:"options"`
}

var answers = []policy.Answer{policy.AllowOnce, policy.AllowAlways, policy.RejectOnce, policy.RejectAlways}

// attachApprover makes the editor the approver of the policy's "ask"
// decisions, from initialized until the editor goes; a terminal that
// attaches to answer (nexus calls --watch --answer) is asked before it,
// except about the editor's own calls (ownApprover).
func (s *Server) attachApprover() {
	if s.opts.Approvers != nil {
		s.opts.Approvers.Set(s.ownApprover())
	}
}

// ownApprover is the editor as the approver of the calls made through it
// (nexus/tools/execute, its agent sessions' prompts): the person who
// works in the editor is asked there, whatever terminal answers the
// others' questions.
func (s *Server) ownApprover() policy.Approver {
	return policy.Approver{Who: editor, Ask: s.askEditor}
}

// askEditor sends nexus/requestPermission and waits for the answer: a
// string, or {"answer": string, "directory"?: string}. A directory widens
// an "always" answer to a file tool's call to that directory and every
// path under it (policy.AlwaysUnder); one that does not hold the call's
// path, or that comes with a "once" answer, fails the request, which
// denies the call. When ctx ends first (the policy's timeout,
// or the call was cancelled), the editor is told with $/cancelRequest so
// that it can close its prompt.
func (s *Server) askEditor(ctx context.Context, call tools.Call, record policy.ICERC) (policy.Answer, error) {
	// The editor hears of the call, with its ICERC record, before it is
	// asked about it.
	s.out.event(call)
	if err := s.out.flush(ctx); err != nil {
		return "", err
	}
	var raw json.RawMessage
	id, err := s.conn.Call(ctx, requestPermission, permissionParams{ToolCall: toolCallJSON(call), ICERC: record, Options: answers}, &raw)
	if ctx.Err() != nil {
		if id.IsValid() {
			s.conn.Notify(context.WithoutCancel(ctx), "$/cancelRequest", map[string]any{"id": idValue(id)})
		}
		return "", ctx.Err()
	}
	if err != nil {
		return "", err
	}
	var ans policy.Answer
	if json.Unmarshal(raw, &ans) != nil {
		var obj struct {
			Answer    policy.Answer `json:"answer"`
			Directory *string       `json:"directory"`
		}
		if json.Unmarshal(raw, &obj) != nil {
			return "", fmt.Errorf("the editor's answer %s is neither a string nor {\"answer\": string, \"directory\"?: string}", clip(string(raw)))
		}
		ans = obj.Answer
		if obj.Directory != nil {
			if !ans.Always() {
				return "", fmt.Errorf("the editor's answer %q names a directory, which only an \"always\" answer covers", ans)
			}
			if err := policy.AlwaysUnder(ctx, *obj.Directory); err != nil {
				return "", fmt.Errorf("the editor's answer: %w", err)
			}
		}
	}
	return ans, nil
}

// idValue is an ID as a JSON value.
func idValue(id jsonrpc2.ID) any {
	if n, ok := id.Number(); ok {
		return n
	}
	str, _ := id.StringValue()
	return str
}
