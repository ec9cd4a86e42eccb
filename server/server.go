// Package server is the editor's side of nexusd: JSON-RPC 2.0 over stdio
// with LSP framing (nexusd --stdio). It runs the LSP lifecycle, answers the
// nexus/ methods over the same stores and ToolManager as the gRPC services,
// streams tool calls, definition and runtime changes, MCP server status and
// logs to the editor as notifications, and asks the editor for permission
// when the policy says "ask". Start with [New] and [Server.Serve].
package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexuscocreate/nexus/agent"
	"github.com/nexuscocreate/nexus/checkpoints"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/nexuscocreate/nexus/events"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/hooks"
	"github.com/nexuscocreate/nexus/tools/mcp"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// Options are what the server serves.
type Options struct {
	Definitions *state.Definitions
	Runtime     state.Runtime
	Tools       *tools.Manager
	MCP         *mcp.Hub // nil: the daemon runs no MCP servers
	Bus         *events.Bus
	// Hooks are the hooks of .nexus/config.yaml, which the editor lists
	// and approves; nil: none.
	Hooks *hooks.Hooks
	// Approvers is where the editor attaches as the approver of the
	// policy's "ask" decisions; nil: no prompts.
	Approvers *policy.Approvers
	// Approvals are the remembered answers (nexus/approvals/list|revoke);
	// nil serves neither method.
	Approvals *policy.Approvals
	// Agent is the agent core; nil serves no nexus/agent/ methods.
	Agent *agent.Service
	// Checkpoints are the records of the changes of tool calls
	// (nexus/checkpoints/); nil: checkpoints are off, and the methods say
	// so.
	Checkpoints *checkpoints.Store
	// Apps are the app ids of the configuration (for appId parameters).
	Apps   []string
	Logger *slog.Logger
	Info   Info
	// MaxMessage is the largest message accepted (DefaultMaxMessage);
	// MaxBatch the largest batch (DefaultMaxBatch).
	MaxMessage int
	MaxBatch   int
	// MaxPendingCalls bounds the tool calls whose latest status waits for a
	// slow editor (default 10,000), MaxPendingCallBytes their arguments and
	// results (default 16 MiB).
	MaxPendingCalls     int
	MaxPendingCallBytes int
	// WatchParent polls the editor's process (processId of initialize);
	// default 1s, where the process cannot be waited on (no pidfd on
	// Linux; macOS).
	WatchParent time.Duration
}

// Info is what initialize tells the editor about this daemon.
type Info struct {
	Version        string `json:"version"`
	Workspace      string `json:"workspace"`
	GRPCAddress    string `json:"grpcAddress"`
	GRPCTCPAddress string `json:"grpcTcpAddress,omitempty"`
	// TLSFingerprint is the SHA-256 fingerprint of the certificate of
	// GRPCTCPAddress (as in daemon.json); empty for plain TCP.
	TLSFingerprint string `json:"tlsFingerprint,omitempty"`
	AdminTokenFile string `json:"adminTokenFile,omitempty"`
	// DefinitionsRoot is the absolute definitions root; Debounce how long a
	// file must be quiet on disk before its edit is recorded.
	DefinitionsRoot string `json:"definitionsRoot,omitempty"`
	Debounce        string `json:"watchDebounce,omitempty"`
}

// The phases of the LSP lifecycle.
const (
	phaseNew int32 = iota
	phaseInitialized
	phaseShutdown
)

// Server is the editor connection of one nexusd. It serves one editor at a
// time.
type Server struct {
	opts   Options
	logger *slog.Logger

	phase   atomic.Int32
	methods map[string]method

	conn jsonrpc2.Conn
	out  *outbox

	// handling holds the cancel functions of the requests being handled,
	// for $/cancelRequest.
	handlingMu sync.Mutex
	handling   map[jsonrpc2.ID]func()

	// exit is closed by the exit notification; exitCode is then its code.
	exitOnce sync.Once
	exit     chan struct{}
	exitCode int

	// watchPID is the editor's process, once initialize names it.
	watchPID atomic.Int64
	pidSet   chan struct{}

	// mcpSubs are the editor's resource subscriptions and their releases
	// (mcpresources.go); mcpSubsDone once the editor is gone.
	mcpSubsMu   sync.Mutex
	mcpSubs     map[mcpSub]func()
	mcpSubsDone bool

	// commandsMu guards the agent sessions the editor opened (new or
	// load) and the special commands sent to them last (agent.go), for
	// sending them again when a command file changes.
	commandsMu    sync.Mutex
	agentSessions map[string]bool
	sentCommands  string
}

