package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/nexuscocreate/nexus/llm"
)

// The agent core's typed errors, one per component that can fail, as the
// Framework Core API names them. Each wraps its cause: use errors.As to
// learn which component failed and errors.Is to learn why (for the LIAL,
// the llm package's sentinels: errors.Is(err, llm.ErrRateLimit)).
type (
	// ConfigError: the configuration cannot be used (a profile that does
	// not exist, token_budget pruning without a context window).
	ConfigError struct{ Err error }
	// ComponentInitError: a component the agent needs is missing.
	ComponentInitError struct {
		Component string
		Err       error
	}
	// DCMInitError: the context file could not be read.
	DCMInitError struct{ Err error }
	// LIALInitError: no adapter could be made for the profile (no key, an
	// unknown provider).
	LIALInitError struct {
		Profile string
		Err     error
	}
	// LIALError: a request to the model failed.
	LIALError struct {
		Profile string
		Err     error
	}
	// TEPSInitError: the tools could not be offered to the model.
	TEPSInitError struct{ Err error }
	// ToolExecutionError: the turn stopped because of its tool calls
	// (repeated malformed calls). A single failed or declined call is not
	// an error: it goes back to the model as a result.
	ToolExecutionError struct {
		Tool string
		Err  error
	}
)

func (e *ConfigError) Error() string { return "agent config: " + e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }
func (e *ComponentInitError) Error() string {
	return fmt.Sprintf("agent: %s: %v", e.Component, e.Err)
}
func (e *ComponentInitError) Unwrap() error { return e.Err }
func (e *DCMInitError) Error() string       { return "agent context: " + e.Err.Error() }
func (e *DCMInitError) Unwrap() error       { return e.Err }
func (e *LIALInitError) Error() string {
	return fmt.Sprintf("agent model (profile %q): %v", e.Profile, e.Err)
}
func (e *LIALInitError) Unwrap() error { return e.Err }
func (e *LIALError) Error() string     { return e.Err.Error() }
func (e *LIALError) Unwrap() error     { return e.Err }
func (e *TEPSInitError) Error() string { return "agent tools: " + e.Err.Error() }
func (e *TEPSInitError) Unwrap() error { return e.Err }
func (e *ToolExecutionError) Error() string {
	if e.Tool == "" {
		return "agent tools: " + e.Err.Error()
	}
	return fmt.Sprintf("agent tool %s: %v", e.Tool, e.Err)
}
func (e *ToolExecutionError) Unwrap() error { return e.Err }

// PromptError: the prompt cannot be sent as it is (images for a model
// that takes none, images with a special command). The message says why
// and what to change; nothing was added to the session.
type PromptError struct{ Msg string }

func (e *PromptError) Error() string { return e.Msg }

// CommandError: a special command was misused (unknown, or without the
// argument it needs). The message says how to write it.
type CommandError struct{ Msg string }

func (e *CommandError) Error() string { return e.Msg }

func commandErr(format string, args ...any) error {
	return &CommandError{Msg: fmt.Sprintf(format, args...)}
}

// Code is what kind of answer a door gives an error of the agent, the same
// for every door (gRPC status codes, the editor's error codes, ACP).
type Code string

// The codes of [ErrorCode].
const (
	CodeNotFound           Code = "not_found"
	CodeFailedPrecondition Code = "failed_precondition" // config, keys, a busy session: the person must act
	CodeUnavailable        Code = "unavailable"         // the model failed, or the daemon is stopping
	CodeAborted            Code = "aborted"             // the turn stopped on its tool calls
	CodeInvalidArgument    Code = "invalid_argument"    // a special command misused
	CodeCanceled           Code = "cancelled"
	CodeInternal           Code = "internal"
)

// ErrorCode classifies an error of the Service. A model error whose cause
// only the person can fix (a key missing or refused, a model that does not
// exist) is failed_precondition, not unavailable.
func ErrorCode(err error) Code {
	var (
		cfg     *ConfigError
		lialIni *LIALInitError
		dcm     *DCMInitError
		teps    *TEPSInitError
		lial    *LIALError
		tool    *ToolExecutionError
		cmd     *CommandError
	)
	switch {
	case errors.Is(err, ErrNoSession):
		return CodeNotFound
	case errors.Is(err, ErrBusy), errors.As(err, &cfg), errors.As(err, &lialIni), errors.As(err, &dcm), errors.As(err, &teps):
		return CodeFailedPrecondition
	case errors.Is(err, ErrClosed):
		return CodeUnavailable
	case errors.As(err, &lial):
		if errors.Is(err, llm.ErrAuth) || errors.Is(err, llm.ErrMissingKey) || errors.Is(err, llm.ErrModelNotFound) {
			return CodeFailedPrecondition
		}
		return CodeUnavailable
	case errors.As(err, &tool):
		return CodeAborted
	case errors.As(err, &cmd):
		return CodeInvalidArgument
	case errors.Is(err, context.Canceled):
		return CodeCanceled
	}
	return CodeInternal
}

// Errors of sessions.
var (
	// ErrNoSession: no session has that id, or the caller may not see it.
	ErrNoSession = errors.New("no such agent session")
	// ErrBusy: a prompt is already running in the session.
	ErrBusy = errors.New("a prompt is already running in this session; cancel it or wait")
	// ErrClosed: the daemon is shutting down.
	ErrClosed = errors.New("the agent is shutting down")
)
