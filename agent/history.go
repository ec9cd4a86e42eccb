// Package agent is the LLM-agnostic agent core of Nexus: the message
// history with its pruning (this file), and, to come, the LLM adapters
// (LIAL), the context manager (DCM) and the controller whose tool calls go
// through the ToolManager. Start with [History].
package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nexuscocreate/nexus/llm"
)

// The message model is the LIAL's, so that the adapters need nothing of
// this package.
type (
	Role       = llm.Role
	Message    = llm.Message
	ToolCall   = llm.ToolCall
	ToolResult = llm.ToolResult
	FileChange = llm.FileChange
)

// The roles of the Framework Core API's message model.
const (
	RoleSystem     = llm.RoleSystem
	RoleUser       = llm.RoleUser
	RoleAssistant  = llm.RoleAssistant
	RoleToolResult = llm.RoleToolResult
)

// Pruning strategies of [HistoryOptions].
const (
	// PruneOldest drops the oldest turns beyond MaxLength messages (the
	// seed's remove_oldest).
	PruneOldest = "remove_oldest"
	// PruneTokenBudget drops the oldest turns while the history is over
	// TokenBudget tokens (the model's window less the reply's reserve),
	// and beyond MaxLength messages when that is set.
	PruneTokenBudget = "token_budget"
	// PruneNone keeps everything.
	PruneNone = "none"
)

// HistoryOptions configure [NewHistory].
type HistoryOptions struct {
	// MaxLength is the most messages kept; 0 is no limit.
	MaxLength int
	// Strategy is PruneOldest (default), PruneTokenBudget or PruneNone.
	Strategy string
	// TokenBudget is the most tokens kept with PruneTokenBudget.
	TokenBudget int
	// KeepSystem keeps system messages whatever the pruning (the seed's
	// prioritizeSystemMessages).
	KeepSystem bool
	// MaxToolResult is the most bytes of a tool result's content that
	// enter the history; a longer one keeps its head and tail and says
	// what was cut. 0 is no limit.
	MaxToolResult int
}

// History is a conversation's messages, pruned as they are added. Pruning
// drops whole turns, oldest first: an assistant message that called tools
// goes with the results of its calls, so a result is never left without
// its call, nor a call without its result. The newest turn is never
// dropped. It is not safe for concurrent use.
type History struct {
	opts HistoryOptions
	// msgs[start:] are the messages; the dropped ones before start are
	// cleared and reclaimed now and then, so that dropping is cheap at any
	// length.
	msgs   []Message
	start  int
	tokens int // of msgs[start:]
	// open are the ids of the calls of the newest assistant message that
	// have no result yet.
	open map[string]bool
}

// ErrOrphanResult is the error of [History.Add] for a tool result that
// answers no open call.
var ErrOrphanResult = errors.New("tool result for no open call")

// NewHistory returns an empty history.
func NewHistory(opts HistoryOptions) (*History, error) {
	switch opts.Strategy {
	case "", "oldest-first":
		opts.Strategy = PruneOldest
	case PruneOldest, PruneNone:
	case PruneTokenBudget:
		if opts.TokenBudget <= 0 {
			return nil, fmt.Errorf("pruning %s needs a token budget above 0, not %d", PruneTokenBudget, opts.TokenBudget)
		}
	default:
		return nil, fmt.Errorf("pruning strategy %q is not one of %s, %s, %s", opts.Strategy, PruneOldest, PruneTokenBudget, PruneNone)
	}
	if opts.MaxLength < 0 || opts.MaxToolResult < 0 {
		return nil, fmt.Errorf("maxLength %d and the tool result limit %d may not be negative", opts.MaxLength, opts.MaxToolResult)
	}
	return &History{opts: opts, open: map[string]bool{}}, nil
}

// Add appends a message and prunes. A tool result must answer a call of
// the newest assistant message that has no result yet; its content is cut
// to MaxToolResult first. It returns the message as kept.
func (h *History) Add(m Message) (Message, error) {
	switch m.Role {
	case RoleSystem, RoleUser:
	case RoleAssistant:
		clear(h.open)
		for _, c := range m.ToolCalls {
			if c.ID == "" || h.open[c.ID] {
				return Message{}, fmt.Errorf("assistant message: tool call ids must be set and distinct, got %q", c.ID)
			}
			h.open[c.ID] = true
		}
	case RoleToolResult:
		if m.Result == nil {
			return Message{}, errors.New("tool_result message without a result")
		}
		if !h.open[m.Result.CallID] {
			return Message{}, fmt.Errorf("%w: %q", ErrOrphanResult, m.Result.CallID)
		}
		delete(h.open, m.Result.CallID)
		r := *m.Result
		if h.opts.MaxToolResult > 0 && len(r.Content) > h.opts.MaxToolResult {
			r.Content, r.Cut, r.FullSize = cutMiddle(r.Content, h.opts.MaxToolResult), true, len(r.Content)
		}
		m.Result = &r
	default:
		return Message{}, fmt.Errorf("role %q is not one of system, user, assistant, tool_result", m.Role)
	}
	h.msgs = append(h.msgs, m)
	h.tokens += Tokens(m)
	h.prune()
	return m, nil
}

