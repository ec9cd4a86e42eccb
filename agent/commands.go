package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/nexuscocreate/nexus/internal/inert"
)

// Commands are the special commands a prompt may be, as ACP's
// available_commands_update lists them.
func Commands() []Command {
	return []Command{
		{Name: "help", Description: "List the special commands"},
		{Name: "quit", Description: "End the chat (the session is kept; /resume it later)"},
		{Name: "exit", Description: "End the chat, as /quit"},
		{Name: "clear", Description: "Forget the conversation so far (kept system messages stay)"},
		{Name: "system", Description: "Add a system message", Input: &CommandInput{Hint: "text of the system message"}},
		{Name: "debug", Description: "Show or hide what each step sends (messages, tokens, tools)"},
		{Name: "model", Description: "Show the model, or switch to another llm profile", Input: &CommandInput{Hint: "profile name"}},
		{Name: "tools", Description: "List the tools the agent may call"},
		{Name: "context", Description: "Show what the system prompt carries: the context file and the project instruction files (AGENTS.md …), with their sizes"},
		{Name: "compact", Description: "Summarise the older turns with the model, to free the context window"},
		{Name: "cost", Description: "Tokens and cost of this session"},
		{Name: "sessions", Description: "List the saved sessions"},
		{Name: "resume", Description: "Go on with a saved session", Input: &CommandInput{Hint: "session id"}},
		{Name: "undo", Description: "Undo the files the last turn changed (--force: even files changed since)", Input: &CommandInput{Hint: "--force"}},
		{Name: "rewind", Description: "List this session's turns and the files they changed; /rewind N undoes turns N to the last", Input: &CommandInput{Hint: "turn number"}},
	}
}

// command runs a special command; what it has to say is a command_output
// update.
func (ss *Session) command(ctx context.Context, line string, emit func(Update)) (PromptResult, error) {
	name, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	say := func(format string, a ...any) {
		emit(Update{SessionUpdate: "command_output", Content: textBlock(fmt.Sprintf(format, a...))})
	}
	res := ss.result(StopEndTurn)
	switch name {
	case "help":
		say("%s", ss.help())
	case "quit", "exit":
		res.Quit = true
	case "clear":
		ss.mu.Lock()
		ss.hist.Clear()
		ss.dirs = nil
		hadPlan := ss.plan != nil
		ss.plan = nil
		ss.logLocked(record{Type: "clear"})
		ss.mu.Unlock()
		if hadPlan {
			emit(planUpdate(nil)) // the doors' plan goes too
		}
		say("The conversation is cleared.")
	case "system":
		if arg == "" {
			return res, commandErr("/system needs the text of the message: /system TEXT")
		}
		if _, err := ss.add(Message{Role: RoleSystem, Text: arg}); err != nil {
			return res, err
		}
		say("System message added.")
	case "debug":
		ss.mu.Lock()
		ss.debug = !ss.debug
		on := ss.debug
		ss.mu.Unlock()
		say("Debug output is %s.", map[bool]string{true: "on", false: "off"}[on])
	case "model":
		return res, ss.model(arg, say)
	case "tools":
		o, err := ss.offer()
		if err != nil {
			return res, err
		}
		var b strings.Builder
		for _, t := range o.list {
			risk := "none" // the agent's own plan tool: no Nexus tool call
			if d, ok := o.byKey[t.Name]; ok {
				risk = string(d.Risk)
			}
			fmt.Fprintf(&b, "%-32s %-6s %s\n", t.Name, risk, firstLine(t.Description))
		}
		say("%d tools:\n%s%s", len(o.list), b.String(), ss.briefsHelp(o))
	case "context":
		return res, ss.contextCommand(say)
	case "compact":
		return res, ss.compact(ctx, emit)
	case "cost":
		i := ss.info()
		cost := "unknown (no prices for this profile: " + ss.currentProfile().Key() + ".prices)"
		if i.Cost != nil {
			cost = fmt.Sprintf("%.4f %s", i.Cost.Amount, i.Cost.Currency)
		}
		say("%d requests; %d input tokens (%d cached), %d output tokens; cost %s; the history holds ~%d tokens in %d messages.",
			i.Usage.Requests, i.Usage.InputTokens, i.Usage.CachedTokens, i.Usage.OutputTokens, cost, ss.tokens(), i.Messages)
	case "sessions":
		var b strings.Builder
		for _, s := range ss.svc.List(ss.owner) {
			mark := " "
			if s.ID == ss.id {
				mark = "*"
			}
			fmt.Fprintf(&b, "%s %s  %s  %-10s %s\n", mark, s.ID, s.Updated.Local().Format("2006-01-02 15:04"), s.Profile, s.Title)
		}
		say("%s", b.String())
	case "resume":
		if arg == "" {
			return res, commandErr("/resume needs a session id (see /sessions)")
		}
		if _, err := ss.svc.get(ss.owner, arg); err != nil {
			return res, err
		}
		res.Resume = arg
	case "undo":
		return res, ss.undoCommand(ctx, arg, say)
	case "rewind":
		return res, ss.rewindCommand(ctx, arg, say)
	default:
		return ss.fileCommand(ctx, name, arg, emit)
	}
	return res, nil
}

