package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/nexuscocreate/nexus/tools"
)

// Input is what a hook reads on stdin, one JSON object.
type Input struct {
	// Event is preToolUse, postToolUse or userPromptSubmit; Hook the
	// hook's name ("preToolUse[0]").
	Event string `json:"event"`
	Hook  string `json:"hook"`
	// Workspace is the workspace root, the hook's working directory.
	Workspace string `json:"workspace"`
	// Session and Turn name the agent session and its turn (a gateway
	// client's MCP session for its calls; empty for an app's or the
	// person's own calls).
	Session string `json:"session,omitempty"`
	Turn    string `json:"turn,omitempty"`
	// Party is who acts, in words ("agent:0192… for the person", "app
	// \"planner\""); App the app the call is made for.
	Party string `json:"party,omitempty"`
	App   string `json:"app,omitempty"`

	// Tool is the tool's name (SERVER/TOOL for an MCP server's), Server
	// its server ("" for a core tool), CallID the call's id, Arguments
	// its arguments.
	Tool      string          `json:"tool,omitempty"`
	Server    string          `json:"server,omitempty"`
	CallID    string          `json:"callId,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Result is the call's result, Error its error (postToolUse).
	Result json.RawMessage  `json:"result,omitempty"`
	Error  *tools.CallError `json:"error,omitempty"`

	// Prompt is the prompt's text (userPromptSubmit).
	Prompt string `json:"prompt,omitempty"`
}

// Output is what a hook that exits 0 may print on stdout, one JSON object;
// the names are Claude Code's.
type Output struct {
	// Decision: for preToolUse "allow" (go on to the permission policy),
	// "ask" (the person decides, even where the policy would allow),
	// "deny" or "block" (the call fails with Reason); for postToolUse
	// "block" gives Reason to the model; for userPromptSubmit "block"
	// stops the prompt with Reason, shown to the person.
	Decision string `json:"decision,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// AdditionalContext is a note for the model (postToolUse) or text
	// added to the prompt (userPromptSubmit).
	AdditionalContext string `json:"additionalContext,omitempty"`
	// HookSpecificOutput is Claude Code's newer form of the same:
	// permissionDecision (allow, deny, ask) with its reason, and
	// additionalContext.
	HookSpecificOutput *struct {
		PermissionDecision       string `json:"permissionDecision,omitempty"`
		PermissionDecisionReason string `json:"permissionDecisionReason,omitempty"`
		AdditionalContext        string `json:"additionalContext,omitempty"`
	} `json:"hookSpecificOutput,omitempty"`
}

// answer is what one run of a hook said.
type answer struct {
	decision string // "", "ask", "deny"
	reason   string
	context  string
	// plain is set when context is stdout as plain text, not
	// additionalContext.
	plain bool
}

// errNoRunner is the error of a hook run by Hooks made without a Runner.
var errNoRunner = errors.New("hooks cannot run here")

// run runs hk with in on stdin and reads its answer; an error is a hook
// that failed (not approved, could not run, timed out, exited neither 0
// nor 2, printed too much or what is not an answer).
func (h *Hooks) run(ctx context.Context, hk *hook, in *Input) (answer, error) {
	if h.opts.Run == nil {
		return answer{}, errNoRunner
	}
	st := h.status(hk)
	if st.Error != "" {
		return answer{}, fmt.Errorf("it cannot be pinned, so it is not approved: %s", st.Error)
	}
	store, err := h.store()
	if err != nil {
		return answer{}, fmt.Errorf("it is not approved: %w", err)
	}
	if !store.Trusted(hk.name, st.Pin) {
		h.ask(st)
		return answer{}, fmt.Errorf("it waits for the person's approval (it is new, or it or a file its command names changed since it was approved): "+
			"`nexus hooks trust %s` shows it and approves it (or approve it when the editor asks)", hk.name)
	}
	in.Event, in.Hook, in.Workspace = hk.event, hk.name, h.opts.Workspace
	stdin, err := json.Marshal(in)
	if err != nil {
		return answer{}, err
	}
	res, err := h.opts.Run(ctx, hk.command, stdin, hk.timeout, OutputLimit)
	switch {
	case err != nil:
		return answer{}, fmt.Errorf("it could not run: %w", err)
	case res.Cancelled:
		return answer{}, fmt.Errorf("it was stopped: %w", context.Cause(ctx))
	case res.TimedOut:
		return answer{}, fmt.Errorf("it did not finish in %v (hooks.%s.timeout)", hk.timeout, hk.name)
	case res.Truncated:
		return answer{}, fmt.Errorf("it printed more than %d bytes", OutputLimit)
	case res.Signal != "":
		return answer{}, fmt.Errorf("it was ended by signal %s%s", res.Signal, stderrOf(res.Stderr))
	case res.ExitCode == 2:
		return answer{decision: "deny", reason: message(res.Stderr)}, nil
	case res.ExitCode != 0:
		return answer{}, fmt.Errorf("it exited with %d%s", res.ExitCode, stderrOf(res.Stderr))
	}
	out := strings.TrimSpace(res.Stdout)
	if !strings.HasPrefix(out, "{") {
		return answer{context: message(out), plain: true}, nil
	}
	var o Output
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		return answer{}, fmt.Errorf("its stdout is not a JSON object: %v", err)
	}
	a := answer{decision: o.Decision, reason: message(o.Reason), context: message(o.AdditionalContext)}
	if s := o.HookSpecificOutput; s != nil {
		if s.PermissionDecision != "" {
			a.decision, a.reason = s.PermissionDecision, message(s.PermissionDecisionReason)
		}
		if s.AdditionalContext != "" {
			a.context = message(s.AdditionalContext)
		}
	}
	switch a.decision {
	case "", "allow", "approve":
		a.decision = ""
	case "deny", "block":
		a.decision = "deny"
	case "ask":
	default:
		return answer{}, fmt.Errorf("its decision %q is none of allow, ask, deny, block", message(a.decision))
	}
	return a, nil
}