// Messages returns the messages, oldest first: what the model is sent.
// The slice is the history's own until the next Add.
func (h *History) Messages() []Message { return h.msgs[h.start:] }

// Len is the number of messages.
func (h *History) Len() int { return len(h.msgs) - h.start }

// Tokens is the size of the history in tokens: reported where known,
// estimated elsewhere.
func (h *History) Tokens() int { return h.tokens }

// Clear drops every message, but the system messages when KeepSystem is
// set.
func (h *History) Clear() {
	var kept []Message
	if h.opts.KeepSystem {
		for _, m := range h.Messages() {
			if m.Role == RoleSystem {
				kept = append(kept, m)
			}
		}
	}
	h.msgs, h.start, h.tokens = kept, 0, 0
	for _, m := range kept {
		h.tokens += Tokens(m)
	}
	clear(h.open)
}

// Replace puts summary in the place of the messages before the last keep
// turns (system messages stay when KeepSystem is set): what /compact does
// once the model has written the summary. A summary that failed is never
// passed here, so the history stays whole.
func (h *History) Replace(summary Message, keep int) {
	msgs := h.Messages()
	cut := h.cut(keep)
	var out []Message
	for _, m := range msgs[:cut] {
		if h.opts.KeepSystem && m.Role == RoleSystem {
			out = append(out, m)
		}
	}
	out = append(out, summary)
	out = append(out, msgs[cut:]...)
	h.msgs, h.start, h.tokens = out, 0, 0
	for _, m := range out {
		h.tokens += Tokens(m)
	}
}

// cut is the index in Messages where the newest keep turns (system
// messages not counted) begin: what Replace keeps from.
func (h *History) cut(keep int) int {
	msgs := h.Messages()
	cut := len(msgs)
	for turns := 0; cut > 0 && turns < keep; {
		cut = turnStart(msgs, cut-1)
		if msgs[cut].Role != RoleSystem {
			turns++
		}
	}
	return cut
}

// Older reports what Replace(_, keep) would put a summary in place of:
// how many messages, and their size in tokens. System messages that
// KeepSystem keeps are not counted.
func (h *History) Older(keep int) (msgs, tokens int) {
	all := h.Messages()
	for _, m := range all[:h.cut(keep)] {
		if h.opts.KeepSystem && m.Role == RoleSystem {
			continue
		}
		msgs++
		tokens += Tokens(m)
	}
	return msgs, tokens
}

// PromptTurns is how many of the newest turns (system messages not
// counted) began with the person's last message and followed it: the
// turn a prompt is running; 0 when the history has no user message.
func (h *History) PromptTurns() int {
	msgs := h.Messages()
	turns := 0
	for end := len(msgs); end > 0; {
		i := turnStart(msgs, end-1)
		if msgs[i].Role != RoleSystem {
			turns++
		}
		if msgs[i].Role == RoleUser {
			return turns
		}
		end = i
	}
	return 0
}

// DropTo drops the oldest turns, as pruning does, until the history holds
// at most budget tokens or only the newest keep turns (at least one, and
// the kept system messages) are left; it returns how many messages went.
func (h *History) DropTo(budget, keep int) int {
	before := h.Len()
	older, _ := h.Older(max(keep, 1))
	least := before - older
	h.dropWhile(func() bool { return h.tokens > budget && h.Len() > least })
	return before - h.Len()
}

// prune drops the oldest turns while the history is over its limits. A
// turn is a message, or an assistant message with the results of its
// calls; system messages are kept when KeepSystem is set; the newest turn
// is never dropped.
func (h *History) prune() {
	if h.opts.Strategy == PruneNone {
		return
	}
	h.dropWhile(func() bool {
		if h.opts.MaxLength > 0 && h.Len() > h.opts.MaxLength {
			return true
		}
		return h.opts.Strategy == PruneTokenBudget && h.tokens > h.opts.TokenBudget
	})
}

// Drop drops the oldest turns until n messages or more went, as pruning
// does (system messages stay when KeepSystem is set; the newest turn
// stays): what the agent does when the model says the prompt is too long.
func (h *History) Drop(n int) {
	target := h.Len() - n
	h.dropWhile(func() bool { return h.Len() > target })
}

