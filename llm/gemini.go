package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The Gemini adapter: generateContent streamed (streamGenerateContent with
// alt=sse) of the Gemini API, hand-written over net/http rather than over
// the google.golang.org/genai SDK, because that SDK
//   - drops the response's headers from its APIError, so a Retry-After
//     cannot be honoured (Classify needs the status, headers and body);
//   - reads the process environment itself (GOOGLE_API_KEY,
//     GOOGLE_GEMINI_BASE_URL, GOOGLE_GENAI_USE_VERTEXAI, ...), behind
//     Options.Getenv, with no way to turn that off from outside;
//   - writes to the standard library's global log (stream errors, warnings)
//     instead of Options.Logger;
//
// and it would bring cloud.google.com/go/auth, OpenCensus and other modules
// for what is one JSON body and an SSE stream of JSON objects.
//
// Wire format (https://ai.google.dev/api/generate-content):
// POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse with the
// key in x-goog-api-key; each SSE event's data is one
// GenerateContentResponse.
//
// Call ids: the Gemini API gives a functionCall an id only sometimes; a
// call without one gets call_<n>, n counting the calls of the turn from 1.
// Ids are sent back in functionCall and functionResponse parts, which the
// API documents for matching responses to calls. Thought signatures (which
// Gemini 3 requires back on the function calls of the current turn) are
// kept by the provider, by call, and sent back with the call they came
// with.

func init() {
	register(ProviderGemini, "generateContent", newGemini)
}

const geminiDefaultBase = "https://generativelanguage.googleapis.com"

type geminiProvider struct {
	profile Profile
	opts    Options
	key     string
	url     string

	mu         sync.Mutex
	signatures map[string]string // by geminiCallKey
	sigBytes   int               // of the signatures' keys and values
}

func newGemini(p Profile, key string, opts Options) (Provider, error) {
	base := strings.TrimRight(p.BaseURL, "/")
	if base == "" {
		base = geminiDefaultBase
	}
	if _, err := url.Parse(base); err != nil {
		return nil, &Error{Kind: KindConfig, Provider: p.Provider, Message: fmt.Sprintf("profile %q: baseURL: %v", p.Name, err)}
	}
	// A base URL that names the API version (…/v1beta) is used as is.
	if last := base[strings.LastIndex(base, "/")+1:]; !strings.HasPrefix(last, "v1") {
		base += "/v1beta"
	}
	model := strings.TrimPrefix(p.Model, "models/")
	u := base + "/models/" + url.PathEscape(model) + ":streamGenerateContent?alt=sse"
	return &geminiProvider{profile: p, opts: opts, key: key, url: u, signatures: map[string]string{}}, nil
}

func (g *geminiProvider) Profile() Profile { return g.profile }

// The request body.
type (
	geminiRequest struct {
		Contents          []geminiContent  `json:"contents"`
		SystemInstruction *geminiContent   `json:"systemInstruction,omitempty"`
		Tools             []geminiTool     `json:"tools,omitempty"`
		GenerationConfig  *geminiGenConfig `json:"generationConfig,omitempty"`
	}
	geminiContent struct {
		Role  string       `json:"role,omitempty"`
		Parts []geminiPart `json:"parts"`
	}
	geminiPart struct {
		Text             string                  `json:"text,omitempty"`
		Thought          bool                    `json:"thought,omitempty"`
		ThoughtSignature string                  `json:"thoughtSignature,omitempty"`
		FunctionCall     *geminiFunctionCall     `json:"functionCall,omitempty"`
		FunctionResponse *geminiFunctionResponse `json:"functionResponse,omitempty"`
		InlineData       *geminiBlob             `json:"inlineData,omitempty"`
	}
	geminiBlob struct {
		MIMEType string `json:"mimeType"`
		Data     []byte `json:"data"` // base64 in JSON
	}
	geminiFunctionCall struct {
		ID   string          `json:"id,omitempty"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args,omitempty"`
	}
	geminiFunctionResponse struct {
		ID       string         `json:"id,omitempty"`
		Name     string         `json:"name"`
		Response map[string]any `json:"response"`
	}
	geminiTool struct {
		FunctionDeclarations []geminiFunctionDeclaration `json:"functionDeclarations"`
	}
	geminiFunctionDeclaration struct {
		Name                 string          `json:"name"`
		Description          string          `json:"description,omitempty"`
		ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
	}
	geminiGenConfig struct {
		MaxOutputTokens int      `json:"maxOutputTokens,omitempty"`
		Temperature     *float64 `json:"temperature,omitempty"`
		StopSequences   []string `json:"stopSequences,omitempty"`
	}
)

// geminiCallKey identifies a call for its thought signature.
func geminiCallKey(id, name string, args json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, args) != nil {
		b.Reset()
		b.Write(args)
	}
	return id + "\x00" + name + "\x00" + b.String()
}

