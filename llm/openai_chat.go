package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/respjson"
)

// The Chat Completions adapter (POST /chat/completions), of OpenAI and of
// the servers that speak its API: llama.cpp's llama-server, Ollama, vLLM,
// LM Studio, OpenRouter, DeepSeek.

func init() {
	register(ProviderOpenAI, APIChat, newOpenAIChat)
	register(ProviderOpenAICompatible, APIChat, newOpenAIChat)
}

type openAIChat struct {
	profile Profile
	opts    Options
	svc     openai.ChatCompletionService
}

func newOpenAIChat(p Profile, key string, opts Options) (Provider, error) {
	return &openAIChat{profile: p, opts: opts, svc: openai.NewChatCompletionService(openAIOptions(p, key, opts)...)}, nil
}

func (c *openAIChat) Profile() Profile { return c.profile }

func (c *openAIChat) Stream(ctx context.Context, req *Request, emit func(Event)) (*Response, error) {
	params, err := c.params(req)
	if err != nil {
		return nil, requestError(c.profile.Provider, err)
	}
	return Retrying(ctx, &c.opts, emit, func(emit func(Event)) (*Response, error) {
		return c.attempt(ctx, params, req.Limits, emit)
	})
}

// params is the request's body. The profile's ExtraBody is merged last, over
// the fields set here.
func (c *openAIChat) params(req *Request) (openai.ChatCompletionNewParams, error) {
	p := c.profile
	params := openai.ChatCompletionNewParams{Model: p.Model}
	if req.System != "" {
		params.Messages = append(params.Messages, openai.SystemMessage(req.System))
	}
	for i, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			params.Messages = append(params.Messages, openai.SystemMessage(m.Text))
		case RoleUser:
			if len(m.Images) == 0 {
				params.Messages = append(params.Messages, openai.UserMessage(m.Text))
				continue
			}
			var parts []openai.ChatCompletionContentPartUnionParam
			if m.Text != "" {
				parts = append(parts, openai.TextContentPart(m.Text))
			}
			for _, img := range m.Images {
				parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: img.dataURL()}))
			}
			params.Messages = append(params.Messages, openai.UserMessage(parts))
		case RoleAssistant:
			var a openai.ChatCompletionAssistantMessageParam
			if m.Text != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Text)
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID: tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
							Name: tc.Name, Arguments: wireArguments(tc.Arguments),
						},
					},
				})
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case RoleToolResult:
			if m.Result == nil {
				return params, fmt.Errorf("message %d: a tool_result message without a result", i)
			}
			params.Messages = append(params.Messages, openai.ToolMessage(toolResultText(m.Result), m.Result.CallID))
		default:
			return params, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	for _, t := range req.Tools {
		t = providerTool(t)
		schema, err := schemaMap(t)
		if err != nil {
			return params, err
		}
		def := openai.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			def.Description = openai.String(t.Description)
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(def))
	}
	// OpenAI reads max_completion_tokens (max_tokens is refused by its
	// reasoning models); the servers that speak its API all read
	// max_tokens, not all of them max_completion_tokens (llama-server
	// reads both).
	if n := cmp.Or(req.MaxOutputTokens, p.MaxOutputTokens); n > 0 {
		if p.Provider == ProviderOpenAI {
			params.MaxCompletionTokens = openai.Int(int64(n))
		} else {
			params.MaxTokens = openai.Int(int64(n))
		}
	}
	if len(req.Stop) > 0 {
		params.Stop.OfStringArray = req.Stop
	}
	if t := req.Temperature; t != nil {
		params.Temperature = openai.Float(*t)
	} else if t := p.Temperature; t != nil {
		params.Temperature = openai.Float(*t)
	}
	params.StreamOptions.IncludeUsage = openai.Bool(true)
	if len(p.ExtraBody) > 0 {
		params.SetExtraFields(p.ExtraBody)
	}
	return params, nil
}

// attempt sends the request once and reads its stream, until it ends or
// the answer is over its limits.
func (c *openAIChat) attempt(ctx context.Context, params openai.ChatCompletionNewParams, lim Limits, emit func(Event)) (*Response, error) {
	provider := c.profile.Provider
	var httpResp *http.Response
	stream := c.svc.NewStreaming(ctx, params, option.WithResponseInto(&httpResp), limitedBody(provider, lim))
	defer stream.Close()
	turn := chatTurn{provider: provider, emit: emit, budget: newBudget(provider, lim)}
	for stream.Next() {
		if err := turn.add(stream.Current()); err != nil {
			return nil, err
		}
	}
	if err := stream.Err(); err != nil {
		// A request that got its 200 and broke while its stream was read is
		// a stream error; one that got no answer is retried.
		return nil, openAIError(ctx, provider, err, httpResp != nil)
	}
	return turn.done()
}

// chatTurn gathers a Chat Completions stream into a Response.
type chatTurn struct {
	provider string
	emit     func(Event)
	budget   *budget
	resp     Response
	text     strings.Builder
	thought  strings.Builder
	calls    []*chatCall
	byIndex  map[int64]*chatCall // the call each delta index is on
	reason   string              // the finish_reason
	refused  bool
	emitted  bool // the tool calls were emitted
}

type chatCall struct {
	id, name string
	args     strings.Builder
	size     int // counted against the budget
}

