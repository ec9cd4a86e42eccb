package mcp

//lint:file-ignore SA1019 sampling and roots are deprecated from protocol 2026-07-28 (SEP-2577); servers use them until then

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/agent/llm"
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

// Sampling is how the hub answers sampling requests (Options.Sampling).
type Sampling struct {
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
}

// samplingRejected is the error code of a sampling request the person
// rejected (the spec's example: "User rejected sampling request").
const samplingRejected = -1

func (h *Hub) samples() bool {
	s := h.opts.Sampling
	return s != nil && h.opts.Tools != nil && s.NewProvider != nil && s.Profiles[s.Profile].Model != ""
}

// samplingHandler is the server's handler of sampling/createMessage; nil
// when no model is configured for it (the SDK then answers "client does
// not support CreateMessage" and declares no capability).
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
// handler asks the model.
func (s *server) sample(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	h, c := s.hub, s.hub.opts.Sampling
	p := req.Params
	prof, why := c.pick(p.ModelPreferences)
	lreq, args, err := samplingRequest(p, prof, why, c.MaxTokens)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	rawArgs, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	callID, callCtx := h.inflight.related(ctx, s.cfg.Name)
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
	}
	// The person's answer and the model's do not count against the call.
	resume := h.opts.Tools.AwaitPerson(callID)
	defer resume()

	var result *mcp.CreateMessageResult
	tool := &tools.Tool{
		Definition: tools.Definition{
			Name: policy.SamplingTool, Title: "Sampling for " + s.cfg.Name, ServerName: s.cfg.Name,
			Description: fmt.Sprintf("MCP server %q asks the model for a completion (sampling/createMessage)", s.cfg.Name),
			InputSchema: policy.SamplingSchema, Kind: tools.KindOther, Risk: tools.RiskMedium,
		},
		Timeout: s.callTimeout(),
		Handler: func(ctx context.Context, _ *tools.Invocation, _ json.RawMessage) (json.RawMessage, error) {
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
			return json.Marshal(result)
		},
	}
	call := h.opts.Tools.Execute(ctx, tools.ExecuteRequest{
		Tool: tool, Arguments: rawArgs, Party: access.MCPServer(s.cfg.Name, parent.AppID),
		AppID: parent.AppID, TaskID: parent.TaskID, RequestID: parent.ID,
		Intent:          fmt.Sprintf("MCP server %q asks the model %s for a completion%s", s.cfg.Name, prof.Model, during(parent)),
		ExpectedOutcome: fmt.Sprintf("the model's answer (at most %d tokens) goes back to %q; nothing else is done", lreq.MaxOutputTokens, s.cfg.Name),
	})
	switch {
	case call.Error == nil && result != nil:
		return result, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case call.Error != nil && call.Error.Code == tools.CodePermissionDenied:
		return nil, &jsonrpc.Error{Code: samplingRejected, Message: "User rejected sampling request: " + call.Error.Message}
	case call.Error != nil:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "sampling failed: " + call.Error.Message}
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "sampling failed: no answer"}
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
