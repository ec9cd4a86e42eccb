package llm

import (
	"fmt"
	"time"
)

// Kind is the kind of an [Error]; each is also a sentinel for errors.Is:
// errors.Is(err, llm.ErrRateLimit).
type Kind string

// The kinds of errors an adapter returns.
const (
	KindMissingKey      Kind = "missing_key"      // no API key in the named variable
	KindAuth            Kind = "auth"             // 401/403: the key was refused
	KindModelNotFound   Kind = "model_not_found"  // the model does not exist or is not available
	KindContextOverflow Kind = "context_overflow" // the prompt is too long for the model
	KindRateLimit       Kind = "rate_limit"       // 429
	KindOverloaded      Kind = "overloaded"       // 529 and 503
	KindServer          Kind = "server"           // other 5xx
	KindBadRequest      Kind = "bad_request"      // other 4xx
	KindStream          Kind = "stream"           // the stream broke or could not be read
	KindCanceled        Kind = "canceled"         // the context was cancelled
	KindConfig          Kind = "config"           // the profile cannot be used
	KindAnswerTooLarge  Kind = "answer_too_large" // the answer passed its Limits; the rest was not read
)

// Error is an adapter's error.
type Error struct {
	Kind     Kind
	Provider string
	// Status is the HTTP status, 0 when there was none.
	Status int
	// Message is for people: what went wrong and, where it helps, what to do.
	Message string
	// RetryAfter is what the server asked to wait, 0 when it did not say.
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	s := e.Provider + ": " + e.Message
	if e.Status != 0 {
		s = fmt.Sprintf("%s: HTTP %d: %s", e.Provider, e.Status, e.Message)
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches the sentinel of its kind.
func (e *Error) Is(target error) bool {
	k, ok := target.(kindError)
	return ok && Kind(k) == e.Kind
}

// Retryable reports whether the request may be sent again as is.
func (e *Error) Retryable() bool {
	switch e.Kind {
	case KindRateLimit, KindOverloaded, KindServer:
		return true
	}
	return false
}

type kindError Kind

func (k kindError) Error() string { return string(k) }

// Sentinels of the kinds, for errors.Is.
var (
	ErrMissingKey      error = kindError(KindMissingKey)
	ErrAuth            error = kindError(KindAuth)
	ErrModelNotFound   error = kindError(KindModelNotFound)
	ErrContextOverflow error = kindError(KindContextOverflow)
	ErrRateLimit       error = kindError(KindRateLimit)
	ErrOverloaded      error = kindError(KindOverloaded)
	ErrServer          error = kindError(KindServer)
	ErrBadRequest      error = kindError(KindBadRequest)
	ErrStream          error = kindError(KindStream)
	ErrCanceled        error = kindError(KindCanceled)
	ErrConfig          error = kindError(KindConfig)
	ErrAnswerTooLarge  error = kindError(KindAnswerTooLarge)
)
