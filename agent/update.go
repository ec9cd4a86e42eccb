package agent

import (
	"encoding/json"

	"github.com/nexuscocreate/nexus/tools"
)

// Update is one thing a session tells the doors while it works: the
// payload of the editor's nexus/agent/update notification and of the gRPC
// Prompt stream. Its shapes are the Agent Client Protocol's session/update
// ones, so that ACP is a thin adapter; the kinds that ACP lacks are marked
// Nexus below and an ACP door leaves them out or maps them.
type Update struct {
	// SessionUpdate is the kind: "user_message_chunk",
	// "agent_message_chunk", "agent_thought_chunk", "tool_call",
	// "tool_call_update", "plan", "available_commands_update",
	// "usage_update"; and Nexus's "retry", "permission_request",
	// "elicitation_request", "elicitation_withdrawn", "command_output".
	SessionUpdate string `json:"sessionUpdate"`
	// Content is a ContentBlock for the chunks and command_output, and a
	// []ToolCallContent for tool calls.
	Content any `json:"content,omitempty"`

	// Tool calls: ToolCallID is the Nexus tool call id (the one
	// nexus/toolCall and WatchToolCalls carry).
	ToolCallID string `json:"toolCallId,omitempty"`
	// ToolName is the tool the call is of ("SERVER/TOOL" for an MCP
	// server's), for the doors; it is not sent, Title is what people read.
	ToolName  string          `json:"-"`
	Title     string          `json:"title,omitempty"`
	Kind      string          `json:"kind,omitempty"`
	Status    string          `json:"status,omitempty"`
	RawInput  json.RawMessage `json:"rawInput,omitempty"`
	RawOutput json.RawMessage `json:"rawOutput,omitempty"`
	Locations []Location      `json:"locations,omitempty"`
	// ParentToolCallID, on a subagent's tool call, is the toolCallId of
	// the task call that started the subagent.
	ParentToolCallID string `json:"parentToolCallId,omitempty"`
	// Changes, on a completed call that changed files, are those files
	// with their diffs (cut: see maxChangedFiles), and MoreChanges how
	// many more it changed. They are the checkpoint's, what was written,
	// never the model's word for it.
	Changes     []FileChange `json:"changes,omitempty"`
	MoreChanges int          `json:"moreChanges,omitempty"`
	// Edits are the whole texts of the Changes (see Edit), for the ACP
	// door's diff content; they are neither sent as they are nor saved.
	Edits []Edit `json:"-"`

	Entries           []PlanEntry `json:"entries,omitempty"`
	AvailableCommands []Command   `json:"availableCommands,omitempty"`

	// usage_update: Used tokens of the context window Size, and the cost
	// so far.
	Used  int   `json:"used,omitempty"`
	Size  int   `json:"size,omitempty"`
	Cost  *Cost `json:"cost,omitempty"`
	Usage *Use  `json:"usage,omitempty"`

	// Compaction, on a command_output, is what a compaction (/compact's
	// or context.autoCompact's) did; Content says it in words.
	Compaction *Compaction `json:"compaction,omitempty"`

	// retry: the model request failed and is sent again.
	Retry *RetryInfo `json:"retry,omitempty"`
	// permission_request: a tool call waits for the person; answer it
	// with the request id (the gRPC door's AnswerPermission).
	Permission *PermissionRequest `json:"permission,omitempty"`
	// elicitation_request: an MCP server asks the person during a tool
	// call; answer it with its request id (the gRPC door's
	// AnswerElicitation). elicitation_withdrawn: it is no longer open.
	Elicitation *tools.Elicitation `json:"elicitation,omitempty"`
}

// ContentBlock is an ACP content block: text, or (Type "image") an image
// of a prompt, base64 in Data.
type ContentBlock struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Data     string `json:"data,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
}

// ToolCallContent is an ACP tool call content item.
type ToolCallContent struct {
	Type    string        `json:"type"` // "content"
	Content *ContentBlock `json:"content,omitempty"`
}

// Location is a file a tool call works on.
type Location struct {
	Path string `json:"path"`
}

// PlanEntry is an ACP plan entry.
type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority"`
	Status   string `json:"status"`
}

// Command is a special command as ACP's available_commands_update lists it.
type Command struct {
	Name        string        `json:"name"`
	Description string        `json:"description"`
	Input       *CommandInput `json:"input,omitempty"`
}

// CommandInput says a command takes text.
type CommandInput struct {
	Hint string `json:"hint"`
}

// Cost is money spent; Amount is unknown (0) when Known is false.
type Cost struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

// Use is the tokens of a session so far.
type Use struct {
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
	CachedTokens int `json:"cachedTokens,omitempty"`
	// Requests is how many model requests were made.
	Requests int `json:"requests"`
}

// RetryInfo describes a retried model request.
type RetryInfo struct {
	Attempt int    `json:"attempt"`
	WaitMs  int64  `json:"waitMs"`
	Error   string `json:"error"`
}

// PermissionRequest is a tool call that waits for the person.
type PermissionRequest struct {
	RequestID string      `json:"requestId"`
	Call      tools.Call  `json:"toolCall"`
	ICERC     tools.ICERC `json:"icerc"`
	Options   []string    `json:"options"`
}

func textBlock(s string) *ContentBlock { return &ContentBlock{Type: "text", Text: s} }

// acpStatus is a tool call's status in ACP's words.
func acpStatus(s string) string {
	switch s {
	case tools.StatusInitiated:
		return "pending"
	case tools.StatusRunning:
		return "in_progress"
	case tools.StatusCompleted:
		return "completed"
	}
	return "failed"
}

// acpKind is a tool kind in ACP's words (they are the same but "other").
func acpKind(k tools.Kind) string {
	if k == "" {
		return string(tools.KindOther)
	}
	return string(k)
}
