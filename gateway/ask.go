package gateway

//lint:file-ignore SA1019 sampling is deprecated from protocol 2026-07-28 (SEP-2577); clients speak 2025-11-25 and before, where it is current

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/internal/inert"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/mcp"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// Asking the client. The person's own MCP client (the admin token) is one
// of the person's surfaces: its tools/call brings along what it can
// answer, by the capabilities it declared at initialize:
//
//   - elicitation (form): the policy's "ask" about the call becomes an
//     elicitation/create with the call's ICERC record and a choice of the
//     four answers (policy.WithApprover); a hub server's question during
//     the call is put to the client (ExecuteRequest.Elicit), in URL mode
//     only when it declared url — else it goes where it would without the
//     client (the editor, else declined).
//   - sampling: a hub server's sampling request during the call is
//     answered by the client's model (mcp.WithSampler), when
//     mcp.sampling.client is on; it is still a call of SERVER/mcp_sampling.
//
// An app's client (an app token) answers no question, whatever it
// declared (policy.MayAnswer): the person does, in the editor, about the
// app's own calls too. Its model may still answer a sampling request that
// the person allowed. A client that declared none of these is asked
// nothing: the editor is.

// clientCaps are what a session's client can answer.
type clientCaps struct {
	form, url, sampling bool
}

// capsOf reads the capabilities the client declared. An elicitation
// capability that names no mode is form (protocol 2025-06-18). On protocol
// 2026-07-28 and later a server may not send requests during a call (it
// answers with input requests, SEP-2322, which the gateway does not do
// yet): such a client is asked nothing.
func capsOf(ss *sdk.ServerSession) clientCaps {
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.ProtocolVersion > mcp.ProtocolVersion {
		return clientCaps{}
	}
	var c clientCaps
	if e := p.Capabilities.Elicitation; e != nil {
		c.form = e.Form != nil || e.URL == nil
		c.url = e.URL != nil
	}
	c.sampling = p.Capabilities.Sampling != nil
	return c
}

// asking gives er and ctx what the client of ss can answer.
func (g *Gateway) asking(ctx context.Context, ss *sdk.ServerSession, er *tools.ExecuteRequest) context.Context {
	if ss == nil {
		return ctx
	}
	c := capsOf(ss)
	if policy.MayAnswer(er.Party) != nil {
		c.form, c.url = false, false
	}
	if c.form || c.url {
		er.Elicit = g.clientElicitor(ss, c)
	}
	if c.form {
		ctx = policy.WithApprover(ctx, clientApprover(er.Party, ss))
	}
	if c.sampling {
		ctx = mcp.WithSampler(ctx, func(ctx context.Context, p *sdk.CreateMessageParams) (*sdk.CreateMessageResult, error) {
			return ss.CreateMessage(ctx, p)
		})
	}
	return ctx
}

// clientElicitor puts a hub server's question to the client, naming the
// server in the message; a question in a mode the client did not declare
// goes to the manager's elicitor (the editor), else is declined. The hub
// checks the answer against the schema as it does any other.
func (g *Gateway) clientElicitor(ss *sdk.ServerSession, c clientCaps) tools.Elicitor {
	return func(ctx context.Context, q *tools.Elicitation) (tools.ElicitResult, error) {
		if (q.Mode == tools.ElicitURL && !c.url) || (q.Mode != tools.ElicitURL && !c.form) {
			if _, ask := g.opts.Tools.ElicitorFor(""); ask != nil {
				return ask(ctx, q)
			}
			return tools.ElicitResult{Action: tools.ElicitDecline}, nil
		}
		p := &sdk.ElicitParams{Mode: q.Mode, Message: serverQuestion(q), URL: q.URL, ElicitationID: q.ElicitationID}
		if len(q.Schema) > 0 {
			p.RequestedSchema = q.Schema // as the server sent it, fields in its order
		}
		res, err := ss.Elicit(ctx, p)
		if err != nil {
			return tools.ElicitResult{}, err
		}
		if q.Mode == tools.ElicitURL && q.ElicitationID != "" && res.Action == tools.ElicitAccept {
			g.urlQuestions.add(urlQuestion{q.Server, q.ElicitationID}, ss)
		}
		return tools.ElicitResult{Action: res.Action, Content: res.Content}, nil
	}
}

// urlQuestion names a URL-mode question a client accepted: its server and
// the server's elicitationId.
type urlQuestion struct{ server, id string }

// maxURLQuestions bounds the URL questions waiting for their server's
// notifications/elicitation/complete; the oldest are forgotten first.
const maxURLQuestions = 1000

