package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/google/uuid"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/events"
)

// Gate decides whether a call may run; it may block while a person is
// asked, and calls setICERC first so that the record is on the call the
// person sees. It returns nil to allow the call, or an error (an *Error with
// code permission_denied) to refuse it.
type Gate func(ctx context.Context, req *GateRequest, setICERC func(ICERC)) error

// GateRequest is what a Gate decides on.
type GateRequest struct {
	Call            Call
	Tool            Definition
	Args            json.RawMessage
	Intent          string
	ExpectedOutcome string
	// Agent is set for a call an agent session makes: the policy's
	// default for the person's own calls does not apply to it.
	Agent bool
	// Probe is set when no call is made: the gate only tells whether such
	// a call would be refused outright (see [Manager.Permitted]), and asks
	// no one; a call it would ask about is not refused.
	Probe bool
	// HookAsk, when set, is why a preToolUse hook asked that the person be
	// asked (see [Hooks]): the gate asks even where its policy would allow
	// the call, and an "always" answer counts once. It never allows what
	// the policy denies.
	HookAsk string
	// Preview, set for a tool that has one (Tool.Preview), computes the
	// change the call would make, for the question to the person. What it
	// returned last, once the gate allows the call, is the change the
	// handler must make (Invocation.Shown).
	Preview func(ctx context.Context) ([]ProposedChange, error)
}

// Recorder records what calls change in the workspace (package
// checkpoints): Begin is called once the gate has allowed a call whose
// tool may change files, before its handler runs, and captures what they
// hold; the end it returns is called after the handler, with the call's
// error (nil when it succeeded), and records what changed. An error from
// Begin fails the call before it runs: a change that could not be undone
// is not made.
type Recorder interface {
	Begin(ctx context.Context, c Call, touch Touch, party access.Party) (end func(err error), err error)
}

// Hooks are the person's programs run around every call (package
// tools/hooks). Before runs once a call's arguments are valid, before the
// gate: a non-nil Deny fails the call with it, and Ask (a reason) makes
// the gate ask the person (GateRequest.HookAsk); neither lets a call past
// the gate. After runs once the call's handler has returned, and returns
// what the hooks said for the model (Call.Notes). Both block the call
// while they run.
type Hooks interface {
	Before(ctx context.Context, c *HookCall) (ask string, deny *Error)
	After(ctx context.Context, c *HookCall) (notes []string)
}

// HookCall is a call as hooks see it.
type HookCall struct {
	// Call has the tool, server, session, turn, app and author; Party is
	// who acts.
	Call  Call
	Party access.Party
	Args  json.RawMessage
	// Result and Error are the call's end, for Hooks.After.
	Result json.RawMessage
	Error  *CallError
}

// Options configure NewManager. Zero values get defaults.
type Options struct {
	Bus    *events.Bus
	Logger *slog.Logger
	// Gate is the permission check; nil refuses every call.
	Gate Gate
	// Timeout bounds a call whose tool does not set its own; default 60s.
	Timeout time.Duration
	// OutputLimit bounds a result, in bytes; default 1 MiB.
	OutputLimit int
	// Recent is how many finished calls stay queryable; default 1000.
	// RecentBytes bounds what they keep (arguments, results, messages, each
	// already cut to KeptSize); default 16 MiB. The oldest go first.
	Recent      int
	RecentBytes int
	// MaxArguments refuses a call whose arguments are larger, in bytes,
	// before they are looked at; default DefaultMaxArguments.
	MaxArguments int
	// AuditFile, when set, receives one JSON line per finished call; it is
	// rotated at AuditMaxSize (default 10 MiB), keeping three old files.
	AuditFile    string
	AuditMaxSize int64
	Now          func() time.Time
	// Recorder, when set, records the changes of every call whose tool
	// says it touches the workspace (see Tool.Touches).
	Recorder Recorder
	// Hooks, when set, run around every call (see [Hooks]).
	Hooks Hooks
}

