package llm

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// The Responses API adapter (POST /responses), OpenAI's default, which
// llama-server speaks too. Each turn sends the whole conversation (no
// previous_response_id); ExtraBody may add store, reasoning, include.

func init() {
	register(ProviderOpenAI, APIResponses, newOpenAIResponses)
	register(ProviderOpenAICompatible, APIResponses, newOpenAIResponses)
}

type openAIResponses struct {
	profile Profile
	opts    Options
	svc     responses.ResponseService
}

func newOpenAIResponses(p Profile, key string, opts Options) (Provider, error) {
	return &openAIResponses{profile: p, opts: opts, svc: responses.NewResponseService(openAIOptions(p, key, opts)...)}, nil
}

func (r *openAIResponses) Profile() Profile { return r.profile }

func (r *openAIResponses) Stream(ctx context.Context, req *Request, emit func(Event)) (*Response, error) {
	params, err := r.params(req)
	if err != nil {
		return nil, requestError(r.profile.Provider, err)
	}
	return Retrying(ctx, &r.opts, emit, func(emit func(Event)) (*Response, error) {
		return r.attempt(ctx, params, req.Limits, emit)
	})
}

// params is the request's body: Request.System is the instructions, the
// messages are input items. The profile's ExtraBody is merged last.
func (r *openAIResponses) params(req *Request) (responses.ResponseNewParams, error) {
	p := r.profile
	params := responses.ResponseNewParams{Model: p.Model}
	if req.System != "" {
		params.Instructions = openai.String(req.System)
	}
	message := func(role responses.EasyInputMessageRole, text string) responses.ResponseInputItemUnionParam {
		return responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
			Role: role, Content: responses.EasyInputMessageContentUnionParam{OfString: openai.String(text)},
		}}
	}
	var input responses.ResponseInputParam
	for i, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			input = append(input, message(responses.EasyInputMessageRoleSystem, m.Text))
		case RoleUser:
			if len(m.Images) == 0 {
				input = append(input, message(responses.EasyInputMessageRoleUser, m.Text))
				continue
			}
			var content responses.ResponseInputMessageContentListParam
			if m.Text != "" {
				content = append(content, responses.ResponseInputContentParamOfInputText(m.Text))
			}
			for _, img := range m.Images {
				content = append(content, responses.ResponseInputContentUnionParam{OfInputImage: &responses.ResponseInputImageParam{
					Detail: responses.ResponseInputImageDetailAuto, ImageURL: openai.String(img.dataURL())}})
			}
			input = append(input, responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
				Role: responses.EasyInputMessageRoleUser, Content: responses.EasyInputMessageContentUnionParam{OfInputItemContentList: content},
			}})
		case RoleAssistant:
			if m.Text != "" || len(m.ToolCalls) == 0 {
				input = append(input, message(responses.EasyInputMessageRoleAssistant, m.Text))
			}
			for _, tc := range m.ToolCalls {
				input = append(input, responses.ResponseInputItemUnionParam{OfFunctionCall: &responses.ResponseFunctionToolCallParam{
					CallID: tc.ID, Name: tc.Name, Arguments: wireArguments(tc.Arguments),
				}})
			}
		case RoleToolResult:
			if m.Result == nil {
				return params, fmt.Errorf("message %d: a tool_result message without a result", i)
			}
			input = append(input, responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
				CallID: openai.String(m.Result.CallID),
				Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String(toolResultText(m.Result))},
			}})
		default:
			return params, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
	for _, t := range req.Tools {
		t = providerTool(t)
		schema, err := schemaMap(t)
		if err != nil {
			return params, err
		}
		f := &responses.FunctionToolParam{Name: t.Name, Parameters: schema, Strict: openai.Bool(false)}
		if t.Description != "" {
			f.Description = openai.String(t.Description)
		}
		params.Tools = append(params.Tools, responses.ToolUnionParam{OfFunction: f})
	}
	if n := cmp.Or(req.MaxOutputTokens, p.MaxOutputTokens); n > 0 {
		params.MaxOutputTokens = openai.Int(int64(n))
	}
	if t := req.Temperature; t != nil {
		params.Temperature = openai.Float(*t)
	} else if t := p.Temperature; t != nil {
		params.Temperature = openai.Float(*t)
	}
	if len(p.ExtraBody) > 0 {
		params.SetExtraFields(p.ExtraBody)
	}
	return params, nil
}

