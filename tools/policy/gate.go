package policy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/tools"
)

// An Approver is someone the policy can put a question to: whom it
// answers for, and how to ask. Only the person's own surfaces answer the
// policy's questions (see [MayAnswer]); [Approvers] passes over any other.
type Approver struct {
	// Who is whom the approver answers for: the person through one of
	// their surfaces (the editor, the terminal with the admin token, the
	// person's own ACP editor or MCP client, whose agents act for the
	// person), or an app through a door it opened with its token.
	Who access.Party
	// Ask puts the question and returns the answer; nil asks no one.
	Ask AskFunc
}

// AskFunc asks about a call and returns the answer.
type AskFunc func(ctx context.Context, call tools.Call, record ICERC) (Answer, error)

// ErrNotThePerson is the error of an answer that someone other than the
// person tried to give.
var ErrNotThePerson = errors.New("only the person answers")

// MayAnswer is the rule of who answers a question of the daemon — a
// permission, an MCP server's trust, a sampling request: the person, on
// their own surfaces, and no one else. An app, or an agent acting for an
// app, never answers, not even about its own calls; a party that names
// no one neither. The error says who was refused and why.
func MayAnswer(who access.Party) error {
	switch {
	case who.IsPerson():
		return nil
	case !who.Valid():
		return fmt.Errorf("%w: the answer came from no one known", ErrNotThePerson)
	}
	return fmt.Errorf("%w, and %s is not the person: an app's token opens no door that approves", ErrNotThePerson, who)
}

// Approvers holds the approvers of the moment, which attach and detach
// while the daemon runs: the editor (Set), and the person's terminals
// (Attach, nexus calls --watch --answer) on top of it. The terminal
// attached last is asked, then the one before it, and the editor only when
// no terminal is attached: the person who attaches a terminal to answer is
// at that terminal now, and a question is shown in one place, so that it
// is never answered in one and left open in another.
type Approvers struct {
	mu        sync.Mutex
	approver  Approver
	terminals []*Approver // in the order they attached; the last is asked
	route     func(call tools.Call) Approver
}

// approverKey is the context key of a call's own approver.
type approverKey struct{}

// WithApprover returns ctx carrying a as the approver of the calls made
// with it: the person's own MCP client that can answer through elicitation
// asks for its own calls. It comes before Route and Set, when it may
// answer ([MayAnswer]); an approver with no Ask leaves ctx as it is.
func WithApprover(ctx context.Context, a Approver) context.Context {
	if a.Ask == nil {
		return ctx
	}
	return context.WithValue(ctx, approverKey{}, a)
}

// ApproverFrom returns the approver WithApprover put in ctx, or none.
func ApproverFrom(ctx context.Context) Approver {
	a, _ := ctx.Value(approverKey{}).(Approver)
	return a
}

// Route sets a function that picks another approver for some calls (an
// agent session's calls go to the terminal that prompted it); when it
// returns none, the approver of Set answers.
func (a *Approvers) Route(fn func(call tools.Call) Approver) {
	a.mu.Lock()
	a.route = fn
	a.mu.Unlock()
}

// forCall is the approver of a call: the one its context carries
// (WithApprover), else Route's, else Set's — the first of them that may
// answer ([MayAnswer]). One that may not (an app's MCP client, an app's
// ACP client or gRPC prompt) is passed over, so that an app's question
// goes to the person; when no one is left, the call has no approver.
func (a *Approvers) forCall(ctx context.Context, call tools.Call) Approver {
	if own := ApproverFrom(ctx); own.answers() {
		return own
	}
	if a == nil {
		return Approver{}
	}
	a.mu.Lock()
	route, set := a.route, a.approver
	for i := len(a.terminals) - 1; i >= 0; i-- {
		if t := *a.terminals[i]; t.answers() {
			set = t
			break
		}
	}
	a.mu.Unlock()
	if route != nil {
		if routed := route(call); routed.answers() {
			return routed
		}
	}
	if set.answers() {
		return set
	}
	return Approver{}
}

// answers reports whether a can be asked and may answer.
func (a Approver) answers() bool { return a.Ask != nil && MayAnswer(a.Who) == nil }

// Set attaches an approver (one with no Ask detaches): the editor. One
// that may not answer ([MayAnswer]) is never asked.
func (a *Approvers) Set(fn Approver) {
	a.mu.Lock()
	a.approver = fn
	a.mu.Unlock()
}

// Attach puts a terminal's approver above the editor's until detach is
// called: it is asked the questions that Set's would be, while it is the
// last attached ([Approvers]). One that may not answer ([MayAnswer]) is
// never asked. A question it was asked stays its own after it detaches:
// its Ask ends with an error, which denies the call.
func (a *Approvers) Attach(t Approver) (detach func()) {
	p := &t
	a.mu.Lock()
	a.terminals = append(a.terminals, p)
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		for i, q := range a.terminals {
			if q == p {
				a.terminals = append(a.terminals[:i:i], a.terminals[i+1:]...)
				return
			}
		}
	}
}

