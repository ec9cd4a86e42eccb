package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nexuscocreate/nexus/llm"
)

// Compaction puts a summary written by the model in the place of the
// older turns of the history: /compact asks for it, and the turn loop does
// before a request that would fill more than context.autoCompact of the
// profile's contextWindow. The system prompt (with the context file and
// the project instructions) is no part of the history: it is sent again
// as it is, never summarised. The plan goes into the summary (planNote).
// An automatic compaction whose summary fails, or is not smaller than the
// turns it would replace, prunes the oldest turns instead, and the turn
// goes on; one that does not get the request under the limit is not tried
// again in that turn: the turn prunes from then on. Each is shown as a
// command_output update that carries a Compaction, and saved as a
// "compact" (or "drop") record of the session's file, so that a resumed
// session starts from the summary.

// Compaction triggers.
const (
	CompactManual = "manual" // /compact
	CompactAuto   = "auto"   // context.autoCompact
)

// Compaction is what a compaction did, in the update that shows it.
type Compaction struct {
	// Trigger is CompactManual or CompactAuto.
	Trigger string `json:"trigger"`
	// Messages are the messages the summary replaced (0 when none did).
	Messages int `json:"messages"`
	// Dropped are the oldest messages pruned instead, or after the
	// summary (whole turns: a call goes with its results).
	Dropped int `json:"dropped,omitempty"`
	// TokensBefore and TokensAfter are the request's size (the system
	// prompt, the tools and the history), as Nexus counts tokens.
	TokensBefore int `json:"tokensBefore"`
	TokensAfter  int `json:"tokensAfter"`
	// Limit is the size in tokens an automatic compaction brings the
	// request under: context.autoCompact of the profile's contextWindow.
	Limit int `json:"limit,omitempty"`
	// Error is why the summary failed, when it did.
	Error string `json:"error,omitempty"`
}

// String is the line the doors show.
func (c Compaction) String() string {
	var b strings.Builder
	switch {
	case c.Messages > 0 && c.Dropped > 0:
		fmt.Fprintf(&b, "Compacted %s, then dropped %s", plural(c.Messages, "message"), oldest(c.Dropped))
	case c.Messages > 0:
		fmt.Fprintf(&b, "Compacted %s", plural(c.Messages, "message"))
	case c.Error != "":
		fmt.Fprintf(&b, "The summary failed (%s); dropped %s instead", c.Error, oldest(c.Dropped))
	default:
		fmt.Fprintf(&b, "Dropped %s", oldest(c.Dropped))
	}
	fmt.Fprintf(&b, ": %s → %s tokens", kTokens(c.TokensBefore), kTokens(c.TokensAfter))
	if c.Trigger == CompactAuto {
		fmt.Fprintf(&b, " (the request passed the limit of %s tokens, context.autoCompact of the window)", kTokens(c.Limit))
	}
	b.WriteString(".")
	return b.String()
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func oldest(n int) string {
	if n == 1 {
		return "the oldest message"
	}
	return fmt.Sprintf("the %d oldest messages", n)
}

// kTokens writes a number of tokens as people read it: 950, 6.2k, 38k.
func kTokens(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 10000:
		return fmt.Sprintf("%.1fk", float64(n)/1000)
	}
	return fmt.Sprintf("%dk", (n+500)/1000)
}

// RequestTokens is a model request's size in tokens as Nexus counts them
// (Tokens: the provider's count where known, four bytes a token
// elsewhere): the system prompt, the tools' names, descriptions and
// schemas, and the messages.
func RequestTokens(req *llm.Request) int {
	n := Tokens(Message{Role: RoleSystem, Text: req.System}) + ToolTokens(req.Tools)
	for _, m := range req.Messages {
		n += Tokens(m)
	}
	return n
}

// ToolTokens is the size in tokens of the tools a request offers: their
// names, descriptions and schemas, four bytes a token.
func ToolTokens(list []llm.Tool) int {
	n := 0
	for _, t := range list {
		n += (len(t.Name) + len(t.Description) + len(t.Schema) + 3) / 4
	}
	return n
}