// urlQuestions are the clients that went to a URL, until their server says
// the step is complete.
type urlQuestions struct {
	mu    sync.Mutex
	by    map[urlQuestion]*sdk.ServerSession
	order []urlQuestion
}

func (u *urlQuestions) add(q urlQuestion, ss *sdk.ServerSession) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.by == nil {
		u.by = map[urlQuestion]*sdk.ServerSession{}
	}
	if _, ok := u.by[q]; !ok {
		u.order = append(u.order, q)
	}
	u.by[q] = ss
	for len(u.order) > maxURLQuestions {
		delete(u.by, u.order[0])
		u.order = u.order[1:]
	}
}

// take returns the client of q, and forgets it.
func (u *urlQuestions) take(q urlQuestion) *sdk.ServerSession {
	u.mu.Lock()
	defer u.mu.Unlock()
	ss := u.by[q]
	if ss != nil {
		delete(u.by, q)
		u.order = slices.DeleteFunc(u.order, func(o urlQuestion) bool { return o == q })
	}
	return ss
}

// elicitationComplete tells the client that went to the URL of a hub
// server's question that the server says the step is complete.
func (g *Gateway) elicitationComplete(ctx context.Context, ev mcp.ElicitationComplete) {
	ss := g.urlQuestions.take(urlQuestion{ev.Server, ev.ElicitationID})
	if ss == nil {
		return
	}
	if err := ss.NotifyElicitationComplete(ctx, &sdk.ElicitationCompleteParams{ElicitationID: ev.ElicitationID}); err != nil {
		g.logger.Info("MCP gateway: the client did not hear that its URL step is complete", "server", ev.Server, "elicitationId", ev.ElicitationID, "error", err.Error())
	}
}

// permissionSchema is the form of a permission ask: one choice of the four
// answers.
var permissionSchema = json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string","title":"Your answer",` +
	`"description":"Allow or reject this call; \"always\" remembers what the line \"always:\" says",` +
	`"oneOf":[{"const":"allow_once","title":"Allow once"},{"const":"allow_always","title":"Always allow"},` +
	`{"const":"reject_once","title":"Reject once"},{"const":"reject_always","title":"Always reject"}]}},"required":["answer"]}`)

// clientApprover asks the client of party about a call the policy asks
// about, through elicitation/create: the ICERC record in the message, the
// answer a choice. Decline and cancel are reject_once.
func clientApprover(party access.Party, ss *sdk.ServerSession) policy.Approver {
	return policy.Approver{Who: party, Ask: func(ctx context.Context, call tools.Call, rec policy.ICERC) (policy.Answer, error) {
		res, err := ss.Elicit(ctx, &sdk.ElicitParams{Mode: tools.ElicitForm, Message: permissionMessage(call, rec), RequestedSchema: permissionSchema})
		if err != nil {
			return "", fmt.Errorf("asking the MCP client: %w", err)
		}
		if res.Action != tools.ElicitAccept {
			return policy.RejectOnce, nil
		}
		ans, _ := res.Content["answer"].(string)
		return policy.Answer(ans), nil
	}}
}

// permissionMessage is the ICERC record of a call, for the person: the
// tool, then policy.PromptLines (who asks, the caller's words labelled as
// such, Nexus's command, the risk, what "always" remembers) and the change
// of a write as a diff (policy.ChangeLines), every field inert: the
// person's MCP client may show it on a terminal.
func permissionMessage(call tools.Call, rec policy.ICERC) string {
	name := call.ToolName
	if call.ServerName != "" {
		name = call.ServerName + "/" + call.ToolName
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Nexus asks your permission for %s", inert.Line(name))
	if call.Author != "" {
		fmt.Fprintf(&b, " (by %s)", inert.Line(call.Author))
	}
	b.WriteString(".")
	for _, l := range policy.PromptLines(rec, "the caller's") {
		b.WriteString("\n" + l)
	}
	for _, l := range policy.ChangeLines(rec.Changes, policy.MaxChangeLines) {
		b.WriteString("\n" + l.Text)
	}
	return b.String()
}

// serverQuestion is a hub server's question as the client shows it: the
// line naming the server, then the server's message, inert, each line
// marked as its words (as nexus chat shows it), so that it can neither
// erase nor pose as the line that names who asks.
func serverQuestion(q *tools.Elicitation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "MCP server %s asks:", inert.Line(q.Server))
	for l := range strings.Lines(inert.Text(strings.TrimSpace(q.Message))) {
		b.WriteString("\n  | " + strings.TrimRight(l, "\r\n"))
	}
	return b.String()
}
