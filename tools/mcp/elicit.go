package mcp

//lint:file-ignore SA1019 sampling and roots are deprecated from protocol 2026-07-28 (SEP-2577); servers use them until then

import (
	"context"
	"errors"
	"sync"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/tools"
)

// Elicitation: a server asks the person for input (elicitation/create),
// in form mode (fields to fill, described by a flat JSON Schema) or URL
// mode (a page to visit out of band). The question belongs to a call of
// that server, and goes to whoever made the call: the elicitor of the
// call (the terminal of nexus tools run or nexus chat), else the manager's
// (the editor), else no one and it is declined at once. The SDK does not
// say which of our requests a server's request relates to (a Streamable
// HTTP server sends it on that request's stream, but the go-sdk client
// merges the streams). It does on protocol 2026-07-28, where a server asks
// by answering the call with input requests (SEP-2322) and the SDK calls
// the handlers within the call: then the question carries the call's
// context; but the hub offers 2025-11-25 (session.go: the draft's
// server/discover probe breaks 2025 servers), so today the call is the one
// call in flight to the server, or none when there are several or none.
//
// While the person answers, the call's clock is stopped. The question is
// withdrawn (the elicitor's ctx ends) when the server cancels it, when its
// call ends, or after Options.ElicitTimeout; the server then gets cancel.
// An accepted form is completed with the schema's defaults and checked
// against the schema before the server gets it; content that does not
// match is refused with -32602, never sent.

// inflight are the calls running on each server.
type inflight struct {
	mu    sync.Mutex
	calls map[string]map[string]context.Context // server → call id → the call's context
}

// relatedCall is the key of the call id in a call's context.
type relatedCall struct{}

// track records a call to server as in flight until done is called; the
// returned context carries the call's id.
func (f *inflight) track(server, id string, ctx context.Context) (_ context.Context, done func()) {
	if id == "" {
		return ctx, func() {}
	}
	ctx = context.WithValue(ctx, relatedCall{}, id)
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]map[string]context.Context{}
	}
	if f.calls[server] == nil {
		f.calls[server] = map[string]context.Context{}
	}
	f.calls[server][id] = ctx
	f.mu.Unlock()
	return ctx, func() {
		f.mu.Lock()
		delete(f.calls[server], id)
		if len(f.calls[server]) == 0 {
			delete(f.calls, server)
		}
		f.mu.Unlock()
	}
}

// related returns the call a question of server belongs to, with its
// context: the call whose context the question's carries, else the one
// call in flight to the server; "" and nil when there are several or none.
func (f *inflight) related(ctx context.Context, server string) (string, context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id, ok := ctx.Value(relatedCall{}).(string); ok {
		if callCtx, ok := f.calls[server][id]; ok {
			return id, callCtx
		}
	}
	if len(f.calls[server]) != 1 {
		return "", nil
	}
	for id, ctx := range f.calls[server] {
		return id, ctx
	}
	return "", nil
}

// capabilities are the client capabilities the hub declares: the SDK's
// default (roots with listChanged), elicitation in form and URL modes when
// questions can be put to the person, and sampling when a model is
// configured for it.
func (h *Hub) capabilities() *mcp.ClientCapabilities {
	// Roots without list changes: a daemon serves one workspace for its
	// whole life (session.go).
	caps := &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}}
	if h.elicits() {
		caps.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}
	}
	if h.samples() {
		caps.Sampling = &mcp.SamplingCapabilities{}
	}
	return caps
}

func (h *Hub) elicits() bool { return h.opts.Elicitation && h.opts.Tools != nil }

// elicitationHandler is the server's handler of elicitation/create; nil
// when the hub puts no questions to the person (the SDK then answers
// -32602 and declares no capability).
func (s *server) elicitationHandler() func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	if !s.hub.elicits() {
		return nil
	}
	return s.elicit
}