// message is a hook's text cut to maxMessage bytes, valid UTF-8.
func message(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > maxMessage {
		n := maxMessage
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

func stderrOf(s string) string {
	if s = message(s); s != "" {
		return ": " + s
	}
	return ""
}

// toolName is the name a tool hook's match is held to.
func toolName(c tools.Call) string {
	if c.ServerName != "" {
		return c.ServerName + "/" + c.ToolName
	}
	return c.ToolName
}

func (hk *hook) matches(name string) bool { return hk.re == nil || hk.re.MatchString(name) }

func callInput(c *tools.HookCall) *Input {
	return &Input{Session: c.Call.Session, Turn: c.Call.Turn, Party: c.Party.String(), App: c.Call.AppID,
		Tool: toolName(c.Call), Server: c.Call.ServerName, CallID: c.Call.ID, Arguments: c.Args}
}

// Before runs the preToolUse hooks that match the call, in order (see
// tools.Hooks): the first that denies, or fails, denies the call; the
// reasons of those that ask are returned together.
func (h *Hooks) Before(ctx context.Context, c *tools.HookCall) (string, *tools.Error) {
	var asks []string
	name := toolName(c.Call)
	for _, hk := range h.hooks {
		if hk.event != PreToolUse || !hk.matches(name) {
			continue
		}
		a, err := h.run(ctx, hk, callInput(c))
		if err != nil {
			h.logger.Warn("a preToolUse hook failed: the call is denied", "hook", hk.name, "tool", name, "error", err.Error())
			return "", tools.Errorf(tools.CodePermissionDenied, "the preToolUse hook %s (%s) failed, and a call its hook cannot check is denied: %v",
				hk.name, commandLine(hk.command), err)
		}
		switch a.decision {
		case "deny":
			h.logger.Info("a preToolUse hook denied a call", "hook", hk.name, "tool", name)
			reason := a.reason
			if reason == "" {
				reason = "(it gave no reason)"
			}
			return "", tools.Errorf(tools.CodePermissionDenied, "denied by the preToolUse hook %s: %s", hk.name, reason)
		case "ask":
			asks = append(asks, cmpOr(a.reason, hk.name+" gave no reason"))
		}
	}
	return strings.Join(asks, "; "), nil
}

// After runs the postToolUse hooks that match the call, in order, and
// returns their notes for the model (see tools.Hooks); a hook that fails
// is logged and ignored.
func (h *Hooks) After(ctx context.Context, c *tools.HookCall) []string {
	var notes []string
	name := toolName(c.Call)
	for _, hk := range h.hooks {
		if hk.event != PostToolUse || !hk.matches(name) {
			continue
		}
		in := callInput(c)
		in.Result, in.Error = c.Result, c.Error
		a, err := h.run(ctx, hk, in)
		if err != nil {
			h.logger.Warn("a postToolUse hook failed; the call's result stands", "hook", hk.name, "tool", name, "error", err.Error())
			continue
		}
		// Exit code 2's stderr, a block's reason and the additional
		// context all go to the model; plain stdout does not.
		if a.decision == "deny" && a.reason != "" {
			notes = append(notes, a.reason)
		}
		if a.context != "" && !a.plain {
			notes = append(notes, a.context)
		}
	}
	return notes
}

// PromptBlockedError is the error of a prompt a userPromptSubmit hook
// blocked, or that one failed on.
type PromptBlockedError struct {
	Hook   string
	Reason string
}

func (e *PromptBlockedError) Error() string {
	return fmt.Sprintf("the prompt was not sent: the userPromptSubmit hook %s %s", e.Hook, e.Reason)
}

// Prompt runs the userPromptSubmit hooks, in order, on a prompt of the
// agent session session: it returns the context they add (joined by blank
// lines), or a *PromptBlockedError when one blocks the prompt or fails.
func (h *Hooks) Prompt(ctx context.Context, session, turn, party, prompt string) (string, error) {
	var added []string
	for _, hk := range h.hooks {
		if hk.event != UserPromptSubmit {
			continue
		}
		a, err := h.run(ctx, hk, &Input{Session: session, Turn: turn, Party: party, Prompt: prompt})
		if err != nil {
			h.logger.Warn("a userPromptSubmit hook failed: the prompt is not sent", "hook", hk.name, "error", err.Error())
			return "", &PromptBlockedError{Hook: hk.name, Reason: fmt.Sprintf("(%s) failed, and a prompt its hook cannot check is not sent: %v", commandLine(hk.command), err)}
		}
		if a.decision == "deny" {
			return "", &PromptBlockedError{Hook: hk.name, Reason: "blocked it: " + cmpOr(a.reason, "(it gave no reason)")}
		}
		if a.context != "" {
			added = append(added, a.context)
		}
	}
	return strings.Join(added, "\n\n"), nil
}

func commandLine(argv []string) string {
	return strings.Join(argv, " ")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