// ExecuteRequest is one request to run a tool.
type ExecuteRequest struct {
	ToolName   string
	ServerName string
	Arguments  json.RawMessage
	// Party is who acts, with its grants; AppID and Author default to its
	// own. AppID is the app the call is made for (the person may act for
	// an app), empty for the person; Author is the author of state writes
	// the call makes.
	Party     access.Party
	AppID     string
	Author    string
	TaskID    string
	RequestID string
	// Session and Turn name what the call's changes are undone with (see
	// package checkpoints): an agent session and its turn, a gateway
	// client's MCP session; empty for an app's or the person's own calls.
	Session string
	Turn    string
	// Intent and ExpectedOutcome go into the ICERC record.
	Intent          string
	ExpectedOutcome string
	// OnUpdate, when set, sees every status change of this call, in order,
	// on the executing goroutine; it must not block.
	OnUpdate func(Call)
	// Elicit, when set, answers the questions the call's tool asks the
	// person (see Elicitation); nil leaves them to the manager's elicitor.
	Elicit Elicitor
	// Tool, when set, is run instead of a tool of the registry: a call the
	// daemon makes of its own accord (an MCP server's sampling request),
	// which no one can make by name. Its name and server name the call.
	Tool *Tool
}

type toolKey struct{ server, name string }

type registered struct {
	Tool
	schema *jsonschema.Resolved
	quick  *quickSchema // nil when the schema is outside the quick subset
}

// Manager is the registry of tools and the engine of tool calls.
type Manager struct {
	opts   Options
	logger *slog.Logger
	audit  *auditLog

	toolsMu  sync.RWMutex
	tools    map[toolKey]*registered
	resolver func(ctx context.Context, server string) error

	elicitorMu sync.Mutex
	elicitor   Elicitor // see SetElicitor

	// inflight counts the calls between their start and their end, so that
	// Close can wait for them before it closes the audit log.
	inflight sync.WaitGroup

	callsMu sync.Mutex
	running map[string]*liveCall
	recent  ring // finished calls, at most opts.Recent
	closed  bool
}

// DefaultMaxArguments is the largest arguments of a call when Options do
// not say: a definition file of definitions.maxFileSize (10 MiB by
// default) in write_file's content, even if JSON escaping doubles it.
const DefaultMaxArguments = 21 << 20

// ring keeps the last finished calls: at most len(buf) of them, holding at
// most limit bytes (keptBytes); the oldest go first.
type ring struct {
	buf   []Call
	next  int // where the next call goes
	n     int // how many calls it holds
	size  int // their keptBytes
	limit int
}

func (r *ring) add(c Call) {
	if r.n == len(r.buf) {
		r.dropOldest()
	}
	r.buf[r.next] = c
	r.next = (r.next + 1) % len(r.buf)
	r.n++
	r.size += keptBytes(&c)
	for r.size > r.limit && r.n > 1 {
		r.dropOldest()
	}
}

func (r *ring) oldest() int { return (r.next - r.n + len(r.buf)) % len(r.buf) }

func (r *ring) dropOldest() {
	i := r.oldest()
	r.size -= keptBytes(&r.buf[i])
	r.buf[i] = Call{}
	r.n--
}

// all returns the calls, oldest first.
func (r *ring) all() []Call {
	i := r.oldest()
	if i+r.n <= len(r.buf) {
		return r.buf[i : i+r.n]
	}
	return append(slices.Clone(r.buf[i:]), r.buf[:r.next]...)
}

type liveCall struct {
	cancel context.CancelCauseFunc
	elicit Elicitor
	// ran is set, on the executing goroutine, once the gate has let the
	// call through to its handler.
	ran bool

	mu       sync.Mutex
	call     Call
	onUpdate func(Call)
	// timer ends the call at deadline; while paused (AwaitPerson) it is
	// stopped, with left to go.
	timer    *time.Timer
	deadline time.Time
	paused   int
	left     time.Duration
}

func init() {
	// Call ids take their random bits from a pool filled in blocks, not
	// from one read of the system's random source per call. The pool must
	// be switched on before any concurrent use, hence init.
	uuid.EnableRandPool()
}

// ErrCancelled is the cause of a call cancelled through Cancel; a caller
// that cancels the context of Execute with this cause
// (context.WithCancelCause) ends the call the same way, "the call was
// cancelled", rather than "the caller went away". errTimeout is the cause
// of a call that ran out of time.
var (
	ErrCancelled = errors.New("cancelled")
	errTimeout   = errors.New("timed out")
)