func (t *chatTurn) add(chunk openai.ChatCompletionChunk) error {
	if chunk.Model != "" {
		t.resp.Model = chunk.Model
	}
	if len(chunk.Choices) == 0 && !chunk.JSON.Usage.Valid() {
		if err := chunkError(t.provider, chunk.RawJSON()); err != nil {
			return err
		}
	}
	if chunk.JSON.Usage.Valid() {
		u := chunk.Usage
		t.resp.Usage = Usage{InputTokens: int(u.PromptTokens), OutputTokens: int(u.CompletionTokens), CachedTokens: int(u.PromptTokensDetails.CachedTokens)}
		usage := t.resp.Usage
		t.emit(Event{Kind: EventUsage, Usage: &usage})
	}
	for _, ch := range chunk.Choices {
		if ch.Index != 0 {
			continue // one choice is asked for
		}
		d := ch.Delta
		if s := reasoningDelta(d.JSON.ExtraFields); s != "" {
			if err := t.budget.say(len(s)); err != nil {
				return err
			}
			t.thought.WriteString(s)
			t.emit(Event{Kind: EventThought, Text: s})
		}
		if d.Content != "" {
			if err := t.budget.say(len(d.Content)); err != nil {
				return err
			}
			t.text.WriteString(d.Content)
			t.emit(Event{Kind: EventText, Text: d.Content})
		}
		if d.Refusal != "" {
			if err := t.budget.say(len(d.Refusal)); err != nil {
				return err
			}
			t.refused = true
			t.text.WriteString(d.Refusal)
			t.emit(Event{Kind: EventText, Text: d.Refusal})
		}
		for _, tc := range d.ToolCalls {
			if err := t.toolCallDelta(tc); err != nil {
				return err
			}
		}
		if ch.FinishReason != "" {
			t.reason = ch.FinishReason
			t.emitCalls()
		}
	}
	return nil
}

// toolCallDelta adds a piece of a tool call. Its index says which call it
// is on; a new id on an index that has one is a new call (servers that give
// every call index 0).
func (t *chatTurn) toolCallDelta(d openai.ChatCompletionChunkChoiceDeltaToolCall) error {
	if t.byIndex == nil {
		t.byIndex = map[int64]*chatCall{}
	}
	c := t.byIndex[d.Index]
	if c == nil || (d.ID != "" && c.id != "" && d.ID != c.id) {
		if err := t.budget.newCall(0); err != nil {
			return err
		}
		c = &chatCall{}
		t.calls = append(t.calls, c)
		t.byIndex[d.Index] = c
	}
	n := len(d.Function.Arguments)
	if c.id == "" {
		n += len(d.ID)
	}
	if c.name == "" {
		n += len(d.Function.Name)
	}
	if err := t.budget.grow(&c.size, n); err != nil {
		return err
	}
	if c.id == "" {
		c.id = d.ID
	}
	if c.name == "" {
		c.name = d.Function.Name
	}
	c.args.WriteString(d.Function.Arguments)
	return nil
}

// emitCalls sends the turn's tool calls, whole, once: at the finish reason,
// when no more of their arguments can come.
func (t *chatTurn) emitCalls() {
	if t.emitted {
		return
	}
	t.emitted = true
	for i, c := range t.calls {
		id := c.id
		if id == "" {
			id = fmt.Sprintf("call_%d", i) // a server that names no call
		}
		call := ToolCall{ID: id, Name: c.name, Arguments: toolArguments([]byte(c.args.String()))}
		t.resp.ToolCalls = append(t.resp.ToolCalls, call)
		t.emit(Event{Kind: EventToolCall, ToolCall: &call})
	}
}

func (t *chatTurn) done() (*Response, error) {
	if t.reason == "" {
		return nil, &Error{Kind: KindStream, Provider: t.provider, Message: "the stream ended before the model finished (no finish_reason)"}
	}
	t.resp.Text = t.text.String()
	t.resp.Thought = t.thought.String()
	switch {
	case t.reason == "length":
		t.resp.Stop = StopMaxTokens
	case t.reason == "content_filter" || t.refused:
		t.resp.Stop = StopRefusal
	case t.reason == "tool_calls" || t.reason == "function_call" || len(t.resp.ToolCalls) > 0:
		t.resp.Stop = StopToolUse
	default:
		t.resp.Stop = StopEndTurn
	}
	return &t.resp, nil
}

// reasoningDelta is the reasoning in a delta, which OpenAI's API has no
// field for: reasoning_content (llama-server, DeepSeek, vLLM) or reasoning
// (OpenRouter, Ollama).
func reasoningDelta(extra map[string]respjson.Field) string {
	for _, k := range []string{"reasoning_content", "reasoning"} {
		f, ok := extra[k]
		if !ok {
			continue
		}
		// The SDK marks fields it has no type for invalid: read the raw.
		var s string
		if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// chunkError is the error of a chunk without choices and usage that is
// an error: llama-server's `event: error` data ({"code": 500, "message":
// ...}), which the SDK does not take for one since it has no "error" key.
func chunkError(provider, raw string) error {
	var v struct {
		Message *string         `json:"message"`
		Error   json.RawMessage `json:"error"`
	}
	if json.Unmarshal([]byte(raw), &v) != nil || (v.Message == nil && len(v.Error) == 0) {
		return nil
	}
	return openaiStreamError(provider, []byte(raw))
}
