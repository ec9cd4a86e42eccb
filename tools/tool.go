// Package tools is the ToolManager: the registry of tools, the validation
// of their arguments, the permission check, and the lifecycle of every tool
// call (initiated → running → completed / error), published on the event
// bus. The core tools live in tools/core, the process runner in
// tools/command, and the permission policy in tools/policy. Start with
// [NewManager].
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nexuscocreate/nexus/access"
)

// Kind says what a tool does.
type Kind string

const (
	KindRead    Kind = "read"
	KindEdit    Kind = "edit"
	KindDelete  Kind = "delete"
	KindMove    Kind = "move"
	KindSearch  Kind = "search"
	KindExecute Kind = "execute"
	KindFetch   Kind = "fetch"
	KindOther   Kind = "other"
)

// Risk is how much harm a tool can do.
type Risk string

const (
	RiskLow    Risk = "low"
	RiskMedium Risk = "medium"
	RiskHigh   Risk = "high"
)

// Definition describes a tool.
type Definition struct {
	Name        string
	Title       string
	Description string
	// ServerName is empty for core tools, the MCP server's name otherwise.
	ServerName   string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Kind         Kind
	Risk         Risk
	// Annotations are the tool's MCP hints; nil when it gives none (an
	// MCP server's tool without annotations).
	Annotations *Annotations
}

// Annotations are the hints a tool gives of itself, as MCP's tool
// annotations (readOnlyHint, destructiveHint, idempotentHint,
// openWorldHint) say them: for clients and people, which may show them
// or ask less for a read-only tool. They inform; they never lower a
// tool's Risk nor skip its permission check (an MCP server's hints are its
// own word).
type Annotations struct {
	// ReadOnly: the tool does not change its environment.
	ReadOnly bool
	// Destructive: the tool may change or delete what is there, not only
	// add to it. Meaningful when not ReadOnly.
	Destructive bool
	// Idempotent: calling it again with the same arguments changes
	// nothing more. Meaningful when not ReadOnly.
	Idempotent bool
	// OpenWorld: the tool reaches entities outside a closed domain (the
	// network, any program), not only the workspace's files.
	OpenWorld bool
}

// Error codes of a tool call that ended with status error: a closed set.
const (
	CodeInvalidArguments   = "invalid_arguments"
	CodeUnknownTool        = "unknown_tool"
	CodePermissionDenied   = "permission_denied"
	CodeTimeout            = "timeout"
	CodeCancelled          = "cancelled"
	CodeOutputLimit        = "output_limit"
	CodeServerUnavailable  = "server_unavailable"
	CodeExecutionFailed    = "execution_failed"
	CodeSandboxUnavailable = "sandbox_unavailable"
)

// Error is the error of a tool call, with a code of the closed set.
type Error struct {
	Code    string
	Message string
	// Output, when set, is a partial result that goes with the error (for
	// output_limit: the head and tail that were kept).
	Output json.RawMessage
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf returns an *Error with a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invocation is what a handler knows of the call besides its arguments.
type Invocation struct {
	CallID string
	// AppID is the calling app; empty for the person (CLI, editor).
	AppID string
	// Author is the state-layer author of writes the call makes:
	// "app:<id>", "cli" or "editor".
	Author string
	// Party is who acts, with its grants: what the call may touch is
	// decided by it (see package access). A handler that gets no valid
	// Party falls back to [Invocation.Acting].
	Party access.Party
	// Progress reports progress of a long call; it never blocks.
	Progress func(progress, total float64, message string)
	// Shown is the change the person was shown before they allowed the
	// call (see Tool.Preview); nil when no one was asked, or the preview
	// failed. A handler given one writes exactly its After over exactly
	// the content its BeforeSHA256 names, and writes nothing when the
	// file no longer holds that content.
	Shown []ProposedChange
}

// ShownChange returns the change the person was shown for the file at
// path, if any.
func (inv *Invocation) ShownChange(path string) (ProposedChange, bool) {
	if inv == nil {
		return ProposedChange{}, false
	}
	for _, c := range inv.Shown {
		if c.Path == path {
			return c, true
		}
	}
	return ProposedChange{}, false
}

// Acting returns the party of the call: Party when it is set; otherwise an
// app with no grants for an AppID, the person for an Author alone, and no one
// (who may touch nothing) when the invocation names nobody. A door that
// forgets the grants gets less, never more.
func (inv *Invocation) Acting() access.Party {
	switch {
	case inv == nil:
		return access.Party{}
	case inv.Party.Valid():
		return inv.Party
	case inv.AppID != "":
		return access.ForApp(&access.App{ID: inv.AppID})
	case inv.Author != "":
		return access.Person(inv.Author)
	}
	return access.Party{}
}

// Handler runs a tool with arguments that already passed the input schema.
// It returns the result as JSON. An *Error gives the call's error code; any
// other error is execution_failed. A handler must return soon after ctx is
// cancelled.
type Handler func(ctx context.Context, inv *Invocation, args json.RawMessage) (json.RawMessage, error)

// Tool is a definition with its handler.
type Tool struct {
	Definition
	Handler Handler
	// Timeout bounds a call: 0 is the manager's default, negative none (a
	// tool that enforces its own limit, like execute_command).
	Timeout time.Duration
	// Touches says what a call with these (valid) arguments may change in
	// the workspace, for its checkpoint (see [Recorder]); nil, or a zero
	// Touch, is nothing: a read.
	Touches func(args json.RawMessage) Touch
	// Preview, when set, computes the change a call with these (valid)
	// arguments would make, from the files as they are now, for the person
	// to review before they answer (ICERC.Changes). The policy calls it
	// only when it asks the person. An error says why no change can be
	// shown; the handler then fails the same way. See Invocation.Shown.
	Preview Previewer
}

// A Previewer computes the change a call would make (see Tool.Preview).
type Previewer func(ctx context.Context, inv *Invocation, args json.RawMessage) ([]ProposedChange, error)

// Touch is what a call may change in the workspace: the files of Paths
// (slash-separated, relative to the workspace root), or any file when All
// is set (a command, a tool of an MCP server that runs on this machine).
type Touch struct {
	Paths []string
	All   bool
}

// Empty reports whether the call changes nothing.
func (t Touch) Empty() bool { return len(t.Paths) == 0 && !t.All }