// body is the JSON body of a request.
func (g *geminiProvider) body(req *Request) ([]byte, error) {
	var body geminiRequest
	var system []string
	if strings.TrimSpace(req.System) != "" {
		system = append(system, req.System)
	}
	g.mu.Lock()
	for _, m := range req.Messages {
		last := len(body.Contents) - 1
		switch m.Role {
		case RoleSystem:
			if strings.TrimSpace(m.Text) != "" {
				system = append(system, m.Text)
			}
		case RoleUser:
			var parts []geminiPart
			for _, img := range m.Images {
				parts = append(parts, geminiPart{InlineData: &geminiBlob{MIMEType: img.MIMEType, Data: img.Data}})
			}
			if m.Text != "" {
				parts = append(parts, geminiPart{Text: m.Text})
			}
			if len(parts) > 0 {
				body.Contents = append(body.Contents, geminiContent{Role: "user", Parts: parts})
			}
		case RoleAssistant:
			var parts []geminiPart
			if m.Text != "" {
				parts = append(parts, geminiPart{Text: m.Text})
			}
			for _, c := range m.ToolCalls {
				args := toolInputObject(c.Arguments)
				parts = append(parts, geminiPart{
					FunctionCall:     &geminiFunctionCall{ID: c.ID, Name: c.Name, Args: args},
					ThoughtSignature: g.signatures[geminiCallKey(c.ID, c.Name, c.Arguments)],
				})
			}
			if len(parts) > 0 {
				body.Contents = append(body.Contents, geminiContent{Role: "model", Parts: parts})
			}
		case RoleToolResult:
			if m.Result == nil {
				continue
			}
			resp := map[string]any{"output": m.Result.Content}
			if m.Result.IsError {
				resp = map[string]any{"error": m.Result.Content}
			}
			part := geminiPart{FunctionResponse: &geminiFunctionResponse{ID: m.Result.CallID, Name: m.Result.Name, Response: resp}}
			// The responses of one turn's calls go in one content.
			if last >= 0 && body.Contents[last].Role == "user" && body.Contents[last].Parts[0].FunctionResponse != nil {
				body.Contents[last].Parts = append(body.Contents[last].Parts, part)
				continue
			}
			body.Contents = append(body.Contents, geminiContent{Role: "user", Parts: []geminiPart{part}})
		}
	}
	g.mu.Unlock()
	if len(system) > 0 {
		body.SystemInstruction = &geminiContent{Parts: []geminiPart{{Text: strings.Join(system, "\n\n")}}}
	}
	if len(req.Tools) > 0 {
		var decls []geminiFunctionDeclaration
		for _, t := range req.Tools {
			t = providerTool(t)
			d := geminiFunctionDeclaration{Name: t.Name, Description: t.Description}
			if isJSONObject(t.Schema) {
				d.ParametersJSONSchema = t.Schema
			}
			decls = append(decls, d)
		}
		body.Tools = []geminiTool{{FunctionDeclarations: decls}}
	}
	gc := geminiGenConfig{MaxOutputTokens: req.MaxOutputTokens, Temperature: req.Temperature, StopSequences: req.Stop}
	if gc.MaxOutputTokens <= 0 {
		gc.MaxOutputTokens = g.profile.MaxOutputTokens
	}
	if gc.Temperature == nil {
		gc.Temperature = g.profile.Temperature
	}
	if gc.MaxOutputTokens > 0 || gc.Temperature != nil || len(gc.StopSequences) > 0 {
		body.GenerationConfig = &gc
	}
	b, err := json.Marshal(body)
	if err != nil || len(g.profile.ExtraBody) == 0 {
		return b, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	mergeJSON(m, g.profile.ExtraBody)
	return json.Marshal(m)
}

// mergeJSON merges extra into dst: objects merge key by key, any other
// value replaces dst's.
func mergeJSON(dst, extra map[string]any) {
	for k, v := range extra {
		if sub, ok := v.(map[string]any); ok {
			if d, ok := dst[k].(map[string]any); ok {
				mergeJSON(d, sub)
				continue
			}
		}
		dst[k] = v
	}
}

func (g *geminiProvider) Stream(ctx context.Context, req *Request, emit func(Event)) (*Response, error) {
	body, err := g.body(req)
	if err != nil {
		return nil, &Error{Kind: KindBadRequest, Provider: g.profile.Provider, Message: "the request cannot be encoded: " + err.Error(), Err: err}
	}
	return Retrying(ctx, &g.opts, emit, func(emit func(Event)) (*Response, error) {
		return g.attempt(ctx, body, req.Limits, emit)
	})
}

// The streamed answer: GenerateContentResponse.
type (
	geminiResponse struct {
		Candidates     []geminiCandidate `json:"candidates"`
		PromptFeedback *struct {
			BlockReason string `json:"blockReason"`
		} `json:"promptFeedback"`
		UsageMetadata *geminiUsage    `json:"usageMetadata"`
		ModelVersion  string          `json:"modelVersion"`
		Error         *geminiAPIError `json:"error"`
	}
	geminiCandidate struct {
		Content      geminiContent `json:"content"`
		FinishReason string        `json:"finishReason"`
		Index        int           `json:"index"`
	}
	geminiUsage struct {
		PromptTokenCount        int `json:"promptTokenCount"`
		CandidatesTokenCount    int `json:"candidatesTokenCount"`
		CachedContentTokenCount int `json:"cachedContentTokenCount"`
		ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
	}
	geminiAPIError struct {
		Code    int               `json:"code"`
		Message string            `json:"message"`
		Status  string            `json:"status"`
		Details []json.RawMessage `json:"details"`
	}
)

// attempt sends the request once and reads its stream, until it ends or
// the answer is over its limits.
func (g *geminiProvider) attempt(ctx context.Context, body []byte, lim Limits, emit func(Event)) (*Response, error) {
	provider := g.profile.Provider
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, g.url, bytes.NewReader(body))
	if err != nil {
		return nil, &Error{Kind: KindConfig, Provider: provider, Message: err.Error(), Err: err}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	if g.key != "" {
		hreq.Header.Set("x-goog-api-key", g.key)
	}
	hresp, err := g.opts.HTTPClient.Do(hreq)
	if err != nil {
		return nil, TransportError(ctx, provider, err, false)
	}
	defer hresp.Body.Close()
	if hresp.StatusCode != http.StatusOK {
		b, err := io.ReadAll(io.LimitReader(hresp.Body, 1<<20))
		if err != nil && ctx.Err() != nil {
			return nil, TransportError(ctx, provider, err, false)
		}
		return nil, geminiClassify(provider, hresp.StatusCode, hresp.Header, b)
	}

	budget := newBudget(provider, lim)
	var text, thought strings.Builder
	resp := &Response{Model: g.profile.Model}
	var finish string
	var usage *geminiUsage
	calls := 0
	sc := bufio.NewScanner(limitEvents(hresp.Body, provider, lim))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var data bytes.Buffer
	handle := func(data []byte) error {
		var chunk geminiResponse
		if err := json.Unmarshal(data, &chunk); err != nil {
			return &Error{Kind: KindStream, Provider: provider, Message: "the stream sent what is not JSON: " + err.Error(), Err: err}
		}
		if e := chunk.Error; e != nil {
			return geminiStreamError(provider, e, data)
		}
		if chunk.ModelVersion != "" {
			resp.Model = chunk.ModelVersion
		}
		if chunk.UsageMetadata != nil {
			usage = chunk.UsageMetadata
		}
		if pf := chunk.PromptFeedback; pf != nil && pf.BlockReason != "" {
			finish = "BLOCKED:" + pf.BlockReason
		}
		for _, c := range chunk.Candidates {
			if c.Index != 0 {
				continue // one candidate is asked for
			}
			for _, p := range c.Content.Parts {
				switch {
				case p.FunctionCall != nil:
					fc := p.FunctionCall
					if err := budget.newCall(len(fc.ID) + len(fc.Name) + len(fc.Args) + len(p.ThoughtSignature)); err != nil {
						return err
					}
					calls++
					id := p.FunctionCall.ID
					if id == "" {
						id = fmt.Sprintf("call_%d", calls)
					}
					args := p.FunctionCall.Args
					if len(bytes.TrimSpace(args)) == 0 || string(args) == "null" {
						args = json.RawMessage(`{}`)
					}
					call := ToolCall{ID: id, Name: p.FunctionCall.Name, Arguments: args}
					if p.ThoughtSignature != "" {
						g.keepSignature(geminiCallKey(id, call.Name, args), p.ThoughtSignature)
					}
					resp.ToolCalls = append(resp.ToolCalls, call)
					emit(Event{Kind: EventToolCall, ToolCall: &call})
				case p.Text != "":
					if err := budget.say(len(p.Text)); err != nil {
						return err
					}
					kind, b := EventText, &text
					if p.Thought {
						kind, b = EventThought, &thought
					}
					b.WriteString(p.Text)
					emit(Event{Kind: kind, Text: p.Text})
				}
			}
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
		}
		return nil
	}
	for sc.Scan() {
		if ctx.Err() != nil {
			return resp, TransportError(ctx, provider, ctx.Err(), true)
		}
		line := bytes.TrimSuffix(sc.Bytes(), []byte("\r"))
		if len(line) == 0 {
			if data.Len() > 0 {
				if err := handle(data.Bytes()); err != nil {
					return resp, err
				}
				data.Reset()
			}
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(v, []byte(" ")))
		}
	}
	if err := sc.Err(); err != nil {
		return resp, TransportError(ctx, provider, err, true)
	}
	if ctx.Err() != nil {
		return resp, TransportError(ctx, provider, ctx.Err(), true)
	}
	if data.Len() > 0 { // the last event, without its blank line
		if err := handle(data.Bytes()); err != nil {
			return resp, err
		}
	}
	if finish == "" {
		return resp, &Error{Kind: KindStream, Provider: provider, Message: "the stream ended before a finish reason"}
	}
	if u := usage; u != nil {
		resp.Usage = Usage{
			InputTokens:  u.PromptTokenCount,
			OutputTokens: u.CandidatesTokenCount + u.ThoughtsTokenCount,
			CachedTokens: u.CachedContentTokenCount,
		}
		ev := resp.Usage
		emit(Event{Kind: EventUsage, Usage: &ev})
	}
	resp.Text, resp.Thought = text.String(), thought.String()
	resp.Stop = geminiStop(finish, len(resp.ToolCalls) > 0)
	return resp, nil
}

