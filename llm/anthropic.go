package llm

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
)

// The Anthropic Messages adapter, over the official SDK: for Anthropic
// itself and for compatible servers that speak the same API (llama.cpp's
// llama-server). The SDK sends the request and decodes the SSE events; the
// SDK's own retries are off (Retrying decides), it reads no environment
// (the key comes from New), and the events are accumulated here.
//
// Tool input: a tool_use block's input arrives as input_json_delta pieces
// and the call is emitted when its content_block_stop arrives. Input that
// is not valid JSON (a model's mistake, not the stream's) is no error: the
// call is delivered with Arguments set to a JSON string holding the raw
// text, so that it still marshals; the controller treats any Arguments
// that are not a JSON object as malformed and answers the call with an
// error result. Sending such a call back in the history, its input is {}
// (Anthropic wants an object there).

func init() {
	register(ProviderAnthropic, APIMessages, newAnthropic)
	register(ProviderOpenAICompatible, APIMessages, newAnthropic)
}

// anthropicDefaultMaxTokens is max_tokens when neither the request nor the
// profile sets one: Anthropic requires the field.
const anthropicDefaultMaxTokens = 4096

type anthropicProvider struct {
	profile Profile
	opts    Options
	client  anthropic.Client
}

func newAnthropic(p Profile, key string, opts Options) (Provider, error) {
	ro := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(opts.HTTPClient),
		option.WithMaxRetries(0),
	}
	if key != "" {
		ro = append(ro, option.WithAPIKey(key))
	}
	if p.BaseURL != "" {
		ro = append(ro, option.WithBaseURL(anthropicBaseURL(p.BaseURL)))
	}
	return &anthropicProvider{profile: p, opts: opts, client: anthropic.NewClient(ro...)}, nil
}

// anthropicBaseURL is the root the SDK appends "v1/messages" to: a base URL
// given with /v1 at its end (the habit of OpenAI-compatible servers:
// http://127.0.0.1:8080/v1) loses it.
func anthropicBaseURL(base string) string {
	base = strings.TrimRight(base, "/")
	base = strings.TrimSuffix(base, "/v1")
	return base + "/"
}

func (a *anthropicProvider) Profile() Profile { return a.profile }

func (a *anthropicProvider) Stream(ctx context.Context, req *Request, emit func(Event)) (*Response, error) {
	params := anthropicParams(a.profile, req)
	ro := extraBodyOptions(a.profile.ExtraBody)
	return Retrying(ctx, &a.opts, emit, func(emit func(Event)) (*Response, error) {
		return a.attempt(ctx, params, ro, req.Limits, emit)
	})
}

// extraBodyOptions are the SDK options that set each of the profile's extra
// body fields at the top level of the JSON body, in a stable order.
func extraBodyOptions(extra map[string]any) []option.RequestOption {
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	ro := make([]option.RequestOption, 0, len(keys))
	for _, k := range keys {
		ro = append(ro, option.WithJSONSet(sjsonEscape(k), extra[k]))
	}
	return ro
}