// New returns a server over the daemon's parts.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxPendingCalls <= 0 {
		opts.MaxPendingCalls = 10000
	}
	if opts.MaxPendingCallBytes <= 0 {
		opts.MaxPendingCallBytes = 16 << 20
	}
	if opts.WatchParent <= 0 {
		opts.WatchParent = time.Second
	}
	s := &Server{opts: opts, logger: opts.Logger, exit: make(chan struct{}), pidSet: make(chan struct{}),
		handling: map[jsonrpc2.ID]func(){}}
	s.methods = s.methodTable()
	return s
}

// Why Serve ended, besides the exit notification (nil) and ctx.
var (
	// ErrParentExited: the editor's process is gone.
	ErrParentExited = errors.New("the editor's process exited")
	// ErrClosed: the editor closed its end of the connection.
	ErrClosed = errors.New("the editor closed its connection")
)

// Serve speaks JSON-RPC on in and out until the editor sends exit, closes
// its end, or its process dies, or ctx ends. It returns the process exit
// code LSP prescribes: 0 after shutdown and exit, else 1, and why it ended:
// nil for the exit notification, ErrClosed, ErrParentExited, ctx's error,
// or the connection's. closer, when not nil, closes the pipes (it must
// unblock a pending read).
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer, closer func() error) (int, error) {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	st := newStream(in, out, closer, s.opts.MaxMessage, s.opts.MaxBatch, func(err error) {
		s.logger.Warn("editor sent a malformed message; answered with an error", "error", err.Error())
	})
	s.conn = jsonrpc2.NewConn(st, jsonrpc2.WithCodec(stdCodec{}), jsonrpc2.WithPreempter(s))
	s.out = newOutbox(st, s.opts.MaxPendingCalls, s.opts.MaxPendingCallBytes, s.logger)
	// Attached before the first request is read: whatever happens after
	// the initialize reply reaches the editor.
	detach := s.opts.Bus.Attach(s.busEvent)
	defer detach()
	defer s.releaseMcpSubs()
	if s.opts.Agent != nil {
		// Sent from a goroutine of its own: a slow editor holds no other
		// door up.
		defer s.opts.Agent.WatchCommands(func() { go s.resendCommands() })()
	}
	s.conn.Go(ctx, s.handle)

	outDone := make(chan struct{})
	go func() { s.out.run(ctx); close(outDone) }()
	defer func() { stop(); <-outDone }()
	if s.opts.Approvers != nil {
		defer s.opts.Approvers.Set(policy.Approver{})
	}
	if s.opts.MCP != nil {
		defer s.opts.MCP.SetTrustAsker(editor, nil)
	}
	if s.opts.Hooks != nil {
		defer s.opts.Hooks.SetAsker(editor, nil)
	}
	if s.opts.Tools != nil {
		defer s.opts.Tools.SetElicitor(nil)
	}

	var err error
	select {
	case <-s.exit:
	case <-st.ended:
		err = st.endErr
		if errors.Is(err, io.EOF) {
			err = ErrClosed
		}
	case <-s.conn.Done():
		err = s.conn.Err()
		if err == nil || errors.Is(err, io.EOF) {
			err = ErrClosed
		}
	case <-ctx.Done():
		err = ctx.Err()
	case err = <-s.parentGone(ctx):
	}
	code := 1
	if s.phase.Load() == phaseShutdown {
		select {
		case <-s.exit:
			code = s.exitCode
		default:
			code = 0 // shut down, and then the editor closed the pipe
		}
	}
	s.cancelAll()
	s.closeConn()
	return code, err
}

// cancelAll cancels the requests being handled: the editor is gone, and
// nobody will read their answers.
func (s *Server) cancelAll() {
	s.handlingMu.Lock()
	defer s.handlingMu.Unlock()
	for _, cancel := range s.handling {
		cancel()
	}
}

// closeConn closes the connection; a reader parked on a pipe that cannot be
// interrupted is left behind rather than waited for.
func (s *Server) closeConn() {
	done := make(chan struct{})
	go func() { s.conn.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		s.logger.Warn("the editor connection did not close in 2s; leaving it")
	}
}

// Preempt answers $/cancelRequest on the read loop, ahead of everything
// queued behind it.
func (s *Server) Preempt(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	if req.Method() != "$/cancelRequest" {
		return nil, jsonrpc2.ErrNotHandled
	}
	if id := idOf(req.Params()); id.IsValid() {
		s.cancelRequest(id)
	}
	return struct{}{}, nil // handled: a notification has no reply
}

// method is one nexus/ method.
type method struct {
	fn func(s *Server, ctx context.Context, params jsonrpc2.RawMessage) (any, error)
	// async methods run beside the requests that follow them (they may
	// wait: tool calls, permission prompts, MCP restarts); the others run
	// in order, on the read loop.
	async bool
}