// keepSignature keeps a call's thought signature for when the call is sent
// back. A key holds the call's arguments: when the signatures are many, or
// large together, half of them go.
func (g *geminiProvider) keepSignature(key, sig string) {
	const most, mostBytes = 4096, 16 << 20
	g.mu.Lock()
	defer g.mu.Unlock()
	if old, ok := g.signatures[key]; ok {
		g.sigBytes -= len(key) + len(old)
	}
	size := len(key) + len(sig)
	if len(g.signatures) >= most || g.sigBytes+size > mostBytes {
		for k, v := range g.signatures {
			if len(g.signatures) <= most/2 && g.sigBytes+size <= mostBytes/2 {
				break
			}
			delete(g.signatures, k)
			g.sigBytes -= len(k) + len(v)
		}
	}
	g.signatures[key] = sig
	g.sigBytes += size
}

// geminiStop maps a finishReason to ours.
func geminiStop(reason string, calls bool) StopReason {
	switch {
	case reason == "MAX_TOKENS":
		return StopMaxTokens
	case strings.HasPrefix(reason, "BLOCKED:"), reason == "SAFETY", reason == "RECITATION", reason == "PROHIBITED_CONTENT",
		reason == "BLOCKLIST", reason == "SPII", reason == "IMAGE_SAFETY", reason == "IMAGE_PROHIBITED_CONTENT":
		return StopRefusal
	case calls:
		return StopToolUse
	}
	return StopEndTurn
}

