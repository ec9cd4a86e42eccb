package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// An Elicitation is a question a tool asks the person during a call: an MCP
// server's elicitation/create. It reaches the person through the party that
// made the call: the elicitor of the call's ExecuteRequest (a terminal that
// runs the call, an agent prompt's terminal), else the manager's elicitor
// (the editor), else no one, and then it is declined.
type Elicitation struct {
	// ID names the question while it is open (a UUIDv7).
	ID string `json:"requestId"`
	// Server is the MCP server that asks.
	Server string `json:"server"`
	// Call is the call the question belongs to; nil when the server's
	// question cannot be tied to one of its calls.
	Call *Call `json:"toolCall,omitempty"`
	// Mode is "form" (fill the fields Schema describes) or "url" (go to
	// URL, out of band; the answer says only whether the person agreed).
	Mode    string `json:"mode"`
	Message string `json:"message"`
	// Schema is the requested schema of a form: an object of flat
	// properties (string, number, integer, boolean, enums, arrays of
	// enums).
	Schema        json.RawMessage `json:"requestedSchema,omitempty"`
	URL           string          `json:"url,omitempty"`
	ElicitationID string          `json:"elicitationId,omitempty"`
}

// The modes of an Elicitation.
const (
	ElicitForm = "form"
	ElicitURL  = "url"
)

// The actions of an ElicitResult: the person submitted (accept), said no
// (decline), or dismissed the question without a choice (cancel).
const (
	ElicitAccept  = "accept"
	ElicitDecline = "decline"
	ElicitCancel  = "cancel"
)

// ElicitResult is the person's answer to an Elicitation; Content is the
// form's values, for accept in form mode.
type ElicitResult struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// An Elicitor puts a question to the person and returns the answer. ctx
// ends when the question is withdrawn (the server cancelled it, its call
// ended): the elicitor takes it away and returns ctx's error.
type Elicitor func(ctx context.Context, q *Elicitation) (ElicitResult, error)

// SetElicitor sets the elicitor that answers the questions of calls that
// bring none of their own (ExecuteRequest.Elicit): the editor's, while one
// is attached; nil detaches it.
func (m *Manager) SetElicitor(fn Elicitor) {
	m.elicitorMu.Lock()
	m.elicitor = fn
	m.elicitorMu.Unlock()
}

// ElicitorFor returns the running call id and the elicitor that answers its
// questions: the call's own, else the manager's (nil when no one is
// there). For an id that is not running (or ""), the call is the zero
// Call and the elicitor the manager's.
func (m *Manager) ElicitorFor(id string) (Call, Elicitor) {
	m.elicitorMu.Lock()
	fallback := m.elicitor
	m.elicitorMu.Unlock()
	m.callsMu.Lock()
	lc, ok := m.running[id]
	m.callsMu.Unlock()
	if !ok || id == "" {
		return Call{}, fallback
	}
	if lc.elicit != nil {
		return lc.snapshot(), lc.elicit
	}
	return lc.snapshot(), fallback
}

// AwaitPerson stops the clock of a running call while it waits for the
// person (or for what the daemon does on behalf of the call's tool, such as
// an MCP server's sampling request): that time does not count against its
// timeout. The returned function starts the clock again with the time that
// was left; it must be called once. Unknown calls are ignored.
func (m *Manager) AwaitPerson(id string) (resume func()) {
	m.callsMu.Lock()
	lc, ok := m.running[id]
	m.callsMu.Unlock()
	if !ok {
		return func() {}
	}
	lc.mu.Lock()
	if lc.timer != nil {
		if lc.paused == 0 {
			if lc.timer.Stop() {
				lc.left = time.Until(lc.deadline)
			} else {
				lc.left = 0 // it fired: the call is timing out already
			}
		}
		lc.paused++
	}
	lc.mu.Unlock()
	var done bool
	return func() {
		lc.mu.Lock()
		defer lc.mu.Unlock()
		if done || lc.timer == nil {
			return
		}
		done = true
		lc.paused--
		if lc.paused == 0 && lc.left > 0 {
			lc.deadline = time.Now().Add(lc.left)
			lc.timer.Reset(lc.left)
		}
	}
}

// Check completes and checks an answer to q: a form's fields the person
// left out get the schema's defaults (SEP-1034), and its content must then
// match the requested schema. Only accept carries content, and only in
// form mode. The error says what is wrong, for the person.
func (q *Elicitation) Check(r ElicitResult) (ElicitResult, error) {
	switch r.Action {
	case ElicitAccept:
	case ElicitDecline, ElicitCancel:
		return ElicitResult{Action: r.Action}, nil
	default:
		return r, fmt.Errorf("the action %q is not accept, decline or cancel", r.Action)
	}
	if q.Mode == ElicitURL {
		if len(r.Content) > 0 {
			return r, errors.New("an answer to a URL question carries no content")
		}
		return ElicitResult{Action: ElicitAccept}, nil
	}
	content := make(map[string]any, len(r.Content))
	for k, v := range r.Content {
		content[k] = v
	}
	if len(q.Schema) == 0 || string(q.Schema) == "null" {
		return ElicitResult{Action: ElicitAccept, Content: content}, nil
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(q.Schema, &s); err != nil {
		return r, fmt.Errorf("the requested schema: %w", err)
	}
	for name, prop := range s.Properties {
		if _, ok := content[name]; ok || prop == nil || len(prop.Default) == 0 {
			continue
		}
		var v any
		if err := json.Unmarshal(prop.Default, &v); err == nil {
			content[name] = v
		}
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return r, fmt.Errorf("the requested schema: %w", err)
	}
	// Validate the JSON form of the content, as the server will read it.
	var inst any
	if b, err := json.Marshal(content); err != nil {
		return r, err
	} else if err := json.Unmarshal(b, &inst); err != nil {
		return r, err
	}
	if err := rs.Validate(inst); err != nil {
		return r, fmt.Errorf("the answer does not match the requested schema: %v", err)
	}
	return ElicitResult{Action: ElicitAccept, Content: content}, nil
}