// compactLimit is the size in tokens past which a request is compacted
// first: share (context.autoCompact) of the window; 0 is never.
func compactLimit(share float64, window int) int {
	if share <= 0 || window <= 0 {
		return 0
	}
	return max(int(share*float64(window)), 1)
}

// errNothingToCompact is a summary's error when the history has no turn
// older than those it keeps.
var errNothingToCompact = errors.New("nothing to compact yet")

// summaryPrompt asks the model for the summary.
const summaryPrompt = "Summarise our conversation so far for your own later use: the goal, what was done " +
	"(files read and changed, commands run, results), decisions, and what is left to do. Be complete but brief. Do not call tools."

// summarise asks the model for a summary of the conversation and puts it
// in the place of all but the newest keep turns; tools are those the
// step's request offers, sent with it and counted in the sizes. The
// history is left whole when it fails: a model error, an empty summary,
// for an automatic compaction one no smaller than the turns it would
// replace, or no older turns.
func (ss *Session) summarise(ctx context.Context, keep int, trigger string, tools []llm.Tool) (Compaction, error) {
	c := Compaction{Trigger: trigger}
	prov, err := ss.adapter()
	if err != nil {
		return c, err
	}
	system, err := ss.system()
	if err != nil {
		return c, err
	}
	fixed := Tokens(Message{Role: RoleSystem, Text: system}) + ToolTokens(tools)
	ss.mu.Lock()
	msgs := append([]Message(nil), ss.hist.Messages()...)
	n, older := ss.hist.Older(keep)
	ss.mu.Unlock()
	if n == 0 {
		return c, errNothingToCompact
	}
	msgs = append(msgs, Message{Role: RoleUser, Text: summaryPrompt})
	// The tools go too, though the model is asked not to call them:
	// Anthropic (and Bedrock) refuse a request whose history holds tool
	// calls without tools, and the request shares the prefix of the
	// step's, which a provider's prompt cache may serve.
	resp, err := prov.Stream(ctx, &llm.Request{System: system, Messages: msgs, Tools: tools, Limits: ss.answerLimits()}, func(llm.Event) {})
	if resp != nil {
		ss.account(resp.Usage)
	}
	if err != nil {
		return c, &LIALError{Profile: ss.profile.Name, Err: fmt.Errorf("the summary failed, the history is unchanged: %w", err)}
	}
	if strings.TrimSpace(resp.Text) == "" {
		return c, &LIALError{Profile: ss.profile.Name, Err: errors.New("the model wrote an empty summary; the history is unchanged")}
	}
	summary := Message{Role: RoleUser, Text: "[Summary of the earlier conversation]\n" + resp.Text + planNote(ss.currentPlan())}
	if size := Tokens(summary); trigger == CompactAuto && size >= older {
		return c, &LIALError{Profile: ss.profile.Name, Err: fmt.Errorf("the summary (~%d tokens) is not smaller than the %s it would replace (~%d tokens); the history is unchanged",
			size, plural(n, "message"), older)}
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	c.Messages, c.TokensBefore = n, fixed+ss.hist.Tokens()
	ss.hist.Replace(summary, keep)
	c.TokensAfter = fixed + ss.hist.Tokens()
	ss.logLocked(record{Type: "compact", Message: &summary, Keep: keep, Trigger: trigger})
	return c, ss.syncLocked()
}

// compact is /compact: a summary of all but the newest compactKeep turns.
// A summary that fails leaves the history whole and is the command's
// error.
func (ss *Session) compact(ctx context.Context, emit func(Update)) error {
	var tools []llm.Tool
	if o, err := ss.offer(); err == nil {
		tools = o.list
	}
	c, err := ss.summarise(ctx, compactKeep, CompactManual, tools)
	if errors.Is(err, errNothingToCompact) {
		emit(Update{SessionUpdate: "command_output", Content: textBlock("Nothing to compact yet.")})
		return nil
	}
	if err != nil {
		return err
	}
	emit(compactionUpdate(c))
	return nil
}

func compactionUpdate(c Compaction) Update {
	return Update{SessionUpdate: "command_output", Content: textBlock(c.String()), Compaction: &c}
}

// fitting is a turn's state of automatic compaction.
type fitting struct {
	// pruneOnly is set once a compaction of the turn did not bring the
	// request under the limit: the turn prunes from then on, so that no
	// step pays for a summary that cannot help.
	pruneOnly bool
}

// fit is the step's request made to fit context.autoCompact's share of
// the profile's window: when req passes it, the older turns are
// summarised (the person's last prompt and what followed it are kept
// when that is enough, else the newest compactKeep turns), then, while
// the request is still over, the oldest turns before the person's last
// prompt are dropped. It returns the request to send, req itself when
// it fits. Only a cancelled ctx is an error: a failed summary is shown,
// and pruning takes its place.
func (ss *Session) fit(ctx context.Context, offered *offer, req *llm.Request, f *fitting, emit func(Update)) (*llm.Request, error) {
	p := ss.currentProfile()
	limit := compactLimit(ss.svc.opts.Config.Context.AutoCompact, p.ContextWindow)
	if limit == 0 {
		return req, nil
	}
	size := RequestTokens(req)
	if size <= limit {
		return req, nil
	}
	fixed := size
	for _, m := range req.Messages {
		fixed -= Tokens(m)
	}
	c := Compaction{Trigger: CompactAuto}
	if !f.pruneOnly {
		var err error
		if c, err = ss.summarise(ctx, ss.autoKeep(limit-fixed), CompactAuto, req.Tools); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			c.Error = errText(err)
		}
	}
	c.Limit = limit
	ss.mu.Lock()
	if fixed+ss.hist.Tokens() > limit {
		f.pruneOnly = true
		// The person's last prompt and what followed it stay: without
		// them the model would not know what it is doing.
		if c.Dropped = ss.hist.DropTo(limit-fixed, ss.hist.PromptTurns()); c.Dropped > 0 {
			ss.logLocked(record{Type: "drop", Dropped: c.Dropped})
		}
	}
	if c.Messages == 0 && c.Dropped == 0 {
		ss.mu.Unlock()
		return req, nil // nothing may go: the request goes as it is
	}
	c.TokensBefore, c.TokensAfter = size, fixed+ss.hist.Tokens()
	err := ss.syncLocked()
	ss.mu.Unlock()
	if err != nil {
		ss.svc.logger.Warn("agent session: compaction not saved", "session", ss.id, "error", err.Error())
	}
	emit(compactionUpdate(c))
	return ss.request(offered)
}