// dropWhile drops the oldest turn that may go while over reports true.
func (h *History) dropWhile(over func() bool) {
	defer h.reclaim()
	for over() {
		msgs := h.Messages()
		last := turnStart(msgs, len(msgs)-1)
		// The oldest turn that may go.
		i := 0
		for i < last && h.opts.KeepSystem && msgs[i].Role == RoleSystem {
			i++
		}
		if i >= last {
			return // only kept system messages and the newest turn are left
		}
		end := turnEnd(msgs, i)
		for _, m := range msgs[i:end] {
			h.tokens -= Tokens(m)
		}
		// The kept system messages before it (msgs[:i]) move up to close
		// the gap, and the front moves past the turn: the cost is the
		// number of those system messages, not the history's length.
		copy(msgs[end-i:end], msgs[:i])
		clear(msgs[:end-i])
		h.start += end - i
	}
}

// reclaim frees the dropped front once it is the larger part.
func (h *History) reclaim() {
	if h.start > 1024 && h.start > len(h.msgs)/2 {
		h.msgs = append([]Message(nil), h.msgs[h.start:]...)
		h.start = 0
	}
}

// turnStart returns the index where the turn holding msgs[i] begins: the
// assistant message whose call a tool result answers.
func turnStart(msgs []Message, i int) int {
	for i > 0 && msgs[i].Role == RoleToolResult {
		i--
	}
	return i
}

// turnEnd returns the index just after the turn that begins at msgs[i].
func turnEnd(msgs []Message, i int) int {
	j := i + 1
	for j < len(msgs) && msgs[j].Role == RoleToolResult {
		j++
	}
	return j
}

// Tokens is a message's size in tokens: the provider's count when known,
// else an estimate of four bytes a token plus a few for its framing.
func Tokens(m Message) int {
	if m.Tokens > 0 {
		return m.Tokens
	}
	n := len(m.Text)
	for _, c := range m.ToolCalls {
		n += len(c.Name) + len(c.Arguments) + len(c.ID)
	}
	if m.Result != nil {
		n += len(m.Result.Content) + len(m.Result.CallID)
	}
	return (n+3)/4 + 4 + len(m.Images)*imageTokens
}

// imageTokens is the estimate of an image's size in tokens until the
// provider reports it: about what Anthropic and OpenAI count for a
// screenshot they scale to their largest size.
const imageTokens = 1600

// cutMiddle keeps the head and the tail of s within limit bytes, at rune
// boundaries, and says how much was left out between them.
func cutMiddle(s string, limit int) string {
	note := fmt.Sprintf("\n…[%d bytes cut]…\n", len(s)-limit)
	room := max(limit-len(note), 0)
	head, tail := room/2, room-room/2
	for head > 0 && !startsRune(s[head]) {
		head--
	}
	t := len(s) - tail
	for t < len(s) && !startsRune(s[t]) {
		t++
	}
	return s[:head] + note + s[t:]
}

func startsRune(b byte) bool { return b&0xC0 != 0x80 }

// historyVersion is the version of the JSON form of a history.
const historyVersion = 1

// historyJSON is the documented JSON form of a history:
//
//	{"version": 1, "messages": [{"role": "user", "text": "..."},
//	  {"role": "assistant", "toolCalls": [{"id": "c1", "name": "read_file", "arguments": {...}}]},
//	  {"role": "tool_result", "result": {"callId": "c1", "name": "read_file", "content": "..."}}]}
type historyJSON struct {
	Version  int       `json:"version"`
	Messages []Message `json:"messages"`
}

// MarshalJSON is the history's JSON form (see historyJSON).
func (h *History) MarshalJSON() ([]byte, error) {
	msgs := h.Messages()
	if msgs == nil {
		msgs = []Message{}
	}
	return json.Marshal(historyJSON{Version: historyVersion, Messages: msgs})
}

// LoadHistory reads a history's JSON form into a new history with opts:
// every message is added again, so a form that breaks the history's rules
// (a result without its call) is an error that names the message.
func LoadHistory(data []byte, opts HistoryOptions) (*History, error) {
	var f historyJSON
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	if f.Version != historyVersion {
		return nil, fmt.Errorf("history: version %d, want %d", f.Version, historyVersion)
	}
	h, err := NewHistory(opts)
	if err != nil {
		return nil, err
	}
	for i, m := range f.Messages {
		if _, err := h.Add(m); err != nil {
			return nil, fmt.Errorf("history: message %d: %w", i, err)
		}
	}
	return h, nil
}