func (s *Server) handle(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	name := req.Method()
	switch s.phase.Load() {
	case phaseNew:
		switch name {
		case "initialize":
			return s.initialize(ctx, req.Params())
		case "exit":
			s.setExit(1)
			return nil, nil
		}
		if !req.IsCall() {
			return nil, nil
		}
		return nil, jsonrpc2.Errorf(jsonrpc2.ServerNotInitialized, "%s before initialize: the server is not initialized", name)
	case phaseShutdown:
		if name == "exit" {
			s.setExit(0)
			return nil, nil
		}
		if !req.IsCall() {
			return nil, nil
		}
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidRequest, "%s after shutdown: only exit is accepted", name)
	}
	switch name {
	case "initialize":
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidRequest, "initialize was already received")
	case "initialized":
		s.attachApprover()
		s.attachTrustAsker()
		s.attachHookAsker()
		s.attachElicitor()
		return nil, nil
	case "shutdown":
		s.phase.Store(phaseShutdown)
		return nil, nil
	case "exit":
		s.setExit(1)
		return nil, nil
	}
	m, ok := s.methods[name]
	if !ok {
		if !req.IsCall() {
			return nil, nil // unknown notifications ($/setTrace, ...) are ignored
		}
		return nil, jsonrpc2.Errorf(jsonrpc2.MethodNotFound, "method %q is not a Nexus method", name)
	}
	// The connection pools its request contexts: one must not outlive its
	// handler, which a context derived from it may (context.WithCancel
	// watches its parent from a goroutine). Methods get the connection's
	// context; an async one (the only kind $/cancelRequest can reach: the
	// others hold the read loop until they are done) gets its own, which
	// $/cancelRequest and the editor's leaving cancel.
	rctx := jsonrpc2.DetachContext(ctx)
	if !m.async {
		res, err := m.fn(s, rctx, req.Params())
		if err != nil {
			return nil, wireError(rctx, err)
		}
		return res, nil
	}
	jsonrpc2.Async(ctx)
	rctx, cancelCause := context.WithCancelCause(rctx)
	cancel := func() { cancelCause(tools.ErrCancelled) }
	defer cancel()
	if req.IsCall() {
		id := req.ID()
		s.handlingMu.Lock()
		s.handling[id] = cancel
		s.handlingMu.Unlock()
		defer func() {
			s.handlingMu.Lock()
			delete(s.handling, id)
			s.handlingMu.Unlock()
		}()
	}
	res, err := m.fn(s, rctx, req.Params())
	if err != nil {
		return nil, wireError(rctx, err)
	}
	return res, nil
}

