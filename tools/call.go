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
}

// RiskAssessment is the R of ICERC.
type RiskAssessment struct {
	Level   Risk     `json:"level"`
	Scope   string   `json:"scope"`
	Details []string `json:"details,omitempty"`
}