// sjsonEscape makes a key one path component of sjson's path syntax (the
// rule of gjson.Escape): every character with a meaning there is escaped.
func sjsonEscape(k string) string {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c <= ' ' || c > '~' || c == '_' || c == '-' || c == ':') {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// anthropicParams turns a request into the Messages API's body.
func anthropicParams(p Profile, req *Request) anthropic.MessageNewParams {
	maxTokens := req.MaxOutputTokens
	if maxTokens <= 0 {
		maxTokens = p.MaxOutputTokens
	}
	if maxTokens <= 0 {
		maxTokens = anthropicDefaultMaxTokens
	}
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(p.Model),
		MaxTokens: int64(maxTokens),
	}
	if t := req.Temperature; t != nil {
		params.Temperature = param.NewOpt(*t)
	} else if t := p.Temperature; t != nil {
		params.Temperature = param.NewOpt(*t)
	}
	params.StopSequences = req.Stop

	var system []string
	if s := strings.TrimSpace(req.System); s != "" {
		system = append(system, req.System)
	}
	// results is the index in params.Messages of the user message that
	// holds the tool results of the current turn, -1 when the last message
	// is not one: consecutive results go into one message.
	results := -1
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			if strings.TrimSpace(m.Text) != "" {
				system = append(system, m.Text)
			}
		case RoleUser:
			results = -1
			var blocks []anthropic.ContentBlockParamUnion
			for _, img := range m.Images {
				blocks = append(blocks, anthropic.NewImageBlockBase64(img.MIMEType, base64.StdEncoding.EncodeToString(img.Data)))
			}
			if m.Text != "" { // Anthropic refuses empty text blocks
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			if len(blocks) == 0 {
				continue
			}
			params.Messages = append(params.Messages, anthropic.NewUserMessage(blocks...))
		case RoleAssistant:
			results = -1
			var blocks []anthropic.ContentBlockParamUnion
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for _, c := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, toolInputObject(c.Arguments), c.Name))
			}
			if len(blocks) == 0 {
				continue
			}
			params.Messages = append(params.Messages, anthropic.NewAssistantMessage(blocks...))
		case RoleToolResult:
			if m.Result == nil {
				continue
			}
			block := anthropic.ToolResultBlockParam{ToolUseID: m.Result.CallID}
			if m.Result.Content != "" {
				block.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: m.Result.Content}}}
			}
			if m.Result.IsError {
				block.IsError = param.NewOpt(true)
			}
			u := anthropic.ContentBlockParamUnion{OfToolResult: &block}
			if results >= 0 {
				params.Messages[results].Content = append(params.Messages[results].Content, u)
				continue
			}
			params.Messages = append(params.Messages, anthropic.NewUserMessage(u))
			results = len(params.Messages) - 1
		}
	}
	if len(system) > 0 {
		params.System = []anthropic.TextBlockParam{{Text: strings.Join(system, "\n\n")}}
	}
	for _, t := range req.Tools {
		t = providerTool(t)
		schema := json.RawMessage(t.Schema)
		if !isJSONObject(schema) {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		tool := anthropic.ToolParam{
			Name:        t.Name,
			InputSchema: param.Override[anthropic.ToolInputSchemaParam](schema),
		}
		if t.Description != "" {
			tool.Description = param.NewOpt(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &tool})
	}
	return params
}

// isJSONObject reports whether b is a valid JSON object.
func isJSONObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// toolInputObject is a call's arguments as a tool_use block's input, which
// must be an object: {} when they are not one.
func toolInputObject(args json.RawMessage) json.RawMessage {
	if isJSONObject(args) {
		return args
	}
	return json.RawMessage(`{}`)
}

// toolArguments are the arguments of a call whose raw JSON text is raw, in
// every adapter: {} when empty, the text when it is valid JSON, else (a
// model's mistake, no error of the stream) a JSON string of the text,
// which the ToolManager refuses as not matching the schema and the model
// is told so.
func toolArguments(raw []byte) json.RawMessage {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return json.RawMessage(`{}`)
	}
	if json.Valid(trimmed) {
		return json.RawMessage(bytes.Clone(trimmed))
	}
	s, _ := json.Marshal(string(raw)) // as written, so that it goes back the same
	return s
}

// anthropicBlock is a content block being streamed.
type anthropicBlock struct {
	typ   string
	id    string
	name  string
	start string // the input of content_block_start, where there was one
	input bytes.Buffer
	size  int // counted against the budget
	done  bool
}

