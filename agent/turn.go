package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nexuscocreate/nexus/llm"
)

// maxMalformedSteps is how many model requests in a row may bring only
// malformed or unknown tool calls before the turn stops.
const maxMalformedSteps = 3

// prompt runs one prompt of the session (see Service.Prompt).
func (ss *Session) prompt(ctx context.Context, text string, opts PromptOptions) (PromptResult, error) {
	ctx, end, err := ss.begin(ctx, opts)
	if err != nil {
		return PromptResult{}, err
	}
	defer end()
	var mu sync.Mutex // updates come from parallel tool calls too
	emit := func(u Update) {
		if opts.OnUpdate == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		opts.OnUpdate(u)
	}
	if cmd, ok := strings.CutPrefix(strings.TrimSpace(text), "/"); ok && cmd != "" && !strings.HasPrefix(cmd, "/") {
		if len(opts.Images) > 0 {
			return PromptResult{}, &PromptError{Msg: fmt.Sprintf("/%s is a special command: it takes no images (send them with a message to the model)", strings.Fields(cmd)[0])}
		}
		return ss.command(ctx, cmd, emit)
	}
	if len(opts.Images) > 0 {
		if p := ss.currentProfile(); !p.TakesImages() {
			return PromptResult{}, &PromptError{Msg: fmt.Sprintf("the model of profile %q (%s) takes no images: send text, switch with /model to a profile that takes them, "+
				"or set %s.images: true in .nexus/config.yaml if it does", p.Name, p.Model, p.Key())}
		}
	}
	return ss.send(ctx, Message{Role: RoleUser, Text: text, Images: opts.Images}, emit)
}

// send adds the person's message m and runs the turn it starts, once the
// prompt hooks let it (Options.PromptHook).
func (ss *Session) send(ctx context.Context, m Message, emit func(Update)) (PromptResult, error) {
	if hook := ss.svc.opts.PromptHook; hook != nil {
		ss.mu.Lock()
		turn := strconv.Itoa(ss.turn + 1)
		ss.mu.Unlock()
		added, err := hook(ctx, ss.id, turn, ss.party.String(), m.Text)
		if err != nil {
			return PromptResult{}, &PromptError{Msg: err.Error()}
		}
		if added != "" {
			m.Text += "\n\n" + added
		}
	}
	if _, err := ss.add(m); err != nil {
		return PromptResult{}, err
	}
	stop, err := ss.run(ctx, emit)
	res := ss.result(stop)
	emit(ss.usageUpdate())
	return res, err
}

func (ss *Session) result(stop string) PromptResult {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return PromptResult{StopReason: stop, Usage: ss.use, Cost: ss.costLocked()}
}

func (ss *Session) usageUpdate() Update {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	u := ss.use
	return Update{SessionUpdate: "usage_update", Used: ss.hist.Tokens(), Size: ss.profile.ContextWindow, Cost: ss.costLocked(), Usage: &u}
}

// run is the turn loop: model → tool calls → results → model, until the
// model stops, the steps are spent, or ctx is cancelled.
func (ss *Session) run(ctx context.Context, emit func(Update)) (string, error) {
	prov, err := ss.adapter()
	if err != nil {
		return StopEndTurn, err
	}
	maxSteps := ss.svc.opts.Config.Agent.MaxSteps
	malformed := 0
	overflowRetried := false
	var fit fitting
	for step := 0; step < maxSteps; step++ {
		offered, err := ss.offer()
		if err != nil {
			return StopEndTurn, err
		}
		req, err := ss.request(offered)
		if err == nil {
			req, err = ss.fit(ctx, offered, req, &fit, emit)
		}
		switch {
		case ctx.Err() != nil:
			return StopCancelled, nil
		case err != nil:
			return StopEndTurn, err
		}
		if ss.debugOn() {
			emit(Update{SessionUpdate: "agent_thought_chunk", Content: textBlock(fmt.Sprintf(
				"[debug] step %d: %d messages (~%d tokens), %d tools, profile %s (%s %s)\n",
				step+1, len(req.Messages), ss.tokens(), len(req.Tools), ss.profile.Name, ss.profile.Provider, ss.profile.Model))})
		}
		resp, err := prov.Stream(ctx, req, func(ev llm.Event) { ss.relay(ev, emit) })
		if resp != nil {
			ss.account(resp.Usage)
		}
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return StopCancelled, nil
			case errors.Is(err, llm.ErrContextOverflow) && !overflowRetried:
				// Never sent again as is: drop the older half, then one retry.
				overflowRetried = true
				if ss.shrink() {
					step--
					continue
				}
			}
			return StopEndTurn, &LIALError{Profile: ss.profile.Name, Err: err}
		}
		if _, err := ss.add(Message{Role: RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls, Tokens: resp.Usage.OutputTokens}); err != nil {
			return StopEndTurn, err
		}
		if len(resp.ToolCalls) == 0 {
			return stopOf(resp.Stop), nil
		}
		bad, err := ss.runTools(ctx, offered, resp.ToolCalls, emit)
		if err != nil {
			return StopEndTurn, err
		}
		if ctx.Err() != nil {
			return StopCancelled, nil
		}
		if bad == len(resp.ToolCalls) {
			if malformed++; malformed >= maxMalformedSteps {
				return StopEndTurn, &ToolExecutionError{Err: fmt.Errorf(
					"the model made only malformed or unknown tool calls %d times in a row; the turn stops (try rephrasing, or another model with /model)", malformed)}
			}
		} else {
			malformed = 0
		}
	}
	return StopMaxTurnRequests, nil
}

