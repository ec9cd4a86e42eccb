package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/internal/inert"
	"github.com/nexuscocreate/nexus/llm"
	"github.com/nexuscocreate/nexus/tools"
)

// Subagents. A markdown file under agents/ of the definitions root is a
// brief: its front matter names the subagent and bounds its tools, its
// text is the subagent's system prompt. The model starts one with the task
// tool, the agent's own (as update_plan is): the subagent is a child
// session with its own history, its own system prompt (the brief, then the
// project instructions), and only its tools (the brief's list within what
// the parent is offered in that step, never task or update_plan: a
// subagent starts no subagent and keeps no plan). It acts as its parent's
// agent: its calls are the parent's party's, by "agent:<parent>", in the
// parent's session and turn, so the same policy asks the same person, the
// doors show them under the parent's turn and /undo of the turn undoes
// them. Its last answer is the task's result. The parent's cancel reaches
// it through the turn's context; its failure is the task's error result.
// Its transcript is a "task" record of the parent's session file, never
// replayed into the parent's history, so a resume runs nothing again.

// AgentsDir is the directory of the definitions root whose markdown files
// are subagents' briefs.
const AgentsDir = "agents"

// TaskToolName is the name of the agent's tool that starts a subagent.
const TaskToolName = "task"

// maxTaskAnswer bounds a subagent's answer as the task's result.
const maxTaskAnswer = 32 << 10

// Brief is a subagent as its file defines it.
type Brief struct {
	// Name is the front matter's name, or else the file's (agents/x.md is
	// x, agents/a/b.md a:b).
	Name string
	// Description says what the subagent is for, to the model and the
	// person (inert).
	Description string
	// Source is the file, relative to the definitions root; Revision the
	// commit that last changed it and Author who made it.
	Source, Revision, Author string
	// Tools, when set, are the only tools the subagent is offered (name
	// patterns as in tools.policy), within those of its parent.
	Tools []string
	// Profile is the llm profile the subagent's requests go to; "" is its
	// parent's.
	Profile string
	// Err is what is wrong with the file; the subagent is not offered.
	Err  error
	body string
}

// briefFront is the front matter of a brief: Claude Code's keys of a
// subagent, with profile for its model; model and color are read and
// ignored (a Nexus subagent names a profile).
type briefFront struct {
	Name        string   `yaml:"name"`
	Description string   `yaml:"description"`
	Tools       toolList `yaml:"tools"`
	Profile     string   `yaml:"profile"`
	Model       string   `yaml:"model"`
	Color       string   `yaml:"color"`
}

// parseBrief reads the brief source (named name unless its front matter
// names it). An error names the file and its line.
func parseBrief(name, source string, data []byte) Brief {
	b := Brief{Name: name, Source: source}
	fail := func(line int, format string, a ...any) Brief {
		b.Err = fmt.Errorf("%s:%d: %s", inert.Line(source), line, fmt.Sprintf(format, a...))
		return b
	}
	var front briefFront
	body, line, err := splitFront(data, &front)
	if err != nil {
		return fail(line, "%s", err)
	}
	if front.Name != "" {
		if !commandSegment.MatchString(front.Name) {
			return fail(2, "name %s: a name is letters, digits, '_', '.' and '-', at most 64, starting with a letter or digit", inert.Line(front.Name))
		}
		b.Name = front.Name
	}
	if body == "" {
		return fail(1, "the brief has no text (it is the subagent's system prompt)")
	}
	b.body = body
	b.Description = inert.Line(firstLine(strings.TrimSpace(front.Description)))
	if b.Description == "" {
		b.Description = inert.Line(firstLine(body))
	}
	b.Tools = front.Tools
	if b.Tools != nil && len(b.Tools) == 0 {
		b.Tools = []string{} // "tools: []": none
	}
	b.Profile = front.Profile
	return b
}

