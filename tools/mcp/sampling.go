package mcp

//lint:file-ignore SA1019 sampling and roots are deprecated from protocol 2026-07-28 (SEP-2577); servers use them until then

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/llm"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// Sampling: a server asks the client's model for a completion
// (sampling/createMessage). The hub answers with a model of the llm
// profiles, and each request is a Nexus tool call of the tool
// SERVER/mcp_sampling (policy.SamplingTool), made by "mcp:SERVER" within
// the call the request belongs to: validated, decided by the policy
// (medium risk: ask, unless a rule or a remembered "always" allows it for
// that server), asked of the person who made the call (its ICERC record
// names the model and shows the messages), audited, and shown in the
// activity stream with the model's answer as its result. A request the
// person rejects gets the error -1 the spec names ("User rejected sampling
// request").
//
// Who answers: the MCP client that made the call, when it can and
// Sampling.Client is on (mcp.sampling.client: a gateway client's call
// carries its model, see WithSampler); else the llm profile; else no one,
// and the server gets an error that says so. The call's arguments and
// result name which (profile "client", or the profile's name).

// Sampling is how the hub answers sampling requests (Options.Sampling).
type Sampling struct {
	// Client passes a request on to the MCP client that made the call it
	// belongs to, when that client samples (mcp.sampling.client); the
	// hub then declares sampling even without a profile.
	Client bool
	// Profile is the configured profile (mcp.sampling.profile); Profiles
	// are those a server's model preferences may choose from, Profile
	// among them.
	Profile  string
	Profiles map[string]llm.Profile
	// MaxTokens caps what a request may ask for (0: what it asks, within
	// the profile's maxOutputTokens).
	MaxTokens int
	// NewProvider makes the adapter of a profile (llm.New).
	NewProvider func(llm.Profile) (llm.Provider, error)
	// Limits bound the model's answer, as they bound an agent's
	// (agent.maxAnswerSize and agent.maxToolCallSize): over them the
	// request ends with an error that names the setting, and the server
	// gets that error.
	Limits llm.Limits
}

// samplingRejected is the error code of a sampling request the person
// rejected (the spec's example: "User rejected sampling request").
const samplingRejected = -1

// A Sampler answers a sampling request with the model of the party that
// made the call: a gateway client's sampling/createMessage.
type Sampler func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)

// samplerKey is the context key of a call's Sampler.
type samplerKey struct{}

// WithSampler returns ctx carrying fn as the sampler of the calls made with
// it: a hub server's sampling request during such a call goes to fn when
// Sampling.Client is on.
func WithSampler(ctx context.Context, fn Sampler) context.Context {
	if fn == nil {
		return ctx
	}
	return context.WithValue(ctx, samplerKey{}, fn)
}

func samplerFrom(ctx context.Context) Sampler {
	if ctx == nil {
		return nil
	}
	fn, _ := ctx.Value(samplerKey{}).(Sampler)
	return fn
}

// SamplingByClient is the profile a call of the sampling tool names when
// the MCP client that made the call answers (policy.SamplingClient).
const SamplingByClient = policy.SamplingClient

func (h *Hub) samples() bool {
	s := h.opts.Sampling
	return s != nil && h.opts.Tools != nil && (s.Client || s.profiled())
}

// profiled reports whether an llm profile is configured for sampling.
func (c *Sampling) profiled() bool {
	return c != nil && c.NewProvider != nil && c.Profiles[c.Profile].Model != ""
}

// samplingHandler is the server's handler of sampling/createMessage; nil
// when no one can answer (no profile, and mcp.sampling.client off: the SDK
// then answers "client does not support CreateMessage" and declares no
// capability).
func (s *server) samplingHandler() func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if !s.hub.samples() {
		return nil
	}
	return s.sample
}

