package policy

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// Who asks and what an "always" answer covers, in the words the ICERC
// record shows the person (tools.ICERC.Asker and Always).

// Asker names the party whose call req is, as the person should read it:
// `app "alpha"`, `agent session 0192… acting for the person`, `agent
// session 0192… acting for app "alpha"`, `MCP server "github" (sampling,
// during a call by the person)`, `the person (editor)`. Names that a file
// or a client controls are quoted with Go escapes, so they are inert.
func Asker(req Request) string {
	whom := "the person"
	if req.AppID != "" {
		whom = fmt.Sprintf("app %q", req.AppID)
	}
	kind, id, _ := strings.Cut(req.Author, ":")
	switch {
	case kind == "mcp" && id != "":
		return fmt.Sprintf("MCP server %q (sampling, during a call by %s)", id, whom)
	case kind == "agent" && id == "mcp":
		return "the MCP gateway's client (nexusd mcp) acting for " + whom
	case kind == "agent" && id != "":
		return fmt.Sprintf("agent session %s acting for %s", plainWord(id), whom)
	case req.Agent:
		return "an agent session acting for " + whom
	case req.AppID != "":
		return whom
	}
	switch req.Author {
	case "cli":
		return "the person (terminal)"
	case "editor":
		return "the person (editor)"
	case "acp":
		return "the person (ACP editor)"
	}
	return "the person"
}

// AlwaysText says what an "always" answer to req would remember: the
// call's scope (see [Policy.Record]) and the party it is remembered for,
// `execute_command "ls" for app "alpha" and its agent sessions`. It is ""
// when the answer would count once: a command that is not one plain
// command, or a path the file tools refuse. (The gate also empties it for
// a protected path, and when there is no store to remember in.)
func AlwaysText(req Request) string {
	s, ok := callScope(&req, nil)
	if !ok {
		return ""
	}
	var what string
	switch {
	case isSampling(req.Tool):
		return fmt.Sprintf("sampling requests of MCP server %q, any messages, during calls by %s", req.Tool.ServerName, party(req.AppID))
	case s.Command != nil:
		what = fmt.Sprintf("%s %q, exactly this command,", executeCommand, shellJoin(s.Command))
	case s.Path != "":
		what = fmt.Sprintf("%s %q", req.Tool.Name, s.Path)
	case s.Domain != "":
		what = fmt.Sprintf("%s of any URL on the host %q,", req.Tool.Name, s.Domain)
	default:
		what = strconv.Quote(displayName(req.Tool)) + ", any arguments,"
	}
	return what + " for " + party(req.AppID)
}

// party names whom a remembered answer is for: an app's answers cover the
// app and the agent sessions acting for it; the person's cover the
// person's own calls and every agent session acting for the person.
func party(appID string) string {
	if appID == "" {
		return "the person and every agent session acting for the person"
	}
	return fmt.Sprintf("app %q and its agent sessions", appID)
}

// plainWord is s as is when it is a plain identifier (letters, digits,
// '-', '_', '.'), else quoted with Go escapes.
func plainWord(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return strconv.Quote(s)
		}
	}
	return s
}

// choiceKey is the context key of a question's [choice].
type choiceKey struct{}

// choice is where an approver puts the directory the person picked for an
// "always" answer; the gate reads it once the approver has answered.
type choice struct {
	scope Scope // the call's own scope

	dirMu sync.Mutex
	dir   string
}

// withChoice returns ctx carrying a choice for a call whose scope is s.
func withChoice(ctx context.Context, s Scope) (context.Context, *choice) {
	c := &choice{scope: s}
	return context.WithValue(ctx, choiceKey{}, c), c
}

func (c *choice) directory() string {
	c.dirMu.Lock()
	defer c.dirMu.Unlock()
	return c.dir
}

// AlwaysUnder widens the "always" answer that an approver is about to give
// to a file tool's call: it then covers every call of that tool, for the
// same party, on dir and every path under it (the editor's answer
// {"answer": "allow_always", "directory": "src"}). ctx is the one the
// gate gave the approver. The error wraps [ErrNotUnder] when the call is
// not a file tool's, or dir ("src", "src/", "." for the whole workspace)
// does not hold its path; the approver should then fail the question,
// which denies the call, rather than remember something else.
func AlwaysUnder(ctx context.Context, dir string) error {
	c, _ := ctx.Value(choiceKey{}).(*choice)
	if c == nil {
		return errors.New("no permission question is being answered: a directory cannot be picked here")
	}
	d, err := underDirectory(c.scope, dir)
	if err != nil {
		return err
	}
	c.dirMu.Lock()
	c.dir = d
	c.dirMu.Unlock()
	return nil
}