// autoKeep is how many of the newest turns an automatic compaction keeps:
// the person's last prompt and what followed it, when there are older
// turns and what is kept fits within budget tokens; else compactKeep.
func (ss *Session) autoKeep(budget int) int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	keep := ss.hist.PromptTurns()
	if keep == 0 {
		return compactKeep
	}
	n, older := ss.hist.Older(keep)
	if n == 0 || ss.hist.Tokens()-older > budget {
		return compactKeep
	}
	return keep
}

// errText is an error's words for a line: the model's error without the
// profile it names.
func errText(err error) string {
	var le *LIALError
	if errors.As(err, &le) {
		err = le.Err
	}
	t := strings.TrimPrefix(err.Error(), "the summary failed, the history is unchanged: ")
	return strings.TrimSuffix(t, "; the history is unchanged")
}

// autoCompactLine says, for /context, when the session's requests are
// compacted.
func (ss *Session) autoCompactLine() string {
	p := ss.currentProfile()
	share := ss.svc.opts.Config.Context.AutoCompact
	switch {
	case share <= 0:
		return "Automatic compaction: off (context.autoCompact is 0)."
	case p.ContextWindow <= 0:
		return fmt.Sprintf("Automatic compaction: off (%s.contextWindow is not set).", p.Key())
	}
	return fmt.Sprintf("Automatic compaction: before a request over ~%s tokens (context.autoCompact %g of the window of %s).",
		kTokens(compactLimit(share, p.ContextWindow)), share, kTokens(p.ContextWindow))
}