// NewManager returns a manager with no tools registered.
func NewManager(opts Options) (*Manager, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	if opts.OutputLimit <= 0 {
		opts.OutputLimit = 1 << 20
	}
	if opts.Recent <= 0 {
		opts.Recent = 1000
	}
	if opts.RecentBytes <= 0 {
		opts.RecentBytes = 16 << 20
	}
	if opts.MaxArguments <= 0 {
		opts.MaxArguments = DefaultMaxArguments
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Bus == nil {
		opts.Bus = events.New()
	}
	m := &Manager{opts: opts, logger: opts.Logger, tools: map[toolKey]*registered{}, running: map[string]*liveCall{},
		recent: ring{buf: make([]Call, opts.Recent), limit: opts.RecentBytes}}
	if opts.AuditFile != "" {
		a, err := openAuditLog(opts.AuditFile, opts.AuditMaxSize, opts.Logger)
		if err != nil {
			return nil, err
		}
		m.audit = a
	}
	return m, nil
}

// Register adds a tool. Its input schema must be a valid JSON Schema
// object; a name is unique per server (core tools have server "").
func (m *Manager) Register(t Tool) error {
	return m.register(t, false)
}

// Replace registers a tool in place of the one of the same server and
// name, if any, without a moment when neither is there.
func (m *Manager) Replace(t Tool) error {
	return m.register(t, true)
}

func (m *Manager) register(t Tool, replace bool) error {
	r, err := compile(t)
	if err != nil {
		return err
	}
	m.toolsMu.Lock()
	defer m.toolsMu.Unlock()
	k := toolKey{t.ServerName, t.Name}
	if _, dup := m.tools[k]; dup && !replace {
		return fmt.Errorf("tool %q of server %q is already registered", t.Name, t.ServerName)
	}
	m.tools[k] = r
	return nil
}

// compile checks a tool and resolves its input schema.
func compile(t Tool) (*registered, error) {
	if t.Name == "" || t.Handler == nil {
		return nil, fmt.Errorf("tool %q: a name and a handler are required", t.Name)
	}
	switch t.Risk {
	case RiskLow, RiskMedium, RiskHigh:
	default:
		return nil, fmt.Errorf("tool %q: risk %q is not low, medium or high", t.Name, t.Risk)
	}
	if t.Kind == "" {
		t.Kind = KindOther
	}
	if len(t.InputSchema) == 0 {
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(t.InputSchema, &s); err != nil {
		return nil, fmt.Errorf("tool %q: input schema: %w", t.Name, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("tool %q: input schema: %w", t.Name, err)
	}
	return &registered{Tool: t, schema: rs, quick: compileQuick(&s)}, nil
}

// Unregister removes a tool; calls already running go on.
func (m *Manager) Unregister(server, name string) {
	m.toolsMu.Lock()
	defer m.toolsMu.Unlock()
	delete(m.tools, toolKey{server, name})
}

// List returns the definitions of the tools of one server ("" = all),
// sorted by server and name.
func (m *Manager) List(server string) []Definition {
	m.toolsMu.RLock()
	defer m.toolsMu.RUnlock()
	var out []Definition
	for k, t := range m.tools {
		if server == "" || k.server == server {
			out = append(out, t.Definition)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ServerName != out[j].ServerName {
			return out[i].ServerName < out[j].ServerName
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Lookup finds a tool by name and server ("" for core tools).
func (m *Manager) Lookup(name, server string) (Definition, bool) {
	m.toolsMu.RLock()
	defer m.toolsMu.RUnlock()
	t, ok := m.tools[toolKey{server, name}]
	if !ok {
		return Definition{}, false
	}
	return t.Definition, true
}

// Permitted tells, without making a call and without asking anyone,
// whether party may call the tool t: nil, unless the gate refuses such a
// call outright (a call it would ask about is permitted here). A list uses
// it to leave out what the party could not use.
func (m *Manager) Permitted(ctx context.Context, party access.Party, t Definition) error {
	if m.opts.Gate == nil {
		return Errorf(CodePermissionDenied, "no permission policy is configured")
	}
	gr := &GateRequest{Call: Call{ToolName: t.Name, ServerName: t.ServerName, AppID: party.AppID(), Author: party.Author()},
		Tool: t, Args: json.RawMessage("{}"), Agent: party.IsAgent(), Probe: true}
	if err := m.opts.Gate(ctx, gr, func(ICERC) {}); err != nil {
		return asError(err, CodePermissionDenied)
	}
	return nil
}

// MaxArguments is the size in bytes of the largest arguments a call may
// have (Options.MaxArguments).
func (m *Manager) MaxArguments() int { return m.opts.MaxArguments }

// Execute runs one tool call to its end and returns the final call, with
// its whole result; what the manager keeps and publishes of the call is
// bounded (see KeptSize). Every status change is published on the bus. The
// call ends with status error and code cancelled when ctx is cancelled or
// Cancel is called.
func (m *Manager) Execute(ctx context.Context, req ExecuteRequest) Call {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	id, err := uuid.NewV7()
	if err != nil {
		id = uuid.New()
	}
	if req.Party.Valid() {
		if req.AppID == "" {
			req.AppID = req.Party.AppID()
		}
		if req.Author == "" {
			req.Author = req.Party.Author()
		}
	}
	args := req.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	req.Intent, req.ExpectedOutcome = keepText(req.Intent, KeptSize), keepText(req.ExpectedOutcome, KeptSize)
	kept, cut := keepJSON(args, KeptSize)
	if req.Tool != nil {
		req.ToolName, req.ServerName = req.Tool.Name, req.Tool.ServerName
	}
	lc := &liveCall{cancel: cancel, onUpdate: req.OnUpdate, elicit: req.Elicit, call: Call{
		ID: id.String(), ToolName: keepText(req.ToolName, maxIDSize), ServerName: keepText(req.ServerName, maxIDSize),
		ArgumentsJSON: kept, ArgumentsTruncated: cut, Status: StatusInitiated, AppID: req.AppID,
		Author: keepText(req.Author, maxIDSize),
		TaskID: keepText(req.TaskID, maxIDSize), RequestID: keepText(req.RequestID, maxIDSize),
		Session: keepText(req.Session, maxIDSize), Turn: keepText(req.Turn, maxIDSize),
		StartedAt: m.opts.Now().UTC(),
	}}
	if cut {
		lc.call.ArgumentsSize = len(args)
	}
	m.callsMu.Lock()
	if m.closed {
		m.callsMu.Unlock()
		lc.call.Status = StatusError
		lc.call.Error = &CallError{CodeServerUnavailable, "the daemon is shutting down"}
		lc.call.EndedAt = lc.call.StartedAt
		return lc.call
	}
	m.running[lc.call.ID] = lc
	m.inflight.Add(1)
	m.callsMu.Unlock()
	defer m.inflight.Done()

	out, cerr := m.run(ctx, cancel, lc, &req, args)
	if lc.ran && m.opts.Hooks != nil {
		m.after(ctx, lc, &req, args, out, cerr)
	}
	return m.finish(lc, out, cerr)
}

// before runs the preToolUse hooks of a call the gate is about to decide
// on, outside run's frame: their denial, or their reason to ask on gr.
func (m *Manager) before(ctx context.Context, gr *GateRequest, req *ExecuteRequest) *Error {
	ask, deny := m.opts.Hooks.Before(ctx, &HookCall{Call: gr.Call, Party: req.Party, Args: gr.Args})
	if ctx.Err() != nil {
		return m.ctxError(ctx, "while its preToolUse hooks ran")
	}
	if deny != nil {
		return deny
	}
	gr.HookAsk = ask
	return nil
}

// after runs the postToolUse hooks of a call whose handler ran, and keeps
// what they said on the call. A cancelled call's hooks do not run.
func (m *Manager) after(ctx context.Context, lc *liveCall, req *ExecuteRequest, args, out json.RawMessage, cerr *Error) {
	if ctx.Err() != nil && (cerr == nil || cerr.Code == CodeCancelled) {
		return
	}
	hc := &HookCall{Call: lc.snapshot(), Party: req.Party, Args: args, Result: out}
	if cerr != nil {
		hc.Result, hc.Error = cerr.Output, &CallError{Code: cerr.Code, Message: cerr.Message}
	}
	if ctx.Err() != nil {
		// The call ran out of time: its hooks have their own. Else
		// Cancel and Close stop them as they stop the call.
		ctx = context.WithoutCancel(ctx)
	}
	notes := m.opts.Hooks.After(ctx, hc)
	for i, n := range notes {
		notes[i] = keepText(n, KeptSize)
	}
	if len(notes) > 0 {
		lc.update(func(c *Call) { c.Notes = notes })
	}
}

// run takes a started call through lookup, validation, the gate and the
// handler, and returns its result or error. Execute and run keep no Call
// values in their frames: every call goes through them, on a gRPC worker's
// stack.
func (m *Manager) run(ctx context.Context, cancel context.CancelCauseFunc, lc *liveCall, req *ExecuteRequest, args json.RawMessage) (json.RawMessage, *Error) {
	if err := m.checkSizes(req, args); err != nil {
		return nil, err // before the arguments are parsed, or the request looked up
	}
	t, ok := m.lookup(req)
	if ok {
		lc.update(func(c *Call) { c.Title, c.Kind = t.Title, t.Kind })
	}
	var unresolved *Error
	if !ok && req.ServerName != "" && req.Tool == nil {
		if t, ok, unresolved = m.resolve(ctx, req); ok {
			lc.update(func(c *Call) { c.Title, c.Kind = t.Title, t.Kind })
		}
	}
	m.publish(lc)
	if !ok {
		if unresolved != nil {
			return nil, unresolved
		}
		if req.Tool != nil {
			_, err := compile(*req.Tool)
			return nil, Errorf(CodeExecutionFailed, "%v", err)
		}
		return nil, unknownTool(req)
	}
	if err := validate(t, args); err != nil {
		return nil, err
	}
	if m.opts.Gate == nil {
		return nil, Errorf(CodePermissionDenied, "no permission policy is configured")
	}
	inv := &Invocation{CallID: lc.call.ID, AppID: req.AppID, Author: req.Author, Party: req.Party, Progress: func(p, total float64, msg string) {
		msg = keepText(msg, KeptSize)
		lc.update(func(c *Call) { c.Progress = &Progress{Progress: p, Total: total, Message: msg} })
		m.publish(lc)
	}}
	gr := &GateRequest{Call: lc.snapshot(), Tool: t.Definition, Args: args, Intent: req.Intent, ExpectedOutcome: req.ExpectedOutcome,
		Agent: req.Party.IsAgent()}
	if m.opts.Hooks != nil {
		if err := m.before(ctx, gr, req); err != nil {
			return nil, err
		}
	}
	if t.Preview != nil {
		gr.Preview = func(ctx context.Context) ([]ProposedChange, error) {
			changes, err := t.Preview(ctx, inv, args)
			inv.Shown = changes // what the person is shown is what runs
			if err != nil {
				inv.Shown = nil
			}
			return changes, err
		}
	}
	if err := m.opts.Gate(ctx, gr, func(r ICERC) {
		r = keepICERC(r)
		lc.update(func(c *Call) { c.ICERC = &r })
		m.publish(lc)
	}); err != nil {
		if ctx.Err() != nil {
			return nil, m.ctxError(ctx, "while waiting for permission")
		}
		return nil, asError(err, CodePermissionDenied)
	}
	lc.update(func(c *Call) { c.Status = StatusRunning })
	m.publish(lc)

	if t.Timeout >= 0 {
		timeout := m.opts.Timeout
		if t.Timeout > 0 {
			timeout = t.Timeout
		}
		// A timer that cancels the call's own context, rather than a
		// context.WithTimeout: one context and no child registration per call.
		timer := time.AfterFunc(timeout, func() { cancel(errTimeout) })
		defer timer.Stop()
		lc.mu.Lock()
		lc.timer, lc.deadline = timer, time.Now().Add(timeout)
		lc.mu.Unlock()
	}
	lc.ran = true // from here on its postToolUse hooks run
	var end func(error)
	if m.opts.Recorder != nil && t.Touches != nil {
		if touch := t.Touches(args); !touch.Empty() {
			var err error
			if end, err = m.opts.Recorder.Begin(ctx, lc.snapshot(), touch, req.Party); err != nil {
				return nil, Errorf(CodeExecutionFailed, "the call was not run: its checkpoint could not be taken: %v", err)
			}
		}
	}
	out, err := t.Handler(ctx, inv, args)
	if end != nil {
		end(err)
	}
	// A result that made it in time is kept even if the timer fired after.
	if ctx.Err() != nil && (err != nil || !errors.Is(context.Cause(ctx), errTimeout)) {
		return nil, m.ctxError(ctx, "")
	}
	if err != nil {
		return nil, asError(err, CodeExecutionFailed)
	}
	if len(out) > m.opts.OutputLimit {
		return nil, Errorf(CodeOutputLimit, "the result is %d bytes, over the limit of %d (tools.outputLimit)", len(out), m.opts.OutputLimit)
	}
	return out, nil
}

// lookup finds the tool of a request: its own, or the registry's.
func (m *Manager) lookup(req *ExecuteRequest) (*registered, bool) {
	if req.Tool != nil {
		r, err := compile(*req.Tool)
		return r, err == nil
	}
	m.toolsMu.RLock()
	defer m.toolsMu.RUnlock()
	t, ok := m.tools[toolKey{req.ServerName, req.ToolName}]
	return t, ok
}

// checkSizes refuses a request whose arguments, names or ids are over
// their limits.
func (m *Manager) checkSizes(req *ExecuteRequest, args json.RawMessage) *Error {
	if len(args) > m.opts.MaxArguments {
		return Errorf(CodeInvalidArguments, "arguments are %s, over the limit of %s (tools.maxArgumentsSize)",
			formatSize(len(args)), formatSize(m.opts.MaxArguments))
	}
	for _, f := range []struct{ name, value string }{
		{"toolName", req.ToolName}, {"serverName", req.ServerName}, {"taskId", req.TaskID}, {"requestId", req.RequestID},
	} {
		if len(f.value) > maxIDSize {
			return Errorf(CodeInvalidArguments, "%s is %s, over the limit of %s", f.name, formatSize(len(f.value)), formatSize(maxIDSize))
		}
	}
	return nil
}

// SetResolver installs fn, which is asked about a tool of a server the
// manager does not know yet (a lazily started MCP server): it returns once
// the server's tools are registered or cannot be, with nil; or with the
// error the call ends with (an MCP server waiting for the person's
// approval), which is code unknown_tool unless it is an *Error.
func (m *Manager) SetResolver(fn func(ctx context.Context, server string) error) {
	m.toolsMu.Lock()
	m.resolver = fn
	m.toolsMu.Unlock()
}

func (m *Manager) resolve(ctx context.Context, req *ExecuteRequest) (*registered, bool, *Error) {
	m.toolsMu.RLock()
	fn := m.resolver
	m.toolsMu.RUnlock()
	if fn == nil {
		return nil, false, nil
	}
	if err := fn(ctx, req.ServerName); err != nil {
		return nil, false, asError(err, CodeUnknownTool)
	}
	m.toolsMu.RLock()
	defer m.toolsMu.RUnlock()
	t, ok := m.tools[toolKey{req.ServerName, req.ToolName}]
	return t, ok, nil
}

func unknownTool(req *ExecuteRequest) *Error {
	if req.ServerName != "" {
		return Errorf(CodeUnknownTool, "no tool of server %q named %q", req.ServerName, req.ToolName)
	}
	return Errorf(CodeUnknownTool, "no core tool named %q", req.ToolName)
}

// asError returns err as an *Error, with code when it is not one.
func asError(err error, code string) *Error {
	var te *Error
	if !errors.As(err, &te) {
		te = Errorf(code, "%v", err)
	}
	return te
}

// ctxError names why a call's context ended.
func (m *Manager) ctxError(ctx context.Context, when string) *Error {
	if when != "" {
		when = " " + when
	}
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, ErrCancelled):
		return Errorf(CodeCancelled, "the call was cancelled%s", when)
	case errors.Is(cause, errTimeout), errors.Is(ctx.Err(), context.DeadlineExceeded):
		return Errorf(CodeTimeout, "the call did not finish in time%s", when)
	default:
		return Errorf(CodeCancelled, "the caller went away%s", when)
	}
}

func validate(t *registered, args json.RawMessage) *Error {
	if t.quick != nil && json.Valid(args) && t.quick.accepts(args) {
		return nil
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return Errorf(CodeInvalidArguments, "arguments are not valid JSON: %v", err)
	}
	if err := t.schema.Validate(v); err != nil {
		return Errorf(CodeInvalidArguments, "arguments do not match the tool's input schema: %v", err)
	}
	return nil
}

func (lc *liveCall) update(fn func(*Call)) {
	lc.mu.Lock()
	fn(&lc.call)
	lc.mu.Unlock()
}

func (lc *liveCall) snapshot() Call {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.call
}

// publish sends a copy of the call to the bus and the caller's OnUpdate.
func (m *Manager) publish(lc *liveCall) {
	if lc.onUpdate == nil && !m.opts.Bus.Listened() {
		return // nobody would see it: skip the copy onto the heap
	}
	lc.mu.Lock()
	c := lc.call
	if lc.onUpdate != nil {
		lc.onUpdate(c)
	}
	lc.mu.Unlock()
	m.opts.Bus.Publish(c)
}

// finish ends the call: what is kept and published carries the result cut
// to KeptSize, what is returned the whole result.
func (m *Manager) finish(lc *liveCall, out json.RawMessage, cerr *Error) Call {
	if cerr != nil {
		out = cerr.Output
	}
	kept, cut := keepJSON(out, KeptSize)
	lc.update(func(c *Call) {
		c.EndedAt = m.opts.Now().UTC()
		if cerr != nil {
			c.Status = StatusError
			c.Error = &CallError{Code: cerr.Code, Message: keepText(cerr.Message, KeptSize)}
		} else {
			c.Status = StatusCompleted
		}
		c.ResultJSON, c.ResultTruncated = kept, cut
		if cut {
			c.ResultSize = len(out)
		}
	})
	m.publish(lc)
	final := lc.snapshot()
	m.callsMu.Lock()
	delete(m.running, final.ID)
	m.recent.add(final)
	m.callsMu.Unlock()
	if m.audit != nil {
		m.audit.append(final)
	}
	final.ResultJSON, final.ResultTruncated, final.ResultSize = out, false, 0
	return final
}

// Cancel ends a running call with code cancelled; it reports whether the
// call was running.
func (m *Manager) Cancel(id string) bool {
	m.callsMu.Lock()
	lc, ok := m.running[id]
	m.callsMu.Unlock()
	if ok {
		lc.cancel(ErrCancelled)
	}
	return ok
}

// Get returns a running or recent call.
func (m *Manager) Get(id string) (Call, bool) {
	m.callsMu.Lock()
	lc, ok := m.running[id]
	if !ok {
		defer m.callsMu.Unlock()
		for _, c := range m.recent.buf {
			if c.ID == id && id != "" {
				return c, true
			}
		}
		return Call{}, false
	}
	m.callsMu.Unlock()
	return lc.snapshot(), true
}

// CallFilter selects calls for Calls; zero fields match everything.
type CallFilter struct {
	AppID  string
	Status string
	Limit  int
}

// Calls returns the running and recent calls that match, newest first.
func (m *Manager) Calls(f CallFilter) []Call {
	m.callsMu.Lock()
	all := m.recent.all()
	all = append(all[:len(all):len(all)], make([]Call, 0, len(m.running))...)
	for _, lc := range m.running {
		all = append(all, lc.snapshot())
	}
	m.callsMu.Unlock()
	sort.SliceStable(all, func(i, j int) bool { return all[i].ID > all[j].ID }) // UUIDv7: newest first
	out := all[:0]
	for _, c := range all {
		if (f.AppID == "" || c.AppID == f.AppID) && (f.Status == "" || strings.EqualFold(c.Status, f.Status)) {
			out = append(out, c)
			if f.Limit > 0 && len(out) == f.Limit {
				break
			}
		}
	}
	return out
}

// Close cancels the running calls, waits for them to end, and refuses new
// ones. It is safe to call more than once.
func (m *Manager) Close() error {
	m.callsMu.Lock()
	already := m.closed
	m.closed = true
	for _, lc := range m.running {
		lc.cancel(ErrCancelled)
	}
	m.callsMu.Unlock()
	m.inflight.Wait()
	if m.audit != nil && !already {
		return m.audit.close()
	}
	return nil
}