// geminiClassify is Classify with Gemini's ways: a key that is not valid
// is a 400 with reason API_KEY_INVALID, and the wait of a 429 is in the
// body's RetryInfo (retryDelay) rather than a Retry-After header.
func geminiClassify(provider string, status int, h http.Header, body []byte) *Error {
	e := Classify(provider, status, h, body)
	if strings.Contains(string(body), "API_KEY_INVALID") {
		e.Kind = KindAuth
	}
	if e.RetryAfter == 0 {
		var v struct {
			Error geminiAPIError `json:"error"`
		}
		if json.Unmarshal(body, &v) == nil {
			e.RetryAfter = geminiRetryDelay(v.Error.Details)
		}
	}
	return e
}

// geminiRetryDelay is the retryDelay of a google.rpc.RetryInfo detail, 0
// when there is none.
func geminiRetryDelay(details []json.RawMessage) time.Duration {
	for _, d := range details {
		var info struct {
			Type       string `json:"@type"`
			RetryDelay string `json:"retryDelay"`
		}
		if json.Unmarshal(d, &info) != nil || !strings.HasSuffix(info.Type, "google.rpc.RetryInfo") {
			continue
		}
		if w, err := time.ParseDuration(info.RetryDelay); err == nil && w > 0 {
			return w
		}
	}
	return 0
}

// geminiStreamError is the *Error of an error object in the stream.
func geminiStreamError(provider string, e *geminiAPIError, data []byte) *Error {
	out := &Error{Kind: KindStream, Provider: provider, Message: e.Message, RetryAfter: geminiRetryDelay(e.Details)}
	switch {
	case e.Code == http.StatusTooManyRequests || e.Status == "RESOURCE_EXHAUSTED":
		out.Kind = KindRateLimit
	case e.Code == http.StatusServiceUnavailable || e.Status == "UNAVAILABLE":
		out.Kind = KindOverloaded
	}
	if out.Message == "" {
		out.Message = errorMessage(data)
	}
	if out.Kind == KindStream {
		out.Message = "the stream broke: " + out.Message
	}
	return out
}