// pick chooses the profile of a request: the first of the server's hints
// that a profile's name or model contains (the configured profile first);
// else, when cost or speed (or intelligence) matters most to the server,
// the priced profile with the lowest (highest) output price; else the
// configured profile. It says why.
func (c *Sampling) pick(prefs *mcp.ModelPreferences) (llm.Profile, string) {
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range c.Profiles {
			if n != c.Profile && !yield(n) {
				return
			}
		}
	})
	names = append([]string{c.Profile}, names...)
	if prefs == nil {
		return c.Profiles[c.Profile], "configured"
	}
	for _, hint := range prefs.Hints {
		if hint == nil || strings.TrimSpace(hint.Name) == "" {
			continue
		}
		want := strings.ToLower(strings.TrimSpace(hint.Name))
		for _, n := range names {
			p := c.Profiles[n]
			if strings.Contains(strings.ToLower(n), want) || strings.Contains(strings.ToLower(p.Model), want) {
				return p, fmt.Sprintf("the server's hint %q", hint.Name)
			}
		}
	}
	cost := max(prefs.CostPriority, prefs.SpeedPriority)
	if top := max(cost, prefs.IntelligencePriority); top > 0.5 && cost != prefs.IntelligencePriority {
		cheap := cost > prefs.IntelligencePriority
		best := ""
		for _, n := range names {
			price := c.Profiles[n].Prices.Output
			if price <= 0 {
				continue
			}
			if b := c.Profiles[best].Prices.Output; best == "" || (cheap && price < b) || (!cheap && price > b) {
				best = n
			}
		}
		if best != "" {
			what := "intelligence"
			if cheap {
				what = "cost or speed"
			}
			return c.Profiles[best], fmt.Sprintf("the server's priority on %s (output price %g)", what, c.Profiles[best].Prices.Output)
		}
	}
	return c.Profiles[c.Profile], "configured"
}

// sample answers a sampling request: a call of the sampling tool whose
// handler asks the client of the call it belongs to, or the model.
func (s *server) sample(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	h, c := s.hub, s.hub.opts.Sampling
	p := req.Params
	callID, callCtx := h.inflight.related(ctx, s.cfg.Name)
	var client Sampler
	if c.Client {
		client = samplerFrom(callCtx)
	}
	var prof llm.Profile
	var why string
	switch {
	case client != nil:
		prof, why = llm.Profile{Name: SamplingByClient, Provider: "MCP client", Model: "the client's choice"}, "mcp.sampling.client"
	case c.profiled():
		prof, why = c.pick(p.ModelPreferences)
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "no model for sampling: " + s.noSampler(callCtx != nil)}
	}
	lreq, args, err := samplingRequest(p, prof, why, c.MaxTokens)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	lreq.Limits = c.Limits
	rawArgs, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	var parent tools.Call
	if callID != "" {
		parent, _ = h.opts.Tools.Get(callID)
	}
	if callCtx != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(callCtx, cancel)
		defer stop()
		// Whoever is asked about the call is asked about its sampling.
		ctx = policy.WithApprover(ctx, policy.ApproverFrom(callCtx))
	}
	// The person's answer and the model's do not count against the call.
	resume := h.opts.Tools.AwaitPerson(callID)
	defer resume()

	var result *mcp.CreateMessageResult
	var clientErr error
	tool := &tools.Tool{
		Definition: tools.Definition{
			Name: policy.SamplingTool, Title: "Sampling for " + s.cfg.Name, ServerName: s.cfg.Name,
			Description: fmt.Sprintf("MCP server %q asks the model for a completion (sampling/createMessage)", s.cfg.Name),
			InputSchema: policy.SamplingSchema, Kind: tools.KindOther, Risk: tools.RiskMedium,
		},
		Timeout: s.callTimeout(),
		Handler: func(ctx context.Context, _ *tools.Invocation, _ json.RawMessage) (json.RawMessage, error) {
			if client != nil {
				cp := *p
				cp.Meta = nil // the server's progress token means nothing to the client
				cp.MaxTokens = int64(lreq.MaxOutputTokens)
				res, err := client(ctx, &cp)
				if err != nil {
					clientErr = err
					return nil, tools.Errorf(tools.CodeExecutionFailed, "the MCP client's sampling: %v", err)
				}
				result = res
				return answeredBy(res, SamplingByClient)
			}
			prov, err := c.NewProvider(prof)
			if err != nil {
				return nil, tools.Errorf(tools.CodeExecutionFailed, "llm profile %q: %v", prof.Name, err)
			}
			resp, err := prov.Stream(ctx, lreq, func(llm.Event) {})
			if err != nil {
				return nil, tools.Errorf(tools.CodeExecutionFailed, "the model of llm profile %q: %v", prof.Name, err)
			}
			result = &mcp.CreateMessageResult{Model: cmp.Or(resp.Model, prof.Model), Role: "assistant",
				Content: &mcp.TextContent{Text: resp.Text}, StopReason: stopReason(resp.Stop)}
			return answeredBy(result, prof.Name)
		},
	}
	model := "the model " + prof.Model
	if client != nil {
		model = "the model of the MCP client that made the call"
	}
	call := h.opts.Tools.Execute(ctx, tools.ExecuteRequest{
		Tool: tool, Arguments: rawArgs, Party: access.MCPServer(s.cfg.Name, parent.AppID),
		AppID: parent.AppID, TaskID: parent.TaskID, RequestID: parent.ID,
		Intent:          fmt.Sprintf("MCP server %q asks %s for a completion%s", s.cfg.Name, model, during(parent)),
		ExpectedOutcome: fmt.Sprintf("the model's answer (at most %d tokens) goes back to %q; nothing else is done", lreq.MaxOutputTokens, s.cfg.Name),
	})
	var wire *jsonrpc.Error
	switch {
	case call.Error == nil && result != nil:
		return result, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case call.Error != nil && call.Error.Code == tools.CodePermissionDenied:
		return nil, &jsonrpc.Error{Code: samplingRejected, Message: "User rejected sampling request: " + call.Error.Message}
	case errors.As(clientErr, &wire):
		return nil, wire // the client's own answer, such as its person's rejection
	case call.Error != nil:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "sampling failed: " + call.Error.Message}
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "sampling failed: no answer"}
}

