package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// What the two OpenAI adapters (openai_chat.go, openai_responses.go) share:
// the SDK's options, the errors, tool schemas and arguments.

// openAIBaseURL is OpenAI's endpoint, for an "openai" profile without one.
const openAIBaseURL = "https://api.openai.com/v1/"

// openAIOptions are the SDK's options of a profile. The services are made
// with them directly, not through openai.NewClient, so that nothing is read
// from the environment (OPENAI_API_KEY, OPENAI_ORG_ID, OPENAI_CUSTOM_HEADERS…):
// an openai-compatible server must not get the user's OpenAI key. The SDK's
// retries are off: Retrying retries.
func openAIOptions(p Profile, key string, opts Options) []option.RequestOption {
	base := p.BaseURL
	if base == "" {
		base = openAIBaseURL
	}
	o := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithHTTPClient(opts.HTTPClient),
		option.WithMaxRetries(0),
	}
	if key != "" {
		o = append(o, option.WithAPIKey(key))
	}
	return o
}

// openAIError is the *Error of what the SDK or the stream returned: an
// HTTP error answer (the SDK's *openai.Error, whose Response keeps the
// headers and the whole body) classified, an error event of the stream,
// else a transport error (cancelled when ctx is done).
func openAIError(ctx context.Context, provider string, err error, streaming bool) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if ctx.Err() != nil {
		return TransportError(ctx, provider, err, streaming)
	}
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		var body []byte
		var header http.Header
		if apiErr.Response != nil {
			header = apiErr.Response.Header
			if apiErr.Response.Body != nil {
				body, _ = io.ReadAll(apiErr.Response.Body)
			}
		}
		if len(body) == 0 {
			body = []byte(apiErr.RawJSON())
		}
		return Classify(provider, apiErr.StatusCode, header, body)
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		return openaiStreamError(provider, se.Event.Data)
	}
	return TransportError(ctx, provider, err, streaming)
}

// openaiStreamError is the *Error of an error the server sent in the stream
// after its 200: llama-server's `event: error` ({"code": 500, "message":
// ...}), OpenAI's {"error": {...}} chunk, the Responses API's "error" event
// ({"type": "error", "code": ..., "message": ...}). A numeric code of 400 or
// more is classified like an HTTP status; else the kind is read from the
// text, and is KindStream when it says nothing known.
func openaiStreamError(provider string, data []byte) *Error {
	var v struct {
		Code  json.RawMessage `json:"code"`
		Error struct {
			Code json.RawMessage `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &v)
	code := v.Code
	if len(code) == 0 {
		code = v.Error.Code
	}
	msg := errorMessage(data)
	if n, err := strconv.Atoi(string(code)); err == nil && n >= 400 {
		e := Classify(provider, n, nil, data)
		e.Status = 0
		e.Message = fmt.Sprintf("error in the stream (code %d): %s", n, msg)
		return e
	}
	var s string
	_ = json.Unmarshal(code, &s)
	return &Error{Kind: streamErrorKind(s + " " + string(data)), Provider: provider, Message: "error in the stream: " + msg}
}

// streamErrorKind is the kind of an error event without an HTTP-like code,
// from its code and text (OpenAI's codes: rate_limit_exceeded,
// server_error, server_is_overloaded, context_length_exceeded…).
func streamErrorKind(text string) Kind {
	lower := strings.ToLower(text)
	switch {
	case overflowText(lower):
		return KindContextOverflow
	case strings.Contains(lower, "rate_limit"):
		return KindRateLimit
	case strings.Contains(lower, "overloaded"):
		return KindOverloaded
	}
	return KindStream
}

// schemaMap is a tool's JSON Schema as the SDK's params want it; an empty
// schema is an object without properties.
func schemaMap(t Tool) (map[string]any, error) {
	if len(bytes.TrimSpace(t.Schema)) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(t.Schema, &m); err != nil {
		return nil, fmt.Errorf("tool %q: its schema is not a JSON object: %w", t.Name, err)
	}
	return m, nil
}

// wireArguments are a call's arguments as they are sent back: the JSON
// text, and {} for malformed ones (a JSON string, see toolArguments).
func wireArguments(a json.RawMessage) string {
	a = bytes.TrimSpace(a)
	if len(a) == 0 {
		return "{}"
	}
	if a[0] == '"' {
		// Malformed arguments (see toolArguments) go back as {}: servers
		// that parse the history (llama-server, vLLM) refuse every later
		// request of the session otherwise. The tool result tells the
		// model what was wrong.
		return "{}"
	}
	return string(a)
}

// toolResultText is the text a tool result sends; the OpenAI APIs have no
// error flag, so a failed call says so in its text.
func toolResultText(r *ToolResult) string {
	if r.IsError {
		return "Error: " + r.Content
	}
	return r.Content
}

// requestError is the *Error of a request that cannot be sent as it is.
func requestError(provider string, err error) *Error {
	return &Error{Kind: KindBadRequest, Provider: provider, Message: err.Error(), Err: err}
}

// limitedBody is the SDK option that reads the answer's body through
// limitEvents.
func limitedBody(provider string, lim Limits) option.RequestOption {
	return option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(r)
		if resp != nil && resp.Body != nil {
			resp.Body = limitEvents(resp.Body, provider, lim)
		}
		return resp, err
	})
}