// Gate returns the permission check of the ToolManager: the policy's
// verdict, bent by the mode of the call's session (see [Mode], [WithMode])
// and made ask by a preToolUse hook that asks (tools.GateRequest.HookAsk:
// its "always" answer counts once); then allow and deny decide at once; ask puts the ICERC record on the
// call and waits for the approver (the call's own, see WithApprover, else
// the Approvers'; only the person answers, see MayAnswer), at most
// timeout. No approver, no answer in time, or an error from the approver:
// the call is denied, never allowed. A probe (tools.GateRequest.Probe, no
// call) is refused only by a deny.
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
		if gr.HookAsk != "" && v.Decision == Allow {
			// A hook makes the person decide; it never allows a deny.
			v = Verdict{Decision: Ask, Reason: "a preToolUse hook asks"}
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
	req.Author = gr.Call.Author
	record := BuildICERC(*req, gr.Intent, gr.ExpectedOutcome)
	if v.Protected != "" {
		record.Risk.Level = tools.RiskHigh
		record.Risk.Details = append(record.Risk.Details, fmt.Sprintf(
			"writes %s, which can make code run outside every sandbox (git hooks, VS Code tasks and settings, MCP servers): always asked, an \"always\" answer counts once", v.Protected))
	}
	if gr.HookAsk != "" {
		record.Risk.Details = append(record.Risk.Details, "a preToolUse hook asks that you decide: "+gr.HookAsk)
	}
	if v.Protected != "" || gr.HookAsk != "" || p.store == nil {
		record.Always = ""
	}
	approver := approvers.forCall(ctx, gr.Call)
	if approver.Ask != nil && gr.Preview != nil {
		previewInto(ctx, &record, gr.Preview, timeout)
	}
	setICERC(record)
	if approver.Ask == nil {
		return tools.Errorf(tools.CodePermissionDenied, "this call needs approval (%s), and no editor is attached to ask the person, nor a terminal (nexus calls --watch --answer)", v.Reason)
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	scope, _ := callScope(req, nil)
	actx, picked := withChoice(actx, scope)
	call := gr.Call
	kept := record.WithoutContents() // the record carries them once
	call.ICERC = &kept
	ans, err := approver.Ask(actx, call, record)
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
	case !ans.Always():
	case v.Protected != "":
		logger.Info("an \"always\" answer to a write of a protected file counts once", "answer", string(ans), "path", v.Protected, "app", gr.Call.AppID)
	case record.Always == "":
		logger.Info("an \"always\" answer to a call with nothing to remember counts once", "answer", string(ans), "tool", gr.Tool.Name, "app", gr.Call.AppID)
	default:
		if err := p.record(req, ans, picked.directory(), time.Now()); err != nil {
			logger.Warn("an \"always\" answer could not be remembered", "error", err.Error(), "tool", gr.Tool.Name, "app", gr.Call.AppID)
		}
	}
	if !ans.Allows() {
		return tools.Errorf(tools.CodePermissionDenied, "rejected by the person (%s)", ans)
	}
	return nil
}

// previewInto puts the change the call would make into the record, or,
// when it cannot be computed (within timeout: an editor's buffer is read
// through the editor), the reason among the risk's details: the question
// is asked all the same, and the call, if allowed, fails in its handler
// for the same reason.
func previewInto(ctx context.Context, record *ICERC, preview func(context.Context) ([]tools.ProposedChange, error), timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	changes, err := preview(ctx)
	if err != nil {
		msg := err.Error()
		var te *tools.Error
		if errors.As(err, &te) {
			msg = te.Message
		}
		record.Risk.Details = append(record.Risk.Details, "no diff of the change can be shown: "+msg)
		return
	}
	record.Changes = changes
}

// CheckWith answers CheckPermission for a manager's tools: action is a
// core tool's name, "server/tool" for a tool of an MCP server, or
// "server/mcp_resource" and "server/mcp_prompt" for reads of its resources
// and prompts (see [ResourceTool]).
func (p *Policy) CheckWith(m *tools.Manager) func(appID, action, resource string) (string, string) {
	return func(appID, action, resource string) (string, string) {
		v := p.Check(appID, action, resource, func(name string) (tools.Definition, bool) {
			if server, tool, ok := strings.Cut(name, "/"); ok { // an MCP tool, "server/tool"
				if tool == ResourceTool || tool == PromptTool { // a read, which no server lists as a tool
					return ReadDefinition(server, tool), server != ""
				}
				return m.Lookup(tool, server)
			}
			return m.Lookup(name, "")
		})
		return string(v.Decision), v.Reason
	}
}