// briefs reads the briefs party may read, under agents/ of the
// definitions root, by path. A name taken by an earlier file makes the
// later one broken.
func (s *Service) briefs(party access.Party) []Brief {
	rd := s.opts.ReadDefinitions
	if rd == nil {
		return nil
	}
	files, err := rd(party, AgentsDir)
	if err != nil {
		s.logger.Warn("agent briefs not read", "dir", AgentsDir, "error", err.Error())
	}
	slices.SortFunc(files, func(a, b DefinitionFile) int { return strings.Compare(a.Path, b.Path) })
	var out []Brief
	taken := map[string]string{}
	for _, f := range files {
		rel, ok := strings.CutPrefix(f.Path, AgentsDir+"/")
		if !ok {
			continue
		}
		name, ok := commandName(rel)
		if !ok {
			continue
		}
		b := parseBrief(name, f.Path, f.Content)
		b.Revision, b.Author = f.Revision, f.Author
		if b.Err == nil {
			if first, dup := taken[b.Name]; dup {
				b.Err = fmt.Errorf("%s: the name %s is taken by %s", inert.Line(f.Path), b.Name, inert.Line(first))
			} else {
				taken[b.Name] = f.Path
			}
		}
		out = append(out, b)
	}
	return out
}

// currentBriefs are the briefs of the session's party, read once a prompt
// (each step of a turn offers the task tool).
func (ss *Session) currentBriefs() []Brief {
	ss.mu.Lock()
	if ss.briefsRead && ss.briefsAt == ss.prompts {
		defer ss.mu.Unlock()
		return ss.briefList
	}
	at := ss.prompts
	ss.mu.Unlock()
	list := ss.svc.briefs(ss.party)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.briefList, ss.briefsAt, ss.briefsRead = list, at, true
	return list
}

// usableBriefs are those that are not broken.
func usableBriefs(all []Brief) []Brief {
	var out []Brief
	for _, b := range all {
		if b.Err == nil {
			out = append(out, b)
		}
	}
	return out
}

// taskTool is the task tool as the model is offered it: its description
// lists the subagents.
func taskTool(briefs []Brief) llm.Tool {
	var d strings.Builder
	d.WriteString("Start a subagent on a task: it works alone, with its own tools, and returns its final answer. " +
		"It sees nothing of this conversation: put all it needs in the prompt. Several task calls in one step run side by side. Subagents:")
	names := make([]string, 0, len(briefs))
	for _, b := range briefs {
		fmt.Fprintf(&d, "\n- %s: %s", b.Name, b.Description)
		names = append(names, b.Name)
	}
	enum, _ := json.Marshal(names)
	schema := `{"type":"object","properties":{"agent":{"type":"string","enum":` + string(enum) + `},` +
		`"prompt":{"type":"string"}},"required":["agent","prompt"],"additionalProperties":false}`
	return llm.Tool{Name: TaskToolName, Description: d.String(), Schema: json.RawMessage(schema)}
}

// taskArgs is the task tool's input.
type taskArgs struct {
	Agent  string `json:"agent"`
	Prompt string `json:"prompt"`
}

// parseTask validates the model's arguments against the offered briefs.
func parseTask(args json.RawMessage, briefs []Brief) (taskArgs, Brief, error) {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	var a taskArgs
	if err := dec.Decode(&a); err != nil {
		return a, Brief{}, fmt.Errorf("the arguments are not an object of the schema: %w", err)
	}
	if dec.More() {
		return a, Brief{}, errors.New("the arguments hold more than one JSON value")
	}
	if strings.TrimSpace(a.Prompt) == "" {
		return a, Brief{}, errors.New(`"prompt" is empty: say what the subagent is to do`)
	}
	i := slices.IndexFunc(briefs, func(b Brief) bool { return b.Name == a.Agent })
	if i < 0 {
		names := make([]string, 0, len(briefs))
		for _, b := range briefs {
			names = append(names, b.Name)
		}
		return a, Brief{}, fmt.Errorf("there is no subagent %s; the subagents are: %s", shownName(a.Agent), strings.Join(names, ", "))
	}
	return a, briefs[i], nil
}

