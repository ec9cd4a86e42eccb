package agent

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/llm"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/core"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// Session is one conversation with a model. Its agent acts for its owner
// with the author "agent:<id>".
type Session struct {
	svc     *Service
	id      string
	owner   access.Party
	party   access.Party // owner.Agent(id)
	created time.Time
	// task is set, when the session is made, for a subagent: a child
	// session, of no file of its own, acting as its parent's agent (see
	// subagents.go).
	task *taskRun

	// mu guards everything below; a prompt holds busy, not mu, while it
	// waits for the model or the tools.
	mu       sync.Mutex
	title    string
	updated  time.Time
	profile  llm.Profile
	provider llm.Provider // nil until the first prompt that needs it
	hist     *History
	use      Use
	cost     float64
	costOK   bool
	debug    bool
	busy     bool
	stop     context.CancelCauseFunc
	ask      policy.Approver
	elicit   tools.Elicitor // the prompt's, for its calls' questions
	log      *sessionLog
	ctx      *Context  // the DCM, re-read when its file changes
	ctxStamp fileStamp // of the context file when ctx was read
	// dirs are the workspace-relative directories the session's core tool
	// calls worked in, each once, in order: each adds its nearest
	// instruction file (AGENTS.md) to the next request.
	dirs []string
	// turn is the number of the person's prompts so far, counted from the
	// session's file (its user messages, /clear or not), so that a turn
	// keeps its number across a resume: the Turn of the calls a prompt
	// makes, for their checkpoints.
	turn int
	// plan is the model's plan (update_plan), nil when it set none.
	plan []PlanEntry
	// turnTools, when not nil, are the only tools the running turn is
	// offered: a command file's allowed-tools.
	turnTools []string
	// prompts counts the prompts begun; the briefs are read once a prompt
	// (briefList, read at prompt briefsAt).
	prompts    int
	briefList  []Brief
	briefsAt   int
	briefsRead bool
	// taskSlots holds a place for each running subagent
	// (agent.maxSubagents).
	taskSlots chan struct{}
}

// newSession makes a session of owner with a profile ("" the default):
// its history and adapter, not yet its file.
func (s *Service) newSession(id string, owner access.Party, profile string) (*Session, error) {
	p, err := s.profile(profile)
	if err != nil {
		return nil, err
	}
	hopts, err := s.historyOptions(p)
	if err != nil {
		return nil, err
	}
	hist, err := NewHistory(hopts)
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	prov, err := s.opts.NewProvider(p)
	if err != nil {
		return nil, &LIALInitError{Profile: p.Name, Err: err}
	}
	now := s.opts.Now().UTC()
	return &Session{svc: s, id: id, owner: owner, party: owner.Agent(id), created: now, updated: now,
		profile: p, provider: prov, hist: hist}, nil
}

func (ss *Session) visibleTo(p access.Party) bool {
	return p.Valid() && !p.IsAgent() && p.AppID() == ss.owner.AppID()
}

func (ss *Session) info() SessionInfo {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.infoLocked()
}

func (ss *Session) infoLocked() SessionInfo {
	return SessionInfo{
		ID: ss.id, Title: ss.title, Profile: ss.profile.Name, Model: ss.profile.Model, AppID: ss.owner.AppID(),
		Created: ss.created, Updated: ss.updated, Messages: ss.hist.Len(), Usage: ss.use,
		Cost: ss.costLocked(), Running: ss.busy,
	}
}

// currentProfile is the profile the session's next request goes to.
func (ss *Session) currentProfile() llm.Profile {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.profile
}

func (ss *Session) costLocked() *Cost {
	if !ss.costOK {
		return nil
	}
	return &Cost{Amount: ss.cost, Currency: ss.svc.currency(ss.profile.Name)}
}

// errStopped is the cause of a prompt stopped by the person.
var errStopped = fmt.Errorf("stopped: %w: %w", tools.ErrCancelled, context.Canceled)

// cancel stops the running prompt; it reports whether one was running.
func (ss *Session) cancel() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.stop == nil {
		return false
	}
	// Both: its tool calls end "the call was cancelled" (not "the caller
	// went away"), and whatever tests for context.Canceled still sees it.
	ss.stop(errStopped)
	return true
}

func (ss *Session) asker() policy.Approver {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.ask
}

