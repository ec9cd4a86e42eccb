package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Classify turns an HTTP error answer into an *Error of the right kind,
// with the server's own message and the Retry-After it asked for.
func Classify(provider string, status int, header http.Header, body []byte) *Error {
	e := &Error{Provider: provider, Status: status, Message: errorMessage(body), RetryAfter: RetryAfter(header, time.Now())}
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	lower := strings.ToLower(e.Message + " " + string(body))
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Kind = KindAuth
	case status == http.StatusTooManyRequests:
		e.Kind = KindRateLimit
	case status == 529 || status == http.StatusServiceUnavailable:
		e.Kind = KindOverloaded
	case status >= 500:
		e.Kind = KindServer
	case status == http.StatusRequestEntityTooLarge || overflowText(lower):
		e.Kind = KindContextOverflow
	case status == http.StatusNotFound || strings.Contains(lower, "model_not_found") ||
		strings.Contains(lower, "model not found") || strings.Contains(lower, "does not exist"):
		e.Kind = KindModelNotFound
	default:
		e.Kind = KindBadRequest
	}
	return e
}

// overflowText reports whether an error's text says the prompt is too long,
// in the words of OpenAI, Anthropic, Gemini and llama-server.
func overflowText(lower string) bool {
	for _, s := range []string{
		"context_length_exceeded", "maximum context length", "prompt is too long",
		"exceed_context_size", "exceeds the available context size", "context window",
		"input token count", "too many tokens", "request too large", "exceeds the maximum number of tokens",
	} {
		if strings.Contains(lower, s) {
			return true
		}
	}
	return false
}

// errorMessage is the message of a provider's JSON error body
// ({"error": {"message": ...}}, {"error": "..."}, {"message": ...}), or the
// body itself, cut, when it is not JSON.
func errorMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
			return inner.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return s
		case v.Message != "":
			return v.Message
		}
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// RetryAfter is the wait a server asked for: retry-after-ms, or
// Retry-After in seconds or as an HTTP date; 0 when it did not say.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return max(time.Duration(s*float64(time.Second)), 0)
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// TransportError is the *Error of a request that got no HTTP answer, or
// whose stream broke: cancelled when ctx is done, else a stream error (a
// server that cannot be reached is retried as a server error).
func TransportError(ctx context.Context, provider string, err error, streaming bool) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if ctx.Err() != nil {
		return &Error{Kind: KindCanceled, Provider: provider, Message: "cancelled", Err: context.Cause(ctx)}
	}
	if streaming {
		return &Error{Kind: KindStream, Provider: provider, Message: "the stream broke: " + err.Error(), Err: err}
	}
	return &Error{Kind: KindServer, Provider: provider, Message: "no answer: " + err.Error(), Err: err}
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Max == 0 {
		p.Max = 4
	}
	if p.Base <= 0 {
		p.Base = 500 * time.Millisecond
	}
	if p.Cap <= 0 {
		p.Cap = 60 * time.Second
	}
	return p
}

func sleepCtx(done <-chan struct{}, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-done:
		return context.Canceled
	}
}

// Retrying runs attempt until it succeeds, fails in a way that is not
// retried, or the policy's retries are spent. An attempt that emitted an
// event is never retried (the stream broke mid-way: the caller has part of
// a turn). Each retry is emitted as an EventRetry before its wait.
func Retrying(ctx context.Context, opts *Options, emit func(Event), attempt func(emit func(Event)) (*Response, error)) (*Response, error) {
	pol := opts.Retry.withDefaults()
	sleep := opts.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	for n := 1; ; n++ {
		emitted := false
		resp, err := attempt(func(ev Event) { emitted = true; emit(ev) })
		if err == nil {
			return resp, nil
		}
		var e *Error
		if !errors.As(err, &e) || !e.Retryable() || emitted || pol.Max < 0 || n > pol.Max || ctx.Err() != nil {
			return resp, err
		}
		wait := e.RetryAfter
		if wait == 0 {
			wait = pol.Base << (n - 1)
			wait += rand.N(wait/2 + 1)
		}
		if wait > pol.Cap {
			if e.RetryAfter > 0 {
				e.Message += fmt.Sprintf(" (the server asks to retry after %v, more than the %v this client waits)", e.RetryAfter.Round(time.Second), pol.Cap)
				return resp, e
			}
			wait = pol.Cap
		}
		emit(Event{Kind: EventRetry, Retry: &Retry{Attempt: n + 1, Wait: wait, Err: e}})
		if err := sleep(ctx.Done(), wait); err != nil {
			return nil, &Error{Kind: KindCanceled, Provider: e.Provider, Message: "cancelled while waiting to retry", Err: context.Cause(ctx)}
		}
	}
}