// taskRun is what makes a session a subagent: its parent and brief.
type taskRun struct {
	parent *Session
	brief  Brief
	// toolCallID is the task's call as the doors show it: the child's
	// calls are shown under it.
	toolCallID string
	// msgs is the child's transcript, guarded by the child's mu.
	msgs []Message
}

// taskRecord is a subagent's transcript in its parent's session file.
type taskRecord struct {
	// CallID is the parent model's call of the task tool, ToolCallID the
	// call as the doors showed it.
	CallID     string    `json:"callId"`
	ToolCallID string    `json:"toolCallId"`
	Agent      string    `json:"agent"`
	Source     string    `json:"source"`
	Revision   string    `json:"revision,omitempty"`
	Profile    string    `json:"profile"`
	Stop       string    `json:"stop"`
	Error      string    `json:"error,omitempty"`
	Messages   []Message `json:"messages"`
}

// replay is the subagent's tool calls as its parent's doors were shown
// them, under the task's call parent.
func (t *taskRecord) replay(parent string) []Update {
	results := resultsOf(t.Messages)
	var out []Update
	for _, m := range t.Messages {
		for _, c := range m.ToolCalls {
			u := replayedCall(c, results[c.ID])
			u.Title = t.Agent + ": " + u.Title
			u.ParentToolCallID = parent
			out = append(out, u)
		}
	}
	return out
}

// runTask is a call of the task tool: a subagent runs the prompt, once a
// place is free (agent.maxSubagents), and its answer is the call's result.
// A failure of any kind is the call's error result, never the turn's.
func (ss *Session) runTask(ctx context.Context, o *offer, c llm.ToolCall, emit func(Update)) (res ToolResult, malformed bool) {
	id, err := uuid.NewV7()
	if err != nil {
		id = uuid.New()
	}
	res = ToolResult{CallID: c.ID, Name: c.Name, ToolCallID: id.String(), Title: "Subagent", Kind: "think"}
	start := Update{SessionUpdate: "tool_call", ToolCallID: res.ToolCallID, Kind: res.Kind, Status: "pending", ToolName: TaskToolName}
	if len(c.Arguments) <= tools.KeptSize {
		start.RawInput = c.Arguments
	}
	a, b, err := parseTask(c.Arguments, o.briefs)
	if err != nil {
		res.IsError = true
		res.Content = "Invalid arguments: " + err.Error() + ". Call " + TaskToolName + " again with arguments that match its schema."
		start.Title, start.Status = res.Title, "failed"
		start.Content = []ToolCallContent{{Type: "content", Content: textBlock(res.Content)}}
		emit(start)
		return res, true
	}
	res.Title = "Subagent " + b.Name + ": " + cutLine(inert.Line(firstLine(strings.TrimSpace(a.Prompt))), 80)
	start.Title = res.Title
	emit(start)
	end := func(failed bool, text string) (ToolResult, bool) {
		res.IsError, res.Content = failed, text
		status := "completed"
		if failed {
			status = "failed"
		}
		shown := text
		if len(shown) > shownOutput {
			shown = cutBytes(shown, shownOutput) + "…"
		}
		emit(Update{SessionUpdate: "tool_call_update", ToolCallID: res.ToolCallID, Status: status, ToolName: TaskToolName,
			Content: []ToolCallContent{{Type: "content", Content: textBlock(shown)}}})
		return res, false
	}
	release, err := ss.taskSlot(ctx)
	if err != nil {
		return end(true, "The subagent did not start: the turn was cancelled.")
	}
	defer release()
	emit(Update{SessionUpdate: "tool_call_update", ToolCallID: res.ToolCallID, Status: "in_progress", ToolName: TaskToolName})
	answer, stop, err := ss.subagent(ctx, c.ID, res.ToolCallID, b, a.Prompt, emit)
	switch {
	case err != nil && ctx.Err() == nil:
		return end(true, "The subagent "+b.Name+" failed: "+err.Error())
	case stop == StopCancelled || ctx.Err() != nil:
		return end(true, "The subagent "+b.Name+" was cancelled.")
	case stop == StopMaxTurnRequests:
		return end(true, fmt.Sprintf("The subagent %s used its %d steps (agent.maxSteps) without finishing. Its last words: %s",
			b.Name, ss.svc.opts.Config.Agent.MaxSteps, cmpOr(answer, "(none)")))
	case answer == "":
		return end(false, "The subagent "+b.Name+" ended without an answer.")
	case stop != StopEndTurn:
		return end(false, answer+"\n[the subagent stopped: "+stop+"]")
	}
	return end(false, answer)
}