// noSampler says why no one answers a sampling request.
func (s *server) noSampler(inCall bool) string {
	switch {
	case !s.hub.opts.Sampling.Client:
		return "mcp.sampling.profile names no llm profile"
	case inCall:
		return "the client that made the call does not sample, and mcp.sampling.profile names no llm profile"
	}
	return "the request belongs to no one call whose client samples, and mcp.sampling.profile names no llm profile"
}

// answeredBy is the result of a sampling call: the answer, and who gave it
// (SamplingByClient, or the llm profile's name).
func answeredBy(res *mcp.CreateMessageResult, by string) (json.RawMessage, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, err
	}
	obj["answeredBy"] = by
	return json.Marshal(obj)
}

// during names the call a request belongs to, for the intent.
func during(c tools.Call) string {
	if c.ID == "" {
		return ""
	}
	return fmt.Sprintf(", during the call %s of %s (%s)", c.ID, c.ToolName, cmp.Or(c.Author, "?"))
}

// samplingRequest turns a sampling request into the model's request and
// the record the person is shown.
func samplingRequest(p *mcp.CreateMessageParams, prof llm.Profile, why string, maxCap int) (*llm.Request, policy.SamplingArgs, error) {
	args := policy.SamplingArgs{Profile: prof.Name, Provider: prof.Provider, Model: prof.Model, Why: why, BaseURL: prof.BaseURL,
		SystemPrompt: p.SystemPrompt, Stop: p.StopSequences, Messages: []policy.SamplingMessage{}}
	lreq := &llm.Request{System: p.SystemPrompt, Stop: p.StopSequences}
	if len(p.Messages) == 0 {
		return nil, args, fmt.Errorf("a sampling request needs messages")
	}
	for i, m := range p.Messages {
		if m == nil {
			return nil, args, fmt.Errorf("message %d is null", i)
		}
		var role llm.Role
		switch m.Role {
		case "user":
			role = llm.RoleUser
		case "assistant":
			role = llm.RoleAssistant
		default:
			return nil, args, fmt.Errorf("message %d: role %q is not user or assistant", i, m.Role)
		}
		msg := llm.Message{Role: role}
		rec := policy.SamplingMessage{Role: string(m.Role)}
		switch content := m.Content.(type) {
		case *mcp.TextContent:
			msg.Text, rec.Text = content.Text, content.Text
		case *mcp.ImageContent:
			if role != llm.RoleUser {
				return nil, args, fmt.Errorf("message %d: an image in an assistant message is not supported", i)
			}
			msg.Images = []llm.Image{{MIMEType: content.MIMEType, Data: content.Data}}
			rec.Image = fmt.Sprintf("%s, %d bytes", content.MIMEType, len(content.Data))
		default:
			return nil, args, fmt.Errorf("message %d: %T content is not supported (text and images are)", i, m.Content)
		}
		lreq.Messages = append(lreq.Messages, msg)
		args.Messages = append(args.Messages, rec)
	}
	n := int(p.MaxTokens)
	if n <= 0 {
		return nil, args, fmt.Errorf("maxTokens must be more than 0")
	}
	if maxCap > 0 {
		n = min(n, maxCap)
	}
	if prof.MaxOutputTokens > 0 {
		n = min(n, prof.MaxOutputTokens)
	}
	lreq.MaxOutputTokens, args.MaxTokens = n, n
	if p.Temperature > 0 {
		t := p.Temperature
		lreq.Temperature, args.Temperature = &t, &t
	}
	return lreq, args, nil
}

// stopReason is MCP's name of a stop reason.
func stopReason(r llm.StopReason) string {
	switch r {
	case llm.StopEndTurn:
		return "endTurn"
	case llm.StopMaxTokens:
		return "maxTokens"
	case llm.StopToolUse:
		return "toolUse"
	case "":
		return ""
	}
	return string(r)
}