// help lists the special commands: the built-in ones, then the command
// files' with where each comes from and its revision, then the files that
// are broken or whose name another command has.
func (ss *Session) help() string {
	var b strings.Builder
	for _, c := range Commands() {
		fmt.Fprintf(&b, "/%-9s %s\n", c.Name, c.Description)
	}
	files, shadowed := ss.svc.fileCommands(ss.party)
	if len(files) > 0 {
		b.WriteString("\nFrom command files:\n")
	}
	for _, c := range files {
		desc := c.Description
		if c.Err != nil {
			desc = "broken: " + c.Err.Error()
		}
		fmt.Fprintf(&b, "/%-9s %s  (%s)\n", inert.Line(c.Name), desc, sourceOf(c))
	}
	for _, c := range shadowed {
		fmt.Fprintf(&b, "not a command: %s, as /%s is taken by a built-in command or an earlier file\n", sourceOf(c), inert.Line(c.Name))
	}
	return b.String()
}

// sourceOf names a command's file and, in the definitions root, its
// revision and who made it.
func sourceOf(c FileCommand) string { return fileOf(c.Source, c.Revision, c.Author) }

// fileOf names an agent's definition file (a command, a brief) and, in the
// definitions root, its revision and who made it.
func fileOf(source, revision, author string) string {
	switch {
	case revision == "":
		return inert.Line(source)
	case author == "":
		return fmt.Sprintf("%s @ %.7s", inert.Line(source), revision)
	}
	return fmt.Sprintf("%s @ %.7s by %s", inert.Line(source), revision, inert.Line(author))
}

// fileCommand runs the command a file defines: its text, with the
// arguments in place, is the person's prompt. Before it is sent, the
// person is told which file (and revision) it is.
func (ss *Session) fileCommand(ctx context.Context, name, arg string, emit func(Update)) (PromptResult, error) {
	files, _ := ss.svc.fileCommands(ss.party)
	i := slices.IndexFunc(files, func(c FileCommand) bool { return c.Name == name })
	if i < 0 {
		return ss.result(StopEndTurn), commandErr("unknown command /%s (see /help)", inert.Line(name))
	}
	c := files[i]
	if c.Err != nil {
		return ss.result(StopEndTurn), commandErr("/%s: %v", inert.Line(name), c.Err)
	}
	say := func(format string, a ...any) {
		emit(Update{SessionUpdate: "command_output", Content: textBlock(fmt.Sprintf(format, a...))})
	}
	if c.Profile != "" && c.Profile != ss.currentProfile().Name {
		if err := ss.model(c.Profile, say); err != nil {
			return ss.result(StopEndTurn), fmt.Errorf("/%s (%s) names profile %q: %w", inert.Line(name), inert.Line(c.Source), inert.Line(c.Profile), err)
		}
	}
	note := ""
	if c.Tools != nil {
		note = fmt.Sprintf("; its turn may use only: %s", inert.Line(strings.Join(c.Tools, ", ")))
		if len(c.Tools) == 0 {
			note = "; its turn may use no tools"
		}
		ss.mu.Lock()
		ss.turnTools = c.Tools
		ss.mu.Unlock()
		defer func() {
			ss.mu.Lock()
			ss.turnTools = nil
			ss.mu.Unlock()
		}()
	}
	say("/%s: the text of %s is sent as your prompt%s.", inert.Line(name), sourceOf(c), note)
	return ss.send(ctx, Message{Role: RoleUser, Text: c.expand(arg)}, emit)
}

// firstLine is a description's first sentence, for a list.
func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	if i := strings.Index(l, ". "); i >= 0 {
		l = l[:i+1]
	}
	if r := []rune(l); len(r) > 100 {
		l = string(r[:99]) + "…"
	}
	return l
}

// model shows the session's profile, or switches to another.
func (ss *Session) model(name string, say func(string, ...any)) error {
	if name == "" {
		p := ss.currentProfile()
		say("Profile %s: %s %s. Profiles: %s.", p.Name, p.Provider, p.Model, strings.Join(ss.svc.Profiles(), ", "))
		return nil
	}
	p, err := ss.svc.profile(name)
	if err != nil {
		return err
	}
	prov, err := ss.svc.opts.NewProvider(p)
	if err != nil {
		return &LIALInitError{Profile: p.Name, Err: err}
	}
	ss.mu.Lock()
	ss.profile, ss.provider = p, prov
	ss.logLocked(record{Type: "profile", Profile: p.Name})
	ss.mu.Unlock()
	say("Now using profile %s: %s %s.", p.Name, p.Provider, p.Model)
	return nil
}

// compactKeep is how many of the newest turns /compact keeps as they are.
const compactKeep = 2