// cancelRequest cancels the context of a request being handled.
func (s *Server) cancelRequest(id jsonrpc2.ID) {
	s.handlingMu.Lock()
	cancel := s.handling[id]
	s.handlingMu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (s *Server) setExit(code int) {
	s.exitOnce.Do(func() {
		s.exitCode = code
		close(s.exit)
	})
}

// stdCodec encodes params and results with encoding/json, the encoding of
// the rest of nexusd.
type stdCodec struct{}

func (stdCodec) Marshal(v any) ([]byte, error) {
	if raw, ok := v.(jsonrpc2.RawMessage); ok {
		return raw, nil
	}
	return json.Marshal(v)
}

func (stdCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// initializeParams are the parts of LSP's InitializeParams that nexusd
// uses; the rest is accepted and ignored.
type initializeParams struct {
	ProcessID  *int `json:"processId"`
	ClientInfo *struct {
		Name    string `json:"name"`
		Version string `json:"version,omitempty"`
	} `json:"clientInfo,omitempty"`
	RootURI          *string `json:"rootUri,omitempty"`
	WorkspaceFolders []struct {
		URI  string `json:"uri"`
		Name string `json:"name"`
	} `json:"workspaceFolders,omitempty"`
	Capabilities json.RawMessage `json:"capabilities"`
}

func (s *Server) initialize(ctx context.Context, raw jsonrpc2.RawMessage) (any, error) {
	var p initializeParams
	if err := decodeLoose(raw, &p); err != nil {
		return nil, err
	}
	s.phase.Store(phaseInitialized)
	if p.ProcessID != nil && *p.ProcessID > 0 {
		s.watchPID.Store(int64(*p.ProcessID))
		close(s.pidSet)
	}
	name := "an editor"
	if p.ClientInfo != nil && p.ClientInfo.Name != "" {
		name = p.ClientInfo.Name
	}
	s.logger.Info("editor connected", "client", name, "pid", derefInt(p.ProcessID))
	return map[string]any{
		"serverInfo": map[string]string{"name": "nexusd", "version": s.opts.Info.Version},
		"capabilities": map[string]any{
			"nexus": map[string]any{
				"methods":            s.methodNames(),
				"notifications":      notificationNames,
				"requestPermission":  s.opts.Approvers != nil,
				"requestMcpTrust":    s.opts.MCP != nil,
				"requestHookTrust":   s.opts.Hooks.Any(),
				"requestElicitation": s.opts.Tools != nil,
				"workDoneProgress":   true,
			},
		},
		"nexus": s.opts.Info,
	}, nil
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// wireError turns an error of a method into its JSON-RPC error: protocol
// errors as they are, domain errors with a code in the server range and
// data {"code": "..."} naming the kind.
func wireError(ctx context.Context, err error) error {
	var we *jsonrpc2.Error
	if errors.As(err, &we) {
		return err
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return jsonrpc2.NewError(CodeRequestCancelled, "request cancelled")
	}
	code, kind := CodeInternal, "internal"
	switch {
	case errors.Is(err, state.ErrNotFound), errors.Is(err, mcp.ErrUnknownServer), errors.Is(err, checkpoints.ErrNotFound):
		code, kind = CodeNotFound, "not_found"
	case errors.Is(err, state.ErrConflict):
		code, kind = CodeConflict, "conflict"
	case errors.Is(err, state.ErrInvalid), errors.Is(err, state.ErrTooLarge):
		code, kind = jsonrpc2.InvalidParams, "invalid_argument"
	case errors.Is(err, state.ErrPatch):
		code, kind = CodeFailedPrecondition, "failed_precondition"
	case errors.Is(err, state.ErrClosed), errors.Is(err, state.ErrUnavailable):
		code, kind = CodeUnavailable, "unavailable"
	}
	return coded(code, kind, err.Error())
}

// The error codes of nexus/ methods besides JSON-RPC's own; data.code
// names the kind in words.
const (
	// CodeRequestCancelled is LSP's: the request was cancelled by
	// $/cancelRequest.
	CodeRequestCancelled jsonrpc2.Code = -32800
	// CodeNotFound: the path, revision, key, tool call or MCP server does
	// not exist.
	CodeNotFound jsonrpc2.Code = -32004
	// CodeConflict: expectedRevision is not the current revision.
	CodeConflict jsonrpc2.Code = -32009
	// CodeFailedPrecondition: the request cannot be done in the present
	// state (a diff that does not apply, an MCP server that is not ready).
	CodeFailedPrecondition jsonrpc2.Code = -32012
	// CodeUnavailable: the daemon is shutting down.
	CodeUnavailable jsonrpc2.Code = -32003
	// CodeInternal is JSON-RPC's internal error.
	CodeInternal = jsonrpc2.InternalError
)

// decodeParams decodes params into p, refusing unknown fields; an error
// names the field that is wrong.
func decodeParams(raw jsonrpc2.RawMessage, p any) error {
	return decode(raw, p, true)
}

// decodeLoose is decodeParams for LSP's own messages, whose extra fields
// are none of nexusd's business.
func decodeLoose(raw jsonrpc2.RawMessage, p any) error {
	return decode(raw, p, false)
}

func decode(raw jsonrpc2.RawMessage, p any, strict bool) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] != '{' {
		return jsonrpc2.NewError(jsonrpc2.InvalidParams, "params must be an object")
	}
	var err error
	if strict {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		err = dec.Decode(p)
	} else {
		err = json.Unmarshal(raw, p)
	}
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te) && te.Field != "":
		return jsonrpc2.Errorf(jsonrpc2.InvalidParams, "params: %s must be %s, not %s", te.Field, jsonType(te.Type.Kind().String()), te.Value)
	case errors.As(err, &te):
		return jsonrpc2.Errorf(jsonrpc2.InvalidParams, "params must be an object, not %s", te.Value)
	case errors.As(err, &se):
		return jsonrpc2.Errorf(jsonrpc2.InvalidParams, "params are not valid JSON: %v", err)
	}
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return jsonrpc2.Errorf(jsonrpc2.InvalidParams, "params: unknown field %s", field)
	}
	return jsonrpc2.Errorf(jsonrpc2.InvalidParams, "params: %v", err)
}

// jsonType names a Go kind the way a JSON user would.
func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "slice", "array":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	}
	return kind
}

// missing is the error of a required field that is absent or empty.
func missing(field, what string) error {
	return jsonrpc2.Errorf(jsonrpc2.InvalidParams, "params: %s is required: %s", field, what)
}

func invalid(format string, args ...any) error {
	return jsonrpc2.NewError(jsonrpc2.InvalidParams, "params: "+fmt.Sprintf(format, args...))
}