// attempt sends the request once and reads its stream, until it ends or
// the answer is over its limits.
func (a *anthropicProvider) attempt(ctx context.Context, params anthropic.MessageNewParams, ro []option.RequestOption, lim Limits, emit func(Event)) (*Response, error) {
	provider := a.profile.Provider
	ro = append(ro[:len(ro):len(ro)], option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(r)
		if resp != nil && resp.Body != nil {
			resp.Body = limitEvents(resp.Body, provider, lim)
		}
		return resp, err
	}))
	stream := a.client.Messages.NewStreaming(ctx, params, ro...)
	defer stream.Close()
	budget := newBudget(provider, lim)
	var text, thought strings.Builder
	resp := &Response{Model: a.profile.Model}
	// say keeps and emits a piece of text or thought, within the budget.
	say := func(kind EventKind, s string) error {
		if s == "" {
			return nil
		}
		if err := budget.say(len(s)); err != nil {
			return err
		}
		if kind == EventThought {
			thought.WriteString(s)
		} else {
			text.WriteString(s)
		}
		emit(Event{Kind: kind, Text: s})
		return nil
	}
	blocks := map[int64]*anthropicBlock{}
	var order []int64 // the blocks' indexes in the order they started
	var stopReason string
	var counts [4]int64 // input, cache read, cache write, output tokens
	gotEvent, stopped, usageSent := false, false, false

	finish := func(b *anthropicBlock) {
		if b.done || b.typ != "tool_use" {
			b.done = true
			return
		}
		b.done = true
		raw := b.input.Bytes()
		if len(bytes.TrimSpace(raw)) == 0 {
			raw = []byte(b.start)
		}
		call := ToolCall{ID: b.id, Name: b.name, Arguments: toolArguments(raw)}
		resp.ToolCalls = append(resp.ToolCalls, call)
		emit(Event{Kind: EventToolCall, ToolCall: &call})
	}
	sendUsage := func() {
		u := resp.Usage
		usageSent = true
		emit(Event{Kind: EventUsage, Usage: &u})
	}

	for stream.Next() {
		if ctx.Err() != nil { // events already read are not given once cancelled
			return resp, TransportError(ctx, a.profile.Provider, ctx.Err(), true)
		}
		gotEvent = true
		ev := stream.Current()
		var err error // of a piece over the budget
		switch ev.Type {
		case "message_start":
			if ev.Message.Model != "" {
				resp.Model = string(ev.Message.Model)
			}
			u := ev.Message.Usage
			counts = [4]int64{u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.OutputTokens}
			resp.Usage = anthropicUsage(counts)
		case "content_block_start":
			cb := ev.ContentBlock
			b := &anthropicBlock{typ: cb.Type, id: cb.ID, name: cb.Name}
			if cb.JSON.Input.Valid() {
				b.start = cb.JSON.Input.Raw()
			}
			if old, ok := blocks[ev.Index]; ok {
				b.size = old.size // replaced
			} else {
				if err := budget.newCall(0); err != nil {
					return resp, err
				}
				order = append(order, ev.Index)
			}
			if err := budget.resize(&b.size, len(b.id)+len(b.name)+len(b.start)); err != nil {
				return resp, err
			}
			blocks[ev.Index] = b
			switch cb.Type {
			case "text":
				err = say(EventText, cb.Text)
			case "thinking":
				err = say(EventThought, cb.Thinking)
			}
		case "content_block_delta":
			d := ev.Delta
			switch d.Type {
			case "text_delta":
				err = say(EventText, d.Text)
			case "thinking_delta":
				err = say(EventThought, d.Thinking)
			case "input_json_delta":
				if b := blocks[ev.Index]; b != nil {
					if err = budget.grow(&b.size, len(d.PartialJSON)); err == nil {
						b.input.WriteString(d.PartialJSON)
					}
				}
			}
		case "content_block_stop":
			if b := blocks[ev.Index]; b != nil {
				finish(b)
			}
		case "message_delta":
			stopReason = string(ev.Delta.StopReason)
			// Every count here is a total for the message; those that
			// are missing keep message_start's.
			u := ev.Usage
			for i, f := range []struct {
				valid bool
				n     int64
			}{{u.JSON.InputTokens.Valid(), u.InputTokens}, {u.JSON.CacheReadInputTokens.Valid(), u.CacheReadInputTokens},
				{u.JSON.CacheCreationInputTokens.Valid(), u.CacheCreationInputTokens}, {u.JSON.OutputTokens.Valid(), u.OutputTokens}} {
				if f.valid {
					counts[i] = f.n
				}
			}
			resp.Usage = anthropicUsage(counts)
			sendUsage()
		case "message_stop":
			stopped = true
		}
		if err != nil {
			return resp, err
		}
	}
	if err := stream.Err(); err != nil {
		return resp, a.streamError(ctx, err, gotEvent)
	}
	if !stopped {
		if ctx.Err() != nil {
			return resp, TransportError(ctx, a.profile.Provider, ctx.Err(), true)
		}
		msg := "the stream ended before message_stop"
		if !gotEvent {
			msg = "the stream ended without an event"
		}
		return resp, &Error{Kind: KindStream, Provider: a.profile.Provider, Message: msg}
	}
	for _, i := range order { // blocks a server never stopped
		finish(blocks[i])
	}
	if !usageSent && (resp.Usage.InputTokens > 0 || resp.Usage.OutputTokens > 0) {
		sendUsage()
	}
	resp.Text, resp.Thought = text.String(), thought.String()
	resp.Stop = anthropicStop(stopReason, len(resp.ToolCalls) > 0)
	return resp, nil
}