func (ss *Session) elicitor() tools.Elicitor {
	if ss.task != nil {
		return ss.task.parent.elicitor() // a subagent asks as its parent does
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.elicit
}

// add appends a message to the history and the file.
func (ss *Session) add(m Message) (Message, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	kept, err := ss.hist.Add(m)
	if err != nil {
		return kept, err
	}
	ss.updated = ss.svc.opts.Now().UTC()
	if m.Role == RoleUser {
		ss.turn++
	}
	if ss.title == "" && m.Role == RoleUser {
		ss.title = titleOf(m.Text)
		ss.logLocked(record{Type: "title", Title: ss.title})
	}
	ss.logLocked(record{Type: "message", Message: &kept})
	return kept, nil
}

// currentTurn is the number of the prompt the session is running, as the
// Turn of its calls ("1" for the first).
func (ss *Session) currentTurn() string {
	if ss.task != nil {
		return ss.task.parent.currentTurn() // a subagent's calls are its parent's turn's
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return strconv.Itoa(ss.turn)
}

// titleOf is a session's title: its first prompt's first line, cut.
func titleOf(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	if r := []rune(line); len(r) > 80 {
		line = string(r[:79]) + "…"
	}
	return line
}

// replay is the conversation since the last /clear as updates: every
// message, also those pruned from what the model sees, read from the
// session's file rather than kept in memory.
func (ss *Session) replay() ([]Update, error) {
	transcript, tasks, err := ss.svc.transcript(ss.id)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", ss.id, err)
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var out []Update
	results := resultsOf(transcript)
	for _, m := range transcript {
		switch m.Role {
		case RoleUser:
			if m.Text != "" || len(m.Images) == 0 {
				out = append(out, Update{SessionUpdate: "user_message_chunk", Content: textBlock(m.Text)})
			}
			for _, img := range m.Images {
				out = append(out, Update{SessionUpdate: "user_message_chunk", Content: &ContentBlock{Type: "image",
					Data: base64.StdEncoding.EncodeToString(img.Data), MimeType: img.MIMEType}})
			}
		case RoleSystem:
			out = append(out, Update{SessionUpdate: "command_output", Content: textBlock("system: " + m.Text)})
		case RoleAssistant:
			if m.Text != "" {
				out = append(out, Update{SessionUpdate: "agent_message_chunk", Content: textBlock(m.Text)})
			}
			for _, c := range m.ToolCalls {
				if c.Name == PlanToolName {
					// As it was shown live: the plan it set, if it set one.
					if r := results[c.ID]; r != nil && !r.IsError {
						if p, err := parsePlan(c.Arguments); err == nil {
							out = append(out, planUpdate(p))
						}
					}
					continue
				}
				u := replayedCall(c, results[c.ID])
				out = append(out, u)
				if t := tasks[c.ID]; t != nil && c.Name == TaskToolName {
					out = append(out, t.replay(u.ToolCallID)...)
				}
			}
		}
	}
	out = append(out, Update{SessionUpdate: "usage_update", Used: ss.hist.Tokens(), Size: ss.profile.ContextWindow, Cost: ss.costLocked(), Usage: &Use{
		InputTokens: ss.use.InputTokens, OutputTokens: ss.use.OutputTokens, CachedTokens: ss.use.CachedTokens, Requests: ss.use.Requests}})
	return out, nil
}

// resultsOf are the tool results of msgs by the model's call id.
func resultsOf(msgs []Message) map[string]*ToolResult {
	results := map[string]*ToolResult{}
	for _, m := range msgs {
		if m.Result != nil {
			results[m.Result.CallID] = m.Result
		}
	}
	return results
}

// replayedCall is a tool call of the model and its result r (nil when
// none) as a door was shown it.
func replayedCall(c ToolCall, r *ToolResult) Update {
	u := Update{SessionUpdate: "tool_call", ToolCallID: c.ID, Title: c.Name, ToolName: c.Name, Kind: "other", Status: "completed", RawInput: rawOrNull(c.Arguments)}
	if r != nil {
		// The Nexus call, as it was shown live (sessions saved before it
		// was kept show the model's call id).
		if r.ToolCallID != "" {
			u.ToolCallID, u.Kind = r.ToolCallID, r.Kind
		}
		if r.Title != "" {
			u.Title = r.Title
		}
		if r.IsError {
			u.Status = "failed"
		}
		u.Changes, u.MoreChanges = r.Changes, r.MoreChanges
		u.Content = []ToolCallContent{{Type: "content", Content: textBlock(r.Content)}}
	}
	return u
}

func rawOrNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// account adds a model request's usage to the session's.
func (ss *Session) account(u llm.Usage) {
	if ss.task != nil {
		// A subagent's requests are its parent's cost, at its own profile
		// (which never changes).
		ss.task.parent.accountAt(u, ss.profile)
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.addUsageLocked(u, ss.profile.Prices)
	ss.logLocked(record{Type: "usage", Usage: &u, Profile: ss.profile.Name})
}

// accountAt adds the usage of a request made at profile p.
func (ss *Session) accountAt(u llm.Usage, p llm.Profile) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.addUsageLocked(u, p.Prices)
	ss.logLocked(record{Type: "usage", Usage: &u, Profile: p.Name})
}

// addUsageLocked counts a request's usage, and its cost at prices when
// they are known.
func (ss *Session) addUsageLocked(u llm.Usage, prices llm.Prices) {
	ss.use.InputTokens += u.InputTokens
	ss.use.OutputTokens += u.OutputTokens
	ss.use.CachedTokens += u.CachedTokens
	ss.use.Requests++
	if c, ok := prices.Cost(u); ok {
		ss.cost += c
		ss.costOK = true
	}
}

// begin marks the session busy with a prompt and returns its context.
func (ss *Session) begin(ctx context.Context, opts PromptOptions) (context.Context, func(), error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.busy {
		return nil, nil, ErrBusy
	}
	ctx, cancel := context.WithCancelCause(ctx)
	ss.busy, ss.stop, ss.ask, ss.elicit = true, cancel, opts.Ask, opts.Elicit
	ss.prompts++
	return ctx, func() {
		ss.mu.Lock()
		ss.busy, ss.stop, ss.ask, ss.elicit = false, nil, policy.Approver{}, nil
		err := ss.syncLocked()
		ss.mu.Unlock()
		cancel(nil)
		if err != nil {
			ss.svc.logger.Warn("agent session not saved", "session", ss.id, "error", err.Error())
		}
	}, nil
}

func (ss *Session) close() error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.log == nil {
		return nil
	}
	err := ss.log.close()
	ss.log = nil
	return err
}

func (ss *Session) remove() error {
	ss.close()
	err := os.Remove(ss.svc.sessionPath(ss.id))
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("delete session %s: %w", ss.id, err)
	}
	return nil
}