func stopOf(r llm.StopReason) string {
	switch r {
	case llm.StopMaxTokens:
		return "max_tokens"
	case llm.StopRefusal:
		return "refusal"
	}
	return StopEndTurn
}

// StopEndTurn is the stop reason of a turn the model ended.
const StopEndTurn = "end_turn"

// adapter is the session's provider, made on first use for a session
// loaded from disk.
func (ss *Session) adapter() (llm.Provider, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.provider != nil {
		return ss.provider, nil
	}
	p, err := ss.svc.opts.NewProvider(ss.profile)
	if err != nil {
		return nil, &LIALInitError{Profile: ss.profile.Name, Err: err}
	}
	ss.provider = p
	return p, nil
}

// relay turns a model event into an update.
func (ss *Session) relay(ev llm.Event, emit func(Update)) {
	switch ev.Kind {
	case llm.EventText:
		emit(Update{SessionUpdate: "agent_message_chunk", Content: textBlock(ev.Text)})
	case llm.EventThought:
		emit(Update{SessionUpdate: "agent_thought_chunk", Content: textBlock(ev.Text)})
	case llm.EventRetry:
		emit(Update{SessionUpdate: "retry", Retry: &RetryInfo{Attempt: ev.Retry.Attempt, WaitMs: ev.Retry.Wait.Milliseconds(), Error: ev.Retry.Err.Error()}})
	}
}

func (ss *Session) debugOn() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.debug
}

func (ss *Session) tokens() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.hist.Tokens()
}

// shrink drops the older half of the history's turns after the model said
// the prompt is too long; it reports whether anything went.
func (ss *Session) shrink() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	before := ss.hist.Len()
	if before < 2 {
		return false
	}
	ss.hist.Drop(before / 2)
	return ss.hist.Len() < before
}

// request is the model request of the next step.
func (ss *Session) request(offered *offer) (*llm.Request, error) {
	system, err := ss.system()
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	msgs := ss.hist.Messages()
	msgs = msgs[:len(msgs):len(msgs)]
	if !ss.profile.TakesImages() {
		msgs = withoutImages(msgs, ss.profile.Name)
	}
	return &llm.Request{System: system, Messages: msgs, Tools: offered.list, Limits: ss.answerLimits()}, nil
}

// answerLimits bound each answer of the model (AnswerLimits).
func (ss *Session) answerLimits() llm.Limits {
	return AnswerLimits(ss.svc.opts.Config.Agent)
}

// withoutImages is msgs with each image replaced by a note, for a model
// that takes none (the session switched to it with /model after images
// were sent): a text-only model given an image fails the whole request.
func withoutImages(msgs []Message, profile string) []Message {
	first := slices.IndexFunc(msgs, func(m Message) bool { return len(m.Images) > 0 })
	if first < 0 {
		return msgs
	}
	out := slices.Clone(msgs)
	for i := first; i < len(out); i++ {
		if m := &out[i]; len(m.Images) > 0 {
			m.Text += fmt.Sprintf("\n[%d image(s) attached here are not shown: the model of profile %q takes no images]", len(m.Images), profile)
			m.Images = nil
		}
	}
	return out
}

// system is the system prompt: Nexus's own, then the context file's
// initial prompt, read again when the file changed, then the project
// instruction files, read at each request. It is never part of the
// history, so no compaction or pruning reaches it.
func (ss *Session) system() (string, error) {
	if ss.task != nil {
		return ss.briefSystem(), nil
	}
	c, err := ss.context()
	if err != nil {
		return "", err
	}
	in := ss.instructions()
	var b strings.Builder
	fmt.Fprintf(&b, "You are the Nexus agent, working in the workspace %s for the person at its editor. "+
		"You act through the tools you are given; every call is checked, may be asked of the person, and is shown to them. "+
		"Paths are relative to the workspace. When a tool takes an \"icerc\" object, fill it: intent (why you make the call) "+
		"and expected_outcome (what you expect it to do); the person reads them before approving. "+
		"A declined call is the person's answer: do not repeat it; say what you wanted and ask.",
		ss.svc.opts.Layout.Workspace)
	if p := c.InitialPrompt(); p != "" {
		b.WriteString("\n\n")
		b.WriteString(p)
	}
	if t := instructionsText(in.Files); t != "" {
		b.WriteString("\n\n")
		b.WriteString(t)
	}
	return b.String(), nil
}

// fileStamp is what tells that a file changed.
type fileStamp struct {
	mod  time.Time
	size int64
	ok   bool
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size(), ok: true}
}

// context is the DCM of the session, read again when its file changed.
func (ss *Session) context() (*Context, error) {
	file := ss.svc.opts.Layout.Resolve(ss.svc.opts.Config.Context.File)
	st := stampOf(file)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.ctx != nil && st == ss.ctxStamp {
		return ss.ctx, nil
	}
	opts := ContextOptions{File: file, Workspace: ss.svc.opts.Layout.Workspace}
	if rd := ss.svc.opts.ReadDefinition; rd != nil {
		party := ss.party
		opts.ReadDefinition = func(p string) ([]byte, error) { return rd(party, p) }
	}
	c, err := LoadContext(opts)
	if err != nil {
		return nil, &DCMInitError{Err: err}
	}
	for _, w := range c.Warnings() {
		ss.svc.logger.Warn("agent context file", "file", file, "warning", w)
	}
	ss.ctx, ss.ctxStamp = c, st
	return c, nil
}