// attempt sends the request once and reads its stream, until it ends or
// the answer is over its limits.
func (r *openAIResponses) attempt(ctx context.Context, params responses.ResponseNewParams, lim Limits, emit func(Event)) (*Response, error) {
	provider := r.profile.Provider
	var httpResp *http.Response
	stream := r.svc.NewStreaming(ctx, params, option.WithResponseInto(&httpResp), limitedBody(provider, lim))
	defer stream.Close()
	turn := responsesTurn{provider: provider, emit: emit, budget: newBudget(provider, lim)}
	for stream.Next() {
		done, err := turn.add(stream.Current())
		if err != nil {
			return nil, err
		}
		if done {
			return &turn.resp, nil
		}
	}
	if err := stream.Err(); err != nil {
		return nil, openAIError(ctx, provider, err, httpResp != nil)
	}
	return nil, &Error{Kind: KindStream, Provider: provider, Message: "the stream ended before the response did (no response.completed)"}
}

// responsesTurn gathers a Responses stream into a Response.
type responsesTurn struct {
	provider string
	emit     func(Event)
	budget   *budget
	resp     Response
	text     strings.Builder
	thought  strings.Builder
	calls    map[string]*responsesCall // by item id
	order    []*responsesCall
	refused  bool
}

type responsesCall struct {
	callID, name string
	args         strings.Builder
	size         int // counted against the budget
	emitted      bool
}

// add takes one event; done is set by the last one (response.completed or
// response.incomplete).
func (t *responsesTurn) add(ev responses.ResponseStreamEventUnion) (done bool, err error) {
	switch ev.Type {
	case "response.output_text.delta", "response.refusal.delta":
		if err := t.budget.say(len(ev.Delta)); err != nil {
			return false, err
		}
		t.refused = t.refused || ev.Type == "response.refusal.delta"
		t.text.WriteString(ev.Delta)
		t.emit(Event{Kind: EventText, Text: ev.Delta})
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		if err := t.budget.say(len(ev.Delta)); err != nil {
			return false, err
		}
		t.thought.WriteString(ev.Delta)
		t.emit(Event{Kind: EventThought, Text: ev.Delta})
	case "response.reasoning_summary_part.added":
		if ev.SummaryIndex > 0 && t.thought.Len() > 0 {
			if err := t.budget.say(2); err != nil {
				return false, err
			}
			t.thought.WriteString("\n\n")
			t.emit(Event{Kind: EventThought, Text: "\n\n"})
		}
	case "response.output_item.added":
		if ev.Item.Type == "function_call" {
			if _, err := t.call(ev.Item.ID, ev.Item.CallID, ev.Item.Name); err != nil {
				return false, err
			}
		}
	case "response.function_call_arguments.delta":
		if c := t.calls[ev.ItemID]; c != nil {
			if err := t.budget.grow(&c.size, len(ev.Delta)); err != nil {
				return false, err
			}
			c.args.WriteString(ev.Delta)
		}
	case "response.output_item.done":
		if ev.Item.Type == "function_call" {
			c, err := t.call(ev.Item.ID, ev.Item.CallID, ev.Item.Name)
			if err != nil {
				return false, err
			}
			if err := t.setArgs(c, ev.Item.Arguments.OfString); err != nil {
				return false, err
			}
			t.emitCall(c)
		}
	case "response.completed", "response.incomplete":
		if err := t.finish(ev.Response); err != nil {
			return false, err
		}
		return true, nil
	case "response.failed":
		e := ev.Response.Error
		msg := e.Message
		if msg == "" {
			msg = "the response failed"
		}
		return false, &Error{Kind: streamErrorKind(string(e.Code) + " " + msg), Provider: t.provider, Message: "error in the stream: " + msg}
	case "error":
		return false, openaiStreamError(t.provider, []byte(ev.RawJSON()))
	default:
		// llama-server's `event: error` has no "type" of its own ({"code":
		// 500, "message": ..., "type": "server_error"}).
		if !strings.HasPrefix(ev.Type, "response.") && ev.Message != "" {
			return false, openaiStreamError(t.provider, []byte(ev.RawJSON()))
		}
	}
	return false, nil
}