// anthropicUsage is our usage of Anthropic's counts (input, cache read,
// cache write, output): Anthropic's input_tokens leave out the tokens read
// from and written to the cache; ours count them.
func anthropicUsage(c [4]int64) Usage {
	return Usage{InputTokens: int(c[0] + c[1] + c[2]), CachedTokens: int(c[1]), OutputTokens: int(c[3])}
}

// anthropicStop maps Anthropic's stop_reason to ours.
func anthropicStop(reason string, calls bool) StopReason {
	switch reason {
	case "tool_use":
		return StopToolUse
	case "max_tokens", "model_context_window_exceeded":
		return StopMaxTokens
	case "refusal":
		return StopRefusal
	case "end_turn", "stop_sequence", "pause_turn":
		return StopEndTurn
	}
	if calls {
		return StopToolUse
	}
	return StopEndTurn
}

// streamError turns the SDK's error into an *Error: an HTTP error answer
// is classified by its status, headers and body; an error event in the
// stream (the answer's status was 200) by its type; anything else is the
// transport's.
func (a *anthropicProvider) streamError(ctx context.Context, err error, gotEvent bool) error {
	provider := a.profile.Provider
	if ctx.Err() != nil {
		return TransportError(ctx, provider, err, true)
	}
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		raw := []byte(apiErr.RawJSON())
		if apiErr.StatusCode >= 400 {
			var h http.Header
			if apiErr.Response != nil {
				h = apiErr.Response.Header
			}
			e := Classify(provider, apiErr.StatusCode, h, raw)
			e.Err = err
			return e
		}
		return streamErrorEvent(provider, raw, err)
	}
	if s, ok := strings.CutPrefix(err.Error(), "received error while streaming: "); ok {
		return streamErrorEvent(provider, []byte(s), err)
	}
	return TransportError(ctx, provider, err, gotEvent)
}

// streamErrorEvent is the *Error of an `event: error` in a stream:
// Anthropic's {"type":"error","error":{"type":"overloaded_error",...}} or
// llama-server's {"code":500,"message":...,"type":"server_error"}.
func streamErrorEvent(provider string, data []byte, err error) *Error {
	var v struct {
		Type  string `json:"type"`
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &v)
	typ := v.Error.Type
	if typ == "" {
		typ = v.Type
	}
	e := &Error{Kind: KindStream, Provider: provider, Message: errorMessage(data), Err: err}
	switch typ {
	case "overloaded_error":
		e.Kind = KindOverloaded
	case "rate_limit_error":
		e.Kind = KindRateLimit
	}
	if e.Message == "" {
		e.Message = "the stream broke with an error event"
	}
	if e.Kind == KindStream {
		e.Message = "the stream broke: " + e.Message
	}
	return e
}