// shownOutput is how much of a result a tool_call_update shows as text.
const shownOutput = 4 << 10

// toolCallUpdate is the ACP update of a Nexus tool call.
func toolCallUpdate(first bool, c tools.Call) Update {
	// The title is the call in words, which changes as it runs and ends
	// ("Write notes.txt", then "Wrote notes.txt, 5 bytes"): every door
	// shows this one line.
	u := Update{SessionUpdate: "tool_call_update", ToolCallID: c.ID, Status: acpStatus(c.Status), ToolName: c.ToolName, Title: core.Summary(c)}
	if c.ServerName != "" {
		u.ToolName = c.ServerName + "/" + c.ToolName
	}
	if first {
		u.SessionUpdate = "tool_call"
		u.Kind = acpKind(c.Kind)
		u.RawInput = c.ArgumentsJSON
		var args struct {
			Path string `json:"path"`
		}
		if json.Unmarshal(c.ArgumentsJSON, &args) == nil && args.Path != "" {
			u.Locations = []Location{{Path: args.Path}}
		}
	}
	if c.Done() {
		switch {
		case c.Error != nil:
			u.Content = []ToolCallContent{{Type: "content", Content: textBlock(c.Error.Code + ": " + c.Error.Message)}}
		default:
			u.RawOutput = c.ResultJSON
			// What an ACP editor shows of the output: its head.
			text := string(c.ResultJSON)
			if n := shownOutput; len(text) > n {
				for n > 0 && !startsRune(text[n]) {
					n--
				}
				text = text[:n] + "…"
			}
			u.Content = []ToolCallContent{{Type: "content", Content: textBlock(text)}}
		}
	}
	return u
}