// call is the call of an item, made the first time it is named.
func (t *responsesTurn) call(itemID, callID, name string) (*responsesCall, error) {
	if t.calls == nil {
		t.calls = map[string]*responsesCall{}
	}
	c := t.calls[itemID]
	if c == nil {
		if err := t.budget.newCall(len(itemID)); err != nil {
			return nil, err
		}
		c = &responsesCall{}
		t.calls[itemID] = c
		t.order = append(t.order, c)
	}
	n := 0
	if c.callID == "" {
		n += len(cmp.Or(callID, itemID))
	}
	if c.name == "" {
		n += len(name)
	}
	if err := t.budget.grow(&c.size, n); err != nil {
		return nil, err
	}
	if c.callID == "" {
		c.callID = cmp.Or(callID, itemID)
	}
	if c.name == "" {
		c.name = name
	}
	return c, nil
}

// setArgs replaces a call's arguments with the whole ones a server sent
// after (or instead of) their pieces; "" leaves them.
func (t *responsesTurn) setArgs(c *responsesCall, args string) error {
	if args == "" {
		return nil
	}
	if err := t.budget.resize(&c.size, c.size-c.args.Len()+len(args)); err != nil {
		return err
	}
	c.args.Reset()
	c.args.WriteString(args)
	return nil
}

func (t *responsesTurn) emitCall(c *responsesCall) {
	if c.emitted {
		return
	}
	c.emitted = true
	call := ToolCall{ID: c.callID, Name: c.name, Arguments: toolArguments([]byte(c.args.String()))}
	t.resp.ToolCalls = append(t.resp.ToolCalls, call)
	t.emit(Event{Kind: EventToolCall, ToolCall: &call})
}

// finish completes the turn from the final response: calls the stream did
// not close (from its output), usage, model and stop reason.
func (t *responsesTurn) finish(r responses.Response) error {
	for _, item := range r.Output {
		switch item.Type {
		case "function_call":
			c, err := t.call(item.ID, item.CallID, item.Name)
			if err != nil {
				return err
			}
			if !c.emitted {
				if err := t.setArgs(c, item.Arguments.OfString); err != nil {
					return err
				}
			}
		case "message":
			for _, part := range item.Content {
				if part.Type == "refusal" {
					t.refused = true
				}
			}
		}
	}
	for _, c := range t.order {
		t.emitCall(c)
	}
	if r.Model != "" {
		t.resp.Model = r.Model
	}
	if r.JSON.Usage.Valid() {
		u := r.Usage
		t.resp.Usage = Usage{InputTokens: int(u.InputTokens), OutputTokens: int(u.OutputTokens), CachedTokens: int(u.InputTokensDetails.CachedTokens)}
		usage := t.resp.Usage
		t.emit(Event{Kind: EventUsage, Usage: &usage})
	}
	t.resp.Text = t.text.String()
	t.resp.Thought = t.thought.String()
	switch {
	case r.Status == "incomplete" && r.IncompleteDetails.Reason == "content_filter", t.refused:
		t.resp.Stop = StopRefusal
	case r.Status == "incomplete":
		t.resp.Stop = StopMaxTokens
	case len(t.resp.ToolCalls) > 0:
		t.resp.Stop = StopToolUse
	default:
		t.resp.Stop = StopEndTurn
	}
	return nil
}