// specElicitation is a receiving middleware of the server's client that
// puts a form's titled multi-select fields in the spec's shape before the
// go-sdk checks the schema: items {anyOf: [{const, title}]}. A server may
// add "type": "string" beside anyOf (the go-sdk's everything-server does),
// which JSON Schema allows and the go-sdk's check refuses ("items must
// specify enum for untitled enums"), here and again where the gateway
// passes the question on.
func specElicitation(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if r, ok := req.(*mcp.ElicitRequest); ok && r.Params != nil {
			if schema, ok := r.Params.RequestedSchema.(map[string]any); ok {
				props, _ := schema["properties"].(map[string]any)
				for _, p := range props {
					prop, _ := p.(map[string]any)
					items, _ := prop["items"].(map[string]any)
					if _, titled := items["anyOf"]; titled && items["enum"] == nil && items["type"] == "string" {
						delete(items, "type")
					}
				}
			}
		}
		return next(ctx, method, req)
	}
}

// ElicitationComplete is published when a server says that the
// out-of-band step of a URL-mode question is done
// (notifications/elicitation/complete): whoever sent the person there may
// go on (the gateway tells its client).
type ElicitationComplete struct {
	Server, ElicitationID string
}

// elicitationCompleteHandler is the server's handler of
// notifications/elicitation/complete; nil when the hub asks no questions.
func (s *server) elicitationCompleteHandler() func(context.Context, *mcp.ElicitationCompleteNotificationRequest) {
	if !s.hub.elicits() {
		return nil
	}
	return func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
		id := ""
		if req.Params != nil {
			id = req.Params.ElicitationID
		}
		s.hub.logger.Info("MCP server: the out-of-band step of its question is complete", "server", s.cfg.Name, "elicitationId", id)
		if id != "" && s.hub.opts.Bus != nil {
			s.hub.opts.Bus.Publish(ElicitationComplete{Server: s.cfg.Name, ElicitationID: id})
		}
	}
}

// elicit puts a server's question to the person and returns the answer.
func (s *server) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	h := s.hub
	p := req.Params
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	q := &tools.Elicitation{ID: id.String(), Server: s.cfg.Name, Mode: p.Mode, Message: p.Message, URL: p.URL, ElicitationID: p.ElicitationID}
	if q.Mode == "" {
		q.Mode = tools.ElicitForm
	}
	if q.Mode == tools.ElicitForm && p.RequestedSchema != nil {
		if q.Schema, err = orderedSchema(p.RequestedSchema, fieldOrder(p.Meta)); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestedSchema: " + err.Error()}
		}
	}
	callID, callCtx := h.inflight.related(ctx, s.cfg.Name)
	call, ask := h.opts.Tools.ElicitorFor(callID)
	if call.ID != "" {
		q.Call = &call
	}
	log := h.logger.With("server", s.cfg.Name, "mode", q.Mode, "call", call.ID)
	if ask == nil {
		log.Info("MCP server asked the person, and no one is there to answer: declined")
		return &mcp.ElicitResult{Action: tools.ElicitDecline}, nil
	}
	qctx, cancel := context.WithTimeout(ctx, h.opts.ElicitTimeout)
	defer cancel()
	if callCtx != nil {
		stop := context.AfterFunc(callCtx, cancel)
		defer stop()
	}
	resume := h.opts.Tools.AwaitPerson(callID)
	defer resume()
	log.Info("MCP server asks the person", "message", cutUTF8(q.Message, 200))
	res, err := ask(qctx, q)
	switch {
	case err == nil:
	case ctx.Err() != nil && (callCtx == nil || callCtx.Err() == nil):
		log.Info("MCP server withdrew its question")
		return nil, ctx.Err()
	case qctx.Err() != nil:
		why := "its call ended"
		if errors.Is(qctx.Err(), context.DeadlineExceeded) {
			why = "no answer in " + h.opts.ElicitTimeout.String()
		}
		log.Info("MCP server's question withdrawn: "+why, "action", tools.ElicitCancel)
		return &mcp.ElicitResult{Action: tools.ElicitCancel}, nil
	default:
		log.Warn("MCP server's question could not be asked: declined", "error", err.Error())
		return &mcp.ElicitResult{Action: tools.ElicitDecline}, nil
	}
	res, err = q.Check(res)
	if err != nil {
		log.Warn("the answer to an MCP server's question was refused", "error", err.Error())
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	log.Info("the person answered an MCP server's question", "action", res.Action)
	return &mcp.ElicitResult{Action: res.Action, Content: res.Content}, nil
}
