package policy

import (
	"cmp"
	"strings"

	"github.com/nexuscocreate/nexus/internal/inert"
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
