// Package llm is the LLM interaction layer of the agent core (LIAL): one
// streaming interface, [Provider], with adapters for OpenAI (Responses and
// Chat Completions), Anthropic (Messages), Gemini (generateContent) and
// OpenAI-compatible servers (Ollama, llama.cpp's llama-server, vLLM, LM
// Studio, OpenRouter). The messages are in no provider's format: each
// adapter turns them into its own. Start with [New].
package llm

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"time"
)

// Role is who a message is from.
type Role string

// The roles of the Framework Core API's message model.
const (
	RoleSystem     Role = "system"
	RoleUser       Role = "user"
	RoleAssistant  Role = "assistant"
	RoleToolResult Role = "tool_result"
)

// Message is one message of a conversation, in no provider's format: the
// adapters turn it into theirs.
type Message struct {
	Role Role   `json:"role"`
	Text string `json:"text,omitempty"`
	// ToolCalls are the calls an assistant message asks for, in order.
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// Result is the result of one tool call, for a tool_result message.
	Result *ToolResult `json:"result,omitempty"`
	// Tokens is the message's size in tokens as a provider reported it; 0
	// when unknown (then it is estimated).
	Tokens int `json:"tokens,omitempty"`
	// Images go with a user message's text, to the adapters that take
	// them (all four): an ACP prompt's images (agent.PromptOptions), and
	// an MCP server's sampling request's.
	Images []Image `json:"images,omitempty"`
}

// Image is an image of a message: its MIME type and bytes.
type Image struct {
	MIMEType string `json:"mimeType"`
	Data     []byte `json:"data"`
}

// dataURL is the image as a data: URL.
func (i Image) dataURL() string {
	return "data:" + i.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(i.Data)
}

// ToolCall is a model's request to run a tool.
type ToolCall struct {
	// ID is the provider's id of the call, which its result names.
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Server    string          `json:"server,omitempty"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolResult is what a tool call gave back to the model.
type ToolResult struct {
	CallID  string `json:"callId"`
	Name    string `json:"name"`
	Content string `json:"content"`
	IsError bool   `json:"isError,omitempty"`
	// Cut is set when Content was cut to fit (head and tail kept), with
	// the size it had.
	Cut      bool `json:"cut,omitempty"`
	FullSize int  `json:"fullSize,omitempty"`
	// ToolCallID, Title and Kind are the Nexus tool call that gave the
	// result, to show the conversation again as it was shown live; the
	// model is not sent them.
	ToolCallID string `json:"toolCallId,omitempty"`
	Title      string `json:"title,omitempty"`
	Kind       string `json:"kind,omitempty"`
	// Changes are the files the call changed, with their diffs cut to a
	// few KiB (its checkpoint's, when it made one), and MoreChanges how
	// many files more it changed that are not among them; the model is
	// not sent them either.
	Changes     []FileChange `json:"changes,omitempty"`
	MoreChanges int          `json:"moreChanges,omitempty"`
}

// FileChange is a file a tool call changed, as the doors show it: the
// shape of the editor protocol's ProposedChange (a question's
// icerc.changes).
type FileChange struct {
	// Path is slash-separated, relative to the workspace root.
	Path string `json:"path"`
	// Action is "added", "modified" or "deleted".
	Action string `json:"action"`
	// Diff is the change as git shows it, cut when Truncated; empty for
	// a binary file.
	Diff      string `json:"diff"`
	Binary    bool   `json:"binary,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

// Tool is a tool the model may call: its name as the model sees it, what
// it does, and the JSON Schema of its arguments.
type Tool struct {
	Name        string
	Description string
	Schema      json.RawMessage
}

// Request is one turn asked of a model.
type Request struct {
	// System is the system prompt. System messages in Messages are sent
	// too, after it, in the provider's way (joined where the provider has
	// one system prompt).
	System   string
	Messages []Message
	Tools    []Tool
	// MaxOutputTokens and Temperature override the profile's when set.
	MaxOutputTokens int
	Temperature     *float64
	// Stop are sequences that end the answer where they appear (not sent
	// by the Responses API, which has none).
	Stop []string
	// Limits bound the answer; zero fields are the defaults.
	Limits Limits
}

// StopReason is why a model stopped.
type StopReason string

// The stop reasons, as the Agent Client Protocol names them where it has
// a name.
const (
	StopEndTurn   StopReason = "end_turn"
	StopToolUse   StopReason = "tool_use"
	StopMaxTokens StopReason = "max_tokens"
	StopRefusal   StopReason = "refusal"
)

// Usage is what a turn cost, in tokens, as the provider reported it.
type Usage struct {
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
	// CachedTokens are the input tokens read from the provider's prompt
	// cache (part of InputTokens).
	CachedTokens int `json:"cachedTokens,omitempty"`
}

// EventKind says what an [Event] carries.
type EventKind int

const (
	// EventText is a piece of the answer's text (Event.Text).
	EventText EventKind = iota + 1
	// EventThought is a piece of the model's reasoning (Event.Text),
	// where the provider shows it.
	EventThought
	// EventToolCall is one whole tool call (Event.ToolCall), sent when
	// its arguments are complete.
	EventToolCall
	// EventUsage is the turn's usage so far (Event.Usage).
	EventUsage
	// EventRetry says a request failed and is tried again (Event.Retry).
	EventRetry
)

// Event is one thing a streamed turn yields.
type Event struct {
	Kind     EventKind
	Text     string
	ToolCall *ToolCall
	Usage    *Usage
	Retry    *Retry
}

// Retry describes a retry: which attempt comes next, after how long, and
// the error that caused it.
type Retry struct {
	Attempt int
	Wait    time.Duration
	Err     error
}

// Response is a whole turn, as the stream gave it.
type Response struct {
	Text      string
	Thought   string
	ToolCalls []ToolCall
	Usage     Usage
	Stop      StopReason
	// Model is the model that answered, as the provider named it.
	Model string
}

// Provider is an LLM behind one of the adapters.
type Provider interface {
	// Stream sends the request and calls emit with each event as it
	// arrives, on the calling goroutine; it returns the whole turn when
	// the stream ends. Errors are *Error. Cancelling ctx stops the HTTP
	// request at once and returns an error that wraps ctx.Err().
	Stream(ctx context.Context, req *Request, emit func(Event)) (*Response, error)
	// Profile is the profile the provider was made from.
	Profile() Profile
}
