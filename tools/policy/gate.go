package policy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nexuscocreate/nexus/tools"
)

// Approver asks the person about a call and returns their answer. The
// editor is the approver (nexus/requestPermission); until one is attached,
// calls the policy asks about are denied.
type Approver func(ctx context.Context, call tools.Call, record ICERC) (Answer, error)

// Approvers holds the approver of the moment: one may attach and detach
// while the daemon runs.
type Approvers struct {
	mu       sync.Mutex
	approver Approver
	route    func(call tools.Call) Approver
}

// approverKey is the context key of a call's own approver.
type approverKey struct{}

// WithApprover returns ctx carrying fn as the approver of the calls made
// with it: an MCP gateway client that can answer through elicitation asks
// for its own calls. It comes before Route and Set, because the party that
// made the call is the one to ask; a nil fn leaves ctx as it is.
func WithApprover(ctx context.Context, fn Approver) context.Context {
	if fn == nil {
		return ctx
	}
	return context.WithValue(ctx, approverKey{}, fn)
}

// ApproverFrom returns the approver WithApprover put in ctx, or nil.
func ApproverFrom(ctx context.Context) Approver {
	fn, _ := ctx.Value(approverKey{}).(Approver)
	return fn
}

// Route sets a function that picks another approver for some calls (an
// agent session's calls go to the terminal that prompted it); when it
// returns nil, the approver of Set answers.
func (a *Approvers) Route(fn func(call tools.Call) Approver) {
	a.mu.Lock()
	a.route = fn
	a.mu.Unlock()
}

// forCall is the approver of a call: the one its context carries
// (WithApprover), else Route's, else Set's.
func (a *Approvers) forCall(ctx context.Context, call tools.Call) Approver {
	if fn := ApproverFrom(ctx); fn != nil {
		return fn
	}
	if a == nil {
		return nil
	}
	a.mu.Lock()
	route := a.route
	a.mu.Unlock()
	if route != nil {
		if fn := route(call); fn != nil {
			return fn
		}
	}
	return a.get()
}

// Set attaches an approver (nil detaches).
func (a *Approvers) Set(fn Approver) {
	a.mu.Lock()
	a.approver = fn
	a.mu.Unlock()
}

func (a *Approvers) get() Approver {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.approver
}

// Gate returns the permission check of the ToolManager: the policy's
// verdict, bent by the mode of the call's session (see [Mode], [WithMode]);
// then allow and deny decide at once; ask puts the ICERC record on the call and waits for the
// approver (the call's own, see WithApprover, else the Approvers'), at
// most timeout. No approver, no answer in time, or an error
// from the approver: the call is denied, never allowed. A probe
// (tools.GateRequest.Probe, no call) is refused only by a deny.
func (p *Policy) Gate(approvers *Approvers, timeout time.Duration, logger *slog.Logger) tools.Gate {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return func(ctx context.Context, gr *tools.GateRequest, setICERC func(tools.ICERC)) error {
		req := &Request{AppID: gr.Call.AppID, Agent: gr.Agent, Tool: gr.Tool, Args: gr.Args}
		v := p.decideRef(req)
		if m := ModeFrom(ctx); m != ModeDefault {
			v = m.apply(req, v)
		}
		if v.Decision == Allow || gr.Probe && v.Decision != Deny {
			return nil // a probe asks no one: only a deny refuses it
		}
		return p.askOrDeny(ctx, gr, req, v, setICERC, approvers, timeout, logger)
	}
}

// askOrDeny is the Gate for calls that are not simply allowed, kept out of
// the Gate's own frame so that an allowed call needs little stack.
func (p *Policy) askOrDeny(ctx context.Context, gr *tools.GateRequest, req *Request, v Verdict, setICERC func(tools.ICERC),
	approvers *Approvers, timeout time.Duration, logger *slog.Logger) error {
	if v.Decision == Deny {
		return tools.Errorf(tools.CodePermissionDenied, "denied by policy: %s", v.Reason)
	}
	record := BuildICERC(*req, gr.Intent, gr.ExpectedOutcome)
	if v.Protected != "" {
		record.Risk.Level = tools.RiskHigh
		record.Risk.Details = append(record.Risk.Details, fmt.Sprintf(
			"writes %s, which can make code run outside every sandbox (git hooks, VS Code tasks and settings, MCP servers): always asked, an \"always\" answer counts once", v.Protected))
	}
	setICERC(record)
	approver := approvers.forCall(ctx, gr.Call)
	if approver == nil {
		return tools.Errorf(tools.CodePermissionDenied, "this call needs approval (%s), and no editor is attached to approve it", v.Reason)
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	call := gr.Call
	call.ICERC = &record
	ans, err := approver(actx, call, record)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, context.DeadlineExceeded) || actx.Err() != nil:
		return tools.Errorf(tools.CodePermissionDenied, "no answer to the permission request within %v: denied", timeout)
	case err != nil:
		return tools.Errorf(tools.CodePermissionDenied, "the permission request failed (%v): denied", err)
	case !ans.Valid():
		return tools.Errorf(tools.CodePermissionDenied, "the answer %q is not one of allow_once, allow_always, reject_once, reject_always: denied", ans)
	}
	switch {
	case ans.Always() && v.Protected != "":
		logger.Info("an \"always\" answer to a write of a protected file counts once", "answer", string(ans), "path", v.Protected, "app", gr.Call.AppID)
	case ans.Always():
		if err := p.Record(*req, ans, time.Now()); err != nil {
			logger.Warn("an \"always\" answer could not be remembered", "error", err.Error(), "tool", gr.Tool.Name, "app", gr.Call.AppID)
		}
	}
	if !ans.Allows() {
		return tools.Errorf(tools.CodePermissionDenied, "rejected by the person (%s)", ans)
	}
	return nil
}

// CheckWith answers CheckPermission for a manager's tools: action is a
// core tool's name or "server/tool" for a tool of an MCP server.
func (p *Policy) CheckWith(m *tools.Manager) func(appID, action, resource string) (string, string) {
	return func(appID, action, resource string) (string, string) {
		v := p.Check(appID, action, resource, func(name string) (tools.Definition, bool) {
			if server, tool, ok := strings.Cut(name, "/"); ok { // an MCP tool, "server/tool"
				return m.Lookup(tool, server)
			}
			return m.Lookup(name, "")
		})
		return string(v.Decision), v.Reason
	}
}