// subagent runs a child session of ss on prompt with brief b, and returns
// its last answer (capped), how it stopped, and what failed. Its
// transcript is written to ss's file.
func (ss *Session) subagent(ctx context.Context, callID, toolCallID string, b Brief, prompt string, emit func(Update)) (answer, stop string, err error) {
	child, err := ss.child(b, toolCallID)
	if err != nil {
		return "", StopEndTurn, err
	}
	defer func() {
		if p := recover(); p != nil {
			ss.svc.logger.Error("agent subagent panicked", "session", ss.id, "agent", b.Name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			stop, err = StopEndTurn, errors.New("an internal error of Nexus stopped it (see the daemon's log)")
		}
		child.mu.Lock()
		msgs := child.task.msgs
		child.mu.Unlock()
		answer = lastAnswer(msgs)
		rec := &taskRecord{CallID: callID, ToolCallID: toolCallID, Agent: b.Name, Source: b.Source, Revision: b.Revision,
			Profile: child.profile.Name, Stop: stop, Messages: msgs}
		if err != nil {
			rec.Error = err.Error()
		}
		ss.mu.Lock()
		ss.logLocked(record{Type: "task", Task: rec})
		ss.mu.Unlock()
	}()
	if _, err := child.add(Message{Role: RoleUser, Text: prompt}); err != nil {
		return "", StopEndTurn, err
	}
	stop, err = child.run(ctx, child.task.relay(emit))
	return "", stop, err
}

// child makes the subagent session of brief b: the parent's party, its
// profile unless the brief names one, its directories for the
// instruction files; no file of its own.
func (ss *Session) child(b Brief, toolCallID string) (*Session, error) {
	p := ss.currentProfile()
	var prov llm.Provider
	var err error
	if b.Profile != "" && b.Profile != p.Name {
		if p, err = ss.svc.profile(b.Profile); err != nil {
			return nil, fmt.Errorf("%s: %w", inert.Line(b.Source), err)
		}
		if prov, err = ss.svc.opts.NewProvider(p); err != nil {
			return nil, &LIALInitError{Profile: p.Name, Err: err}
		}
	} else if prov, err = ss.adapter(); err != nil {
		return nil, err
	}
	hopts, err := ss.svc.historyOptions(p)
	if err != nil {
		return nil, err
	}
	hist, err := NewHistory(hopts)
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	ss.mu.Lock()
	dirs := slices.Clone(ss.dirs)
	ss.mu.Unlock()
	now := ss.svc.opts.Now().UTC()
	return &Session{svc: ss.svc, id: ss.id, owner: ss.owner, party: ss.party, created: now, updated: now,
		title: b.Name, profile: p, provider: prov, hist: hist, dirs: dirs,
		task: &taskRun{parent: ss, brief: b, toolCallID: toolCallID}}, nil
}

// taskSlot waits for a place among the session's running subagents
// (agent.maxSubagents) and returns its release.
func (ss *Session) taskSlot(ctx context.Context) (func(), error) {
	ss.mu.Lock()
	if ss.taskSlots == nil {
		ss.taskSlots = make(chan struct{}, max(1, ss.svc.opts.Config.Agent.MaxSubagents))
	}
	slots := ss.taskSlots
	ss.mu.Unlock()
	select {
	case slots <- struct{}{}:
		return func() { <-slots }, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// relay is the child's emit: its tool calls are shown in the parent's
// doors, under the task's call and titled with the subagent's name; its
// text is not (its answer is the task's result).
func (t *taskRun) relay(emit func(Update)) func(Update) {
	return func(u Update) {
		switch u.SessionUpdate {
		case "tool_call", "tool_call_update":
			// An update's title is the call in words, again as it ends.
			if u.Title != "" {
				u.Title = t.brief.Name + ": " + u.Title
			}
			u.ParentToolCallID = t.toolCallID
			emit(u)
		case "retry":
			emit(u)
		}
	}
}

// offer is what a subagent is offered in a step: its parent's workspace
// tools of that step that the brief lists, never the parent's own tools
// (task, update_plan).
func (t *taskRun) offer() (*offer, error) {
	po, err := t.parent.offer()
	if err != nil {
		return nil, err
	}
	o := &offer{byKey: make(map[string]tools.Definition, len(po.byKey))}
	for _, tl := range po.list {
		d, ok := po.byKey[tl.Name]
		if !ok {
			continue
		}
		if t.brief.Tools != nil && !slices.ContainsFunc(t.brief.Tools, func(p string) bool { return namePatternMatch(p, displayName(d)) }) {
			continue
		}
		o.list = append(o.list, tl)
		o.byKey[tl.Name] = d
	}
	return o, nil
}

// briefSystem is a subagent's system prompt: what it is, its brief, and
// the project instruction files of the directories it and its parent
// worked in.
func (ss *Session) briefSystem() string {
	b := ss.task.brief
	var s strings.Builder
	fmt.Fprintf(&s, "You are %s, a subagent of the Nexus agent, working in the workspace %s for the person at its editor. "+
		"The agent gave you a task; you see nothing of its conversation. "+
		"You act through the tools you are given; every call is checked, may be asked of the person, and is shown to them. "+
		"Paths are relative to the workspace. When a tool takes an \"icerc\" object, fill it: intent (why you make the call) "+
		"and expected_outcome (what you expect it to do). A declined call is the person's answer: do not repeat it. "+
		"Your last message is all the agent gets back: end with the complete answer it needs.",
		b.Name, ss.svc.opts.Layout.Workspace)
	s.WriteString("\n\n")
	s.WriteString(b.body)
	if t := instructionsText(ss.instructions().Files); t != "" {
		s.WriteString("\n\n")
		s.WriteString(t)
	}
	return s.String()
}

// lastAnswer is the text of the last answer of the model in msgs, capped
// at maxTaskAnswer.
func lastAnswer(msgs []Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i]; m.Role == RoleAssistant && strings.TrimSpace(m.Text) != "" {
			text := strings.TrimSpace(m.Text)
			if len(text) > maxTaskAnswer {
				text = cutBytes(text, maxTaskAnswer) + fmt.Sprintf("\n[the answer was %d bytes; only its head is shown]", len(text))
			}
			return text
		}
	}
	return ""
}

// cutBytes is s cut to at most n bytes, at a rune's start.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !startsRune(s[n]) {
		n--
	}
	return s[:n]
}

// cutLine is a line cut to n runes, with "…" when it was longer.
func cutLine(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// briefsHelp lists the subagents for /tools: each with its file, revision
// and author, and those that are broken with what is wrong.
func (ss *Session) briefsHelp(o *offer) string {
	all := ss.currentBriefs()
	if len(all) == 0 {
		return ""
	}
	var b strings.Builder
	if len(o.briefs) > 0 {
		b.WriteString("\nSubagents (" + TaskToolName + "):\n")
	} else {
		b.WriteString("\nSubagents (" + TaskToolName + " is not offered: agent.tools or the command's allowed-tools leave it out):\n")
	}
	for _, br := range all {
		if br.Err != nil {
			fmt.Fprintf(&b, "  %-24s broken: %s\n", br.Name, inert.Line(br.Err.Error()))
			continue
		}
		fmt.Fprintf(&b, "  %-24s %s  (%s)\n", br.Name, br.Description, fileOf(br.Source, br.Revision, br.Author))
	}
	return b.String()
}
