package policy

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/nexuscocreate/nexus/internal/inert"
	"github.com/nexuscocreate/nexus/tools"
)

// PromptLines is the record r as the person reads it in plain text, a line
// at a time, for a surface that shows text (a terminal, an MCP client's
// elicitation, an ACP editor's permission prompt): who asks; the intent
// and expected outcome, labelled as the words of whose (such as "the
// model's") that Nexus did not check; then what Nexus itself vouches for:
// the command, a line of it per line, each after the first marked "| ";
// the risk and its reasons; and what an "always" answer would remember,
// or that it counts once. Every field is inert ([inert.Line], the command
// [inert.Text]), so no field can erase, move or pose as another line.
func PromptLines(r ICERC, whose string) []string {
	lines := []string{
		"asked by: " + cmp.Or(inert.Line(r.Asker), "(not said)"),
		"in " + whose + " words, not checked by Nexus:",
		"  intent:   " + cmp.Or(inert.Line(r.Intent), "(not given)"),
		"  expected: " + cmp.Or(inert.Line(r.ExpectedOutcome), "(not given)"),
	}
	for i, l := range strings.Split(inert.Text(r.Command), "\n") {
		if i == 0 {
			lines = append(lines, "command:  "+l)
		} else {
			lines = append(lines, "        | "+l)
		}
	}
	risk := inert.Line(string(r.Risk.Level))
	if r.Risk.Scope != "" {
		risk += " (" + inert.Line(r.Risk.Scope) + ")"
	}
	lines = append(lines, "risk:     "+risk)
	for _, d := range r.Risk.Details {
		lines = append(lines, "          - "+inert.Line(d))
	}
	return append(lines, "always:   "+cmp.Or(inert.Line(r.Always), CountsOnce))
}

// CountsOnce is what a prompt says when an "always" answer would remember
// nothing (ICERC.Always is empty).
const CountsOnce = `an "always" answer counts once here: nothing is remembered`

// MaxChangeLines is how many lines of the proposed change a text prompt
// shows (ChangeLines) before it says how many more there are.
const MaxChangeLines = 40

// A ChangeLine is a line of the proposed change as a text prompt shows it:
// inert text, and its kind, for a terminal to colour.
type ChangeLine struct {
	Text string
	Kind LineKind
}

// LineKind is what a ChangeLine is.
type LineKind int

const (
	LineOther   LineKind = iota // a context line, or a note
	LineAdded                   // "+…", green on a terminal
	LineRemoved                 // "-…", red
	LineHunk                    // "@@ …", cyan
	LineHeader                  // a file's header, before its first hunk ("diff --git", "---", "+++", ...)
)

// DiffLines splits a unified diff as git writes it (one file's or
// several) into its lines, each with its kind: a line before a file's
// first hunk is a header, whatever it starts with ("--- a/x" is not a
// removed line there, and "--- x" is one in a hunk). The text is the
// diff's own, not yet inert.
func DiffLines(diff string) []ChangeLine {
	var lines []ChangeLine
	hunks := false // past a file's headers
	for l := range strings.Lines(diff) {
		l = strings.TrimSuffix(l, "\n")
		kind := LineOther
		switch {
		case strings.HasPrefix(l, "diff --git "):
			hunks, kind = false, LineHeader
		case strings.HasPrefix(l, "@@"):
			hunks, kind = true, LineHunk
		case !hunks:
			kind = LineHeader
		case strings.HasPrefix(l, "+"):
			kind = LineAdded
		case strings.HasPrefix(l, "-"):
			kind = LineRemoved
		}
		lines = append(lines, ChangeLine{Text: l, Kind: kind})
	}
	return lines
}

// ChangeLines is the change a call would make (ICERC.Changes) as a text
// prompt shows it, after PromptLines: for each file a line naming the
// action and the path, then its diff as git shows it, less git's "diff
// --git" and "index" lines; at most limit lines of diff in all, then "…
// N more lines". Every line is inert ([inert.Line], a tab shown as four
// spaces), so a file's content cannot move the cursor, erase the question
// or pose as a line of Nexus's own: a line of the diff starts with +, -,
// a space, @ or \, as git writes it. It is nil when there are no changes.
func ChangeLines(changes []tools.ProposedChange, limit int) []ChangeLine {
	var lines []ChangeLine
	shown, more := 0, 0
	for _, c := range changes {
		lines = append(lines, ChangeLine{Text: fmt.Sprintf("change:   %s %s", inert.Line(c.Action), ShellWord(c.Path))})
		diff := strings.TrimSuffix(c.Diff, "\n")
		if diff == "" {
			if c.Truncated {
				lines = append(lines, ChangeLine{Text: "          (too large to show a diff)"})
			}
			continue
		}
		for _, l := range DiffLines(diff) {
			if l.Kind == LineHeader && (strings.HasPrefix(l.Text, "diff --git ") || strings.HasPrefix(l.Text, "index ")) {
				continue
			}
			if shown == limit {
				more++
				continue
			}
			if l.Kind == LineHeader {
				l.Kind = LineOther
			}
			lines = append(lines, ChangeLine{Text: inert.Line(strings.ReplaceAll(l.Text, "\t", "    ")), Kind: l.Kind})
			shown++
		}
		if c.Truncated {
			lines = append(lines, ChangeLine{Text: "          (the diff is cut here: the change is larger)"})
		}
	}
	if more > 0 {
		lines = append(lines, ChangeLine{Text: fmt.Sprintf("… %d more lines", more)})
	}
	return lines
}
