package tools

import (
	"encoding/json"
	"time"
)

// Statuses of a tool call.
const (
	StatusInitiated = "initiated"
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusError     = "error"
)

// Call is one execution of a tool, with the fields of the Tool Call data
// model. The manager publishes a copy on the event bus at every status
// change; a Call taken from an event is never modified afterwards.
//
// What the manager keeps and publishes of a call is bounded (see
// KeptSize): ArgumentsJSON and ResultJSON are always valid JSON, but when
// the arguments were over KeptSize bytes, ArgumentsTruncated is set,
// ArgumentsJSON is a JSON string holding the head of their text, and
// ArgumentsSize is their whole size in bytes; likewise ResultTruncated,
// ResultJSON and ResultSize for the result.
type Call struct {
	ID            string          `json:"toolCallId"`
	ToolName      string          `json:"toolName"`
	ServerName    string          `json:"serverName"`
	ArgumentsJSON json.RawMessage `json:"argumentsJson"`
	Status        string          `json:"status"`
	ResultJSON    json.RawMessage `json:"resultJson,omitempty"`
	Error         *CallError      `json:"error,omitempty"`
	AppID         string          `json:"appId,omitempty"`
	// Author is who made the call: "cli", "editor", "app:<id>",
	// "agent:<session>".
	Author    string `json:"author,omitempty"`
	TaskID    string `json:"taskId,omitempty"`
	RequestID string `json:"requestId,omitempty"`
	// Session and Turn: see ExecuteRequest.
	Session   string    `json:"session,omitempty"`
	Turn      string    `json:"turn,omitempty"`
	Title     string    `json:"title,omitempty"`
	Kind      Kind      `json:"kind,omitempty"`
	StartedAt time.Time `json:"startedAt"`
	EndedAt   time.Time `json:"endedAt,omitzero"`
	Progress  *Progress `json:"progress,omitempty"`
	ICERC     *ICERC    `json:"icerc,omitempty"`
	// Notes are what the call's postToolUse hooks said for the model,
	// each cut to KeptSize (see Hooks).
	Notes []string `json:"notes,omitempty"`

	ArgumentsTruncated bool `json:"argumentsTruncated,omitempty"`
	ResultTruncated    bool `json:"resultTruncated,omitempty"`
	ArgumentsSize      int  `json:"argumentsSize,omitempty"`
	ResultSize         int  `json:"resultSize,omitempty"`
}

// Done reports whether the call has ended.
func (c Call) Done() bool { return c.Status == StatusCompleted || c.Status == StatusError }

// CallError is the error of a call that ended with status error.
type CallError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Progress is the progress of a long call.
type Progress struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// ICERC is the record shown to a person before a risky call: intent,
// command, expected outcome, risk; and who asks and what an "always"
// answer would cover. Intent and ExpectedOutcome are the caller's words
// (hostile until shown inert); Command, Asker and Always are Nexus's own.
type ICERC struct {
	Intent          string         `json:"intent"`
	Command         string         `json:"command"`
	ExpectedOutcome string         `json:"expectedOutcome"`
	Risk            RiskAssessment `json:"risk"`
	// Asker names the party whose call this is, as the person should read
	// it: "app \"alpha\"", "agent session 0192… acting for the person",
	// "MCP server \"github\" (sampling, during a call by the person)".
	Asker string `json:"asker,omitempty"`
	// Always is what an "always" answer would remember, in words: "allow
	// or reject execute_command \"ls\" for app \"alpha\"". Empty when an
	// "always" answer counts once (a protected path).
	Always string `json:"always,omitempty"`
	// Changes is what the call would change in the files, computed by
	// Nexus from the tool's arguments and the files as they are when the
	// person is asked (see Tool.Preview), never the caller's word for it.
	// It is empty for a tool that has no preview, and when the preview
	// failed (Risk.Details then says why). The question to the person
	// carries them whole; the call keeps and publishes their diffs only,
	// cut to KeptSize together.
	Changes []ProposedChange `json:"changes,omitempty"`
}

// Actions of a ProposedChange.
const (
	ChangeAdded    = "added"
	ChangeModified = "modified"
)

// ProposedChange is the change a call would make to one file, for the
// person to review before it is made: the diff, and the two contents for a
// diff view. What the person was shown is what runs: the handler writes
// After over exactly the content Before was read from, or nothing.
type ProposedChange struct {
	// Path is slash-separated, relative to the workspace root.
	Path string `json:"path"`
	// Action is ChangeAdded (no file there now) or ChangeModified.
	Action string `json:"action"`
	// Diff is the change as git shows it (state.FileDiff); it is cut at
	// MaxPreviewDiff, or empty for a file over MaxPreviewContent, with
	// Truncated set.
	Diff string `json:"diff"`
	// Before and After are the text of the file now and after the call,
	// for an editor's diff view: nil when absent (Before of an added
	// file), binary, or over MaxPreviewContent bytes.
	Before *string `json:"before,omitempty"`
	After  *string `json:"after,omitempty"`
	// Binary is set when either side is binary (it has a NUL in its first
	// 8000 bytes, as git decides): Diff then only says that they differ.
	Binary bool `json:"binary,omitempty"`
	// Truncated is set when Diff is cut or left out, or Before or After is
	// left out for its size.
	Truncated bool `json:"truncated,omitempty"`
	// BeforeSHA256 is the SHA-256 of the content the change was computed
	// from, in hex ("" for an added file), for the handler to check that
	// the file still holds it. It stays in the daemon.
	BeforeSHA256 string `json:"-"`
}

// Bounds of a ProposedChange.
const (
	// MaxPreviewContent is the largest content, in bytes, that a preview
	// carries as Before or After, and diffs.
	MaxPreviewContent = 1 << 20
	// MaxPreviewDiff is the most bytes of a diff a preview carries.
	MaxPreviewDiff = 256 << 10
)

// RiskAssessment is the R of ICERC.
type RiskAssessment struct {
	Level   Risk     `json:"level"`
	Scope   string   `json:"scope"`
	Details []string `json:"details,omitempty"`
}
